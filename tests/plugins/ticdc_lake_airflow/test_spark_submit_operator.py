"""The transform task's ``spark-submit``: what it does with the driver's output besides relaying it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowException

from ticdc_lake.spark.exit_codes import TRANSFORM_DONE
from ticdc_lake_airflow.dag_factory import build_all_dags
from ticdc_lake_airflow.spark_stages import spark_stage_task
from ticdc_lake_airflow.spark_submit_operator import PipelineSparkSubmitOperator

ROOT = Path(__file__).resolve().parents[3]
DEMO_CONFIG = ROOT / "include" / "pipelines.yaml"


def test_the_report_s_imports_start_when_the_driver_says_the_spark_work_is_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    transform = next(iter(build_all_dags(DEMO_CONFIG).values())).get_task("transform")
    assert isinstance(transform, PipelineSparkSubmitOperator)
    assert transform.report
    hook = transform._get_hook()
    hook.log.info("INFO [ticdc_lake.spark.transform_job] transform: step 3/3 apply (pipeline 'demo', run 'r')")
    assert transform._report_imports is None
    hook.log.info(f"INFO [ticdc_lake.spark.transform_job] {TRANSFORM_DONE}12.5 s (decode 3.1 s: 2 batch(es), ...)")
    started = transform._report_imports
    assert started is not None
    assert started.name == "run-report-imports"
    hook.log.info(f"INFO [ticdc_lake.spark.transform_job] {TRANSFORM_DONE}12.5 s (a second time)")
    assert transform._report_imports is started  # one thread per attempt
    started.join()  # what it imports: test_run_report, in a fresh interpreter


def test_a_stage_without_report_does_not_watch_the_driver_s_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    task = spark_stage_task("transform", config_path=DEMO_CONFIG, pipeline_id="demo", application=ROOT / "app.py")
    assert not task.report
    task._get_hook().log.info(f"INFO [ticdc_lake.spark.transform_job] {TRANSFORM_DONE}1.0 s (...)")
    assert task._report_imports is None


@pytest.mark.parametrize(("ending", "by_itself"), [("exit 0", True), ("exit 3", True), ("kill -9 $$", False)])
def test_a_class_data_archive_is_published_only_when_spark_submit_ended_by_itself(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ending: str, by_itself: bool
) -> None:
    """The provider's hook runs a ``spark-submit`` (a script first on PATH) that ends as ``ending``: a JVM
    killed while it dumped its class-data archive must not publish it (a half archive crashes JVMs)."""
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    script = tmp_path / "bin" / "spark-submit"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\n{ending}\n", encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{script.parent}:{os.environ['PATH']}")
    monkeypatch.delenv("SPARK_HOME", raising=False)
    task = spark_stage_task("transform", config_path=DEMO_CONFIG, pipeline_id="demo", application=ROOT / "app.py")
    hook = task._get_hook()
    task._hook = hook
    assert not task._exited_by_itself()  # not started yet
    if ending == "exit 0":
        hook.submit(str(ROOT / "app.py"))
    else:
        with pytest.raises(AirflowException, match=r"Error code is: (3|-9)\."):
            hook.submit(str(ROOT / "app.py"))
    assert task._exited_by_itself() is by_itself
