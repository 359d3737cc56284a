"""The Spark run service's connection, the transform task built for it, and how its run ends.

The end-to-end runs through a real service are in tests/e2e/test_spark_service.py; these are the
fast parts: exact messages of a missing or incomplete connection, which operator a pipeline gets,
the shared ending of a failed run, and an unreachable service (a real closed port).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from ticdc_lake.config import load_config
from ticdc_lake.errors import ConfigError, ServiceError
from ticdc_lake_airflow.dag_factory import build_all_dags
from ticdc_lake_airflow.spark_service_hook import SparkServiceHook, how_to_set
from ticdc_lake_airflow.spark_service_operator import PipelineSparkServiceOperator
from ticdc_lake_airflow.spark_stages import spark_stage_task
from ticdc_lake_airflow.spark_submit_operator import PipelineSparkSubmitOperator
from ticdc_lake_airflow.stage_outcome import conclude_run

ROOT = Path(__file__).resolve().parents[3]
DEMO_CONFIG = ROOT / "include" / "pipelines.yaml"
HOW = (
    "create it in the UI (Admin > Connections: type Generic, host and port of the service, password = its "
    "token, the content of <lake home>/spark-service.token), with `airflow connections add warm_spark "
    '--conn-type generic --conn-host 127.0.0.1 --conn-port 18090 --conn-password "$(cat run/spark-service.token)"`, '
    "or as the environment variable AIRFLOW_CONN_WARM_SPARK='"
    '{"conn_type": "generic", "host": "127.0.0.1", "port": 18090, "password": "<token file content>"}\' '
    "(docs/spark-service.md)"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_how_to_set_gives_the_three_ways() -> None:
    assert how_to_set("warm_spark") == HOW


def test_a_missing_connection_fails_naming_it_and_how_to_set_it() -> None:
    with pytest.raises(ConfigError) as raised:
        SparkServiceHook("warm_spark").get_conn()
    assert str(raised.value) == (
        "Airflow connection 'warm_spark' (the pipeline's spark_service: the Spark run service) is not defined; "
        "start the service (include/scripts/spark_service.sh start) and " + HOW
    )
    assert raised.value.retryable is False


def test_a_connection_without_password_fails_naming_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_WARM_SPARK", json.dumps({"conn_type": "generic", "host": "127.0.0.1"}))
    with pytest.raises(ConfigError) as raised:
        SparkServiceHook("warm_spark").get_conn()
    assert str(raised.value) == (
        "Airflow connection 'warm_spark' (the pipeline's spark_service) has no port and no password: it needs the "
        "host and port the Spark run service listens on and its token as the password; " + HOW
    )


def test_a_complete_connection_gives_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    connection = {"conn_type": "generic", "host": " spark-service ", "port": 18091, "password": "t0ken"}
    monkeypatch.setenv("AIRFLOW_CONN_WARM_SPARK", json.dumps(connection))
    client = SparkServiceHook("warm_spark").get_conn()
    assert (client.host, client.port, client.token) == ("spark-service", 18091, "t0ken")


def test_spark_stage_task_picks_the_service_operator_when_the_pipeline_names_a_service(tmp_path: Path) -> None:
    service = spark_stage_task(
        "transform", config_path=DEMO_CONFIG, pipeline_id="demo", rebuild='["a.b"]', spark_service="warm_spark"
    )
    assert isinstance(service, PipelineSparkServiceOperator)
    assert (service.task_id, service.conn_id, service.stage, service.rebuild) == (
        "transform",
        "warm_spark",
        "transform",
        '["a.b"]',
    )
    assert (service.config_path, service.pipeline_id, service.report) == (str(DEMO_CONFIG), "demo", True)
    submit = spark_stage_task("transform", config_path=DEMO_CONFIG, pipeline_id="demo", rebuild='["a.b"]')
    assert isinstance(submit, PipelineSparkSubmitOperator)
    assert (submit.application_args or [])[-2:] == ["--rebuild", '["a.b"]']
    assert service.outlets == submit.outlets
    with pytest.raises(ConfigError) as raised:
        spark_stage_task(
            "transform", config_path=DEMO_CONFIG, pipeline_id="demo", application="x.py", spark_service="s"
        )
    assert str(raised.value) == (
        "pipeline 'demo', task 'transform': a Spark run service ('s') runs the stage's own job with its own "
        "arguments; application and extra_args only apply to spark-submit"
    )


def test_the_dag_of_a_pipeline_with_spark_service_sends_its_transform_there(tmp_path: Path) -> None:
    config = tmp_path / "pipelines.yaml"
    text = DEMO_CONFIG.read_text(encoding="utf-8").replace(
        "    protocol: simple-json", "    protocol: simple-json\n    spark_service: warm_spark", 1
    )
    config.write_text(text, encoding="utf-8")
    assert load_config(config).pipeline("demo").spark_service == "warm_spark"
    transform = build_all_dags(config)["ticdc_demo"].get_task("transform")
    assert isinstance(transform, PipelineSparkServiceOperator)
    assert transform.conn_id == "warm_spark"
    assert transform.rebuild == "{{ (params.rebuild or []) | tojson }}"
    doc = build_all_dags(config)["ticdc_demo"].doc_md or ""
    spark_row = (
        "| Spark (`transform`) | the Spark run service of Airflow connection `warm_spark` (docs/spark-service.md) |"
    )
    assert spark_row in doc
    default_doc = build_all_dags(DEMO_CONFIG)["ticdc_demo"].doc_md or ""
    assert "| Spark (`transform`) | `spark-submit` per run, master from Airflow connection `spark_default` |" in (
        default_doc
    )
    assert load_config(DEMO_CONFIG).pipeline("demo").spark_service is None
    assert isinstance(build_all_dags(DEMO_CONFIG)["ticdc_demo"].get_task("transform"), PipelineSparkSubmitOperator)


def test_a_failed_stage_ends_as_spark_submit_would() -> None:
    config = load_config(DEMO_CONFIG)
    pipeline = config.pipeline("demo")
    task = PipelineSparkServiceOperator(task_id="transform", config_path=str(DEMO_CONFIG), pipeline_id="demo")
    failure = AirflowException("the run ended with exit code 3")
    report, error = conclude_run(task, {}, config, pipeline, report=False, failure=failure, not_retryable=True)
    assert report is None
    assert isinstance(error, AirflowFailException)
    assert str(error) == "transform failed with an error that a retry cannot fix; the reason is in the log above"
    assert error.__cause__ is failure
    assert conclude_run(task, {}, config, pipeline, report=False, failure=failure) == (None, failure)
    assert conclude_run(task, {}, config, pipeline, report=False) == (None, None)


def test_an_unreachable_service_is_a_retryable_failure_saying_how_to_start_it(monkeypatch: pytest.MonkeyPatch) -> None:
    port = _free_port()
    connection = {"conn_type": "generic", "host": "127.0.0.1", "port": port, "password": "t0ken"}
    monkeypatch.setenv("AIRFLOW_CONN_WARM_SPARK", json.dumps(connection))
    task = PipelineSparkServiceOperator(
        task_id="transform", config_path=str(DEMO_CONFIG), pipeline_id="demo", conn_id="warm_spark"
    )
    with pytest.raises(ServiceError) as raised:
        task.execute({"run_id": "manual__1"})
    assert raised.value.retryable is True
    assert str(raised.value).startswith(f"cannot reach the Spark run service at 127.0.0.1:{port} (")
    assert str(raised.value).endswith(
        "). Start it (include/scripts/spark_service.sh start, or the spark-service service of docker-compose.yml), "
        "or remove the pipeline's spark_service setting to run spark-submit per run (docs/spark-service.md)"
    )


def test_a_missing_connection_fails_the_task_without_retry() -> None:
    task = PipelineSparkServiceOperator(
        task_id="transform", config_path=str(DEMO_CONFIG), pipeline_id="demo", conn_id="warm_spark"
    )
    with pytest.raises(AirflowFailException, match=r"^Airflow connection 'warm_spark' \(the pipeline's spark_service"):
        task.execute({"run_id": "manual__1"})


def test_relayed_lines_keep_their_level_and_lose_their_secrets(capsys: pytest.CaptureFixture[str]) -> None:
    from ticdc_lake.redaction import register_secrets

    register_secrets({"jdbc.password": "hunter2-secret"})
    task = PipelineSparkServiceOperator(task_id="transform", config_path=str(DEMO_CONFIG), pipeline_id="demo")
    lines = [
        "INFO [ticdc_lake.transform] transform: done in 1.2 s",
        "WARNING [ticdc_lake.apply] table db.t held",
        "ERROR [ticdc_lake.transform] transform failed: password hunter2-secret refused",
        "a line without a level",
    ]
    capsys.readouterr()
    for line in lines:
        task._relay(line)
    # The task logger (structlog) prints "<time> [<level>  ] <message>  [<logger>] loc=...".
    printed = re.findall(r"\[(\w+) *\] (.*?) +\[airflow\.task\.", capsys.readouterr().out)
    assert printed == [
        ("info", "[ticdc_lake.transform] transform: done in 1.2 s"),
        ("warning", "[ticdc_lake.apply] table db.t held"),
        ("error", "[ticdc_lake.transform] transform failed: password *** refused"),
        ("info", "a line without a level"),
    ]


def test_a_dag_file_whose_pipelines_use_a_service_does_not_import_the_spark_provider(tmp_path: Path) -> None:
    # The provider's operator import costs ~1.5 s of every DAG parse and task start (OpenLineage).
    config = tmp_path / "pipelines.yaml"
    config.write_text(
        DEMO_CONFIG.read_text(encoding="utf-8").replace("  - id: demo\n", "  - id: demo\n    spark_service: warm\n", 1)
    )
    code = (
        "import sys\n"
        "from ticdc_lake_airflow.dag_factory import build_all_dags\n"
        f"dags = build_all_dags({str(config)!r})\n"
        "print(type(dags['ticdc_demo'].get_task('transform')).__name__)\n"
        "heavy = ('airflow.providers.apache.spark.operators', 'airflow.providers.apache.spark.hooks')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "include"), str(ROOT / "plugins")])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["PipelineSparkServiceOperator", "[]"]


def test_both_ways_of_running_the_transform_report_the_same_lineage() -> None:
    submit = spark_stage_task("transform", config_path=DEMO_CONFIG, pipeline_id="demo")
    service = spark_stage_task("transform", config_path=DEMO_CONFIG, pipeline_id="demo", spark_service="warm")
    facets = [task.get_openlineage_facets_on_failure(None) for task in (submit, service)]
    assert facets[0] == facets[1]
    assert [d.name.rsplit("/", 2)[-2:] for d in facets[0].inputs] == [["landing", "demo"]]  # the landed batches
