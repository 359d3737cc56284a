"""Shared fixtures: the local Kafka broker, the local schema registry and one Spark session per test run."""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]

# Tests that import Airflow in-process must never touch ~/airflow.
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="ticdc-lake-airflow-home-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
# The Spark JVMs the tests start as processes (spark-submit's under Airflow, the stage processes of the
# crash tests) are short-lived and handle little data: the C1 compiler alone and the serial collector
# cost less CPU than C2 and G1 there (a Spark test file measured 40 s -> 32 s wall on 2 cores).
# Production jobs keep the JVM's defaults; spark-submit reads this for the driver JVM. Their scratch
# files (block manager, native libraries) go to one folder per test process, removed when it ends:
# the JVMs the crash tests kill never remove theirs (5.7 GB had piled up in /tmp here).
_SPARK_SCRATCH = tempfile.mkdtemp(prefix="ticdc-lake-spark-scratch-")
atexit.register(shutil.rmtree, _SPARK_SCRATCH, True)
os.environ.setdefault("SPARK_LOCAL_DIRS", _SPARK_SCRATCH)
os.environ.setdefault(
    "SPARK_SUBMIT_OPTS", f"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.io.tmpdir={_SPARK_SCRATCH}"
)


def _local_service(env_var: str, recorded: str, missing: str) -> str:
    """The address in ``env_var``, else the one the service's script recorded under TICDC_LAKE_HOME.

    Missing: skip locally, fail in CI (``make test`` starts the services). The address found is
    exported in ``env_var`` for subprocesses.
    """
    address = os.environ.get(env_var)
    if not address:
        path = Path(os.environ.get("TICDC_LAKE_HOME") or PROJECT_ROOT / "run") / recorded
        address = path.read_text().strip() if path.exists() else None
    if not address:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    os.environ[env_var] = address
    return address


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    """Address of the broker `make test` started. Missing broker: skip locally, fail in CI."""
    return _local_service(
        "TICDC_LAKE_KAFKA_BOOTSTRAP",
        "kafka/bootstrap",
        "no local Kafka broker: run `include/scripts/kafka.sh start` (make test does)",
    )


@pytest.fixture(scope="session")
def kafka_security() -> dict[str, str]:
    """The local broker's SASL listeners, user, password and CA (kafka.sh's security.json).

    TICDC_LAKE_KAFKA_SECURITY may name another security.json. Missing: skip locally, fail in CI.
    """
    import json

    path = Path(
        os.environ.get("TICDC_LAKE_KAFKA_SECURITY")
        or Path(os.environ.get("TICDC_LAKE_HOME") or PROJECT_ROOT / "run") / "kafka" / "security.json"
    )
    if not path.exists():
        missing = (
            f"no SASL listeners on the local broker ({path} is missing): restart it with "
            "`include/scripts/kafka.sh stop; include/scripts/kafka.sh start` (make test starts it)"
        )
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    info: dict[str, str] = json.loads(path.read_text())
    return info


@pytest.fixture(scope="session")
def schema_registry_url() -> str:
    """Base URL of the Confluent-compatible schema registry `make test` started. Missing: skip locally, fail in CI."""
    return _local_service(
        "TICDC_LAKE_REGISTRY_URL",
        "registry/url",
        "no local schema registry: run `include/scripts/registry.sh start` (make test does)",
    )


@pytest.fixture(scope="session")
def s3_env() -> dict[str, str]:
    """AWS_* variables that point a client at the S3 server `make test` started. Missing: skip locally, fail in CI.

    The key pair is include/scripts/s3.sh's local test credential (TICDC_LAKE_S3_ACCESS_KEY/_SECRET_KEY).
    Tests set these with ``monkeypatch.setenv``: the product reads them from the environment.
    """
    endpoint = _local_service(
        "TICDC_LAKE_S3_ENDPOINT",
        "s3/endpoint",
        "no local S3 server: run `include/scripts/s3.sh start` (make test does)",
    )
    return {
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": os.environ.get("TICDC_LAKE_S3_ACCESS_KEY", "ticdc-lake"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("TICDC_LAKE_S3_SECRET_KEY", "ticdc-lake-secret"),
    }


@pytest.fixture(scope="session")
def lake_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TICDC_LAKE_HOME for the whole test run: catalog, warehouse, landing."""
    home = tmp_path_factory.mktemp("lake-home")
    (home / "catalog").mkdir()
    return home


@pytest.fixture(scope="session")
def spark(lake_home: Path) -> Iterator[object]:
    """One local Spark session with the Iceberg runtime and a JDBC (SQLite) catalog named ``lake``."""
    from pyspark.sql import SparkSession

    from ticdc_lake.config import CatalogConfig
    from ticdc_lake.spark.local_session import local_driver
    from ticdc_lake.spark.settings import spark_conf

    catalog = CatalogConfig(uri=f"jdbc:sqlite:{lake_home}/catalog/lake.db", warehouse=f"file://{lake_home}/warehouse")
    builder = SparkSession.builder.appName("ticdc-lake-tests")
    # local[2] with the project's jars, and the class-data archive when there is one; this JVM would
    # write one only when the tests end.
    for key, value in local_driver(spark_conf("lake", catalog), "local[2]", write_archive=False)[0].items():
        builder = builder.config(key, value)
    # This JVM lives for the whole test process: the C1-only setting that suits the short-lived JVMs
    # (above) would leave its hot code without the optimizing compiler, so it keeps tiered compilation.
    short_lived = os.environ.get("SPARK_SUBMIT_OPTS", "")
    os.environ["SPARK_SUBMIT_OPTS"] = short_lived.replace("-XX:TieredStopAtLevel=1", "").strip()
    try:
        session = builder.getOrCreate()
    finally:
        os.environ["SPARK_SUBMIT_OPTS"] = short_lived
    session.sparkContext.setLogLevel("ERROR")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    yield session
    session.stop()


@pytest.fixture(scope="session", autouse=True)
def _airflow_template_db(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The first Airflow home of this test process migrates; the others copy its database (10-20 s each)."""
    from ticdc_lake.cli.airflow_runner import AirflowRunner

    AirflowRunner.template_db = tmp_path_factory.mktemp("airflow-template") / "airflow.db"


def _weight(item: pytest.Item) -> int:
    """0: runs pipelines end to end or through Airflow; 1: starts a JVM or needs the broker; 2: the rest."""
    marks = {m.name for m in item.iter_markers()}
    fixtures = set(getattr(item, "fixturenames", ()))
    if marks & {"e2e", "airflow"}:
        return 0
    if marks & {"spark", "kafka"} or fixtures & {"spark", "kafka_bootstrap", "registry_url"}:
        return 1
    return 2


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Heavy test files first, quick ones last: `make test` deals whole files to two xdist workers
    (``--dist loadfile --no-loadscope-reorder``: xdist would otherwise send the files with the most
    tests first, which puts the one-test end-to-end files last) in this order, and quick files at the
    end let both workers finish together instead of one idling while the other runs the last heavy
    files. Files stay whole and keep their relative order; a file weighs what its heaviest test does."""
    weight: dict[str, int] = {}
    for item in items:
        weight[item.nodeid.split("::")[0]] = min(weight.get(item.nodeid.split("::")[0], 2), _weight(item))
    order = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (weight[item.nodeid.split("::")[0]], order[id(item)]))
