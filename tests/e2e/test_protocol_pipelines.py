"""The skeleton's end-to-end run for the protocols other than Simple, through the real broker,
Airflow's test runner and Spark: every table equals the reference model after the run.

One run each (with replays and a tail after the watermark); applied state carried across runs
does not depend on the protocol and is covered by test_simple_pipeline.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from e2e_support import Pipeline, run_one_round

from ticdc_lake.simulator.encoders import encoder_for
from ticdc_lake.simulator.producer import create_topic
from ticdc_lake.simulator.simulator import TicdcSimulator
from ticdc_lake.simulator.workload import OperationMix, WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]


@pytest.mark.parametrize("protocol", ["debezium", "canal-json", "open"])
def test_a_run_equals_the_model(e2e_pipeline: Callable[..., Pipeline], kafka_bootstrap: str, protocol: str) -> None:
    pipeline = e2e_pipeline(protocol)
    create_topic(kafka_bootstrap, pipeline.topic, 3)
    sim = TicdcSimulator(
        seed=20261122,
        topic=pipeline.topic,
        partitions=3,
        workload=WorkloadConfig(tables=4, databases=2),
        encoder=encoder_for(protocol, "UTC"),
    )
    run_one_round(pipeline, sim, kafka_bootstrap)


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
