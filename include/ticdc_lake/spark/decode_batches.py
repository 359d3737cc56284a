"""The ``decoded_batches`` rows of a decode run: per batch and partition, what its messages gave.

These rows are the decode stage's commit marker (docs/exactly-once.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ticdc_lake.landing.manifest import LandedRange, Manifest
from ticdc_lake.spark.decode_worker import PartitionStats, TaskReport


def batch_stats(
    reports: Iterable[TaskReport], manifests: list[Manifest]
) -> list[tuple[Manifest, LandedRange, PartitionStats]]:
    """Per batch and partition of ``manifests``, what its messages decoded to.

    A batch that filled several holes of one partition has several ranges there: they make one
    row spanning them (first start, last end, summed count), as the row's key is the partition.
    """
    counts: dict[tuple[str, str, int], PartitionStats] = {}
    for report in reports:
        for key, stats in report.stats.items():
            counts.setdefault(key, PartitionStats()).add(stats)
    rows: list[tuple[Manifest, LandedRange, PartitionStats]] = []
    for m in manifests:
        spans: dict[tuple[str, int], LandedRange] = {}
        for r in m.ranges:
            seen = spans.get(r.key)
            spans[r.key] = r if seen is None else _spanning(seen, r)
        rows += [(m, r, counts.get((m.batch_id, r.topic, r.partition), PartitionStats())) for r in spans.values()]
    return rows


def _spanning(first: LandedRange, then: LandedRange) -> LandedRange:
    """One range record covering two ranges of a partition (for the per-partition stats row only)."""
    return LandedRange.model_construct(
        **{**first.model_dump(), "end": then.end, "count": first.count + then.count, "file": None}
    )


def stats_row(
    pipeline_id: str, run_id: str, manifest: Manifest, rng: LandedRange, s: PartitionStats
) -> tuple[Any, ...]:
    return (
        pipeline_id,
        manifest.batch_id,
        manifest.sequence,
        rng.topic,
        rng.partition,
        rng.start,
        rng.end,
        rng.count,
        s.events,
        s.dml,
        s.ddl,
        s.watermarks,
        Decimal(s.max_watermark) if s.max_watermark is not None else None,
        s.quarantined,
        s.pending,
        run_id,
        datetime.now(UTC),
    )
