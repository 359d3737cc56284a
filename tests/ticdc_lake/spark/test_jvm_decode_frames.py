"""`jvm_decode.frames.landed_messages`: the planned messages of landed files, each with its own batch id."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from ticdc_lake.events import RawMessage
from ticdc_lake.landing.raw_batch import ConsumedRecord
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.spark.decode_plan import FileRange
from ticdc_lake.spark.jvm_decode.frames import landed_messages, local_root

pytestmark = pytest.mark.spark

TOPIC = "frames-topic"
PIPELINE = "frames"

Row = tuple[str, str, int, int, bytes | None, bytes | None]


def _landed(store: LandingStore, batch_id: str, partition: int, start: int, end: int) -> tuple[FileRange, list[Row]]:
    """A file of offsets ``[start, end)`` of one partition, and the rows it holds (batch id, topic,
    partition, offset, key, value); values name their batch, so a row read under another batch shows."""
    messages = [
        RawMessage(
            TOPIC, partition, offset, 1_700_000_000_000 + offset, b"k%d" % offset, f"{batch_id}/{offset}".encode()
        )
        for offset in range(start, end)
    ]
    landed = store.write_batch(
        [ConsumedRecord(m) for m in messages], topic=TOPIC, partition=partition, start=start, end=end
    )
    assert landed.file is not None
    rows = [(batch_id, TOPIC, partition, m.offset, m.key, m.value) for m in messages]
    return FileRange(batch_id, landed.file, start, end, end - start, TOPIC, partition), rows


def _read(spark: SparkSession, landing: Path, files: list[FileRange]) -> list[Row]:
    root = local_root(f"file://{landing}", PIPELINE)
    assert root == f"{landing}/{PIPELINE}"
    frame = landed_messages(spark, root, files)
    assert frame.columns == ["batch_id", "topic", "partition", "offset", "timestamp", "key", "value", "headers"]
    found = [
        (r["batch_id"], r["topic"], r["partition"], r["offset"], r["key"], r["value"])
        for r in frame.select("batch_id", "topic", "partition", "offset", "key", "value").collect()
    ]
    return sorted(found, key=lambda r: (r[0], r[2], r[3]))


def test_each_message_is_read_once_with_the_batch_of_its_file(tmp_path: Path, spark: SparkSession) -> None:
    store = LandingStore(f"file://{tmp_path}/landing", PIPELINE)
    landed = [
        _landed(store, "000000000001", 0, 0, 5),
        _landed(store, "000000000001", 1, 0, 5),
        _landed(store, "000000000002", 0, 5, 10),
        _landed(store, "000000000002", 1, 5, 8),
        # A replay: batch 3 landed offsets of partition 0 that batches 1 and 2 hold too.
        _landed(store, "000000000003", 0, 3, 7),
    ]

    found = _read(spark, tmp_path / "landing", [f for f, _ in landed])

    assert found == sorted((r for _, rows in landed for r in rows), key=lambda r: (r[0], r[2], r[3]))


def test_a_batch_with_two_files_of_one_partition_keeps_each_files_own_range(
    tmp_path: Path, spark: SparkSession
) -> None:
    store = LandingStore(f"file://{tmp_path}/landing", PIPELINE)
    first, first_rows = _landed(store, "000000000001", 0, 0, 6)
    second, second_rows = _landed(store, "000000000001", 0, 4, 9)  # overlaps the first
    # Only the first two offsets of the first file are planned: its offsets 4 and 5 are in the second
    # file's range, and must still not be read from the first.
    planned_first = FileRange(first.batch_id, first.file, 0, 2, 2, TOPIC, 0)

    found = _read(spark, tmp_path / "landing", [planned_first, second])

    assert found == sorted(first_rows[:2] + second_rows, key=lambda r: (r[0], r[2], r[3]))
    assert [r[5] for r in found] == [b"000000000001/%d" % o for o in (0, 1, 4, 5, 6, 7, 8)]


def test_only_the_planned_offsets_of_a_file_are_read(tmp_path: Path, spark: SparkSession) -> None:
    store = LandingStore(f"file://{tmp_path}/landing", PIPELINE)
    whole, rows = _landed(store, "000000000001", 0, 0, 6)
    planned = FileRange(whole.batch_id, whole.file, 2, 4, 2, TOPIC, 0)

    assert _read(spark, tmp_path / "landing", [planned]) == rows[2:4]


def test_no_file_is_refused(spark: SparkSession) -> None:
    with pytest.raises(ValueError, match="landed_messages needs at least one landed file"):
        landed_messages(spark, "/nowhere", [])
