"""The Spark stage tasks: what they submit, and one real spark-submit through Airflow's runner."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from textwrap import dedent
from typing import TYPE_CHECKING

import pytest
from airflow.sdk.exceptions import AirflowFailException

from ticdc_lake.errors import ServiceError
from ticdc_lake_airflow.spark_stages import (
    SPARK_JOBS_DIR,
    SPARK_STAGES,
    spark_stage_task,
    spark_stage_tasks,
    submit_environment,
)

if TYPE_CHECKING:
    from airflow_sandbox import AirflowSandbox

ROOT = Path(__file__).resolve().parents[3]
DEMO_CONFIG = ROOT / "include" / "pipelines.yaml"


def test_each_stage_submits_its_entrypoint_with_config_pipeline_and_run_id() -> None:
    tasks = spark_stage_tasks(config_path=DEMO_CONFIG, pipeline_id="demo")
    assert [t.task_id for t in tasks] == ["transform"] == list(SPARK_STAGES)
    for task in tasks:
        assert task.application == str(ROOT / "spark_jobs" / f"{task.task_id}.py")
        assert Path(task.application).parent == SPARK_JOBS_DIR
        assert task.application_args == [
            "--config",
            str(DEMO_CONFIG),
            "--pipeline",
            "demo",
            "--run-id",
            "{{ run_id }}",
        ]
        assert task.name == f"ticdc-demo-{task.task_id}"
        assert task._conn_id == "spark_default"
        # Resolved at run time: parsing must work before `make jars`.
        assert task.jars is None
        assert task.conf is None


def test_submit_environment_puts_this_python_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TICDC_LAKE_HOME", raising=False)
    monkeypatch.setenv("TICDC_LAKE_JARS", str(tmp_path / "jars"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    env = submit_environment(str(DEMO_CONFIG))
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == sys.executable
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert env["PATH"].endswith(":/usr/bin:/bin")
    assert env["TICDC_LAKE_CONFIG"] == str(DEMO_CONFIG)
    assert env["TICDC_LAKE_HOME"] == str(ROOT / "run")
    assert env["TICDC_LAKE_JARS"] == str(tmp_path / "jars")


def test_missing_jars_are_left_to_retries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TICDC_LAKE_JARS", str(tmp_path))
    task = spark_stage_task("decode", config_path=DEMO_CONFIG, pipeline_id="demo")
    with pytest.raises(ServiceError, match="run `make jars`"):
        task.execute({})


def test_unknown_pipeline_fails_without_retry() -> None:
    task = spark_stage_task("apply", config_path=DEMO_CONFIG, pipeline_id="nope")
    with pytest.raises(AirflowFailException, match="no pipeline 'nope'"):
        task.execute({})


APPLICATION = """\
import json, logging, os, sys
from pyspark.sql import SparkSession

from ticdc_lake.spark.entrypoint import configure_logging

configure_logging()
logging.getLogger("ticdc_lake.probe").warning("probe says hello")
spark = SparkSession.builder.getOrCreate()
executors = spark.sparkContext.parallelize(range(4), 2).map(lambda _: __import__("sys").executable).collect()
result = {
    "argv": sys.argv[1:],
    "driver_python": sys.executable,
    "executor_pythons": sorted(set(executors)),
    "app_name": spark.conf.get("spark.app.name"),
    "catalog_uri": spark.conf.get("spark.sql.catalog.lake.uri"),
    "jars": spark.conf.get("spark.jars"),
    "env": {k: os.environ.get(k) for k in ("TICDC_LAKE_CONFIG", "TICDC_LAKE_HOME", "TICDC_LAKE_JARS")},
    "spark_log": spark.sparkContext._jvm.java.lang.System.getProperty("ticdc.spark.log.file"),
}
with open(os.environ["PROBE_OUTPUT"], "w") as out:
    json.dump(result, out)
spark.stop()
"""

PROBE_DAG = """\
from datetime import UTC, datetime

from airflow.sdk import DAG

from ticdc_lake_airflow.spark_stages import spark_stage_task

with DAG("spark_stage_probe", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=UTC)):
    spark_stage_task("decode", config_path={config!r}, pipeline_id="demo", application={application!r})
"""


@pytest.mark.airflow
@pytest.mark.spark
def test_stage_runs_spark_submit_through_airflow(airflow_sandbox: AirflowSandbox, tmp_path: Path) -> None:
    """spark-submit found without the venv on PATH; driver and executors run this Python."""
    config = tmp_path / "pipelines.yaml"
    config.write_text(
        dedent(f"""\
            catalogs:
              lake: {{uri: "jdbc:sqlite:{tmp_path}/catalog.db", warehouse: "file://{tmp_path}/warehouse"}}
            pipelines:
              - id: demo
                protocol: simple-json
                kafka: {{topics: [ticdc-demo]}}
                landing_uri: file://{tmp_path}/landing
                catalog: lake
                spark_conf: {{spark.driver.memory: 1g}}
        """),
        encoding="utf-8",
    )
    application = tmp_path / "probe_app.py"
    application.write_text(APPLICATION, encoding="utf-8")
    (airflow_sandbox.dags / "spark_stage_probe.py").write_text(
        PROBE_DAG.format(config=str(config), application=str(application)), encoding="utf-8"
    )
    output = tmp_path / "result.json"
    run_env = {
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "TICDC_LAKE_JARS": str(ROOT / ".jars"),
        "PROBE_OUTPUT": str(output),
    }
    assert str(Path(sys.executable).parent) not in airflow_sandbox.env["PATH"].split(":")

    result = airflow_sandbox.dags_test("spark_stage_probe", env=run_env)

    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    assert airflow_sandbox.task_states("spark_stage_probe") == {"decode": "success"}
    probe = json.loads(output.read_text(encoding="utf-8"))
    assert probe["argv"][:4] == ["--config", str(config), "--pipeline", "demo"]
    assert probe["argv"][4] == "--run-id"
    assert probe["argv"][5].startswith("manual__")
    assert probe["driver_python"] == sys.executable
    assert probe["executor_pythons"] == [sys.executable]
    assert probe["app_name"] == "ticdc-demo-decode"
    assert probe["catalog_uri"] == f"jdbc:sqlite:{tmp_path}/catalog.db"
    assert "iceberg-spark-runtime" in probe["jars"]
    assert probe["env"] == {
        "TICDC_LAKE_CONFIG": str(config),
        "TICDC_LAKE_HOME": airflow_sandbox.env["TICDC_LAKE_HOME"],
        "TICDC_LAKE_JARS": str(ROOT / ".jars"),
    }
    # The task log: the job's own lines (at their level, no second time stamp) and Spark's warnings;
    # Spark's INFO start-up lines go to the attempt's own file, named in the task log.
    task_log = result.stdout + result.stderr
    run_id = probe["argv"][5]
    spark_log = Path(airflow_sandbox.env["TICDC_LAKE_HOME"]) / "logs/spark/spark_stage_probe" / run_id / "decode.1.log"
    assert probe["spark_log"] == str(spark_log)
    assert f"Spark's own log (INFO and up) goes to {spark_log}; its warnings and errors also show here" in task_log
    assert re.search(r"\[warning\s*\] WARNING \[ticdc_lake\.probe\] probe says hello", task_log), task_log[-5000:]
    assert "INFO SparkContext" not in task_log
    assert "Running Spark version" not in task_log
    assert "log4j2-defaults.properties" not in task_log
    assert "INFO org.apache.spark.SparkContext: Running Spark version" in spark_log.read_text(encoding="utf-8")
