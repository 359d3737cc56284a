"""The records of one raw batch block read a whole block at a time, with numpy (no Python step per record).

A raw batch file (:mod:`.raw_batch`) is an Avro container whose every record is one Kafka record
of the same topic partition: ``topic`` (string), ``partition`` (int), ``offset``, ``timestamp``
(longs), ``timestamp_type`` (int), ``key`` and ``value`` (``["null", "bytes"]``) and ``headers``
(an array; TiCDC sends none). fastavro decodes such a record in about ten times the CPU it takes
to decompress it (a dict, a ``bytes`` per field, a call per field), which made reading the landed
files a third of a decode worker's CPU. :func:`parse_block` reads the records of one decompressed
block instead:

1. The first record's ``topic`` and ``partition`` give the bytes every record of the block starts
   with (its *prefix*); every place that prefix occurs is a candidate record start.
2. At all candidates at once, each field is read where the one before it ends (Avro's zig-zag
   varints decoded across arrays), giving each candidate's end.
3. The block is taken only when the candidates chain exactly: the first starts the block, each
   ends where the next starts, the last ends the block, there are as many as the block's record
   count, every varint is well formed, every union branch is null or bytes, every length lies
   inside the block, and no record has headers.

When any check fails (a prefix occurring inside a value, headers, a damaged block), it returns
None and the caller reads that block with fastavro as before, so what is read never differs from
fastavro's records (``tests/ticdc_lake/landing/test_raw_block_reader.py`` compares both).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ticdc_lake.arrow_views import binary_views
from ticdc_lake.events import RawMessage

#: Longest Avro varint: a 64-bit value in 7-bit groups.
_MAX_VARINT = 10
_NULL_BRANCH = 0
_BYTES_BRANCH = 2  # zig-zag of branch index 1
_EMPTY_ARRAY = 0


@dataclass(frozen=True, slots=True)
class RawRecords:
    """The records of one block: numpy columns, keys and values as (start, stop) into ``data``
    (start -1 for a null)."""

    data: bytes
    topic: str
    partition: int
    offsets: np.ndarray
    timestamps: np.ndarray
    key_starts: np.ndarray
    key_stops: np.ndarray
    value_starts: np.ndarray
    value_stops: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets)

    def messages(self, lo: int = 0, hi: int | None = None) -> list[RawMessage]:
        """Records ``lo`` to ``hi`` as :class:`RawMessage` (no headers: a block with headers is never parsed here)."""
        part = slice(lo, hi)
        topic, partition, data = self.topic, self.partition, self.data
        return [
            RawMessage(
                topic, partition, offset, timestamp, data[ka:kb] if ka >= 0 else None, data[va:vb] if va >= 0 else None
            )
            for offset, timestamp, ka, kb, va, vb in zip(
                self.offsets[part].tolist(),
                self.timestamps[part].tolist(),
                self.key_starts[part].tolist(),
                self.key_stops[part].tolist(),
                self.value_starts[part].tolist(),
                self.value_stops[part].tolist(),
                strict=True,
            )
        ]

    def messages_at(self, rows: list[int]) -> list[RawMessage]:
        """The records at ``rows`` as :class:`RawMessage`."""
        return [self.messages(row, row + 1)[0] for row in rows]

    def value_array(self, lo: int = 0, hi: int | None = None) -> pa.Array:
        """Values ``lo`` to ``hi`` as a ``binary`` Arrow array (null where null), copied once from the block."""
        return _binary(self.data, self.value_starts[lo:hi], self.value_stops[lo:hi])

    def key_array(self, lo: int = 0, hi: int | None = None) -> pa.Array:
        return _binary(self.data, self.key_starts[lo:hi], self.key_stops[lo:hi])


#: What a raw batch block reads as: its records as columns, or (a block fastavro read) as messages.
Block = RawRecords | list[RawMessage]


def parse_block(data: bytes, count: int) -> RawRecords | None:
    """The ``count`` records of the decompressed block ``data``, or None where it cannot vouch for
    them (the caller then reads the block with fastavro)."""
    if count <= 0 or not data:
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    head = _first_prefix(data)
    if head is None:
        return None
    prefix, topic, partition = head
    starts = _occurrences(raw, prefix)
    if len(starts) != count or starts[0] != 0:
        return None
    size = len(raw)
    # Room for the longest varint past any position, so gathers never read outside the array.
    padded = np.concatenate((raw, np.zeros(_MAX_VARINT + 1, dtype=np.uint8)))
    pos = starts + len(prefix)
    good = np.ones(count, dtype=bool)
    offsets, pos, ok = _longs(padded, pos)
    good &= ok
    timestamps, pos, ok = _longs(padded, pos)
    good &= ok
    kinds, pos, ok = _longs(padded, pos)
    good &= ok & (kinds >= 0) & (kinds <= 2)
    key_starts, key_stops, pos, ok = _nullable_bytes(padded, pos, size)
    good &= ok
    value_starts, value_stops, pos, ok = _nullable_bytes(padded, pos, size)
    good &= ok
    good &= padded[np.minimum(pos, size)] == _EMPTY_ARRAY
    ends = pos + 1
    if not good.all() or not np.array_equal(ends[:-1], starts[1:]) or ends[-1] != size:
        return None
    return RawRecords(data, topic, partition, offsets, timestamps, key_starts, key_stops, value_starts, value_stops)


def _first_prefix(data: bytes) -> tuple[bytes, str, int] | None:
    """The bytes of the first record's ``topic`` and ``partition``, and their values."""
    length, at = scalar_long(data, 0)
    if length is None or length < 0 or at + length > len(data):
        return None
    try:
        topic = data[at : at + length].decode("utf-8")
    except UnicodeDecodeError:
        return None
    partition, end = scalar_long(data, at + length)
    if partition is None or not -(1 << 31) <= partition < 1 << 31:
        return None
    return data[:end], topic, partition


