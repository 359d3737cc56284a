"""The avro pipeline through Airflow's test runner: the land task fetches writer schemas from the
real schema registry through the Airflow connection, and every table equals the reference model.

The DAG, its operators and spark-submit do not depend on the protocol otherwise: Simple runs
through Airflow in test_simple_pipeline.py, and every protocol runs through the real broker and
Spark, with every DDL kind, at-least-once copies and a tail after the watermark, in
test_schema_evolution.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from e2e_support import Pipeline, run_one_round

from ticdc_sim.encoders import encoder_for
from ticdc_sim.producer import create_topic
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import OperationMix, WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]


def test_avro_with_a_real_schema_registry_equals_the_model(
    e2e_pipeline: Callable[..., Pipeline], kafka_bootstrap: str, schema_registry_url: str
) -> None:
    """Avro without deletes: TiCDC's avro DELETE is a tombstone without commit TSO (docs/protocols.md)."""
    pipeline = e2e_pipeline("avro", schema_registry_url=schema_registry_url)
    create_topic(kafka_bootstrap, pipeline.topic, 3)
    client = SchemaRegistryClient({"url": schema_registry_url})
    sim = TicdcSimulator(
        seed=20261123,
        topic=pipeline.topic,
        partitions=3,
        workload=WorkloadConfig(tables=3, mix=OperationMix(insert=0.6, update=0.4, delete=0, key_update=0)),
        encoder=encoder_for(
            "avro",
            "UTC",
            register=lambda subject, text: client.register_schema(subject, Schema(text, "AVRO")),
            topic=pipeline.topic,
        ),
    )
    run_one_round(pipeline, sim, kafka_bootstrap, deletes=False)
