"""The Spark run service's sessions: settings per session or per application, and fresh catalog caches."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from ticdc_lake.config import LakeConfig, load_config
from ticdc_lake.errors import ConfigError
from ticdc_lake.spark.service_sessions import ServiceSessions, application_settings, forget_cached_tables

pytestmark = pytest.mark.spark


def _config(tmp_path: Path, lake_home: Path, *spark_confs: dict[str, str]) -> LakeConfig:
    """One pipeline per entry of ``spark_confs`` (ids p0, p1, ...), all on the session's test catalog."""
    document = {
        "catalogs": {
            "lake": {"uri": f"jdbc:sqlite:{lake_home}/catalog/lake.db", "warehouse": f"file://{lake_home}/warehouse"}
        },
        "pipelines": [
            {
                "id": f"p{i}",
                "protocol": "simple-json",
                "kafka": {"topics": [f"t{i}"]},
                "landing_uri": f"file://{tmp_path}/landing",
                "catalog": "lake",
                "spark_conf": conf,
            }
            for i, conf in enumerate(spark_confs)
        ],
    }
    path = tmp_path / "pipelines.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_config(path)


def test_the_application_gets_the_settings_all_pipelines_share(tmp_path: Path, lake_home: Path) -> None:
    config = _config(
        tmp_path,
        lake_home,
        {"spark.executor.memory": "3g", "spark.sql.shuffle.partitions": "4"},
        {"spark.executor.memory": "3g", "spark.sql.shuffle.partitions": "16"},
    )
    settings = application_settings(config)
    assert settings["spark.executor.memory"] == "3g"
    assert settings["spark.sql.extensions"] == "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
    assert "spark.sql.shuffle.partitions" not in settings  # they differ: set per session


def test_two_pipelines_that_disagree_on_an_application_setting_cannot_share_a_service(
    tmp_path: Path, lake_home: Path
) -> None:
    config = _config(tmp_path, lake_home, {"spark.executor.memory": "3g"}, {"spark.executor.memory": "4g"})
    with pytest.raises(ConfigError) as raised:
        application_settings(config)
    assert str(raised.value) == (
        f"{tmp_path}/pipelines.yaml: pipelines 'p0' and 'p1' set spark.executor.memory to '3g' and '4g'; it holds "
        "for a whole Spark application, so one Spark run service cannot serve both. Give them the same value, or "
        "run a service per pipeline (docs/spark-service.md)"
    )


def test_each_pipeline_setting_gets_its_own_session_and_keeps_it(spark: Any, tmp_path: Path, lake_home: Path) -> None:
    config = _config(tmp_path, lake_home, {"spark.sql.shuffle.partitions": "3"}, {})
    sessions = ServiceSessions(spark)
    first = sessions.session_for(config, config.pipeline("p0"))
    other = sessions.session_for(config, config.pipeline("p1"))

    assert first.conf.get("spark.sql.shuffle.partitions") == "3"
    assert other.conf.get("spark.sql.shuffle.partitions") == "8"  # settings.spark_conf's default
    assert spark.conf.get("spark.sql.shuffle.partitions") == "8"  # the application's own session: untouched
    assert first is not other
    assert sessions.session_for(config, config.pipeline("p0")) is first


@pytest.mark.parametrize(
    ("setting", "value", "service"),
    [
        ("spark.driver.memory", "3g", "'2g'"),
        (
            "spark.sql.extensions",
            "com.example.Extensions",
            "'org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions'",
        ),
        ("spark.executor.cores", "3", "None"),
    ],
)
def test_a_pipeline_asking_for_another_application_setting_is_told_to_restart_the_service(
    spark: Any, tmp_path: Path, lake_home: Path, setting: str, value: str, service: str
) -> None:
    config = _config(tmp_path, lake_home, {setting: value})
    with pytest.raises(ConfigError) as raised:
        ServiceSessions(spark).session_for(config, config.pipeline("p0"))
    assert str(raised.value) == (
        f"pipeline 'p0' needs Spark settings this running service was not started with: {setting}={value!r} "
        f"(service: {service}). They hold for the whole application: restart the service "
        "(include/scripts/spark_service.sh restart) so it reads the configuration again (docs/spark-service.md)"
    )


def test_a_session_forgets_the_tables_its_catalog_cached_so_it_sees_other_writers(spark: Any) -> None:
    table = f"lake.svc_{uuid.uuid4().hex[:8]}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    assert spark.table(table).count() == 0  # loaded: now in the catalog's cache
    writer = spark.newSession()  # its own catalog instance, as another process would have
    writer.sql(f"INSERT INTO {table} VALUES (1), (2)")
    assert spark.table(table).count() == 0  # the cached table: what a long-lived session would read

    assert forget_cached_tables(spark, ["lake", "not_loaded_here"]) >= 1

    assert spark.table(table).count() == 2


def test_a_session_uses_its_own_catalog_whatever_session_is_active_on_the_thread(spark: Any, tmp_path: Path) -> None:
    """A pipeline whose catalog has the name of the application's but another location gets that
    location, even when the thread asking for its session has the application's session active (as
    this test's thread has): probing the catalog cache must not load the catalog with the active
    session's settings."""
    other = tmp_path / "other"  # catalog "lake" at another location than the application's
    config = _config(tmp_path, other, {})
    namespace = f"svc_{uuid.uuid4().hex[:8]}"

    session = ServiceSessions(spark).session_for(config, config.pipeline("p0"))
    session.sql(f"CREATE TABLE lake.{namespace}.t (id BIGINT) USING iceberg")

    assert (other / "catalog" / "lake.db").exists()
    assert (other / "warehouse" / namespace / "t").is_dir()
    assert namespace not in [r[0] for r in spark.sql("SHOW NAMESPACES IN lake").collect()]
