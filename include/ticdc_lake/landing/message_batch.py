"""Landed messages a few thousand at a time as Arrow columns, for the decoders that read whole batches.

A :class:`MessageBatch` is a sequence of :class:`~ticdc_lake.events.RawMessage` (what every
per-message decoder takes) that also holds its keys, values, topics, partitions and offsets as
columns. Made from blocks read by :func:`~ticdc_lake.landing.raw_block_reader.parse_block`, its
columns are gathered from the blocks' bytes without a Python object per message; the
``RawMessage`` of a row is made only when asked for (the messages a vector decoder leaves to the
Python decoder).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import overload

import numpy as np
import pyarrow as pa

from ticdc_lake.arrow_views import Ranges, joined_views
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.raw_block_reader import Block, RawRecords


class MessageBatch(Sequence[RawMessage]):
    """Messages in offset order with their columns (module docstring)."""

    def __init__(self, pieces: list[tuple[Block, int, int]]) -> None:
        """``pieces``: (block, lo, hi), the block's rows ``lo`` to ``hi`` (exclusive), in order."""
        self._pieces = pieces
        self._messages: list[RawMessage] | None = None
        columns = [_columns(block, lo, hi) for block, lo, hi in pieces]
        self._count = sum(hi - lo for _, lo, hi in pieces)
        parsed = [(block, lo, hi) for block, lo, hi in pieces if isinstance(block, RawRecords)]
        if pieces and len(parsed) == len(pieces):
            # Every block parsed: keys and values gathered from all the blocks' bytes by one copy each.
            self.values: pa.Array = _gathered(parsed, "value")
            self.keys: pa.Array = _gathered(parsed, "key")
        else:
            self.values = _concat([c[0]() for c in columns], pa.binary())
            self.keys = _concat([c[1]() for c in columns], pa.binary())
        self.topics: pa.Array = _concat([c[2] for c in columns], pa.string())
        self.partitions: pa.Array = _concat([c[3] for c in columns], pa.int32())
        self.offsets: pa.Array = _concat([c[4] for c in columns], pa.int64())

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> RawMessage: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[RawMessage]: ...

    def __getitem__(self, index: int | slice) -> RawMessage | Sequence[RawMessage]:
        return self.messages()[index]

    def __iter__(self) -> Iterator[RawMessage]:
        return iter(self.messages())

    def messages(self) -> list[RawMessage]:
        """Every message as a :class:`RawMessage` (made once, on the first call)."""
        if self._messages is None:
            made: list[RawMessage] = []
            for block, lo, hi in self._pieces:
                made += block.messages(lo, hi) if isinstance(block, RawRecords) else block[lo:hi]
            self._messages = made
        return self._messages

    def pick(self, rows: Iterable[int]) -> list[RawMessage]:
        """The messages of ``rows`` (ascending), each made alone: for the few a vector decoder leaves."""
        wanted = list(rows)
        if self._messages is not None or len(wanted) * 4 > self._count:
            every = self.messages()
            return [every[i] for i in wanted]
        picked: list[RawMessage] = []
        base = 0
        position = 0
        for block, lo, hi in self._pieces:
            end = base + hi - lo
            first = position
            while position < len(wanted) and wanted[position] < end:
                position += 1
            if position > first:
                inside = [lo + i - base for i in wanted[first:position]]
                if isinstance(block, RawRecords):
                    picked += block.messages_at(inside)
                else:
                    picked += [block[i] for i in inside]
            base = end
        return picked

    def with_payloads(self, values: pa.Array, keys: pa.Array) -> MessageBatch:
        """The same messages with these values and keys (one per message), e.g. decompressed; the
        ``RawMessage`` of a row, where asked for, holds them too."""
        return _Derived(self, None, values, keys)

    def take(self, rows: np.ndarray) -> MessageBatch:
        """The messages at ``rows`` (ascending indexes), as a batch."""
        index = pa.array(rows, pa.int64())
        return _Derived(self, rows, self.values.take(index), self.keys.take(index), index)


