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
from ticdc_lake_airflow.hooks import kafka_client_config, schema_registry_client_config

#: Run types whose data interval bounds what they land; any other run lands up to the current end.
INTERVAL_RUN_TYPES = frozenset({"scheduled", "backfill"})


def landing_interval(context: Context) -> tuple[datetime, datetime] | None:
    """The interval a run lands, or None for "up to Kafka's current end offsets"."""
    dag_run = context.get("dag_run")
    run_type = str(getattr(dag_run, "run_type", "") or "").lower().rsplit(".", 1)[-1]
    start: datetime | None = context.get("data_interval_start")
    end: datetime | None = context.get("data_interval_end")
    if run_type not in INTERVAL_RUN_TYPES or start is None or end is None:
        return None
    return (start, end)


class LandKafkaBatchOperator(BaseOperator):
    """Land the pipeline's Kafka messages for the run's data interval (ARCHITECTURE 4.1).

    Scheduled runs and backfills land up to their data interval's end (the same offsets every time
    the interval is run); manual runs (the UI's trigger, ``airflow dags test``) land everything
    Kafka holds now. Errors that a retry cannot fix (configuration, offset gaps) fail the task at
    once; the others are left to Airflow's retries.

    Returns, for XCom: ``batch_id`` (None when nothing was landed), ``sequence``, ``messages``
    and ``reused`` (an identical batch already existed).
    """

    template_fields: Sequence[str] = ("config_path", "pipeline_id")
    ui_color = "#e8f1fb"

    def __init__(self, *, config_path: str, pipeline_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.pipeline_id = pipeline_id

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
        )
        self.log.info("%s", result.summary())
        manifest = result.manifest
        return {
            "batch_id": manifest.batch_id if manifest is not None else None,
            "sequence": manifest.sequence if manifest is not None else None,
            "messages": result.messages,
            "reused": result.reused,
        }
