"""The landed scope apply reads: per partition, the gap-free decoded run of ranges from the origin."""

from __future__ import annotations

from datetime import UTC, datetime

from ticdc_lake.apply.landed_scope import landed_scope
from ticdc_lake.landing.manifest import LandedRange, Manifest, PartitionOrigin

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def _range(partition: int, start: int, end: int) -> LandedRange:
    return LandedRange(
        topic="t",
        partition=partition,
        start=start,
        end=end,
        count=0,
        file=None,
        sha256=None,
        size_bytes=None,
        first_timestamp_ms=None,
        last_timestamp_ms=None,
    )


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
