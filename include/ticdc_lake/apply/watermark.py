"""Watermarks: how far each topic is complete.

Per partition, the highest watermark found in the partition's contiguous landed-and-decoded
prefix; per topic, the minimum over its partitions. A partition with no watermark yet holds its
topic back (the topic has no watermark).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PartitionProgress:
    topic: str
    partition: int
    #: Highest watermark TSO seen in one decoded batch of this partition, or None.
    max_watermark: int | None


def partition_watermarks(progress: Iterable[PartitionProgress]) -> dict[tuple[str, int], int | None]:
    """Highest watermark per (topic, partition) over all decoded batches given."""
    result: dict[tuple[str, int], int | None] = {}
    for item in progress:
        key = (item.topic, item.partition)
        current = result.get(key)
        if item.max_watermark is not None and (current is None or item.max_watermark > current):
            result[key] = item.max_watermark
        else:
            result.setdefault(key, current)
    return result


def topic_watermarks(
    partitions: Mapping[tuple[str, int], int | None], expected: Mapping[str, Iterable[int]]
) -> dict[str, int | None]:
    """Minimum over every expected partition of each topic; None while any has no watermark."""
    result: dict[str, int | None] = {}
    for topic, numbers in expected.items():
        marks = [partitions.get((topic, p)) for p in numbers]
        if not marks or any(m is None for m in marks):
            result[topic] = None
        else:
            result[topic] = min(m for m in marks if m is not None)
    return result
