"""The watermark cut that gates apply, in one place (plain Python): which landed data counts, how far
each partition and topic is complete, and the one watermark of the run (docs/exactly-once.md).

1. **Landed scope.** Batches can be landed in any order (a backfill of an old interval after newer
   runs, backfill runs executed backwards), so landed offsets may have holes. A watermark counts only
   when every offset before it in its partition is landed and decoded: per partition, apply reads
   the ranges from the partition's origin up to the first hole or the first batch not decoded yet,
   and nothing after it (:func:`landed_scope`). The holes are reported with what fills them.
2. **Partition and topic watermarks.** Per partition, the highest watermark found in that scope;
   per topic, the minimum over its partitions. A partition with no watermark yet holds its topic
   back (the topic has no watermark; :func:`partition_watermarks`, :func:`topic_watermarks`).
3. **The run's watermark.** The lowest topic watermark over the topics that have one and are not
   retired (``apply.topic_retirement``: their tables were all dropped or renamed away, TiCDC sends
   them no more watermarks); every table of those topics is applied up to it, so the tables of a
   run form a consistent cut (docs/consistent-reads.md). Topics without a watermark wait
   (:func:`pipeline_watermark`).

:func:`topic_cut` runs steps 1 and 2 from the manifests and the ``decoded_batches`` rows; step 3
needs the retired topics, which the Spark side reads for the topics behind the others
(:attr:`TopicCut.behind`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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


@dataclass(frozen=True, slots=True)
class PartitionProgress:
    topic: str
    partition: int
    #: Highest watermark TSO seen in one decoded batch of this partition, or None.
    max_watermark: int | None


def partition_watermarks(progress: Iterable[PartitionProgress]) -> dict[PartitionKey, int | None]:
    """Highest watermark per (topic, partition) over all decoded batches given."""
    result: dict[PartitionKey, int | None] = {}
    for item in progress:
        key = (item.topic, item.partition)
        current = result.get(key)
        if item.max_watermark is not None and (current is None or item.max_watermark > current):
            result[key] = item.max_watermark
        else:
            result.setdefault(key, current)
    return result


def topic_watermarks(
    partitions: Mapping[PartitionKey, int | None], expected: Mapping[str, Iterable[int]]
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


@dataclass(frozen=True, slots=True)
class DecodedPart:
    """One ``decoded_batches`` row: what decoding found in one batch's ranges of one partition."""

    batch_id: str
    topic: str
    partition: int
    max_watermark: int | None
    run_id: str


@dataclass(frozen=True, slots=True)
class TopicCut:
    """Steps 1 and 2 of the cut: the landed scope and the watermark of each partition and topic."""

    landed: LandedScope
    #: Per topic: the partitions it is expected to have (the configured topics and every landed partition).
    expected: dict[str, list[int]]
    #: Per (topic, partition): the highest watermark in the landed scope, None when it has none.
    marks: dict[PartitionKey, int | None]
    #: Per topic: the minimum over its expected partitions, None while any has none.
    watermarks: dict[str, int | None]

    def silent_partitions(self, topic: str) -> list[int]:
        """The partitions of ``topic`` without a watermark (they hold it back)."""
        return [p for p in self.expected.get(topic, []) if self.marks.get((topic, p)) is None]

    @property
    def highest(self) -> int | None:
        return max((m for m in self.watermarks.values() if m is not None), default=None)

    @property
    def behind(self) -> set[str]:
        """Topics without a watermark or below the highest: the candidates for retirement (none when no topic has
        a watermark)."""
        highest = self.highest
        if highest is None:
            return set()
        return {t for t, m in self.watermarks.items() if m is None or m < highest}


def topic_cut(
    manifests: Sequence[Manifest],
    decoded: Iterable[DecodedPart],
    topics: Iterable[str],
    where: str = "the landing storage",
) -> TopicCut:
    """Steps 1 and 2 from the published manifests and the ``decoded_batches`` rows of the pipeline.

    Only the decoded parts the landed scope covers count for a partition's watermark; every
    configured topic (``topics``) and every partition a manifest names is expected to have one.
    """
    parts = list(decoded)
    landed = landed_scope(manifests, {p.batch_id for p in parts}, where=where)
    expected: dict[str, set[int]] = {t: set() for t in topics}
    for manifest in manifests:
        for rng in manifest.ranges:
            expected.setdefault(rng.topic, set()).add(rng.partition)
    marks = partition_watermarks(
        PartitionProgress(p.topic, p.partition, p.max_watermark)
        for p in parts
        if landed.covers(p.batch_id, p.topic, p.partition)
    )
    ordered = {t: sorted(p) for t, p in expected.items()}
    return TopicCut(landed, ordered, marks, topic_watermarks(marks, ordered))


def pipeline_watermark(
    watermarks: Mapping[str, int | None], retired: Iterable[str]
) -> tuple[int | None, dict[str, int]]:
    """Step 3: (the run's watermark, the live topics each mapped to it).

    The watermark is the lowest over the topics that have one and are not retired, None when there
    is none. Live are the topics applied up to it: those with a watermark and the retired ones;
    none when there is no watermark.
    """
    gone = set(retired)
    watermark = min((m for t, m in watermarks.items() if m is not None and t not in gone), default=None)
    if watermark is None:
        return None, {}
    return watermark, {t: watermark for t, m in watermarks.items() if m is not None or t in gone}
