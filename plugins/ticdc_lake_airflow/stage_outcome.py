"""What a pipeline's Spark task does once its stage ended, however it ran (``spark-submit`` or the service).

Both :class:`~ticdc_lake_airflow.spark_submit_operator.PipelineSparkSubmitOperator` and
:class:`~ticdc_lake_airflow.spark_service_operator.PipelineSparkServiceOperator` end with
:func:`conclude_run`: the run's report (summary lines, metrics, asset events on success), then the
error Airflow must see. A stage that exited with ``EXIT_NOT_RETRYABLE`` (a bad config, a concurrent
run that did not finish in time) fails the task without retries; a failure with failed tables
names them; any other failure is left to the task's retries.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from ticdc_lake.config import LakeConfig, PipelineConfig, load_config
from ticdc_lake_airflow.lineage import transform_lineage
from ticdc_lake_airflow.run_report import RunReport, failed_tables, report_run


def conclude_run(
    task: BaseOperator,
    context: Context,
    config: LakeConfig,
    pipeline: PipelineConfig,
    *,
    report: bool,
    failure: BaseException | None = None,
    not_retryable: bool = False,
) -> tuple[RunReport | None, BaseException | None]:
    """The run's report (None without ``report`` or when unreadable) and the error to raise (None: success).

    ``failure`` is how the stage failed (None: it succeeded); ``not_retryable``: it exited with
    ``EXIT_NOT_RETRYABLE``. The error returned is ``failure`` itself when Airflow's retries should
    handle it as it is.
    """
    run_report = report_run(context, config, pipeline, succeeded=failure is None, logger=task.log) if report else None
    if failure is None:
        return run_report, None
    failed = failed_tables(run_report) if run_report is not None else ""
    error: BaseException
    if not_retryable:
        error = AirflowFailException(
            f"{task.task_id} failed with an error that a retry cannot fix; the reason is in the log above" + failed
        )
    elif failed:
        error = AirflowException(f"{task.task_id} failed{failed}")
    else:
        return run_report, failure
    error.__cause__ = failure
    return run_report, error


class StageLineage:
    """OpenLineage facets of a pipeline's Spark task, whichever way it runs: the landed batches in, the
    tables the run changed out (its ``config_path``, ``pipeline_id`` and the report it kept)."""

    config_path: str
    pipeline_id: str
    _run_report: RunReport | None

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        config = load_config(self.config_path)
        pipeline = config.pipeline(self.pipeline_id)
        return transform_lineage(pipeline, config.catalog_for(pipeline), self._run_report)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        return self.get_openlineage_facets_on_complete(task_instance)
