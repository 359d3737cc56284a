"""How the decode stage cuts landed files into Spark tasks.

Decoding is Python-bound, so the stage's time is the busiest core's share. One task per file
leaves cores idle when files are few or uneven (three partitions on two cores), and one task per
small file floods Spark with tasks and Iceberg with tiny files. So:

1. A file may be cut into offset slices. A slice still reads its file from the start and skips
   the records before its first offset (reading costs a fraction of decoding), so a cut is made
   only while it shortens the estimated busiest-core time, largest slice first.
2. Slices are packed into at most ``4 x slots`` tasks (largest first onto the least loaded task),
   and tasks run largest first, so the long ones never start last.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

#: Relative cost of decoding a message and of reading past one (measured: about 6 to 1).
DECODE_COST = 6
SKIP_COST = 1
#: A slice is never cut below this many messages.
MIN_SLICE_MESSAGES = 25_000
#: At most this many tasks per core.
TASKS_PER_SLOT = 4
#: A cut must shorten the estimated time by at least this fraction.
MIN_GAIN = 0.03


@dataclass(frozen=True, slots=True)
class FileRange:
    """One landed raw batch file: messages of ``[start, end)`` of one partition."""

    batch_id: str
    file: str
    start: int
    end: int
    count: int
    #: The topic partition the file holds (the JVM path reads files by it, ``jvm_decode.frames``).
    topic: str | None = None
    partition: int | None = None
    #: Indexes of the file's blocks that may hold a message carrying a schema, as the land stage
    #: found them with the test the decoder runs (``LandedRange.schema_blocks``); None: not known.
    schema_blocks: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class Slice:
    """The messages of ``source`` whose offsets are in ``[first, stop)``."""

    source: FileRange
    first: int
    stop: int
    #: Estimated messages in the slice and before it in the file (offsets may have gaps).
    count: int
    skipped: int

    @property
    def cost(self) -> int:
        return DECODE_COST * self.count + SKIP_COST * self.skipped

    def halves(self) -> tuple[Slice, Slice]:
        middle = self.first + (self.stop - self.first) // 2
        span = self.source.end - self.source.start
        left = max(1, self.count * (middle - self.first) // max(1, self.stop - self.first))
        right = max(1, self.count - left)
        skipped = self.source.count * (middle - self.source.start) // max(1, span)
        return (
            Slice(self.source, self.first, middle, left, self.skipped),
            Slice(self.source, middle, self.stop, right, skipped),
        )


def whole(source: FileRange) -> Slice:
    return Slice(source, source.start, source.end, source.count, 0)


def busiest_slot(costs: Sequence[int], slots: int) -> int:
    """Estimated time of the busiest of ``slots`` cores running ``costs`` largest first."""
    loads = [0] * max(1, slots)
    for cost in sorted(costs, reverse=True):
        heapq.heapreplace(loads, loads[0] + cost)
    return max(loads)


def plan_slices(files: Sequence[FileRange], slots: int) -> list[Slice]:
    """Cut files into slices while that shortens the busiest core's estimated time."""
    slices = [whole(f) for f in files]
    if not slices:
        return slices
    best = busiest_slot([s.cost for s in slices], slots)
    for _ in range(4 * max(1, slots)):
        largest = max(range(len(slices)), key=lambda i: slices[i].cost)
        target = slices[largest]
        if target.count < 2 * MIN_SLICE_MESSAGES or target.stop - target.first < 2:
            break
        candidate = slices[:largest] + list(target.halves()) + slices[largest + 1 :]
        estimate = busiest_slot([s.cost for s in candidate], slots)
        if estimate > best * (1 - MIN_GAIN):
            break
        slices, best = candidate, estimate
    return slices


def plan_tasks(files: Sequence[FileRange], slots: int, *, split: bool = True) -> list[list[Slice]]:
    """Slices grouped into Spark tasks, the costliest task first."""
    slices = plan_slices(files, slots) if split else [whole(f) for f in files]
    if not slices:
        return []
    count = min(len(slices), TASKS_PER_SLOT * max(1, slots))
    tasks: list[list[Slice]] = [[] for _ in range(count)]
    loads = [(0, i) for i in range(count)]
    for piece in sorted(slices, key=lambda s: s.cost, reverse=True):
        load, index = loads[0]
        tasks[index].append(piece)
        heapq.heapreplace(loads, (load + piece.cost, index))
    for task in tasks:
        task.sort(key=lambda s: (s.source.batch_id, s.source.file, s.first))
    return sorted(tasks, key=lambda t: sum(s.cost for s in t), reverse=True)


def schema_scan_files(files: list[FileRange]) -> list[FileRange]:
    """The files the schema pass reads: all but those the land stage found to hold no block that
    may carry a schema (by the test the pass would run on each block, so reading them finds nothing)."""
    return [f for f in files if f.schema_blocks != ()]
