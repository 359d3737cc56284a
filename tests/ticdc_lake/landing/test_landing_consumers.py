"""Several consumers land one run: how ranges are split, and land() on the real broker with worker processes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from ticdc_lake.config import PipelineConfig
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.consumers import (
    AUTO_MIN_OFFSETS,
    ConsumerResult,
    consumer_count,
    merge_references,
    split,
)
from ticdc_lake.landing.lander import land
from ticdc_lake.landing.ranges import PlannedRange
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.landing.writer_schemas import SchemaReference

#: Messages per partition: unequal, so the split is known (p0+p3 | p1+p2).
SIZES = {0: 40, 1: 30, 2: 20, 3: 10}


def _plan(topic: str, partition: int, start: int, end: int) -> PlannedRange:
    return PlannedRange(topic, partition, start, end)


def test_consumer_count_never_exceeds_the_partitions_and_starts_small_runs_in_process() -> None:
    small = [_plan("a", p, 0, 10) for p in range(4)]
    large = [_plan("a", p, 0, AUTO_MIN_OFFSETS // 2) for p in range(4)]
    assert consumer_count(None, small, cpus=2) == 1
    assert consumer_count(None, large, cpus=2) == 2
    assert consumer_count(None, large, cpus=8) == 4
    assert consumer_count(3, small, cpus=2) == 3
    assert consumer_count(8, small, cpus=2) == 4
    assert consumer_count(8, [_plan("a", 0, 0, 5), _plan("a", 0, 9, 12), _plan("a", 1, 3, 3)], cpus=2) == 1
    assert consumer_count(None, [], cpus=2) == 1


def test_split_keeps_partitions_whole_balances_offsets_and_keeps_the_order() -> None:
    plans = [
        _plan("a", 0, 0, 100),
        _plan("a", 0, 150, 200),  # a second hole of partition 0 stays with the first
        _plan("a", 1, 0, 120),
        _plan("b", 0, 0, 60),
        _plan("b", 1, 5, 5),  # empty: no consumer lands it
        _plan("b", 2, 0, 30),
    ]
    assert split(plans, 2) == [
        (_plan("a", 0, 0, 100), _plan("a", 0, 150, 200), _plan("b", 2, 0, 30)),
        (_plan("a", 1, 0, 120), _plan("b", 0, 0, 60)),
    ]
    assert split(plans, 1) == [tuple(p for p in plans if not p.is_empty)]
    assert split(plans, 9) == [
        (_plan("a", 0, 0, 100), _plan("a", 0, 150, 200)),
        (_plan("a", 1, 0, 120),),
        (_plan("b", 0, 0, 60),),
        (_plan("b", 2, 0, 30),),
    ]


def test_merged_schema_references_keep_each_ids_first_place() -> None:
    def ref(schema_id: int, partition: int, offset: int) -> SchemaReference:
        return SchemaReference(schema_id, "t", partition, offset, "value")

    results = [
        ConsumerResult((), (ref(7, 2, 0), ref(3, 2, 5))),
        ConsumerResult((), (ref(7, 0, 9), ref(5, 1, 1))),
    ]
    assert merge_references(results) == [ref(3, 2, 5), ref(5, 1, 1), ref(7, 0, 9)]


# -- the real broker ---------------------------------------------------------------------------


@pytest.fixture
def topic(kafka_bootstrap: str) -> Iterator[str]:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    name = f"landing-consumers-{uuid.uuid4().hex[:10]}"
    admin.create_topics([NewTopic(name, num_partitions=len(SIZES), replication_factor=1)])[name].result(30)
    yield name
    admin.delete_topics([name])[name].result(30)


def _produce(bootstrap: str, topic: str, round_: int) -> list[RawMessage]:
    """SIZES[p] messages per partition; returns what the broker stored, by partition and offset."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    stored: list[RawMessage] = []

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        stored.append(
            RawMessage(msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1], msg.key(), msg.value(), ())
        )

    for partition, count in SIZES.items():
        for i in range(count):
            key = f"r{round_}-p{partition}-{i}".encode()
            producer.produce(topic, b"v" * (i * 37 % 500), key, partition=partition, on_delivery=delivered)
    assert producer.flush(30) == 0
    return sorted(stored, key=lambda m: (m.partition, m.offset))


def _pipeline(tmp_path: Path, topic: str, consumers: int) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "id": "land_par",
            "protocol": "simple-json",
            "kafka": {"topics": [topic], "consumers": consumers},
            "landing_uri": f"file://{tmp_path}/landing",
            "catalog": "lake",
        }
    )


