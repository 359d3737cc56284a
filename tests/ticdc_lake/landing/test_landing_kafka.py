"""land() against the real local broker (`include/scripts/kafka.sh start`)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import LandingError, OffsetGapError
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.kafka_source import KafkaPartitionReader, consumer_settings
from ticdc_lake.landing.lander import LandResult, land
from ticdc_lake.landing.manifest import LandedRange, Manifest, SchemaBlocks
from ticdc_lake.landing.store import LandingStore

pytestmark = pytest.mark.kafka

T0_MS = 1772359200000  # 2026-03-01T10:00:00Z


def _ms(value: int) -> datetime:
    return datetime.fromtimestamp(value / 1000, tz=UTC)


@pytest.fixture
def admin(kafka_bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": kafka_bootstrap})


@pytest.fixture
def topic(admin: AdminClient) -> Iterator[str]:
    name = f"landing-test-{uuid.uuid4().hex[:10]}"
    admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)])[name].result(30)
    yield name
    admin.delete_topics([name])[name].result(30)


class Produced:
    """Produces with delivery reports and remembers exactly what the broker stored."""

    def __init__(self, bootstrap: str, **settings: Any) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **settings})
        self.messages: list[RawMessage] = []

    def send(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        *,
        headers: list[tuple[str, bytes | None]] | None = None,
        timestamp: int = 0,
    ) -> None:
        def delivered(err: Any, msg: Any) -> None:
            assert err is None, err
            self.messages.append(
                RawMessage(
                    msg.topic(),
                    msg.partition(),
                    msg.offset(),
                    msg.timestamp()[1],
                    key,
                    value,
                    tuple(headers or ()),
                )
            )

        self.producer.produce(
            topic,
            value,
            key,
            partition=partition,
            headers=cast(Any, headers),
            timestamp=timestamp,
            on_delivery=delivered,
        )

    def flush(self) -> list[RawMessage]:
        assert self.producer.flush(30) == 0
        return sorted(self.messages, key=lambda m: (m.partition, m.offset))


def _await_stable_offset(bootstrap: str, topic: str, partition: int, expected: int) -> None:
    """Transaction markers are written after commit/abort returns: wait for the last stable offset."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "landing-tests"})
    try:
        deadline = time.monotonic() + 30
        while True:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)
            if high == expected:
                return
            assert time.monotonic() < deadline, f"last stable offset is {high}, expected {expected}"
            time.sleep(0.05)
    finally:
        consumer.close()


@pytest.fixture
def pipeline(tmp_path: Path, topic: str) -> Callable[..., PipelineConfig]:
    def make(**kafka: Any) -> PipelineConfig:
        return PipelineConfig.model_validate(
            {
                "id": "land_it",
                "protocol": "simple-json",
                "kafka": {"topics": [topic], **kafka},
                "landing_uri": f"file://{tmp_path}/landing",
                "catalog": "lake",
            }
        )

    return make


def _land(
    pipeline: PipelineConfig, bootstrap: str, run_id: str, interval: tuple[datetime, datetime] | None = None
) -> LandResult:
    return land(pipeline, {"bootstrap.servers": bootstrap}, run_id, interval)


def _spans(result: LandResult) -> list[tuple[int, int, int, int]]:
    assert result.manifest is not None
    return [(r.partition, r.start, r.end, r.count) for r in result.manifest.ranges]


def _read(store: LandingStore, ranges: tuple[LandedRange, ...]) -> list[RawMessage]:
    return [m for r in ranges if r.file is not None for m in store.read_messages(r.file)]


