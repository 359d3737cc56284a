"""kafka.topic_pattern: topics made per table by TiCDC's topic dispatcher are found on every run."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from pydantic import ValidationError

from ticdc_lake.config import KafkaSource, PipelineConfig
from ticdc_lake.landing.lander import land
from ticdc_lake.landing.store import LandingStore


def test_topics_or_a_pattern_is_required_and_the_pattern_must_compile() -> None:
    with pytest.raises(ValidationError, match=re.escape("kafka needs topics (a list of names), topic_pattern")):
        KafkaSource.model_validate({})
    with pytest.raises(ValidationError, match=re.escape("topic_pattern 'cdc_(' is not a regular expression")):
        KafkaSource.model_validate({"topic_pattern": "cdc_("})
    source = KafkaSource.model_validate({"topics": ["cdc"], "topic_pattern": r"cdc_shop_.*"})
    assert [source.wants_topic(t) for t in ("cdc", "cdc_shop_a", "cdc_shopx", "x_cdc_shop_a", "__cdc_shop_a")] == [
        True,
        True,
        False,
        False,
        False,
    ]
    assert source.describe() == "cdc, /cdc_shop_.*/"


@pytest.mark.kafka
def test_a_topic_created_after_the_first_run_is_landed_by_the_next(kafka_bootstrap: str, tmp_path: Path) -> None:
    prefix = f"tp{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    pipeline = PipelineConfig.model_validate(
        {
            "id": "pattern_it",
            "protocol": "simple-json",
            "kafka": {"topics": [prefix], "topic_pattern": f"{prefix}_shop_.*"},
            "landing_uri": f"file://{tmp_path}/landing",
            "catalog": "lake",
        }
    )
    producer = Producer({"bootstrap.servers": kafka_bootstrap})

    def create_and_send(topic: str, count: int) -> None:
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
        for i in range(count):
            producer.produce(topic, value=f"{topic}-{i}".encode(), partition=i % 2)
        producer.flush(30)

    create_and_send(prefix, 2)
    create_and_send(f"{prefix}_shop_a", 3)
    create_and_send(f"{prefix}_other_b", 1)  # does not match: never landed
    first = land(pipeline, {"bootstrap.servers": kafka_bootstrap}, "run-1", None)
    assert first.manifest is not None
    assert {(r.topic, r.partition, r.start, r.end) for r in first.manifest.ranges} == {
        (prefix, 0, 0, 1),
        (prefix, 1, 0, 1),
        (f"{prefix}_shop_a", 0, 0, 2),
        (f"{prefix}_shop_a", 1, 0, 1),
    }
    create_and_send(f"{prefix}_shop_b", 2)  # a table created upstream later: its own topic
    second = land(pipeline, {"bootstrap.servers": kafka_bootstrap}, "run-2", None)
    assert second.manifest is not None
    assert {(r.topic, r.partition, r.start, r.end) for r in second.manifest.ranges if r.count} == {
        (f"{prefix}_shop_b", 0, 0, 1),
        (f"{prefix}_shop_b", 1, 0, 1),
    }
    assert len(LandingStore(pipeline.landing_uri, pipeline.id).manifests()) == 2
