"""Offset-range planning: pure rules, no Kafka and no storage.

Per topic partition the landed offsets are a set of half-open ranges ``[start, end)`` that never
overlap, above the partition's **origin**: the offset where the pipeline starts reading it
(``kafka.start_offset``: ``earliest`` = Kafka's low watermark when the partition is first landed,
or a configured offset), recorded in the manifest that first lands the partition. Data is applied
only over the gap-free run of landed ranges from the origin (``apply.watermark_cut.landed_scope``).

What one run lands in a partition is ``[lo, hi)`` minus what is landed already:

* ``hi`` is, for a run with a real data interval, the first offset whose Kafka timestamp is at or
  after the interval's end (the high watermark when Kafka holds no such offset yet); without a
  real interval (``airflow dags test``, a manual trigger) the high watermark.
* ``lo`` depends on the kind of run (:class:`RunKind`): a **backfill** lands exactly its
  interval, so ``lo`` is the first offset stamped at or after the interval's start (the origin for
  the pipeline's first interval); a **scheduled** or **manual** run lands everything not landed
  yet, from the origin, so that catch-up after an outage and records stamped late never leave a
  hole that nothing fills.
* An unlanded offset below Kafka's low watermark means retention deleted it before it was landed:
  :class:`OffsetGapError`, never a silent skip. A backfill whose interval starts at or below the
  low watermark checks every offset from the origin, since Kafka can no longer say which deleted
  offsets belonged to the interval.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Literal

from ticdc_lake.errors import LandingError, OffsetGapError
from ticdc_lake.landing.manifest import Manifest

StartOffset = Literal["earliest"] | int
PartitionKey = tuple[str, int]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class RunKind(StrEnum):
    #: No real data interval: everything not landed, up to Kafka's current end.
    MANUAL = "manual"
    #: A scheduled run (or a catch-up run the scheduler made): everything not landed, up to the interval end.
    SCHEDULED = "scheduled"
    #: A backfill run: exactly the offsets of its interval that are not landed yet.
    BACKFILL = "backfill"


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
    #: First offset whose timestamp is at or after the interval start (backfills only).
    interval_start_offset: int | None = None


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


@dataclass(frozen=True, slots=True)
class LandedPartition:
    """One partition's landed offsets: the origin and the ranges, sorted and disjoint."""

    origin: int
    #: ``(start, end, batch_id)`` sorted by start.
    ranges: tuple[tuple[int, int, str], ...] = ()

    def missing(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The sub-ranges of ``[lo, hi)`` not landed yet, in order."""
        holes: list[tuple[int, int]] = []
        at = lo
        for start, end, _ in self.ranges:
            if end <= at:
                continue
            if start >= hi:
                break
            if start > at:
                holes.append((at, min(start, hi)))
            at = max(at, end)
        if at < hi:
            holes.append((at, hi))
        return holes

    @property
    def highest_end(self) -> int:
        return max((end for _, end, _ in self.ranges), default=self.origin)


@dataclass(frozen=True, slots=True)
class LandedIndex:
    partitions: dict[PartitionKey, LandedPartition] = field(default_factory=dict)

    def get(self, key: PartitionKey) -> LandedPartition | None:
        return self.partitions.get(key)


def interval_end_ms(interval: tuple[datetime, datetime] | None) -> int | None:
    """The interval end in epoch milliseconds, or None when there is no real interval.

    An interval whose start equals its end (``airflow dags test``, manual runs) is not real:
    the run lands up to the high watermark.
    """
    bounds = interval_ms(interval)
    return bounds[1] if bounds is not None else None


def interval_ms(interval: tuple[datetime, datetime] | None) -> tuple[int, int] | None:
    """The interval as epoch milliseconds ``(start, end)``, or None when it is not real."""
    if interval is None:
        return None
    start, end = interval
    if start.tzinfo is None or end.tzinfo is None:
        raise LandingError(f"data interval {start} .. {end} has no time zone; pass aware datetimes (UTC)")
    if end < start:
        raise LandingError(f"data interval ends ({end.isoformat()}) before it starts ({start.isoformat()})")
    if end == start:
        return None
    return (_epoch_ms(start), _epoch_ms(end))


def _epoch_ms(moment: datetime) -> int:
    """Exact epoch milliseconds; Airflow passes pendulum datetimes, made plain datetimes first."""
    plain = datetime.fromisoformat(moment.isoformat())
    return (plain - _EPOCH) // timedelta(milliseconds=1)


def landed_index(manifests: Sequence[Manifest], where: str = "the landing storage") -> LandedIndex:
    """Every partition's origin and landed ranges; :class:`OffsetGapError` when two ranges overlap.

    ``manifests`` must be sorted by sequence. A partition's origin is the one its first manifest
    recorded; manifests written before origins were recorded landed gap-free from their first
    range, whose start is then the origin.
    """
    found: dict[PartitionKey, list[tuple[int, int, str]]] = {}
    origins: dict[PartitionKey, int] = {}
    for manifest in manifests:
        for recorded in manifest.origins:
            origins.setdefault((recorded.topic, recorded.partition), recorded.offset)
        for landed in manifest.ranges:
            found.setdefault(landed.key, []).append((landed.start, landed.end, manifest.batch_id))
    partitions: dict[PartitionKey, LandedPartition] = {}
    for key, ranges in found.items():
        ranges.sort()
        for (s1, e1, b1), (s2, e2, b2) in itertools.pairwise(ranges):
            if s2 < e1:
                raise OffsetGapError(
                    f"{where}: topic {key[0]!r} partition {key[1]}: manifest {b2} lands [{s2}, {e2}) but manifest "
                    f"{b1} landed [{s1}, {e1}): offsets [{s2}, {min(e1, e2)}) are landed twice. Published "
                    "manifests were altered by hand; restore them from a backup, or rebuild the pipeline's "
                    "landing folder from Kafka."
                )
        origin = origins.get(key, ranges[0][0])
        partitions[key] = LandedPartition(min(origin, ranges[0][0]), tuple(ranges))
    return LandedIndex(partitions)


def landed_ends(manifests: Sequence[Manifest], where: str = "the landing storage") -> dict[PartitionKey, int]:
    """The highest landed offset (exclusive) per partition, after checking that no ranges overlap."""
    return {key: p.highest_end for key, p in landed_index(manifests, where).partitions.items()}


def origin_offset(state: PartitionState, landed: LandedPartition | None, configured: StartOffset) -> int:
    """Where the pipeline starts reading the partition: recorded, else from ``kafka.start_offset``."""
    if landed is not None:
        return landed.origin
    if configured == "earliest":
        return state.low
    if configured < state.low:
        raise OffsetGapError(
            f"topic {state.topic!r} partition {state.partition}: the configured kafka.start_offset {configured} "
            f"is below Kafka's low watermark {state.low}: offsets [{configured}, {state.low}) no longer exist. "
            f"Set kafka.start_offset to 'earliest' or an offset >= {state.low} in the pipeline configuration."
        )
    return configured


def end_offset(state: PartitionState, has_interval: bool) -> int:
    """Where this run ends in the partition: never beyond the high watermark."""
    if not has_interval or state.interval_end_offset is None:
        return state.high
    return min(state.interval_end_offset, state.high)


def plan_partition(
    state: PartitionState,
    landed: LandedPartition | None,
    configured: StartOffset,
    kind: RunKind,
    *,
    first_interval: bool = False,
) -> list[PlannedRange]:
    """The ranges to land in one partition (none when everything is landed already).

    ``first_interval``: the backfill's interval is the pipeline's first (it starts at or before
    ``start_date``), so it also lands what precedes its start, from the origin.
    """
    origin = origin_offset(state, landed, configured)
    hi = end_offset(state, kind is not RunKind.MANUAL)
    lo = origin
    if kind is RunKind.BACKFILL and not first_interval:
        at_start = state.interval_start_offset if state.interval_start_offset is not None else state.high
        lo = max(origin, min(at_start, hi))
        if lo <= state.low:
            # Kafka resolves the interval's start to its low watermark: the interval may have begun
            # in offsets retention already deleted. Unlanded offsets there fail the run below.
            lo = origin
    holes = (landed or LandedPartition(origin)).missing(lo, hi)
    for start, end in holes:
        if start < state.low:
            raise OffsetGapError(
                f"topic {state.topic!r} partition {state.partition}: offsets [{start}, {min(end, state.low)}) were "
                f"deleted by Kafka (retention) before they were landed; Kafka now starts at offset {state.low}. "
                "The data is lost from Kafka and the tables cannot be brought past it. Recover the offsets from "
                "another copy of the topic if one exists; otherwise rebuild the pipeline (delete its landing "
                "folder and derived tables, set kafka.start_offset) knowing that these changes are missing "
                "(README: Backfill and catch-up)."
            )
    return [PlannedRange(state.topic, state.partition, start, end) for start, end in holes]