def test_land_everything_then_nothing_then_continue(
    kafka_bootstrap: str, topic: str, pipeline: Callable[..., PipelineConfig]
) -> None:
    config = pipeline()
    producer = Produced(kafka_bootstrap)
    producer.send(topic, 0, b"k0", b"v0", headers=[("op", b"insert"), ("trace", None)])
    producer.send(topic, 0, None, b"no key")
    producer.send(topic, 0, b"tombstone", None)
    producer.send(topic, 1, b"k1", b"")
    producer.send(topic, 1, b"k1", b"\x00\x01\xff", headers=[("dup", b"a"), ("dup", b"b")])
    first_batch = producer.flush()

    first = _land(config, kafka_bootstrap, "run-1")
    assert first.manifest is not None
    assert (first.reused, first.messages, first.manifest.sequence, first.manifest.batch_id) == (
        False,
        5,
        1,
        "000000000001",
    )
    assert _spans(first) == [(0, 0, 3, 3), (1, 0, 2, 2)]  # partition 2 is empty: no range
    assert first.manifest.interval_start is None
    assert first.summary() == (
        "pipeline 'land_it' run 'run-1': landed 5 messages in 2 offset ranges as batch 000000000001"
    )
    store = LandingStore(config.landing_uri, config.id)
    assert store.manifests() == [first.manifest]
    assert _read(store, first.manifest.ranges) == first_batch
    for landed in first.manifest.ranges:
        assert landed.file is not None
        assert store.checksum(landed.file) == (landed.size_bytes, landed.sha256)
    assert first.manifest.ranges[0].file == (
        f"data/topic={topic}/partition=0/00000000000000000000-00000000000000000003.avro"
    )

    # A land run killed mid-write left temporary files: the next run removes those older than the
    # lease's stale age (landing.leftovers) and leaves a young one alone.
    folder = Path(first.manifest.ranges[0].file or "").parent
    root = Path(config.landing_uri.removeprefix("file://")) / config.id
    old, young = (root / folder / f".00000000000000000003-00000000000000000009.avro.{c * 32}.tmp" for c in "ab")
    for leftover, age in ((old, 3600), (young, 0)):
        leftover.write_bytes(b"partial")
        os.utime(leftover, (time.time() - age, time.time() - age))
    nothing = _land(config, kafka_bootstrap, "run-2")
    assert (nothing.manifest, nothing.reused, nothing.messages) == (None, False, 0)
    assert (old.exists(), young.exists()) == (False, True)
    assert nothing.summary() == "pipeline 'land_it' run 'run-2': nothing new to land"

    producer = Produced(kafka_bootstrap)
    producer.send(topic, 1, b"k1", b"later")
    producer.send(topic, 2, b"k2", b"first in p2")
    second_batch = producer.flush()
    second = _land(config, kafka_bootstrap, "run-3")
    assert second.manifest is not None
    assert second.manifest.sequence == 2
    assert _spans(second) == [(1, 2, 3, 1), (2, 0, 1, 1)]
    assert _read(store, second.manifest.ranges) == second_batch

    again = _land(config, kafka_bootstrap, "run-1")
    assert (again.manifest, again.reused, again.messages) == (first.manifest, True, 5)
    assert again.summary() == (
        "pipeline 'land_it' run 'run-1': already landed 5 messages in 2 offset ranges as batch 000000000001; "
        "nothing written"
    )
    assert [m.batch_id for m in store.manifests()] == ["000000000001", "000000000002"]


