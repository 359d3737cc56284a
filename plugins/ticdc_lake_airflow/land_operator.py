"""The land task: one run's Kafka offset ranges → raw batch files + manifest on the landing storage."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from ticdc_lake.config import Protocol, load_config
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake_airflow.hooks import kafka_client_config, schema_registry_client_config
from ticdc_lake_airflow.lineage import land_lineage
from ticdc_lake_airflow.metrics import emit, land_metrics

#: Run types whose data interval bounds what they land; any other run lands up to the current end.
INTERVAL_RUN_TYPES = frozenset({"scheduled", "backfill"})


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
    """Land the pipeline's Kafka messages for the run's data interval (ARCHITECTURE 4.1).

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

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Inputs: the Kafka topics landed; output: the pipeline's landing folder (``lineage``)."""
        pipeline = load_config(self.config_path).pipeline(self.pipeline_id)
        bootstrap, manifest = self._landed or (
            kafka_client_config(pipeline.kafka.connection_id)["bootstrap.servers"],
            None,
        )
        return land_lineage(pipeline, bootstrap, manifest)
