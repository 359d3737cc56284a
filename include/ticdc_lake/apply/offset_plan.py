"""Planning an offset-ordered apply (protocol settings without commit TSO or watermarks), no Spark.

A table's position is, per topic partition, the next Kafka offset not applied yet (snapshot
summary ``ticdc.applied-offsets``, compact JSON ``{"<topic>/<partition>": <next offset>}``).
A run applies the table's rows at or after that offset, up to the end of the landed and decoded
prefix, split into one segment per schema version: per partition versions only move forward, so
the version order is the same in every partition and each segment ends at a known offset per
partition. A table DDL that TiCDC sends as SQL without a commit TSO and that cannot be replayed
from schema versions (TRUNCATE, DROP, RENAME) stops the table at its copy in each partition
(``docs/offset-ordered-apply.md``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: Snapshot summary keys of an offset-ordered table: the next offsets, and the schema version of
#: the rows of the last segment applied (the "pre" of the next version change).
OFFSETS_PROP = "ticdc.applied-offsets"
VERSION_PROP = "ticdc.applied-schema-version"
#: DDL types whose effect schema versions do not carry: they hold the table at their copy.
BARRIER_DDL = frozenset({"TRUNCATE", "ERASE", "RENAME"})

Partition = tuple[str, int]


def partition_key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


def parse_offsets(text: str | None) -> dict[Partition, int]:
    """``ticdc.applied-offsets`` → next offset per (topic, partition); empty when absent."""
    if not text:
        return {}
    result: dict[Partition, int] = {}
    for key, value in json.loads(text).items():
        topic, _, partition = str(key).rpartition("/")
        result[(topic, int(partition))] = int(value)
    return result


def format_offsets(offsets: Mapping[Partition, int]) -> str:
    """Compact JSON, sorted by topic and partition, so equal positions give equal text."""
    ordered = {partition_key(t, p): offsets[(t, p)] for t, p in sorted(offsets)}
    return json.dumps(ordered, separators=(",", ":"))


def describe_offsets(offsets: Mapping[Partition, int]) -> str:
    return ", ".join(f"{t}/{p}@{o}" for (t, p), o in sorted(offsets.items())) or "none"


@dataclass(frozen=True, slots=True)
class VersionRange:
    """The fresh READY row events of one schema version in one partition (offsets inclusive)."""

    version: int | None
    topic: str
    partition: int
    first: int
    last: int
    count: int


@dataclass(slots=True)
class Segment:
    version: int | None
    events: int
    #: The table's next offsets once this segment is applied (the previous ones carried forward).
    after: dict[Partition, int] = field(default_factory=dict)


def plan_segments(
    ranges: Iterable[VersionRange], start: Mapping[Partition, int], final: Mapping[Partition, int]
) -> list[Segment] | str:
    """One segment per schema version in version order, or why the versions cannot be ordered.

    ``start``: the stored next offsets; ``final``: the next offsets once every fresh row is applied
    (the landed prefix's end, or a barrier DDL's offset). The last segment ends at ``final``.
    """
    by_version: dict[int | None, list[VersionRange]] = {}
    for r in ranges:
        by_version.setdefault(r.version, []).append(r)
    if None in by_version and len(by_version) > 1:
        return "row events without a schema version are mixed with versioned ones; they cannot be ordered"
    order = sorted(by_version, key=lambda v: -1 if v is None else v)
    partitions: dict[Partition, list[VersionRange]] = {}
    for version in order:
        for r in by_version[version]:
            partitions.setdefault((r.topic, r.partition), []).append(r)
    for (topic, partition), found in partitions.items():
        for earlier, later in itertools.pairwise(found):
            if earlier.last >= later.first:
                return (
                    f"in {topic}/{partition} rows of schema version {earlier.version} (offsets {earlier.first}.."
                    f"{earlier.last}) and {later.version} (offsets {later.first}..{later.last}) interleave; "
                    "per partition versions must only move forward"
                )
    segments: list[Segment] = []
    position = dict(start)
    for number, version in enumerate(order):
        if number == len(order) - 1:
            for key, value in final.items():
                position[key] = max(position.get(key, 0), value)
        else:
            for r in by_version[version]:
                key = (r.topic, r.partition)
                position[key] = max(position.get(key, 0), r.last + 1)
        segments.append(Segment(version, sum(r.count for r in by_version[version]), dict(position)))
    return segments


def final_offsets(
    ends: Mapping[Partition, int], cuts: Mapping[Partition, int], start: Mapping[Partition, int]
) -> dict[Partition, int]:
    """Next offsets once the fresh rows are applied: the prefix end, or a barrier DDL's offset."""
    return {key: max(start.get(key, 0), min(end, cuts.get(key, end))) for key, end in ends.items()}
