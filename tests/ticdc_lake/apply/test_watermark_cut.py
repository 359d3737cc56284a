"""The watermark cut: the landed scope (per partition, the gap-free decoded run of ranges from the origin),
the partition and topic watermarks, and the run's watermark over the topics not retired."""

from __future__ import annotations

from datetime import UTC, datetime

from ticdc_lake.apply.watermark_cut import (
    DecodedPart,
    PartitionProgress,
    landed_scope,
    partition_watermarks,
    pipeline_watermark,
    topic_cut,
    topic_watermarks,
)
from ticdc_lake.landing.manifest import LandedRange, Manifest, PartitionOrigin

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def _range(partition: int, start: int, end: int, topic: str = "t") -> LandedRange:
    return LandedRange.empty(topic, partition, start, end)


def _manifest(sequence: int, *ranges: LandedRange, origins: dict[int, int] | None = None) -> Manifest:
    return Manifest(
        pipeline="p",
        sequence=sequence,
        batch_id=f"{sequence:012d}",
        run_id=f"r{sequence}",
        interval_start=None,
        interval_end=None,
        created_at=T0,
        ranges=ranges,
        origins=tuple(PartitionOrigin(topic="t", partition=p, offset=o) for p, o in (origins or {}).items()),
    )


B1, B2, B3 = "000000000001", "000000000002", "000000000003"


def test_contiguous_decoded_batches_are_all_in_scope() -> None:
    manifests = [_manifest(1, _range(0, 0, 10), _range(1, 0, 5)), _manifest(2, _range(0, 10, 20))]
    scope = landed_scope(manifests, {B1, B2})
    assert scope.parts == {(B1, "t", 0), (B1, "t", 1), (B2, "t", 0)}
    assert scope.whole_batches == {B1, B2}
    assert scope.ends == {("t", 0): 20, ("t", 1): 5}
    assert scope.waiting == {}


def test_a_batch_landed_beyond_a_hole_waits_until_the_hole_is_landed() -> None:
    # Backfill run for a later interval first: [20, 30) lands while [10, 20) is not landed yet.
    first = _manifest(1, _range(0, 0, 10), origins={0: 0})
    later = _manifest(2, _range(0, 20, 30))
    scope = landed_scope([first, later], {B1, B2})
    assert scope.parts == {(B1, "t", 0)}
    assert scope.whole_batches == {B1}
    assert scope.ends == {("t", 0): 10}
    assert scope.waiting == {
        ("t", 0): "offsets [10, 20) are not landed yet (batch 000000000002 lands [20, 30)); the backfill of their "
        "interval or the next scheduled or manual run lands them"
    }
    filled = landed_scope([first, later, _manifest(3, _range(0, 10, 20))], {B1, B2, B3})
    assert filled.whole_batches == {B1, B2, B3}
    assert filled.ends == {("t", 0): 30}


def test_a_hole_above_the_recorded_origin_holds_even_the_first_landed_range() -> None:
    # Backfill runs executed backwards on a fresh pipeline: the newest interval lands first.
    scope = landed_scope([_manifest(1, _range(0, 40, 50), origins={0: 0})], {B1})
    assert scope.parts == frozenset()
    assert scope.ends == {("t", 0): 0}
    assert "offsets [0, 40) are not landed yet" in scope.waiting[("t", 0)]


def test_an_undecoded_batch_stops_its_partitions_only() -> None:
    manifests = [_manifest(1, _range(0, 0, 10), _range(1, 0, 5)), _manifest(2, _range(0, 10, 20), _range(1, 5, 6))]
    scope = landed_scope(manifests, {B1})
    assert scope.parts == {(B1, "t", 0), (B1, "t", 1)}
    assert scope.waiting == {
        ("t", 0): "batch 000000000002 ([10, 20)) is not decoded yet",
        ("t", 1): ("batch 000000000002 ([5, 6)) is not decoded yet"),
    }


