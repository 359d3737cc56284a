"""The land task: one run's Kafka offset ranges → raw batch files + manifest on the landing storage."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException, AirflowRescheduleException, AirflowRuntimeError

from ticdc_lake.config import PipelineConfig, Protocol, load_config
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake_airflow.hooks import kafka_client_config, schema_registry_client_config
from ticdc_lake_airflow.lineage import land_lineage
from ticdc_lake_airflow.metrics import emit, land_metrics

#: Run types whose data interval bounds what they land; any other run lands up to the current end.
INTERVAL_RUN_TYPES = frozenset({"scheduled", "backfill"})
#: Seconds between two looks of a run waiting for the pipeline's turn (``TICDC_LAKE_TURN_POLL_S``).
TURN_POLL_S = 15.0
#: The shortest interval allowed. Seen with Airflow 3.3.2 on a loaded machine: the scheduler queued
#: the next look 3 s after a reschedule while the previous look's process was still exiting (5 s);
#: the late "success" event of that process then made the scheduler mark the new look for retry, so
#: the run waited a whole retry delay.
MIN_TURN_POLL_S = 10.0
TURN_POLL_ENV = "TICDC_LAKE_TURN_POLL_S"
_ACTIVE_RUN_STATES = frozenset({"queued", "running"})


def run_type_of(context: Context) -> str:
    """``scheduled``, ``backfill``, ``manual``, ``asset_triggered``... of the task's DAG run."""
    dag_run = context.get("dag_run")
    return str(getattr(dag_run, "run_type", "") or "").lower().rsplit(".", 1)[-1]


def landing_interval(context: Context) -> tuple[datetime, datetime] | None:
    """The interval a run lands, or None for "up to Kafka's current end offsets"."""
    run_type = run_type_of(context)
    start: datetime | None = context.get("data_interval_start")
    end: datetime | None = context.get("data_interval_end")
    if run_type not in INTERVAL_RUN_TYPES or start is None or end is None:
        return None
    return (start, end)


class LandKafkaBatchOperator(BaseOperator):
    """Land the pipeline's Kafka messages for the run's data interval (docs/landing.md).

    A backfill run lands exactly its data interval's offsets (from the first offset stamped at or
    after its start to the first stamped at or after its end), whatever order backfill runs take;
    a scheduled run lands everything not landed yet up to its interval's end (so catch-up after an
    outage and late records leave no hole); manual runs (the UI's trigger, ``airflow dags test``)
    land everything not landed that Kafka holds now. Nothing is ever landed twice. Errors that a
    retry cannot fix (configuration, offset gaps) fail the task at once; the others are left to
    Airflow's retries.

    Returns, for XCom: ``batch_id`` (None when nothing was landed), ``sequence``, ``messages``
    and ``reused`` (an identical batch already existed).
    """

    template_fields: Sequence[str] = ("config_path", "pipeline_id")
    ui_color = "#e8f1fb"

    def __init__(self, *, config_path: str, pipeline_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.pipeline_id = pipeline_id
        #: (bootstrap.servers, manifest) of the run, for the OpenLineage facets.
        self._landed: tuple[str, Manifest | None] | None = None

    def execute(self, context: Context) -> dict[str, Any]:
        try:
            return self._land(context)
        except TicdcLakeError as exc:
            if exc.retryable:
                raise
            raise AirflowFailException(str(exc)) from exc

    def _land(self, context: Context) -> dict[str, Any]:
        config = load_config(self.config_path)
        pipeline = config.pipeline(self.pipeline_id)
        kafka = kafka_client_config(pipeline.kafka.connection_id)
        registry = None
        if pipeline.protocol is Protocol.AVRO:
            registry = schema_registry_client_config(pipeline.kafka.schema_registry_connection_id)
        self._await_turn(pipeline, context)

        # Imported here so that parsing the DAG file never imports confluent_kafka.
        from ticdc_lake.landing.lander import land

        interval = landing_interval(context)
        result = land(
            pipeline,
            kafka,
            context["run_id"],
            interval,
            registry=registry,
            logger=logging.getLogger(f"ticdc_lake.landing.{pipeline.id}"),
            backfill=interval is not None and run_type_of(context) == "backfill",
        )
        self.log.info("%s", result.summary())
        manifest = result.manifest
        self._landed = (kafka["bootstrap.servers"], manifest)
        emit(land_metrics(pipeline.id, manifest, result.reused))
        return {
            "batch_id": manifest.batch_id if manifest is not None else None,
            "sequence": manifest.sequence if manifest is not None else None,
            "messages": result.messages,
            "reused": result.reused,
        }

    def _await_turn(self, pipeline: PipelineConfig, context: Context) -> None:
        """Take the pipeline's turn (:mod:`ticdc_lake.landing.run_turn`) or reschedule this task.

        Runs of one pipeline never overlap, whatever created them: a backfill (which Airflow's
        ``max_active_runs`` does not bound), a scheduled or a manual run. The turn is held until
        this run ends; a waiting run frees its worker slot between looks.
        """
        ti = context.get("ti")
        dag_run = context.get("dag_run")
        started = getattr(dag_run, "start_date", None)
        if ti is None or dag_run is None or started is None:
            return  # called outside a DAG run (a test calling execute)
        dag_id = str(dag_run.dag_id)

        def is_active(run_id: str) -> bool:
            try:
                state = ti.get_dagrun_state(dag_id, run_id)
            except AirflowRuntimeError:
                return False  # the run was deleted
            return str(state).lower().rsplit(".", 1)[-1] in _ACTIVE_RUN_STATES

        # Imported here so that parsing the DAG file never imports fastavro (via the landing store).
        from ticdc_lake.landing.run_turn import RunTurn

        running = ti.get_dr_count(dag_id, states=["running"])
        waiting = RunTurn(pipeline.landing_uri, pipeline.id).poke(context["run_id"], started, is_active, running)
        if waiting is None:
            self.log.info("run %s has the turn of pipeline %r", context["run_id"], pipeline.id)
            return
        poll_s = max(MIN_TURN_POLL_S, float(os.environ.get(TURN_POLL_ENV) or TURN_POLL_S))
        self.log.info("waiting for the pipeline's turn, next look in %.0f s: %s", poll_s, waiting)
        raise AirflowRescheduleException(datetime.now(UTC) + timedelta(seconds=poll_s))  # type: ignore[no-untyped-call]

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Inputs: the Kafka topics landed; output: the pipeline's landing folder (``lineage``)."""
        pipeline = load_config(self.config_path).pipeline(self.pipeline_id)
        bootstrap, manifest = self._landed or (
            kafka_client_config(pipeline.kafka.connection_id)["bootstrap.servers"],
            None,
        )
        return land_lineage(pipeline, bootstrap, manifest)
