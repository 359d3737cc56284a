from __future__ import annotations

from ticdc_lake.apply.watermark import PartitionProgress, partition_watermarks, topic_watermarks


def test_partition_watermark_is_the_highest_seen_and_never_regresses() -> None:
    marks = partition_watermarks(
        [
            PartitionProgress("t", 0, 100),
            PartitionProgress("t", 0, 90),  # a replayed older watermark in a later batch
            PartitionProgress("t", 0, None),
            PartitionProgress("t", 1, None),
        ]
    )
    assert marks == {("t", 0): 100, ("t", 1): None}


def test_topic_watermark_is_the_minimum_and_a_silent_partition_holds_it_back() -> None:
    marks = {("a", 0): 100, ("a", 1): 80, ("b", 0): 70}
    assert topic_watermarks(marks, {"a": [0, 1], "b": [0, 1]}) == {"a": 80, "b": None}


def test_topic_with_no_partitions_has_no_watermark() -> None:
    assert topic_watermarks({}, {"a": []}) == {"a": None}