class _Derived(MessageBatch):
    """Some rows of a batch (``rows``, or all of them where None) with other values and keys;
    ``index``: ``rows`` as an Arrow array, where the caller made it already."""

    def __init__(
        self,
        source: MessageBatch,
        rows: np.ndarray | None,
        values: pa.Array,
        keys: pa.Array,
        index: pa.Array | None = None,
    ) -> None:
        count = len(source) if rows is None else len(rows)
        if len(values) != count or len(keys) != count:
            raise ValueError(f"{len(values)} values and {len(keys)} keys for {count} messages")
        self._source = source
        self._rows = rows
        self._pieces = []
        self._messages = None
        self._count = count
        self.values = values
        self.keys = keys
        if index is None and rows is not None:
            index = pa.array(rows, pa.int64())
        self.topics = source.topics if index is None else source.topics.take(index)
        self.partitions = source.partitions if index is None else source.partitions.take(index)
        self.offsets = source.offsets if index is None else source.offsets.take(index)

    def messages(self) -> list[RawMessage]:
        if self._messages is None:
            base = self._source.messages() if self._rows is None else self._source.pick(self._rows.tolist())
            self._messages = [
                dataclasses.replace(message, value=value, key=key)
                for message, value, key in zip(base, self.values.to_pylist(), self.keys.to_pylist(), strict=True)
            ]
        return self._messages

    def pick(self, rows: Iterable[int]) -> list[RawMessage]:
        every = self.messages()
        return [every[i] for i in rows]


def batches(blocks: Iterable[Block], first: int, stop: int, rows: int) -> Iterator[MessageBatch]:
    """The messages of ``blocks`` with an offset in ``[first, stop)``, ``rows`` at a time (the last batch fewer)."""
    pieces: list[tuple[Block, int, int]] = []
    held = 0
    for block in blocks:
        offsets = block.offsets if isinstance(block, RawRecords) else np.array([m.offset for m in block], np.int64)
        lo = int(np.searchsorted(offsets, first, side="left"))
        hi = int(np.searchsorted(offsets, stop, side="left"))
        while lo < hi:
            take = min(hi - lo, rows - held)
            pieces.append((block, lo, lo + take))
            held += take
            lo += take
            if held == rows:
                yield MessageBatch(pieces)
                pieces, held = [], 0
        if len(offsets) and offsets[-1] >= stop:
            break
    if pieces:
        yield MessageBatch(pieces)


def _columns(
    block: Block, lo: int, hi: int
) -> tuple[Callable[[], pa.Array], Callable[[], pa.Array], pa.Array, pa.Array, pa.Array]:
    """Rows ``lo`` to ``hi`` of ``block``: (values, keys) as functions that make them, topics,
    partitions and offsets."""
    count = hi - lo
    if isinstance(block, RawRecords):
        return (
            lambda: block.value_array(lo, hi),
            lambda: block.key_array(lo, hi),
            pa.repeat(pa.scalar(block.topic), count),
            pa.repeat(pa.scalar(block.partition, pa.int32()), count),
            pa.array(block.offsets[lo:hi], pa.int64()),
        )
    messages = block[lo:hi]
    return (
        lambda: pa.array([m.value for m in messages], pa.binary()),
        lambda: pa.array([m.key for m in messages], pa.binary()),
        pa.array([m.topic for m in messages], pa.string()),
        pa.array([m.partition for m in messages], pa.int32()),
        pa.array([m.offset for m in messages], pa.int64()),
    )


def _gathered(pieces: list[tuple[RawRecords, int, int]], side: str) -> pa.Array:
    """The values (or keys) of rows ``lo`` to ``hi`` of each block, as one ``binary`` array."""
    ranges: list[Ranges] = []
    for block, lo, hi in pieces:
        starts = (block.value_starts if side == "value" else block.key_starts)[lo:hi]
        stops = (block.value_stops if side == "value" else block.key_stops)[lo:hi]
        ranges.append((block.data, starts, stops, starts >= 0))
    return joined_views(ranges).cast(pa.binary())


def _concat(arrays: list[pa.Array], kind: pa.DataType) -> pa.Array:
    if not arrays:
        return pa.array([], kind)
    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
