"""Which landed data apply may use: per partition, the gap-free decoded run from its origin.

Batches can be landed in any order (a backfill of an old interval after newer runs, backfill runs
executed backwards), so landed offsets may have holes. A watermark counts only when every offset
before it in its partition is landed and decoded (docs/exactly-once.md): per partition, apply reads the
ranges from the partition's origin up to the first hole or the first batch not decoded yet, and
nothing after it. The holes are reported with what fills them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.landing.ranges import PartitionKey, landed_index

#: (batch_id, topic, partition): one batch's ranges in one partition.
BatchPart = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class LandedScope:
    #: The batch parts whose every range lies in their partition's gap-free decoded run.
    parts: frozenset[BatchPart]
    #: Batches whose every part is in ``parts``.
    whole_batches: frozenset[str]
    #: Per partition: the end (exclusive) of its gap-free decoded run.
    ends: dict[PartitionKey, int]
    #: Per partition whose landed data goes on past a hole or an undecoded batch: why it waits.
    waiting: dict[PartitionKey, str] = field(default_factory=dict)

    @property
    def batch_ids(self) -> frozenset[str]:
        """Every batch with at least one part in scope."""
        return frozenset(b for b, _, _ in self.parts)

    @property
    def partial_parts(self) -> frozenset[BatchPart]:
        """Parts in scope whose batch is not whole (it also holds ranges beyond a hole)."""
        return frozenset(p for p in self.parts if p[0] not in self.whole_batches)

    def covers(self, batch_id: str, topic: str, partition: int) -> bool:
        return (batch_id, topic, partition) in self.parts


def landed_scope(
    manifests: Sequence[Manifest], decoded: Iterable[str], where: str = "the landing storage"
) -> LandedScope:
    """The scope apply may read, from the published manifests and the ids of the decoded batches."""
    done = set(decoded)
    index = landed_index(manifests, where)
    reached: set[tuple[str, str, int, int]] = set()
    ends: dict[PartitionKey, int] = {}
    waiting: dict[PartitionKey, str] = {}
    for key, landed in sorted(index.partitions.items()):
        at = landed.origin
        for start, end, batch in landed.ranges:
            if start != at:
                waiting[key] = (
                    f"offsets [{at}, {start}) are not landed yet (batch {batch} lands [{start}, {end})); the backfill "
                    "of their interval or the next scheduled or manual run lands them"
                )
                break
            if batch not in done:
                waiting[key] = f"batch {batch} ([{start}, {end})) is not decoded yet"
                break
            reached.add((batch, key[0], key[1], start))
            at = end
        ends[key] = at
    parts: set[BatchPart] = set()
    beyond: set[BatchPart] = set()
    for manifest in manifests:
        for rng in manifest.ranges:
            part = (manifest.batch_id, rng.topic, rng.partition)
            (parts if (manifest.batch_id, rng.topic, rng.partition, rng.start) in reached else beyond).add(part)
    parts -= beyond
    whole = {m.batch_id for m in manifests if all((m.batch_id, r.topic, r.partition) in parts for r in m.ranges)}
    return LandedScope(frozenset(parts), frozenset(whole), ends, waiting)