def _landed(store: LandingStore) -> list[RawMessage]:
    return [
        message
        for manifest in store.manifests()
        for landed in manifest.ranges
        if landed.file is not None
        for message in store.read_messages(landed.file)
    ]


def test_two_consumers_land_each_offset_of_every_partition_once(
    kafka_bootstrap: str, topic: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = _pipeline(tmp_path, topic, consumers=2)
    store = LandingStore(config.landing_uri, config.id)
    first = _produce(kafka_bootstrap, topic, 1)
    with caplog.at_level("INFO"):
        result = land(config, {"bootstrap.servers": kafka_bootstrap}, "run-1", None)
    assert result.manifest is not None
    assert [(r.partition, r.start, r.end, r.count) for r in result.manifest.ranges] == [
        (p, 0, n, n) for p, n in SIZES.items()
    ]
    assert [(o.partition, o.offset) for o in result.manifest.origins] == [(p, 0) for p in SIZES]
    assert _landed(store) == first  # every message once, in offset order per partition
    for landed in result.manifest.ranges:
        assert landed.file is not None
        assert store.checksum(landed.file) == (landed.size_bytes, landed.sha256)
        with open(tmp_path / "landing" / config.id / landed.file, "rb") as raw:
            assert fastavro.reader(raw).codec == "zstandard"
    assert (
        f"landing 100 offsets of 4 partition(s) with 2 consumer threads: 2 range(s) of {topic}[0], "
        f"{topic}[3]; 2 range(s) of {topic}[1], {topic}[2]"
    ) in caplog.messages
    assert f"{topic}[3]: landed [0, 10) 10 records → {result.manifest.ranges[3].file} (" in "\n".join(caplog.messages)

    # The next run continues exactly after the first.
    second = _produce(kafka_bootstrap, topic, 2)
    again = land(config, {"bootstrap.servers": kafka_bootstrap}, "run-2", None)
    assert again.manifest is not None
    assert again.manifest.sequence == 2
    assert [(r.partition, r.start, r.end, r.count) for r in again.manifest.ranges] == [
        (p, n, 2 * n, n) for p, n in SIZES.items()
    ]
    by_partition = sorted(_landed(store), key=lambda m: (m.partition, m.offset))  # manifest 1, then 2
    assert by_partition == sorted(first + second, key=lambda m: (m.partition, m.offset))
    assert land(config, {"bootstrap.servers": kafka_bootstrap}, "run-3", None).manifest is None


def test_a_consumer_failing_mid_run_publishes_nothing_and_the_next_run_lands_each_range_once(
    kafka_bootstrap: str, topic: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = _pipeline(tmp_path, topic, consumers=2)
    store = LandingStore(config.landing_uri, config.id)
    produced = _produce(kafka_bootstrap, topic, 1)
    # A file where partition 3's folder goes: the consumer of p0+p3 fails after its first file.
    data = tmp_path / "landing" / config.id / "data" / f"topic={topic}"
    data.mkdir(parents=True)
    (data / "partition=3").write_bytes(b"")
    with caplog.at_level("INFO"), pytest.raises(FileExistsError) as raised:
        land(config, {"bootstrap.servers": kafka_bootstrap}, "run-1", None)
    assert f"Cannot create directory '{data}/partition=3': non-directory entry exists" in str(raised.value)
    assert store.manifests() == []
    # The other consumer finished its partitions; the failed one kept the file it had written.
    assert sorted(str(p.relative_to(data)) for p in data.rglob("*.avro")) == [
        "partition=0/00000000000000000000-00000000000000000040.avro",
        "partition=1/00000000000000000000-00000000000000000030.avro",
        "partition=2/00000000000000000000-00000000000000000020.avro",
    ]
    assert (
        f"land consumer of 2 range(s) of {topic}[0], {topic}[3] failed: FileExistsError: {raised.value}"
        in caplog.messages
    )

    (data / "partition=3").unlink()
    caplog.clear()
    with caplog.at_level("INFO"):
        result = land(config, {"bootstrap.servers": kafka_bootstrap}, "run-2", None)
    assert result.manifest is not None
    assert result.manifest.sequence == 1
    assert [(r.partition, r.start, r.end, r.count) for r in result.manifest.ranges] == [
        (p, 0, n, n) for p, n in SIZES.items()
    ]
    assert _landed(store) == produced
    kept = [m for m in caplog.messages if m.endswith("already exists with identical bytes; not rewritten")]
    assert len(kept) == 3
