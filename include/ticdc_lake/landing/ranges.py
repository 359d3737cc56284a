"""Offset-range planning: pure rules, no Kafka and no storage.

Per topic partition a run lands the half-open range ``[start, end)``:

* ``start`` is the end of the partition's last landed range, or, for a partition never landed,
  the pipeline's ``kafka.start_offset`` (``earliest`` = the partition's low watermark).
* ``end`` is, for a real data interval, the first offset whose Kafka timestamp is at or after the
  interval's end (the high watermark when there is none); for no interval or an empty one, the
  high watermark. It never exceeds the high watermark and never moves backwards.
* A ``start`` below Kafka's low watermark means retention deleted offsets that were never landed:
  that is an :class:`OffsetGapError`, never a silent skip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from ticdc_lake.errors import LandingError, OffsetGapError
from ticdc_lake.landing.manifest import Manifest

StartOffset = Literal["earliest"] | int
PartitionKey = tuple[str, int]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What Kafka says about one partition now."""

    topic: str
    partition: int
    low: int
    high: int
    #: First offset whose timestamp is at or after the interval end; None when there is no such
    #: offset or the run has no real interval.
    interval_end_offset: int | None = None


@dataclass(frozen=True, slots=True)
class PlannedRange:
    topic: str
    partition: int
    start: int
    end: int

    @property
    def key(self) -> PartitionKey:
        return (self.topic, self.partition)

    @property
    def is_empty(self) -> bool:
        return self.end <= self.start

    def describe(self) -> str:
        return f"topic {self.topic!r} partition {self.partition} offsets [{self.start}, {self.end})"


def interval_end_ms(interval: tuple[datetime, datetime] | None) -> int | None:
    """The interval end in epoch milliseconds, or None when there is no real interval.

    An interval whose start equals its end (``airflow dags test``, manual runs) is not real:
    the run lands up to the high watermark.
    """
    if interval is None:
        return None
    start, end = interval
    if start.tzinfo is None or end.tzinfo is None:
        raise LandingError(f"data interval {start} .. {end} has no time zone; pass aware datetimes (UTC)")
    if end < start:
        raise LandingError(f"data interval ends ({end.isoformat()}) before it starts ({start.isoformat()})")
    if end == start:
        return None
    return (end - _EPOCH) // timedelta(milliseconds=1)


def landed_ends(manifests: Sequence[Manifest], where: str = "the landing storage") -> dict[PartitionKey, int]:
    """End offset of the last landed range per partition, checking that ranges are contiguous.

    ``manifests`` must be sorted by sequence. Raises :class:`OffsetGapError` when a partition's
    range does not start where its previous range ended.
    """
    ends: dict[PartitionKey, int] = {}
    previous_batch: dict[PartitionKey, str] = {}
    for manifest in manifests:
        for landed in manifest.ranges:
            before = ends.get(landed.key)
            if before is not None and landed.start != before:
                problem = (
                    f"offsets [{before}, {landed.start}) are missing"
                    if landed.start > before
                    else f"offsets [{landed.start}, {before}) are landed twice"
                )
                raise OffsetGapError(
                    f"{where}: topic {landed.topic!r} partition {landed.partition}: manifest "
                    f"{manifest.batch_id} lands [{landed.start}, {landed.end}) but manifest "
                    f"{previous_batch[landed.key]} ended at {before}: {problem}. Published manifests "
                    "were altered or removed by hand; restore them from a backup, or rebuild the "
                    "pipeline's landing folder from Kafka."
                )
            ends[landed.key] = landed.end
            previous_batch[landed.key] = manifest.batch_id
    return ends


def start_offset(state: PartitionState, landed_end: int | None, configured: StartOffset) -> int:
    """Where this run starts in the partition; raises :class:`OffsetGapError` below the low watermark."""
    where = f"topic {state.topic!r} partition {state.partition}"
    if landed_end is not None:
        if landed_end < state.low:
            raise OffsetGapError(
                f"{where}: offsets [{landed_end}, {state.low}) were deleted by Kafka (retention) before "
                f"they were landed; Kafka now starts at offset {state.low}. The data is lost from Kafka. "
                "Recover it from another copy of the topic if one exists; otherwise rebuild the pipeline "
                "(delete its landing folder and derived tables, set kafka.start_offset) knowing that "
                "these changes are missing."
            )
        return landed_end
    if configured == "earliest":
        return state.low
    if configured < state.low:
        raise OffsetGapError(
            f"{where}: the configured kafka.start_offset {configured} is below Kafka's low watermark "
            f"{state.low}: offsets [{configured}, {state.low}) no longer exist. Set kafka.start_offset to "
            f"'earliest' or an offset >= {state.low} in the pipeline configuration."
        )
    return configured


def end_offset(state: PartitionState, has_interval: bool) -> int:
    """Where this run ends in the partition (before the never-backwards rule)."""
    if not has_interval or state.interval_end_offset is None:
        return state.high
    return min(state.interval_end_offset, state.high)


def plan_partition(
    state: PartitionState, landed_end: int | None, configured: StartOffset, has_interval: bool
) -> PlannedRange:
    """The range to land in one partition; empty (end == start) when there is nothing new."""
    start = start_offset(state, landed_end, configured)
    end = end_offset(state, has_interval)
    return PlannedRange(state.topic, state.partition, start, max(start, end))