def test_interval_end_resolves_from_kafka_timestamps(
    kafka_bootstrap: str, topic: str, pipeline: Callable[..., PipelineConfig]
) -> None:
    config = pipeline()
    producer = Produced(kafka_bootstrap)
    for n in range(6):  # partition 0: one message per minute from T0
        producer.send(topic, 0, b"k", b"p0-%d" % n, timestamp=T0_MS + n * 60_000)
    for n in range(3):  # partition 1: three messages in the second minute
        producer.send(topic, 1, b"k", b"p1-%d" % n, timestamp=T0_MS + 60_000 + n * 1000)
    produced = producer.flush()

    # [T0, T0+2min): offsets 0, 1 of p0 (ts T0+2min is excluded), all of p1; p2 has nothing.
    interval = (_ms(T0_MS), _ms(T0_MS + 120_000))
    first = _land(config, kafka_bootstrap, "scheduled__1", interval)
    assert _spans(first) == [(0, 0, 2, 2), (1, 0, 3, 3)]
    assert first.manifest is not None
    assert (first.manifest.interval_start, first.manifest.interval_end) == interval
    p0 = first.manifest.ranges[0]
    assert (p0.first_timestamp_ms, p0.last_timestamp_ms) == (T0_MS, T0_MS + 60_000)

    # An interval ending exactly on a record's timestamp stops before that record.
    second = _land(config, kafka_bootstrap, "scheduled__2", (_ms(T0_MS + 120_000), _ms(T0_MS + 240_000)))
    assert _spans(second) == [(0, 2, 4, 2)]

    # Nothing in Kafka is at or after the interval end: up to the high watermark.
    third = _land(config, kafka_bootstrap, "scheduled__3", (_ms(T0_MS + 240_000), _ms(T0_MS + 3_600_000)))
    assert _spans(third) == [(0, 4, 6, 2)]

    # An interval wholly before what was landed: never backwards, nothing new.
    old = _land(config, kafka_bootstrap, "backfill__0", (_ms(T0_MS - 60_000), _ms(T0_MS)))
    assert old.manifest is None

    store = LandingStore(config.landing_uri, config.id)
    landed = [m for manifest in store.manifests() for m in _read(store, manifest.ranges)]
    assert sorted(landed, key=lambda m: (m.partition, m.offset)) == produced


def test_transaction_markers_are_covered_by_the_range(
    kafka_bootstrap: str, topic: str, pipeline: Callable[..., PipelineConfig]
) -> None:
    config = pipeline()
    producer = Produced(kafka_bootstrap, **{"transactional.id": f"tx-{topic}"})
    producer.producer.init_transactions(30)
    producer.producer.begin_transaction()
    for n in range(3):
        producer.send(topic, 0, b"k", b"committed-%d" % n)
    producer.producer.commit_transaction(30)  # offsets 0-2, commit marker at 3
    committed = producer.flush()
    assert [m.offset for m in committed] == [0, 1, 2]
    _await_stable_offset(kafka_bootstrap, topic, 0, 4)

    first = _land(config, kafka_bootstrap, "run-1")
    assert _spans(first) == [(0, 0, 4, 3)]  # end 4 covers the marker; count is the records read

    producer.producer.begin_transaction()
    producer.send(topic, 0, b"k", b"aborted-0")
    producer.send(topic, 0, b"k", b"aborted-1")
    producer.flush()  # written to the log, then aborted
    producer.producer.abort_transaction(30)  # offsets 4, 5 aborted, abort marker at 6
    _await_stable_offset(kafka_bootstrap, topic, 0, 7)
    aborted = _land(config, kafka_bootstrap, "run-2")
    assert _spans(aborted) == [(0, 4, 7, 0)]
    assert aborted.manifest is not None
    assert aborted.manifest.ranges[0].file is None

    producer.producer.begin_transaction()
    producer.send(topic, 0, b"k", b"committed-late")
    producer.producer.commit_transaction(30)  # offset 7, marker at 8
    producer.producer.begin_transaction()
    producer.send(topic, 0, b"k", b"still open")  # offset 9: beyond the last stable offset
    producer.producer.flush(30)
    _await_stable_offset(kafka_bootstrap, topic, 0, 9)
    late = _land(config, kafka_bootstrap, "run-3")
    assert _spans(late) == [(0, 7, 9, 1)]
    store = LandingStore(config.landing_uri, config.id)
    assert late.manifest is not None
    assert [m.value for m in _read(store, late.manifest.ranges)] == [b"committed-late"]

    producer.producer.commit_transaction(30)  # marker at 10
    _await_stable_offset(kafka_bootstrap, topic, 0, 11)
    closed = _land(config, kafka_bootstrap, "run-4")
    assert _spans(closed) == [(0, 9, 11, 1)]


