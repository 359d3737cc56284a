"""Offset-range planning rules, without Kafka."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from ticdc_lake.errors import LandingError, OffsetGapError
from ticdc_lake.landing.manifest import LandedRange, Manifest
from ticdc_lake.landing.ranges import (
    PartitionState,
    PlannedRange,
    end_offset,
    interval_end_ms,
    landed_ends,
    plan_partition,
    start_offset,
)

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def _state(low: int = 0, high: int = 100, at_interval_end: int | None = None) -> PartitionState:
    return PartitionState("orders", 2, low, high, at_interval_end)


def _range(partition: int, start: int, end: int, topic: str = "orders") -> LandedRange:
    return LandedRange(
        topic=topic,
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


def test_never_landed_partition_starts_at_low_watermark_for_earliest() -> None:
    assert start_offset(_state(low=17), None, "earliest") == 17


def test_never_landed_partition_starts_at_configured_offset() -> None:
    assert start_offset(_state(low=17), None, 40) == 40


def test_landed_partition_starts_at_last_end_whatever_the_configuration() -> None:
    assert start_offset(_state(low=17), 55, "earliest") == 55
    assert start_offset(_state(low=17), 55, 90) == 55


def test_configured_offset_below_low_watermark_is_a_gap() -> None:
    with pytest.raises(OffsetGapError) as caught:
        start_offset(_state(low=17), None, 5)
    assert str(caught.value) == (
        "topic 'orders' partition 2: the configured kafka.start_offset 5 is below Kafka's low watermark 17: "
        "offsets [5, 17) no longer exist. Set kafka.start_offset to 'earliest' or an offset >= 17 in the "
        "pipeline configuration."
    )


def test_retention_past_the_landed_end_is_a_gap() -> None:
    with pytest.raises(OffsetGapError) as caught:
        start_offset(_state(low=30), 25, "earliest")
    message = str(caught.value)
    assert message.startswith(
        "topic 'orders' partition 2: offsets [25, 30) were deleted by Kafka (retention) before they were "
        "landed; Kafka now starts at offset 30."
    )
    assert "rebuild the pipeline" in message


def test_landed_end_equal_to_low_watermark_is_no_gap() -> None:
    assert plan_partition(_state(low=30, high=30), 30, "earliest", False) == PlannedRange("orders", 2, 30, 30)


def test_end_without_interval_is_high_watermark() -> None:
    assert end_offset(_state(high=100, at_interval_end=60), has_interval=False) == 100


def test_end_with_interval_is_first_offset_at_or_after_interval_end() -> None:
    assert end_offset(_state(high=100, at_interval_end=60), has_interval=True) == 60


def test_end_with_interval_but_no_later_offset_is_high_watermark() -> None:
    assert end_offset(_state(high=100, at_interval_end=None), has_interval=True) == 100


def test_end_never_passes_high_watermark() -> None:
    assert end_offset(_state(high=100, at_interval_end=140), has_interval=True) == 100


def test_plan_never_moves_backwards() -> None:
    # Interval end resolves below what was already landed: nothing to land, start stays.
    assert plan_partition(_state(high=100, at_interval_end=40), 55, "earliest", True) == PlannedRange(
        "orders", 2, 55, 55
    )
    # Configured start beyond the high watermark: nothing yet.
    planned = plan_partition(_state(high=10), None, 50, False)
    assert planned == PlannedRange("orders", 2, 50, 50)
    assert planned.is_empty


def test_plan_full_range() -> None:
    planned = plan_partition(_state(low=3, high=100, at_interval_end=60), 20, "earliest", True)
    assert planned == PlannedRange("orders", 2, 20, 60)
    assert not planned.is_empty
    assert planned.describe() == "topic 'orders' partition 2 offsets [20, 60)"


def test_landed_ends_follow_contiguous_manifests() -> None:
    manifests = [
        _manifest(1, _range(0, 0, 10), _range(1, 0, 4)),
        _manifest(2, _range(0, 10, 12)),
        _manifest(3, _range(0, 12, 20), _range(1, 4, 9), _range(0, 0, 3, topic="other")),
    ]
    assert landed_ends(manifests) == {("orders", 0): 20, ("orders", 1): 9, ("other", 0): 3}


def test_hole_between_manifests_is_a_gap() -> None:
    manifests = [_manifest(1, _range(0, 0, 10)), _manifest(2, _range(0, 12, 20))]
    with pytest.raises(OffsetGapError) as caught:
        landed_ends(manifests, where="file:///lake/p")
    assert str(caught.value) == (
        "file:///lake/p: topic 'orders' partition 0: manifest 000000000002 lands [12, 20) but manifest "
        "000000000001 ended at 10: offsets [10, 12) are missing. Published manifests were altered or "
        "removed by hand; restore them from a backup, or rebuild the pipeline's landing folder from Kafka."
    )


def test_overlap_between_manifests_is_a_gap() -> None:
    manifests = [_manifest(1, _range(0, 0, 10)), _manifest(2, _range(0, 8, 20))]
    with pytest.raises(OffsetGapError, match=r"offsets \[8, 10\) are landed twice"):
        landed_ends(manifests)
