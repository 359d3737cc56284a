"""A missing or unusable ``spark_default`` fails the Spark tasks at their start, naming the connection."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk.exceptions import AirflowFailException

from ticdc_lake.errors import ConfigError
from ticdc_lake_airflow.maintenance_dag import MaintenanceSparkSubmitOperator, build_maintenance_dags
from ticdc_lake_airflow.spark_connection import how_to_set, spark_master
from ticdc_lake_airflow.spark_stages import spark_stage_task

if TYPE_CHECKING:
    from airflow_sandbox import AirflowSandbox

ROOT = Path(__file__).resolve().parents[3]
DEMO_CONFIG = ROOT / "include" / "pipelines.yaml"
CONN_ENV = "AIRFLOW_CONN_SPARK_DEFAULT"
HOW = (
    "create it in the UI (Admin > Connections: type Spark, host local[*] to run on the Airflow worker, or "
    "spark://HOST:7077), with `airflow connections add spark_default --conn-type spark --conn-host 'local[*]'`, "
    'or as the environment variable AIRFLOW_CONN_SPARK_DEFAULT=\'{"conn_type": "spark", "host": "local[*]"}\' '
    "(the JSON form: the URI form spark://local[*] does not parse)"
)
MISSING = (
    "Airflow connection 'spark_default' (the Spark master of the transform and maintenance tasks) is not "
    "defined, or its URI does not parse; " + HOW
)


def test_how_to_set_names_the_connection_and_the_local_default() -> None:
    assert how_to_set("spark_default") == HOW


@pytest.mark.parametrize("value", [None, "spark://local[4]"], ids=["absent", "uri-that-does-not-parse"])
def test_a_missing_connection_names_it_and_how_to_set_it(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv(CONN_ENV, raising=False)
    else:
        monkeypatch.setenv(CONN_ENV, value)
    with pytest.raises(ConfigError) as raised:
        spark_master("spark_default")
    assert str(raised.value) == MISSING
    assert not raised.value.retryable


def test_a_connection_without_host_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONN_ENV, json.dumps({"conn_type": "spark"}))
    with pytest.raises(ConfigError) as raised:
        spark_master("spark_default")
    assert str(raised.value) == (
        "Airflow connection 'spark_default' gives no usable Spark master (it resolves to 'spark://'): set its host "
        "to local[*], spark://HOST:7077, yarn or k8s://https://HOST:PORT; " + HOW
    )


def test_yarn_needs_the_cluster_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow's example ``spark_default`` (host yarn) without HADOOP_CONF_DIR: the error the UI trigger met."""
    monkeypatch.setenv(CONN_ENV, json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"queue": "root.default"}}))
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    with pytest.raises(ConfigError) as raised:
        spark_master("spark_default")
    assert str(raised.value) == (
        "Airflow connection 'spark_default' gives master 'yarn' (Airflow's example connection does), but neither "
        "HADOOP_CONF_DIR nor YARN_CONF_DIR is set for the Airflow worker, so spark-submit cannot find the cluster: "
        "set one of them to the folder of the YARN cluster's configuration, or point the connection at another "
        "master (local[*] runs on the Airflow worker: `airflow connections delete spark_default`, then " + HOW + ")"
    )
    assert spark_master("spark_default", {"HADOOP_CONF_DIR": "/etc/hadoop/conf"}) == "yarn"


@pytest.mark.parametrize("host", ["local[2]", "local[*]", "spark://127.0.0.1:7077"])
def test_usable_masters_pass(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv(CONN_ENV, json.dumps({"conn_type": "spark", "host": host}))
    assert spark_master("spark_default") == host


def test_the_transform_task_fails_before_spark_submit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CONN_ENV, raising=False)
    task = spark_stage_task("transform", config_path=DEMO_CONFIG, pipeline_id="demo")
    with pytest.raises(AirflowFailException) as raised:
        task.execute({})
    assert str(raised.value) == MISSING
    assert task._hook is None  # no spark-submit was built, let alone started


def test_a_due_maintenance_task_fails_before_spark_submit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CONN_ENV, raising=False)
    task = build_maintenance_dags(DEMO_CONFIG)["ticdc_maintenance_lake"].get_task("compact")
    assert isinstance(task, MaintenanceSparkSubmitOperator)
    context: Any = {"params": {"jobs": ["compact"]}, "logical_date": datetime(2026, 1, 1, tzinfo=UTC)}
    with pytest.raises(AirflowFailException) as raised:
        task.execute(context)
    assert str(raised.value) == MISSING


PROBE_DAG = """\
from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG

from ticdc_lake_airflow.spark_stages import spark_stage_task

with DAG("spark_connection_probe", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=UTC)):
    spark_stage_task(
        "transform", config_path={config!r}, pipeline_id="demo", application={application!r},
        retries=3, retry_delay=timedelta(seconds=1),
    )
"""


@pytest.mark.airflow
def test_a_run_without_spark_connection_fails_once_naming_it(airflow_sandbox: AirflowSandbox, tmp_path: Path) -> None:
    """Through Airflow's runner: failed (not up for retry), the message in the log, no spark-submit."""
    application = tmp_path / "never_runs.py"
    application.write_text("raise SystemExit('spark-submit ran')\n", encoding="utf-8")
    (airflow_sandbox.dags / "spark_connection_probe.py").write_text(
        PROBE_DAG.format(config=str(DEMO_CONFIG), application=str(application)), encoding="utf-8"
    )

    result = airflow_sandbox.dags_test("spark_connection_probe", env={"TICDC_LAKE_JARS": str(ROOT / ".jars")})

    output = result.stdout + result.stderr
    # Failed at its first try although it has 3 retries (the runner logs each state it sets).
    assert result.returncode == 1, output[-5000:]
    assert "new_state=failed" in output, output[-5000:]
    assert "up_for_retry" not in output
    assert "Airflow connection 'spark_default' (the Spark master of the transform and maintenance tasks)" in output
    assert "airflow connections add spark_default --conn-type spark --conn-host 'local[*]'" in output
    assert "spark-submit ran" not in output
    assert "Cannot execute" not in output
