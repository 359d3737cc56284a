"""A fresh home's SQLite catalog works in Spark; a catalog Iceberg cannot open fails once, saying what to do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from ticdc_lake.catalog import catalog_failure
from ticdc_lake.config import LakeConfig, load_config
from ticdc_lake.errors import ConfigError
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE
from ticdc_lake.spark.session import pipeline_session

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[3]


def _config(tmp_path: Path, catalog: str, home: Path) -> LakeConfig:
    path = tmp_path / "pipelines.yaml"
    path.write_text(
        dedent(f"""\
            catalogs:
              {catalog}: {{uri: "jdbc:sqlite:{home}/catalog/lake.db", warehouse: "file://{home}/warehouse"}}
            pipelines:
              - id: fresh
                protocol: simple-json
                kafka: {{topics: [ticdc-fresh]}}
                landing_uri: file://{home}/landing
                catalog: {catalog}
        """),
        encoding="utf-8",
    )
    return load_config(path)


def _message(home: Path) -> str:
    return (
        f"catalog 'broken_lake': Iceberg cannot open its SQLite file {home}/catalog/lake.db (uri jdbc:sqlite:{home}"
        "/catalog/lake.db) (org.sqlite.SQLiteException: [SQLITE_CANTOPEN] Unable to open the database file (unable "
        "to open database file)); the uri must name a file, not a folder, in a folder the user running Spark can "
        "write: fix the file or folder, or change the catalog's uri. A retry cannot fix this"
    )


def test_a_fresh_home_gets_its_sqlite_catalog_folder(spark: Any, tmp_path: Path) -> None:
    """The README's catalog, nothing created yet: the session creates the folder, Iceberg the file."""
    home = tmp_path / "fresh-home"
    config = _config(tmp_path, "fresh_lake", home)
    try:
        session = pipeline_session(config, config.pipeline("fresh"), "transform")
        session.sql("CREATE NAMESPACE fresh_lake.shop")
        assert [r[0] for r in session.sql("SHOW NAMESPACES IN fresh_lake").collect()] == ["shop"]
    finally:
        spark.sparkContext.setLogLevel("ERROR")  # the shared test session's level
    assert (home / "catalog" / "lake.db").is_file()


def test_failed_to_connect_to_a_sqlite_catalog_is_not_retryable(spark: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "catalog" / "lake.db").mkdir(parents=True)  # a folder where the SQLite file should be
    config = _config(tmp_path, "broken_lake", home)
    catalog = config.catalogs["broken_lake"]
    spark.conf.set("spark.sql.catalog.broken_lake", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.broken_lake.type", "jdbc")
    spark.conf.set("spark.sql.catalog.broken_lake.uri", catalog.uri)
    spark.conf.set("spark.sql.catalog.broken_lake.warehouse", catalog.warehouse)
    with pytest.raises(Exception, match="UncheckedSQLException: Failed to connect") as raised:
        spark.sql("SHOW NAMESPACES IN broken_lake").collect()
    failure = catalog_failure("broken_lake", catalog, raised.value)
    assert isinstance(failure, ConfigError)
    assert str(failure) == _message(home)
    assert not failure.retryable
    assert catalog_failure("broken_lake", catalog, RuntimeError("something else")) is None


def test_the_stage_exits_not_retryable_when_the_catalog_cannot_be_opened(tmp_path: Path) -> None:
    """``spark_jobs/transform.py`` in its own JVM: exit 3 (the Airflow task fails without retries)."""
    home = tmp_path / "home"
    (home / "catalog" / "lake.db").mkdir(parents=True)
    config = _config(tmp_path, "broken_lake", home)
    command = [sys.executable, str(REPO / "spark_jobs" / "transform.py"), "--config", config.source_path]
    result = subprocess.run(
        [*command, "--pipeline", "fresh", "--run-id", "run-1"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == EXIT_NOT_RETRYABLE, result.stderr[-3000:]
    assert result.stderr.splitlines()[-1] == f"ERROR: transform failed: {_message(home)}"
