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
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, overload

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from ticdc_lake.config import CONFIG_ENV, HOME_ENV, lake_home, load_config
from ticdc_lake.errors import ConfigError, TicdcLakeError
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE
from ticdc_lake.spark.settings import (
    JARS_ENV,
    TASK_LOG_ENV,
    class_sharing,
    driver_log_conf,
    jars_dir,
    spark_conf,
    spark_jars,
    with_java_options,
)
from ticdc_lake_airflow.assets import transform_outlets
from ticdc_lake_airflow.hooks import mask_secrets
from ticdc_lake_airflow.redacting_spark_hook import redacting
from ticdc_lake_airflow.spark_connection import spark_master
from ticdc_lake_airflow.spark_service_operator import PipelineSparkServiceOperator
from ticdc_lake_airflow.stage_outcome import conclude_run, stage_lineage

#: The Spark tasks of a pipeline run, in order: one application runs decode, schema history and
#: apply (``spark_jobs/transform.py``), so a run pays one JVM start, not three.
SPARK_STAGES: tuple[str, ...] = ("transform",)
#: The repository (or image) root: ``plugins/`` and ``spark_jobs/`` sit side by side in it.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
SPARK_JOBS_DIR = PROJECT_ROOT / "spark_jobs"
SPARK_CONN_ID = "spark_default"


class PipelineSparkSubmitOperator(SparkSubmitOperator):
    """``spark-submit`` of one pipeline stage; Spark settings, jars and environment filled at run time.

    ``conf``, ``jars`` and ``env_vars`` given to the constructor are added on top of (and win
    over) what the pipeline configuration resolves to.
    """

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "config_path", "pipeline_id")
    ui_color = "#fdf0e2"

    def __init__(self, *, config_path: str, pipeline_id: str, report: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.pipeline_id = pipeline_id
        #: Read the run's ledger after the submit: summary, asset events, metrics, lineage
        #: (``ticdc_lake_airflow.run_report``).
        self.report = report
        self._run_report: Any = None

    def _get_hook(self) -> SparkSubmitHook:
        # The provider's hook prints the command line and the driver's output; ours redacts both.
        return redacting(super()._get_hook())

    def execute(self, context: Context) -> None:
        try:
            config = load_config(self.config_path)
            pipeline = config.pipeline(self.pipeline_id)
            settings = spark_conf(pipeline.catalog, config.catalog_for(pipeline), pipeline)
            jars = spark_jars()
            env_vars = {**submit_environment(self.config_path), **(self.env_vars or {})}
            spark_master(self._conn_id, env_vars)
        except TicdcLakeError as exc:
            if exc.retryable:
                raise
            raise AirflowFailException(str(exc)) from exc
        self.conf = {**settings, **(self.conf or {})}
        self.conf.update(task_spark_log(self, self.config_path, context))
        sharing = class_sharing(self.conf, {**os.environ, **env_vars})
        if sharing is not None:
            self.conf.update(with_java_options(self.conf, sharing.options))
            if sharing.pending is None:
                self.log.info("driver JVM: class-data archive %s", sharing.archive)
            else:
                self.log.info("driver JVM: writes its class-data archive at exit (first run with this Java and Spark)")
        self.jars = ",".join([*jars, *([self.jars] if self.jars else [])])
        self.env_vars = env_vars
        # SparkSubmitHook logs the whole command line (--conf key=value): secrets in the catalog's
        # properties (s3.secret-access-key, jdbc.password, tokens) must be masked in the task log.
        mask_secrets(self.conf)
        mask_secrets(self.env_vars)
        self._hook = None  # built from the settings above by SparkSubmitOperator.execute
        submitted = time.monotonic()
        try:
            try:
                super().execute(context)
            finally:
                self.log.info("spark-submit exited after %.1f s", time.monotonic() - submitted)
                if sharing is not None and sharing.publish():
                    self.log.info("driver JVM: class-data archive %s written for later runs", sharing.archive)
        except AirflowException as exc:
            # spark-submit's exit code of the stage: EXIT_NOT_RETRYABLE for errors a retry cannot fix.
            not_retryable = f"Error code is: {EXIT_NOT_RETRYABLE}." in str(exc)
            self._run_report, error = conclude_run(
                self, context, config, pipeline, report=self.report, failure=exc, not_retryable=not_retryable
            )
            assert error is not None  # a failure always gives one
            raise error from error.__cause__
        self._run_report, _ = conclude_run(self, context, config, pipeline, report=self.report)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Input: the landed batches; outputs: the Iceberg tables this run changed (``lineage``)."""
        return stage_lineage(self.config_path, self.pipeline_id, self._run_report)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        return self.get_openlineage_facets_on_complete(task_instance)


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
