"""The Spark task of a pipeline: one ``spark-submit`` of ``spark_jobs/<stage>.py`` (``transform``).

The Spark settings and jars are resolved when the task runs, not when the DAG file is parsed:
:func:`ticdc_lake.spark.settings.spark_jars` raises while the jars are not fetched yet, and a DAG
must still load then (its tasks fail with the message that says to run ``make jars``).

``spark-submit`` runs with the Python that runs Airflow: ``PYSPARK_PYTHON`` and
``PYSPARK_DRIVER_PYTHON`` are ``sys.executable`` and that Python's scripts folder leads ``PATH``,
so the ``spark-submit`` installed with PySpark is found even when the virtualenv is not
activated. The master comes from the ``spark_default`` connection, checked before the submit
(:func:`ticdc_lake_airflow.spark_connection.spark_master`: a missing or unusable connection fails
the task at once, naming it); driver runs in client mode (the provider refuses ``env_vars`` in
standalone cluster mode).

A pipeline that sets ``spark_service`` gets a
:class:`~ticdc_lake_airflow.spark_service_operator.PipelineSparkServiceOperator` instead: the
same stage, run by a long-lived Spark run service (docs/spark-service.md).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from airflow.sdk import Context

from ticdc_lake.config import CONFIG_ENV, HOME_ENV, lake_home
from ticdc_lake.errors import ConfigError
from ticdc_lake.spark.settings import JARS_ENV, TASK_LOG_ENV, driver_log_conf, jars_dir
from ticdc_lake_airflow.assets import transform_outlets
from ticdc_lake_airflow.spark_service_operator import PipelineSparkServiceOperator

if TYPE_CHECKING:  # the Spark provider's import costs ~1.5 s: only DAGs with spark-submit tasks pay it
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from ticdc_lake_airflow.spark_submit_operator import PipelineSparkSubmitOperator

#: The Spark tasks of a pipeline run, in order: one application runs decode, schema history and
#: apply (``spark_jobs/transform.py``), so a run pays one JVM start, not three.
SPARK_STAGES: tuple[str, ...] = ("transform",)
#: The repository (or image) root: ``plugins/`` and ``spark_jobs/`` sit side by side in it.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
SPARK_JOBS_DIR = PROJECT_ROOT / "spark_jobs"
SPARK_CONN_ID = "spark_default"


def task_spark_log(task: SparkSubmitOperator, config_path: str, context: Context) -> dict[str, str]:
    """Spark settings sending the driver's Spark log of this task attempt to its own file (logged).

    ``<TICDC_LAKE_HOME>/logs/spark/<dag id>/<run id>/<task id>.<try>.log`` gets Spark's, Hadoop's and
    Iceberg's log from INFO up; the task log keeps their warnings and errors and the job's own lines.
    """
    run_id = str(context.get("run_id") or "manual").replace("/", "_")
    attempt = getattr(context.get("ti"), "try_number", None) or 1
    log_file = lake_home(config_path) / "logs" / "spark" / task.dag_id / run_id / f"{task.task_id}.{attempt}.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    task.log.info("Spark's own log (INFO and up) goes to %s; its warnings and errors also show here", log_file)
    return driver_log_conf(log_file, task.conf or {})


def submit_environment(config_path: str) -> dict[str, str]:
    """Environment of ``spark-submit`` and the driver: this Python, the config, home and jars."""
    config_file = Path(config_path).resolve()
    python = sys.executable
    bin_dirs = [str(Path(python).parent), sysconfig.get_path("scripts")]
    path = [*dict.fromkeys(bin_dirs), *os.environ.get("PATH", os.defpath).split(os.pathsep)]
    return {
        CONFIG_ENV: str(config_file),
        HOME_ENV: str(lake_home(config_file)),
        JARS_ENV: str(jars_dir().resolve()),
        TASK_LOG_ENV: "1",  # the task log stamps each line: the job's lines carry no time of their own
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "PATH": os.pathsep.join(dict.fromkeys(p for p in path if p)),
    }


@overload
def spark_stage_task(
    stage: str,
    *,
    config_path: str | Path,
    pipeline_id: str,
    application: str | Path | None = None,
    conn_id: str = SPARK_CONN_ID,
    extra_args: Sequence[str] = (),
    rebuild: str = "",
    spark_service: None = None,
    **kwargs: Any,
) -> PipelineSparkSubmitOperator: ...


@overload
def spark_stage_task(
    stage: str,
    *,
    config_path: str | Path,
    pipeline_id: str,
    application: str | Path | None = None,
    conn_id: str = SPARK_CONN_ID,
    extra_args: Sequence[str] = (),
    rebuild: str = "",
    spark_service: str,
    **kwargs: Any,
) -> PipelineSparkServiceOperator: ...


@overload
def spark_stage_task(
    stage: str,
    *,
    config_path: str | Path,
    pipeline_id: str,
    application: str | Path | None = None,
    conn_id: str = SPARK_CONN_ID,
    extra_args: Sequence[str] = (),
    rebuild: str = "",
    spark_service: str | None,
    **kwargs: Any,
) -> PipelineSparkSubmitOperator | PipelineSparkServiceOperator: ...


def spark_stage_task(
    stage: str,
    *,
    config_path: str | Path,
    pipeline_id: str,
    application: str | Path | None = None,
    conn_id: str = SPARK_CONN_ID,
    extra_args: Sequence[str] = (),
    rebuild: str = "",
    spark_service: str | None = None,
    **kwargs: Any,
) -> PipelineSparkSubmitOperator | PipelineSparkServiceOperator:
    """The task ``stage`` (task id = stage) running ``spark_jobs/<stage>.py`` for one pipeline run.

    ``application`` replaces the entrypoint (tests use a tiny one); it receives the same
    ``--config PATH --pipeline ID --run-id RUN_ID`` arguments, then ``extra_args`` and, when
    ``rebuild`` (templated) is given, ``--rebuild REBUILD``.

    With ``spark_service`` (the pipeline's setting: an Airflow connection id) the stage runs in
    that Spark run service instead of a ``spark-submit`` (docs/spark-service.md); it runs the
    stage's own job, so ``application`` and ``extra_args`` cannot be given then.
    """
    config_file = str(Path(config_path).resolve())
    if application is None and stage == SPARK_STAGES[-1]:
        # The run's last Spark step applies: it reports the run and updates the pipeline's and
        # tables' assets (ticdc_lake_airflow.assets).
        kwargs.setdefault("report", True)
        kwargs.setdefault("outlets", transform_outlets(pipeline_id))
    if spark_service is not None:
        if application is not None or extra_args:
            raise ConfigError(
                f"pipeline {pipeline_id!r}, task {stage!r}: a Spark run service ({spark_service!r}) runs the stage's "
                "own job with its own arguments; application and extra_args only apply to spark-submit"
            )
        return PipelineSparkServiceOperator(
            task_id=stage,
            config_path=config_file,
            pipeline_id=pipeline_id,
            conn_id=spark_service,
            stage=stage,
            rebuild=rebuild,
            **kwargs,
        )
    from ticdc_lake_airflow.spark_submit_operator import PipelineSparkSubmitOperator

    app = Path(application) if application is not None else SPARK_JOBS_DIR / f"{stage}.py"
    rebuild_args = ["--rebuild", rebuild] if rebuild else []
    return PipelineSparkSubmitOperator(
        task_id=stage,
        config_path=config_file,
        pipeline_id=pipeline_id,
        application=str(app.resolve()),
        application_args=[
            *("--config", config_file, "--pipeline", pipeline_id, "--run-id", "{{ run_id }}"),
            *extra_args,
            *rebuild_args,
        ],
        conn_id=conn_id,
        name=f"ticdc-{pipeline_id}-{stage}",
        **kwargs,
    )


def spark_stage_tasks(*, config_path: str | Path, pipeline_id: str) -> list[PipelineSparkSubmitOperator]:
    """The Spark tasks of a pipeline run (``SPARK_STAGES``), in run order (not yet chained)."""
    return [spark_stage_task(s, config_path=config_path, pipeline_id=pipeline_id) for s in SPARK_STAGES]