def scalar_long(data: bytes, at: int) -> tuple[int | None, int]:
    """One zig-zag varint at ``at``: its value and the position after it (None: malformed)."""
    value = shift = 0
    for index in range(at, min(at + _MAX_VARINT, len(data))):
        byte = data[index]
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), index + 1
    return None, at


def _occurrences(raw: np.ndarray, prefix: bytes) -> np.ndarray:
    """Every position where ``prefix`` starts in ``raw``, ascending.

    Its first 4 (or 2) bytes are looked for as one integer at each of the 4 (2) alignments, which
    reads the block as often as a byte compare does but leaves few candidates (a topic name's
    length byte alone may be a frequent character of the values, such as a quote); the candidates
    are then checked byte by byte against the rest of the prefix."""
    width = len(prefix)
    if width == 0 or width > len(raw):
        return np.zeros(0, dtype=np.int64)
    step, kind = (4, np.dtype("<u4")) if width >= 4 else (2, np.dtype("<u2")) if width >= 2 else (1, np.dtype("u1"))
    anchor = np.frombuffer(prefix[:step], dtype=kind)[0]
    data = raw.data
    hits = []
    for shift in range(step):
        usable = (len(raw) - shift) // step
        if usable > 0:
            words = np.frombuffer(data, dtype=kind, count=usable, offset=shift)
            hits.append(np.flatnonzero(words == anchor) * step + shift)
    found = np.sort(np.concatenate(hits)) if hits else np.zeros(0, dtype=np.int64)
    found = found[found <= len(raw) - width]
    for index in range(step, width):
        found = found[raw[found + index] == prefix[index]]
    return found.astype(np.int64)


def _longs(padded: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The zig-zag varint at each position: (values as int64, positions after them, well formed)."""
    window = padded[pos[:, None] + np.arange(_MAX_VARINT)]
    last = (window & 0x80) == 0
    ended = last.any(axis=1)
    width = np.argmax(last, axis=1) + 1
    groups = (window & 0x7F).astype(np.uint64)
    used = np.arange(_MAX_VARINT)[None, :] < width[:, None]
    shifts = (np.arange(_MAX_VARINT, dtype=np.uint64) * np.uint64(7))[None, :]
    # The tenth byte may add only the 64th bit (value 1); more would overflow a long.
    fits = ~((width == _MAX_VARINT) & (window[:, _MAX_VARINT - 1] > 1))
    folded = np.bitwise_or.reduce(np.where(used, groups << shifts, np.uint64(0)), axis=1)
    values = (folded >> np.uint64(1)).astype(np.int64) ^ -((folded & np.uint64(1)).astype(np.int64))
    return values, pos + width, ended & fits


def _nullable_bytes(
    padded: np.ndarray, pos: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A ``["null", "bytes"]`` at each position: (starts, stops, positions after, well formed); start -1 for null."""
    branch = padded[np.minimum(pos, size)]
    present = branch == _BYTES_BRANCH
    ok = present | (branch == _NULL_BRANCH)
    after_branch = pos + 1
    lengths, after_length, length_ok = _longs(padded, np.minimum(after_branch, size))
    ok &= ~present | (length_ok & (lengths >= 0))
    lengths = np.where(present & ok, lengths, 0)
    starts = np.where(present, after_length, -1)
    stops = np.where(present, after_length + lengths, -1)
    following = np.where(present, after_length + lengths, after_branch)
    ok &= following <= size
    return starts, stops, following, ok


def _binary(data: bytes, starts: np.ndarray, stops: np.ndarray) -> pa.Array:
    """``data[start:stop]`` per row as a ``binary`` array (null where start is -1), copied once."""
    present = starts >= 0
    return binary_views(data, starts, stops, len(starts), valid=present).cast(pa.binary())