def test_configured_start_offset(kafka_bootstrap: str, topic: str, pipeline: Callable[..., PipelineConfig]) -> None:
    producer = Produced(kafka_bootstrap)
    for n in range(5):
        producer.send(topic, 2, None, b"%d" % n)
    producer.flush()
    result = _land(pipeline(start_offset=3), kafka_bootstrap, "run-1")
    assert _spans(result) == [(2, 3, 5, 2)]  # partitions 0 and 1 are empty: start 3 > high 0


def test_retention_gap_fails_loudly(
    kafka_bootstrap: str, admin: AdminClient, topic: str, pipeline: Callable[..., PipelineConfig]
) -> None:
    config = pipeline()
    producer = Produced(kafka_bootstrap)
    for n in range(4):
        producer.send(topic, 1, None, b"%d" % n)
    producer.flush()
    assert _spans(_land(config, kafka_bootstrap, "run-1")) == [(1, 0, 4, 4)]
    for n in range(4, 10):
        producer.send(topic, 1, None, b"%d" % n)
    producer.flush()
    # What retention does: Kafka forgets offsets below 7 that were never landed.
    admin.delete_records([TopicPartition(topic, 1, 7)])[TopicPartition(topic, 1, 7)].result(30)
    with pytest.raises(OffsetGapError) as caught:
        _land(config, kafka_bootstrap, "run-2")
    assert str(caught.value).startswith(
        f"topic {topic!r} partition 1: offsets [4, 7) were deleted by Kafka (retention) before they were "
        "landed; Kafka now starts at offset 7."
    )
    assert [m.batch_id for m in LandingStore(config.landing_uri, config.id).manifests()] == ["000000000001"]


def test_missing_topic_is_named(kafka_bootstrap: str, tmp_path: Path) -> None:
    config = PipelineConfig.model_validate(
        {
            "id": "land_it",
            "protocol": "simple-json",
            "kafka": {"topics": ["landing-test-no-such-topic"]},
            "landing_uri": f"file://{tmp_path}/landing",
            "catalog": "lake",
        }
    )
    with pytest.raises(LandingError) as caught:
        _land(config, kafka_bootstrap, "run-1")
    assert str(caught.value).startswith(
        f"Kafka at {kafka_bootstrap}: topic 'landing-test-no-such-topic' is not available ("
    )
    assert str(caught.value).endswith(
        "create the topic or fix kafka.topics in the pipeline configuration (and check the ACLs of the connection)"
    )


def test_offsets_deleted_while_reading_are_a_gap(kafka_bootstrap: str, admin: AdminClient, topic: str) -> None:
    producer = Produced(kafka_bootstrap)
    for n in range(5):
        producer.send(topic, 0, None, b"%d" % n)
    producer.flush()
    admin.delete_records([TopicPartition(topic, 0, 3)])[TopicPartition(topic, 0, 3)].result(30)
    with (
        KafkaPartitionReader({"bootstrap.servers": kafka_bootstrap}, group_id="landing-tests") as kafka,
        pytest.raises(OffsetGapError) as caught,
    ):
        list(kafka.read_range(topic, 0, 0, 5))
    assert str(caught.value).startswith(f"topic {topic!r} partition 0 range [0, 5): Kafka no longer holds offset 0 (")