def test_a_batch_partly_beyond_a_hole_is_read_for_its_other_partitions_only() -> None:
    manifests = [
        _manifest(1, _range(0, 0, 10), _range(1, 0, 5), origins={0: 0, 1: 0}),
        _manifest(2, _range(0, 10, 20), _range(1, 8, 9)),  # partition 1: [5, 8) missing
    ]
    scope = landed_scope(manifests, {B1, B2})
    assert scope.parts == {(B1, "t", 0), (B1, "t", 1), (B2, "t", 0)}
    assert scope.whole_batches == {B1}
    assert scope.partial_parts == {(B2, "t", 0)}
    assert scope.batch_ids == {B1, B2}


def test_a_part_with_two_ranges_is_in_scope_only_when_both_are() -> None:
    # One backfill filled two holes of one partition; a third hole still separates the second.
    manifests = [
        _manifest(1, _range(0, 0, 10), _range(0, 20, 30), origins={0: 0}),
        _manifest(2, _range(0, 10, 15), _range(0, 40, 50)),
    ]
    scope = landed_scope(manifests, {B1, B2})
    assert scope.parts == frozenset()
    assert scope.ends == {("t", 0): 15}


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


def test_topic_cut_counts_only_the_watermarks_of_the_landed_scope() -> None:
    # Partition 0: batch 2 lies beyond a hole ([10, 20) missing), so its watermark 300 does not count.
    manifests = [
        _manifest(1, _range(0, 0, 10), _range(1, 0, 5), origins={0: 0, 1: 0}),
        _manifest(2, _range(0, 20, 30)),
    ]
    decoded = [
        DecodedPart(B1, "t", 0, 100, "r1"),
        DecodedPart(B1, "t", 1, 120, "r1"),
        DecodedPart(B2, "t", 0, 300, "r2"),
    ]
    cut = topic_cut(manifests, decoded, ["t", "quiet"])
    assert cut.marks == {("t", 0): 100, ("t", 1): 120}
    assert cut.expected == {"t": [0, 1], "quiet": []}
    assert cut.watermarks == {"t": 100, "quiet": None}
    assert cut.landed.whole_batches == {B1}
    assert cut.highest == 100
    assert cut.behind == {"quiet"}
    assert cut.silent_partitions("quiet") == []


def test_a_partition_without_a_watermark_holds_its_topic_and_is_named() -> None:
    manifests = [_manifest(1, _range(0, 0, 10), _range(1, 0, 5), _range(0, 0, 4, topic="u"))]
    decoded = [
        DecodedPart(B1, "t", 0, 100, "r1"),
        DecodedPart(B1, "t", 1, None, "r1"),
        DecodedPart(B1, "u", 0, 90, "r1"),
    ]
    cut = topic_cut(manifests, decoded, ["t"])
    assert cut.watermarks == {"t": None, "u": 90}
    assert cut.silent_partitions("t") == [1]
    assert cut.highest == 90
    assert cut.behind == {"t"}


def test_without_any_topic_watermark_no_topic_is_behind() -> None:
    cut = topic_cut([_manifest(1, _range(0, 0, 10))], [DecodedPart(B1, "t", 0, None, "r1")], ["t"])
    assert cut.watermarks == {"t": None}
    assert cut.highest is None
    assert cut.behind == set()


def test_pipeline_watermark_is_the_lowest_topic_watermark_and_topics_without_one_wait() -> None:
    assert pipeline_watermark({"a": 100, "b": 80, "c": None}, ()) == (80, {"a": 80, "b": 80})


def test_a_retired_topic_no_longer_holds_the_pipeline_watermark_and_is_applied_up_to_it() -> None:
    assert pipeline_watermark({"a": 100, "b": 80, "c": None}, {"b", "c"}) == (100, {"a": 100, "b": 100, "c": 100})


def test_no_topic_watermark_means_no_pipeline_watermark_and_nothing_live() -> None:
    assert pipeline_watermark({"a": None}, ()) == (None, {})
    assert pipeline_watermark({"a": None}, {"a"}) == (None, {})
    assert pipeline_watermark({}, ()) == (None, {})
