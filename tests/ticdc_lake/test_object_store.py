"""One set of S3 settings, translated for pyarrow.fs, Iceberg's S3FileIO (Spark) and pyiceberg."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
import pytest

from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import CatalogConfig, CodecOptions, PipelineConfig
from ticdc_lake.errors import ConfigError, LandingError
from ticdc_lake.object_store import (
    ObjectStoreError,
    S3Settings,
    catalog_properties,
    is_object_store,
    open_uri,
)
from ticdc_lake.spark.settings import catalog_conf, spark_conf
from ticdc_lake.storage_files import open_filesystem

LOCAL = {"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:19900/", "AWS_REGION": "eu-west-3"}
SECRET = "do-not-print-me"


def test_no_environment_means_aws_s3_with_virtual_host_addressing() -> None:
    settings = S3Settings.from_environment({})
    assert settings == S3Settings(endpoint=None, region="us-east-1", path_style=False)
    assert settings.pyarrow_options() == {"region": "us-east-1", "force_virtual_addressing": True}
    assert settings.iceberg_properties() == {
        "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "client.region": "us-east-1",
        "s3.path-style-access": "false",
        "s3.force-virtual-addressing": "true",
    }
    assert settings.describe() == "AWS S3 (region us-east-1, virtual-host style)"


def test_an_endpoint_implies_path_style_and_reaches_every_client() -> None:
    settings = S3Settings.from_environment(LOCAL)
    assert settings == S3Settings(endpoint="http://127.0.0.1:19900", region="eu-west-3", path_style=True)
    assert settings.pyarrow_options() == {
        "region": "eu-west-3",
        "force_virtual_addressing": False,
        "endpoint_override": "127.0.0.1:19900",
        "scheme": "http",
    }
    assert settings.iceberg_properties() == {
        "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "client.region": "eu-west-3",
        "s3.path-style-access": "true",
        "s3.force-virtual-addressing": "false",
        "s3.endpoint": "http://127.0.0.1:19900",
    }
    assert settings.spark_executor_env() == {
        "spark.executorEnv.AWS_REGION": "eu-west-3",
        "spark.executorEnv.TICDC_LAKE_S3_PATH_STYLE": "true",
        "spark.executorEnv.AWS_ENDPOINT_URL_S3": "http://127.0.0.1:19900",
    }


def test_generic_names_are_the_fallbacks_and_path_style_can_be_forced() -> None:
    env = {
        "AWS_ENDPOINT_URL": "https://minio.example.com",
        "AWS_DEFAULT_REGION": "ap-south-1",
        "TICDC_LAKE_S3_PATH_STYLE": "false",
    }
    assert S3Settings.from_environment(env) == S3Settings("https://minio.example.com", "ap-south-1", False)
    specific = {**env, "AWS_ENDPOINT_URL_S3": "http://s3.local:9000", "AWS_REGION": "us-west-2"}
    assert S3Settings.from_environment(specific) == S3Settings("http://s3.local:9000", "us-west-2", False)
    assert S3Settings.from_environment({"TICDC_LAKE_S3_PATH_STYLE": "yes"}).path_style is True


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"AWS_ENDPOINT_URL_S3": "127.0.0.1:19900"},
            "AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL is '127.0.0.1:19900': the S3 endpoint must be a URL with "
            "scheme and host, e.g. http://127.0.0.1:19900 or https://minio.example.com",
        ),
        ({"TICDC_LAKE_S3_PATH_STYLE": "maybe"}, "TICDC_LAKE_S3_PATH_STYLE is 'maybe': use true or false"),
    ],
)
def test_unusable_settings_say_which_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ObjectStoreError) as info:
        S3Settings.from_environment(env)
    assert str(info.value) == message


def test_credentials_never_become_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**LOCAL, "AWS_ACCESS_KEY_ID": SECRET, "AWS_SECRET_ACCESS_KEY": SECRET}.items():
        monkeypatch.setenv(name, value)
    settings = S3Settings.from_environment()
    catalog = CatalogConfig(uri="jdbc:sqlite:/tmp/x.db", warehouse="s3://lake/warehouse")
    produced = [
        repr(settings),
        settings.pyarrow_options(),
        settings.iceberg_properties(),
        settings.spark_executor_env(),
        spark_conf("lake", catalog),
    ]
    assert SECRET not in repr(produced)


def test_local_uris_are_opened_with_the_local_filesystem(tmp_path: Path) -> None:
    # s3:// URIs: tests/ticdc_lake/landing/test_landing_store_s3.py (they need the server).
    local, path = open_uri(f"file://{tmp_path}/x/")
    assert (type(local), path) == (pafs.LocalFileSystem, f"{tmp_path}/x")
    assert open_uri(f"{tmp_path}/y")[1] == f"{tmp_path}/y"
    assert (is_object_store("s3://a/b"), is_object_store("file:///a"), is_object_store("/a")) == (True, False, False)


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("s3:///no-bucket", "'s3:///no-bucket' names no bucket; use s3://bucket/prefix"),
        (
            "s3://lake/x?endpoint_override=h:1",
            "'s3://lake/x?endpoint_override=h:1': S3 options do not go into the URI; set them in the environment "
            "(AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION, AWS_DEFAULT_REGION, TICDC_LAKE_S3_PATH_STYLE)",
        ),
        ("gs://lake/x", "'gs://lake/x': unsupported scheme 'gs'; use /abs/path, file:///abs/path or s3://"),
    ],
)
def test_unusable_uris_are_refused(uri: str, message: str) -> None:
    with pytest.raises(ObjectStoreError) as info:
        open_uri(uri)
    assert str(info.value) == message
    with pytest.raises(LandingError) as landing:
        open_filesystem(uri)
    assert str(landing.value) == f"landing_uri {uri!r} cannot be opened: {message}"


def test_only_an_s3_warehouse_gets_s3_catalog_properties_and_configured_ones_win(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in LOCAL.items():
        monkeypatch.setenv(name, value)
    assert catalog_properties("file:///lake/warehouse", {"a": "1"}) == {"a": "1"}
    properties = catalog_properties("s3://lake/warehouse", {"client.region": "us-east-2"})
    assert properties["client.region"] == "us-east-2"
    assert properties["s3.endpoint"] == "http://127.0.0.1:19900"

    catalog = CatalogConfig(uri="jdbc:sqlite:/tmp/x.db", warehouse="s3://lake/warehouse")
    conf = catalog_conf("lake", catalog)
    assert {k: v for k, v in conf.items() if ".s3." in k or "io-impl" in k or "region" in k} == {
        "spark.sql.catalog.lake.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "spark.sql.catalog.lake.client.region": "eu-west-3",
        "spark.sql.catalog.lake.s3.path-style-access": "true",
        "spark.sql.catalog.lake.s3.force-virtual-addressing": "false",
        "spark.sql.catalog.lake.s3.endpoint": "http://127.0.0.1:19900",
    }
    pyiceberg = load_catalog("lake", catalog.model_copy(update={"uri": f"jdbc:sqlite:{tmp_path}/lake.db"}))
    assert {k: pyiceberg.properties[k] for k in ("s3.endpoint", "client.region", "s3.force-virtual-addressing")} == {
        "s3.endpoint": "http://127.0.0.1:19900",
        "client.region": "eu-west-3",
        "s3.force-virtual-addressing": "false",
    }


def test_executors_get_the_settings_only_when_the_pipeline_uses_s3(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in LOCAL.items():
        monkeypatch.setenv(name, value)
    catalog = CatalogConfig(uri="jdbc:sqlite:/tmp/x.db", warehouse="file:///lake/warehouse")
    pipeline = PipelineConfig.model_validate(
        {
            "id": "orders",
            "protocol": "simple-json",
            "kafka": {"topics": ["t"]},
            "landing_uri": "file:///lake/landing",
            "catalog": "lake",
        }
    )
    assert not any(k.startswith("spark.executorEnv.") for k in spark_conf("lake", catalog, pipeline))
    claims = pipeline.model_copy(update={"codec": CodecOptions(claim_check_storage_uri="s3://claims/cf")})
    executor_env = {k: v for k, v in spark_conf("lake", catalog, claims).items() if k.startswith("spark.executorEnv.")}
    assert executor_env == S3Settings.from_environment().spark_executor_env()


def test_a_bad_endpoint_is_a_catalog_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "localhost")
    catalog = CatalogConfig(uri="jdbc:sqlite:/tmp/x.db", warehouse="s3://lake/warehouse")
    with pytest.raises(ConfigError) as info:
        catalog_conf("lake", catalog)
    assert str(info.value).startswith(
        "catalog 'lake' (warehouse s3://lake/warehouse): AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL is 'localhost'"
    )