def test_backfills_land_exactly_their_intervals_in_any_order_and_never_twice(
    kafka_bootstrap: str, admin: AdminClient, topic: str, pipeline: Callable[..., PipelineConfig]
) -> None:
    config = pipeline()
    producer = Produced(kafka_bootstrap)
    for n in range(6):  # partition 0: one message per minute from T0
        producer.send(topic, 0, b"k", b"p0-%d" % n, timestamp=T0_MS + n * 60_000)
    producer.flush()

    def backfill(run_id: str, start_min: int, end_min: int) -> LandResult:
        interval = (_ms(T0_MS + start_min * 60_000), _ms(T0_MS + end_min * 60_000))
        return land(config, {"bootstrap.servers": kafka_bootstrap}, run_id, interval, backfill=True)

    # Backfill runs executed out of order: each lands exactly its interval, holes stay open.
    assert _spans(backfill("backfill__2", 2, 4)) == [(0, 2, 4, 2)]
    assert _spans(backfill("backfill__3", 4, 6)) == [(0, 4, 6, 2)]
    assert _spans(backfill("backfill__1", 0, 2)) == [(0, 0, 2, 2)]
    # Re-running an interval (another run id) lands nothing: nothing is ever landed twice.
    assert backfill("backfill__2_again", 2, 4).manifest is None
    store = LandingStore(config.landing_uri, config.id)
    assert [(m.run_id, m.origins[0].offset if m.origins else None) for m in store.manifests()] == [
        ("backfill__2", 0),
        ("backfill__3", None),
        ("backfill__1", None),
    ]

    # Retention deletes offsets 6 and 7 before any run landed them: their backfill fails loudly.
    for n in range(6, 10):
        producer.send(topic, 0, b"k", b"p0-%d" % n, timestamp=T0_MS + n * 60_000)
    producer.flush()
    admin.delete_records([TopicPartition(topic, 0, 8)])[TopicPartition(topic, 0, 8)].result(30)
    with pytest.raises(OffsetGapError) as caught:
        backfill("backfill__4", 6, 8)
    assert str(caught.value).startswith(
        f"topic {topic!r} partition 0: offsets [6, 8) were deleted by Kafka (retention) before they were "
        "landed; Kafka now starts at offset 8."
    )
    # Kafka now resolves every older interval to its low watermark and cannot say which deleted
    # offsets were in it: any backfill there names the lost offsets too.
    with pytest.raises(OffsetGapError, match=r"offsets \[6, 8\) were deleted by Kafka"):
        backfill("backfill__2_late", 2, 4)


def test_the_consumer_fetches_again_soon_after_its_queue_was_full_unless_the_connection_says_otherwise() -> None:
    """librdkafka's 1,000 ms backoff after a full fetch queue left the land stage waiting most of its
    time on messages of a few KB (``make bench-land``); the connection's own settings still win,
    except those the stage needs."""
    given = {"bootstrap.servers": "b:9092", "enable.auto.commit": "true"}
    assert consumer_settings(given, "ticdc-lake-p") == {
        "fetch.wait.max.ms": 50,
        "fetch.queue.backoff.ms": 10,
        "group.id": "ticdc-lake-p",
        "bootstrap.servers": "b:9092",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "enable.partition.eof": True,
        "isolation.level": "read_committed",
    }
    theirs = consumer_settings({"fetch.queue.backoff.ms": "1000", "group.id": "mine"}, "ticdc-lake-p")
    assert (theirs["fetch.queue.backoff.ms"], theirs["group.id"]) == ("1000", "mine")


def test_each_range_lists_the_blocks_that_may_carry_a_schema(
    kafka_bootstrap: str, topic: str, pipeline: Callable[..., PipelineConfig]
) -> None:
    """The land stage runs the pipeline decoder's schema block test on every block it writes and
    records the blocks it keeps; the decode stage's schema pass reads only those."""
    config = pipeline()
    producer = Produced(kafka_bootstrap)
    producer.send(topic, 0, None, b'{"version":1,"type":"CREATE","sql":"CREATE TABLE t (a INT)"}')
    producer.send(topic, 0, None, b'{"version":1,"type":"INSERT","database":"d","table":"t"}')
    producer.send(topic, 1, None, b'{"version":1,"type":"INSERT","database":"d","table":"t"}')
    producer.flush()
    result = _land(config, kafka_bootstrap, "run-1")
    assert result.manifest is not None
    counted = [(r.partition, r.schema_blocks) for r in result.manifest.ranges]
    assert counted == [
        (0, SchemaBlocks(test="simple-json/1", blocks=(0,))),
        (1, SchemaBlocks(test="simple-json/1", blocks=())),
    ]
    assert Manifest.from_json(result.manifest.to_json()) == result.manifest
