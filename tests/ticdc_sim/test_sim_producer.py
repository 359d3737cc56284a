"""Producing simulator messages to a real broker, and the errors when there is none."""

from __future__ import annotations

import os
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from ticdc_lake.errors import ServiceError
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import OutMessage, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

UNREACHABLE = "127.0.0.1:9"  # the discard port: nothing speaks Kafka there


def _bootstrap() -> str:
    address = os.environ.get("TICDC_LAKE_KAFKA_BOOTSTRAP")
    if not address:
        pytest.skip("TICDC_LAKE_KAFKA_BOOTSTRAP is not set (start a broker: include/scripts/kafka.sh start)")
    return address


def _read_all(bootstrap: str, topic: str, counts: dict[int, int]) -> dict[int, list[tuple[int, bytes | None, bytes]]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"sim-test-{uuid.uuid4()}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in counts])
    got: dict[int, list[tuple[int, bytes | None, bytes]]] = {p: [] for p in counts}
    try:
        idle = 0
        while any(len(got[p]) < n for p, n in counts.items()) and idle < 60:
            record = consumer.poll(0.5)
            if record is None:
                idle += 1
                continue
            assert record.error() is None, record.error()
            partition, offset, value = record.partition(), record.offset(), record.value()
            assert partition is not None
            assert offset is not None
            assert value is not None
            got[partition].append((offset, record.key(), value))
    finally:
        consumer.close()
    return got


@pytest.mark.kafka
def test_messages_land_on_their_partitions_in_order() -> None:
    bootstrap = _bootstrap()
    topic = f"sim-test-{uuid.uuid4().hex[:12]}"
    create_topic(bootstrap, topic, 3)
    create_topic(bootstrap, topic, 3)  # idempotent for the same partition count
    sim = TicdcSimulator(seed=8, topic=topic, partitions=3, workload=WorkloadConfig(tables=3))
    sim.run_transactions(40)
    sim.flush_watermark()
    sim.replay([0], start=0, count=3)
    sim.append_malformed(1, b"\xff\x00 not a message")
    messages = sim.take()

    positions = produce(bootstrap, messages)

    assert [p for p, _ in positions] == [m.partition for m in messages]
    expected: dict[int, list[OutMessage]] = {p: [m for m in messages if m.partition == p] for p in range(3)}
    for partition, sent in expected.items():
        offsets = [o for (p, o) in positions if p == partition]
        assert offsets == list(range(len(sent)))
    got = _read_all(bootstrap, topic, {p: len(v) for p, v in expected.items()})
    for partition, sent in expected.items():
        assert got[partition] == [(i, m.key, m.value) for i, m in enumerate(sent)]
    assert got[0][-3:] == [(len(expected[0]) - 3 + i, None, expected[0][i].value) for i in range(3)]
    assert got[1][-1] == (len(expected[1]) - 1, None, b"\xff\x00 not a message")

    with pytest.raises(ServiceError) as caught:
        create_topic(bootstrap, topic, 5)
    assert str(caught.value) == (
        f"Kafka broker {bootstrap}: topic {topic!r} already exists with 3 partitions, not 5; "
        "delete it or use another topic name"
    )


def test_unreachable_broker_is_named_in_the_error() -> None:
    with pytest.raises(ServiceError) as caught:
        create_topic(UNREACHABLE, "t", 3, timeout_s=1.5)
    message = str(caught.value)
    assert message.startswith(f"Kafka broker {UNREACHABLE} is unreachable (")
    assert message.endswith(
        "); start it with `make services-up` (include/scripts/kafka.sh start) or fix the bootstrap address"
    )
    assert caught.value.retryable


def test_produce_to_an_unreachable_broker_fails_with_the_address() -> None:
    message = OutMessage("t", 0, None, b"{}", "WATERMARK", 1)
    with pytest.raises(ServiceError) as caught:
        produce(UNREACHABLE, [message, message], timeout_s=1.5)
    text = str(caught.value)
    assert text.startswith(f"Kafka broker {UNREACHABLE}: delivery failed: message 0 (WATERMARK) to 't' partition 0: ")
    assert produce(UNREACHABLE, []) == []
