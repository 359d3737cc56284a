"""The Spark task of a pipeline run by a Spark run service instead of a ``spark-submit`` (docs/spark-service.md).

A pipeline with ``spark_service: <connection id>`` gets this operator as its ``transform`` task
(:func:`ticdc_lake_airflow.spark_stages.spark_stage_task`). It sends the run to the service the
connection names (:class:`~ticdc_lake_airflow.spark_service_hook.SparkServiceHook`): the same
config file, pipeline, run id and ``--rebuild`` text a ``spark-submit`` of ``spark_jobs/transform.py``
gets, plus this ticdc-lake's code version, which the service must share. Every line the stage
logs comes back and goes to the task log, at its level, with secrets masked. The stage's exit
code means what ``spark-submit``'s does, and the task ends as the ``spark-submit`` task would
(:func:`~ticdc_lake_airflow.stage_outcome.conclude_run`): report, asset events, metrics,
lineage, no retry after ``EXIT_NOT_RETRYABLE``.

A service that cannot be reached fails the task retryably, saying how to start it; a missing
connection, a refused token or a service of another code version fail it at once. When the task
is killed its connection closes and the service cancels the run's Spark jobs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from ticdc_lake.config import PipelineConfig, load_config
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.redaction import redact
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE
from ticdc_lake.spark.settings import spark_conf
from ticdc_lake.spark_service_client import RunOutcome, RunRequest, SparkServiceClient, code_version
from ticdc_lake_airflow.hooks import mask_secrets
from ticdc_lake_airflow.run_report import prefetch_report_imports
from ticdc_lake_airflow.spark_service_hook import DEFAULT_CONN_ID, SparkServiceHook
from ticdc_lake_airflow.stage_outcome import StageLineage, conclude_run

#: A relayed line: ``LEVEL [logger] message`` (the service's format for the run's log records).
_LINE = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) (?P<rest>.*)$", re.DOTALL)
_METHODS = {"DEBUG": "debug", "INFO": "info", "WARNING": "warning", "WARN": "warning", "ERROR": "error"}


class PipelineSparkServiceOperator(StageLineage, BaseOperator):
    """One pipeline stage run by the Spark run service of the Airflow connection ``conn_id``."""

    template_fields: Sequence[str] = ("config_path", "pipeline_id", "rebuild")
    ui_color = "#fde7c4"

    def __init__(
        self,
        *,
        config_path: str,
        pipeline_id: str,
        conn_id: str = DEFAULT_CONN_ID,
        stage: str = "transform",
        rebuild: str = "",
        report: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.pipeline_id = pipeline_id
        self.conn_id = conn_id
        self.stage = stage
        #: The ``--rebuild`` text (templated): a JSON list of tables or ``"*"``; empty: a normal run.
        self.rebuild = rebuild
        #: Read the run's ledger after the run: summary, asset events, metrics, lineage.
        self.report = report
        self._run_report: Any = None

    def execute(self, context: Context) -> None:
        try:
            config = load_config(self.config_path)
            pipeline = config.pipeline(self.pipeline_id)
            # The stage's lines may quote the catalog's properties: mask their secrets as spark-submit's task does.
            mask_secrets(spark_conf(pipeline.catalog, config.catalog_for(pipeline), pipeline))
            client = SparkServiceHook(self.conn_id).get_conn()
            self._describe(client, pipeline)
        except TicdcLakeError as exc:
            if exc.retryable:
                raise
            raise AirflowFailException(str(exc)) from exc
        request = RunRequest(
            config=self.config_path,
            pipeline=self.pipeline_id,
            run_id=str(context["run_id"]),
            stage=self.stage,
            rebuild=self.rebuild or "",
            version=code_version(),
        )
        if self.report:
            prefetch_report_imports()  # while the service works, this process only waits
        started = time.monotonic()
        try:
            try:
                outcome = client.run(request, self._relay)
            finally:
                self.log.info("%s: the run ended after %.1f s", client.where, time.monotonic() - started)
        except TicdcLakeError as exc:
            if not exc.retryable:  # a refused token or code version: no retry fixes it
                raise AirflowFailException(str(exc)) from exc
            # The service went away during the run: as a killed spark-submit, the next run recovers.
            self._run_report, error = conclude_run(self, context, config, pipeline, report=self.report, failure=exc)
            assert error is not None  # a failure always gives one
            raise error from error.__cause__
        failure = self._failure(outcome, client)
        self._run_report, error = conclude_run(
            self,
            context,
            config,
            pipeline,
            report=self.report,
            failure=failure,
            not_retryable=outcome.exit_code == EXIT_NOT_RETRYABLE,
        )
        if error is not None:
            raise error

    def _describe(self, client: SparkServiceClient, pipeline: PipelineConfig) -> None:
        """Log which service runs the stage (and check it answers before the run is sent)."""
        health = client.health()
        self.log.info(
            "%s of pipeline %r goes to %s (ticdc-lake %s, master %s, application %s, %s runs so far%s); "
            "Spark's own log is in the service's log",
            self.stage,
            pipeline.id,
            client.where,
            health.get("version"),
            health.get("master"),
            health.get("application"),
            health.get("runs"),
            f", now running {health['busy']}: this run waits for it" if health.get("busy") else "",
        )

    def _relay(self, line: str) -> None:
        """One line of the stage's log into the task log, at its level, secrets masked."""
        match = _LINE.match(line)
        if match is None:
            self.log.info("%s", redact(line))
            return
        method = getattr(self.log, _METHODS.get(match.group("level"), "critical"))
        method("%s", redact(match.group("rest")))

    def _failure(self, outcome: RunOutcome, client: SparkServiceClient) -> AirflowException | None:
        """How the run failed, as spark-submit's failure would say it; None when it succeeded."""
        if outcome.exit_code == 0:
            return None
        if outcome.error:
            self.log.error("%s: %s", client.where, redact(outcome.error))
        return AirflowException(
            f"{self.task_id}: the {self.stage} run on {client.where} ended with exit code {outcome.exit_code}"
            + (f": {redact(outcome.error)}" if outcome.error else "")
        )
