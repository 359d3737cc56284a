"""Offset-range planning rules, without Kafka."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from ticdc_lake.errors import LandingError, OffsetGapError
from ticdc_lake.landing.manifest import LandedRange, Manifest, PartitionOrigin
from ticdc_lake.landing.ranges import (
    LandedPartition,
    PartitionState,
    PlannedRange,
    RunKind,
    end_offset,
    interval_end_ms,
    landed_ends,
    landed_index,
    origin_offset,
    plan_partition,
)

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def _state(
    low: int = 0, high: int = 100, at_interval_end: int | None = None, at_interval_start: int | None = None
) -> PartitionState:
    return PartitionState("orders", 2, low, high, at_interval_end, at_interval_start)


def _range(partition: int, start: int, end: int, topic: str = "orders") -> LandedRange:
    return LandedRange.empty(topic, partition, start, end)


def _manifest(sequence: int, *ranges: LandedRange) -> Manifest:
    return Manifest(
        pipeline="p",
        sequence=sequence,
        batch_id=f"{sequence:012d}",
        run_id=f"r{sequence}",
        interval_start=None,
        interval_end=None,
        created_at=T0,
        ranges=ranges,
    )


def test_interval_end_ms_is_exact_epoch_milliseconds() -> None:
    end = datetime(2026, 3, 1, 11, 0, 0, 123000, tzinfo=UTC)
    assert interval_end_ms((T0, end)) == 1772362800123


def test_interval_end_ms_accepts_other_zones() -> None:
    end = datetime(2026, 3, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))  # 12:00 UTC
    assert interval_end_ms((T0, end)) == 1772366400000


def test_missing_or_empty_interval_means_high_watermark() -> None:
    assert interval_end_ms(None) is None
    assert interval_end_ms((T0, T0)) is None


def test_naive_interval_is_rejected() -> None:
    with pytest.raises(LandingError, match="has no time zone; pass aware datetimes"):
        interval_end_ms((datetime(2026, 3, 1), datetime(2026, 3, 2)))


def test_reversed_interval_is_rejected() -> None:
    with pytest.raises(LandingError) as caught:
        interval_end_ms((T0, T0 - timedelta(hours=1)))
    assert str(caught.value) == (
        "data interval ends (2026-03-01T09:00:00+00:00) before it starts (2026-03-01T10:00:00+00:00)"
    )


def _landed(origin: int, *spans: tuple[int, int]) -> LandedPartition:
    return LandedPartition(origin, tuple((a, b, f"{i:012d}") for i, (a, b) in enumerate(spans, start=1)))


def _plan(state: PartitionState, landed: LandedPartition | None, kind: RunKind, **kw: object) -> list[tuple[int, int]]:
    configured = kw.pop("configured", "earliest")
    planned = plan_partition(state, landed, configured, kind, **kw)  # type: ignore[arg-type]
    return [(r.start, r.end) for r in planned]


def test_never_landed_partition_has_its_origin_at_low_watermark_for_earliest() -> None:
    assert origin_offset(_state(low=17), None, "earliest") == 17
    assert _plan(_state(low=17), None, RunKind.MANUAL) == [(17, 100)]


def test_never_landed_partition_has_its_origin_at_the_configured_offset() -> None:
    assert origin_offset(_state(low=17), None, 40) == 40
    assert _plan(_state(low=17), None, RunKind.MANUAL, configured=40) == [(40, 100)]


def test_a_landed_partition_keeps_its_recorded_origin_whatever_the_configuration() -> None:
    assert origin_offset(_state(low=17), _landed(20, (20, 55)), "earliest") == 20
    assert origin_offset(_state(low=17), _landed(20, (20, 55)), 90) == 20
    assert _plan(_state(low=17), _landed(20, (20, 55)), RunKind.MANUAL, configured=90) == [(55, 100)]


def test_configured_offset_below_low_watermark_is_a_gap() -> None:
    with pytest.raises(OffsetGapError) as caught:
        origin_offset(_state(low=17), None, 5)
    assert str(caught.value) == (
        "topic 'orders' partition 2: the configured kafka.start_offset 5 is below Kafka's low watermark 17: "
        "offsets [5, 17) no longer exist. Set kafka.start_offset to 'earliest' or an offset >= 17 in the "
        "pipeline configuration."
    )


def test_retention_past_what_was_landed_is_a_gap_naming_partition_and_offsets() -> None:
    with pytest.raises(OffsetGapError) as caught:
        _plan(_state(low=30), _landed(0, (0, 25)), RunKind.SCHEDULED)
    message = str(caught.value)
    assert message.startswith(
        "topic 'orders' partition 2: offsets [25, 30) were deleted by Kafka (retention) before they were "
        "landed; Kafka now starts at offset 30."
    )
    assert "rebuild the pipeline" in message
    assert "README: Backfill and catch-up" in message


def test_a_backfill_of_an_expired_interval_fails_but_one_already_landed_does_not() -> None:
    # Retention deleted everything below 50: Kafka resolves the interval's start and end to 50.
    expired = _state(low=50, high=100, at_interval_end=50, at_interval_start=50)
    with pytest.raises(OffsetGapError, match=r"offsets \[10, 50\) were deleted by Kafka"):
        _plan(expired, _landed(0, (0, 10)), RunKind.BACKFILL)
    assert _plan(expired, _landed(0, (0, 60)), RunKind.BACKFILL) == []


def test_landed_up_to_the_low_watermark_is_no_gap() -> None:
    assert _plan(_state(low=30, high=30), _landed(0, (0, 30)), RunKind.SCHEDULED) == []


def test_end_without_interval_is_high_watermark() -> None:
    assert end_offset(_state(high=100, at_interval_end=60), has_interval=False) == 100


def test_end_with_interval_is_first_offset_at_or_after_interval_end() -> None:
    assert end_offset(_state(high=100, at_interval_end=60), has_interval=True) == 60


def test_end_with_interval_but_no_later_offset_is_high_watermark() -> None:
    assert end_offset(_state(high=100, at_interval_end=None), has_interval=True) == 100


def test_end_never_passes_high_watermark() -> None:
    assert end_offset(_state(high=100, at_interval_end=140), has_interval=True) == 100


def test_nothing_is_landed_twice() -> None:
    # The interval ends below what is landed already: nothing to land.
    assert _plan(_state(high=100, at_interval_end=40), _landed(0, (0, 55)), RunKind.SCHEDULED) == []
    # Configured start beyond the high watermark: nothing yet.
    assert _plan(_state(high=10), None, RunKind.MANUAL, configured=50) == []


def test_a_scheduled_run_lands_everything_missing_from_the_origin_up_to_its_interval_end() -> None:
    # A hole left by a backfill that has not run yet, and late records after the last landed range.
    landed = _landed(0, (0, 10), (20, 30))
    assert _plan(_state(high=100, at_interval_end=60, at_interval_start=45), landed, RunKind.SCHEDULED) == [
        (10, 20),
        (30, 60),
    ]


def test_a_backfill_lands_exactly_its_interval() -> None:
    state = _state(high=100, at_interval_end=60, at_interval_start=40)
    assert _plan(state, _landed(0, (0, 10)), RunKind.BACKFILL) == [(40, 60)]
    # What another run landed inside the interval is not landed again.
    assert _plan(state, _landed(0, (0, 10), (45, 50)), RunKind.BACKFILL) == [(40, 45), (50, 60)]
    # A partition never landed: its origin is recorded, the backfill still lands only its interval.
    assert _plan(state, None, RunKind.BACKFILL) == [(40, 60)]


def test_the_first_interval_of_a_backfill_starts_at_the_origin() -> None:
    state = _state(low=3, high=100, at_interval_end=60, at_interval_start=40)
    assert _plan(state, None, RunKind.BACKFILL, first_interval=True) == [(3, 60)]


def test_a_backfill_interval_with_no_record_yet_lands_nothing() -> None:
    # No record stamped at or after the interval start: the interval holds nothing in Kafka.
    assert _plan(_state(high=100, at_interval_end=None, at_interval_start=None), None, RunKind.BACKFILL) == []


def test_planned_range_describes_itself() -> None:
    planned = PlannedRange("orders", 2, 20, 60)
    assert not planned.is_empty
    assert planned.describe() == "topic 'orders' partition 2 offsets [20, 60)"


def test_landed_index_records_origins_and_sorted_ranges() -> None:
    manifests = [
        _manifest(1, _range(0, 0, 10), _range(1, 0, 4)),
        _manifest(2, _range(0, 20, 25)),
        _manifest(3, _range(0, 10, 20), _range(1, 4, 9), _range(0, 0, 3, topic="other")),
    ]
    index = landed_index(manifests)
    assert index.partitions[("orders", 0)] == LandedPartition(
        0, ((0, 10, "000000000001"), (10, 20, "000000000003"), (20, 25, "000000000002"))
    )
    assert landed_ends(manifests) == {("orders", 0): 25, ("orders", 1): 9, ("other", 0): 3}


def test_a_recorded_origin_below_the_first_range_is_kept() -> None:
    first = _manifest(1, _range(0, 40, 50)).model_copy(
        update={"origins": (PartitionOrigin(topic="orders", partition=0, offset=5),)}
    )
    index = landed_index([first])
    assert index.partitions[("orders", 0)].origin == 5
    assert index.partitions[("orders", 0)].missing(5, 60) == [(5, 40), (50, 60)]


def test_overlap_between_manifests_is_refused() -> None:
    manifests = [_manifest(1, _range(0, 0, 10)), _manifest(2, _range(0, 8, 20))]
    with pytest.raises(OffsetGapError) as caught:
        landed_index(manifests, where="file:///lake/p")
    assert str(caught.value) == (
        "file:///lake/p: topic 'orders' partition 0: manifest 000000000002 lands [8, 20) but manifest "
        "000000000001 landed [0, 10): offsets [8, 10) are landed twice. Published manifests were altered by "
        "hand; restore them from a backup, or rebuild the pipeline's landing folder from Kafka."
    )


def test_interval_bounds_accept_the_pendulum_datetimes_airflow_passes() -> None:
    import pendulum

    start = pendulum.datetime(2026, 3, 1, 10, tz="UTC")
    assert interval_end_ms((start, start.add(hours=1, microseconds=123000))) == 1772362800123
