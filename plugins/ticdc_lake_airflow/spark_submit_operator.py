"""``PipelineSparkSubmitOperator``: a pipeline stage as one ``spark-submit`` (``spark_stages.spark_stage_task``).

Its own module because the Spark provider's operator import costs about 1.5 s (OpenLineage's
listener and extractors): a DAG file whose pipelines all use a Spark run service never pays it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from ticdc_lake.config import load_config
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.spark.class_sharing import class_sharing
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE, TRANSFORM_DONE
from ticdc_lake.spark.settings import local_driver_conf, spark_conf, spark_jars, with_java_options
from ticdc_lake_airflow.hooks import mask_secrets
from ticdc_lake_airflow.redacting_spark_hook import redacting
from ticdc_lake_airflow.run_report import prefetch_report_imports
from ticdc_lake_airflow.spark_connection import spark_master
from ticdc_lake_airflow.spark_stages import submit_environment, task_spark_log
from ticdc_lake_airflow.stage_outcome import StageLineage, conclude_run


class PipelineSparkSubmitOperator(StageLineage, SparkSubmitOperator):
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
        #: The thread loading the run report's imports, once the driver said its work is done.
        self._report_imports: threading.Thread | None = None

    def _get_hook(self) -> SparkSubmitHook:
        # The provider's hook prints the command line and the driver's output; ours redacts both.
        return redacting(super()._get_hook(), on_line=self._driver_line if self.report else None)

    def _driver_line(self, line: str) -> None:
        """Start the run report's imports (pyiceberg, pyarrow: about 1 CPU s) when the Spark work is done.

        They then overlap Spark's stop and the JVM's exit instead of following ``spark-submit``'s
        exit; started earlier they would compete with the JVM's start or the work for the cores.
        """
        if self._report_imports is None and TRANSFORM_DONE in line:
            self._report_imports = prefetch_report_imports()

    def _exited_by_itself(self) -> bool:
        """Whether ``spark-submit`` (whose script ends by executing the driver JVM) ended by itself, not by
        a signal: only then did the JVM finish writing a class-data archive (a half-written one crashes
        the JVMs that map it)."""
        process = getattr(self._hook, "_submit_sp", None)
        code = getattr(process, "returncode", None)
        return isinstance(code, int) and code >= 0

    def execute(self, context: Context) -> None:
        try:
            config = load_config(self.config_path)
            pipeline = config.pipeline(self.pipeline_id)
            settings = spark_conf(pipeline.catalog, config.catalog_for(pipeline), pipeline)
            jars = spark_jars()
            env_vars = {**submit_environment(self.config_path), **(self.env_vars or {})}
            master = spark_master(self._conn_id, env_vars)
        except TicdcLakeError as exc:
            if exc.retryable:
                raise
            raise AirflowFailException(str(exc)) from exc
        self.conf = {**settings, **(self.conf or {})}
        self.conf.update(local_driver_conf(self.conf, master, {**os.environ, **env_vars}))
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
                if sharing is not None and sharing.publish(exited_by_itself=self._exited_by_itself()):
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
