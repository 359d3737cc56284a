"""Consumed Kafka records a chunk at a time, and their Avro encoding as raw batch records, with numpy.

The land stage reads records in chunks (each ``consume()`` of the Kafka consumer, up to a thousand
records of one partition) and writes them as raw batch records (:mod:`.raw_batch`). A
:class:`RecordChunk` holds a chunk's fields as lists, one element per record, taken from the
consumer's message objects by one list comprehension per field; nothing builds an object per
record. :func:`encoded_parts` gives the Avro binary encoding of every record of a chunk as five
pieces (the fields before the key, the key, the value's branch and length, the value, the
headers), the varints of all records computed at once with numpy; the writer joins the pieces of a
block into its bytes, so each key and value is copied once, as before. The bytes are exactly what
fastavro writes for the same records (``tests/ticdc_lake/landing/test_record_chunks.py``).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise, repeat

import numpy as np

from ticdc_lake.events import RawMessage

Headers = tuple[tuple[str, bytes | None], ...]

#: Longest Avro varint: a 64-bit value in 7-bit groups.
_MAX_VARINT = 10
_NULL_BRANCH = 0
_BYTES_BRANCH = 2  # zig-zag of branch index 1
_EMPTY_ARRAY = b"\x00"
#: Records per chunk made from single records (``raw_batch.as_chunks``).
CHUNK_RECORDS = 1000


@dataclass(frozen=True, slots=True)
class RecordChunk:
    """Consecutive records of one topic partition, in offset order, as columns (module docstring)."""

    topic: str
    partition: int
    offsets: list[int]
    timestamps: list[int]
    #: Kafka's timestamp types, as librdkafka numbers them (``raw_batch.TimestampType``).
    timestamp_types: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    #: Each record's headers; None when no record of the chunk has any (TiCDC sends none).
    headers: list[Headers] | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    def messages(self) -> list[RawMessage]:
        """Every record as a :class:`RawMessage` (for the rare readers that need one per record)."""
        headers: Iterable[Headers] = self.headers if self.headers is not None else repeat(())
        return [
            RawMessage(self.topic, self.partition, offset, timestamp, key, value, header)
            for offset, timestamp, key, value, header in zip(
                self.offsets, self.timestamps, self.keys, self.values, headers, strict=False
            )
        ]

    @staticmethod
    def of_messages(messages: Sequence[RawMessage], timestamp_types: Sequence[int]) -> RecordChunk:
        """``messages`` (one topic partition, at least one) as a chunk."""
        first = messages[0]
        headers = [m.headers for m in messages]
        return RecordChunk(
            topic=first.topic,
            partition=first.partition,
            offsets=[m.offset for m in messages],
            timestamps=[m.timestamp_ms for m in messages],
            timestamp_types=list(timestamp_types),
            keys=[m.key for m in messages],
            values=[m.value for m in messages],
            headers=headers if any(headers) else None,
        )


@dataclass(frozen=True, slots=True)
class EncodedRecords:
    """The Avro encoding of a chunk's records: ``parts[5 * i : 5 * i + 5]`` are record ``i``'s
    pieces, ``sizes[i]`` their total length."""

    parts: list[bytes]
    sizes: np.ndarray


def encoded_parts(chunk: RecordChunk, prefix: bytes) -> EncodedRecords:
    """Every record of ``chunk`` in Avro's binary encoding of the raw batch schema; ``prefix`` is
    the encoding of its topic and partition, the start of every record."""
    count = len(chunk)
    key_null = np.fromiter(map(operator.is_, chunk.keys, repeat(None)), dtype=bool, count=count)
    value_null = np.fromiter(map(operator.is_, chunk.values, repeat(None)), dtype=bool, count=count)
    keys = _filled(chunk.keys, key_null)
    values = _filled(chunk.values, value_null)
    key_lengths = np.fromiter(map(len, keys), dtype=np.int64, count=count)
    value_lengths = np.fromiter(map(len, values), dtype=np.int64, count=count)
    # Before the key: topic and partition, offset, timestamp, timestamp type, the key's branch and length.
    heads, head_sizes = _fields(
        count,
        [
            _constant(prefix, count),
            _varints(np.asarray(chunk.offsets, dtype=np.int64)),
            _varints(np.asarray(chunk.timestamps, dtype=np.int64)),
            _varints(np.asarray(chunk.timestamp_types, dtype=np.int64)),
            _branch(key_null),
            _lengths(key_lengths, key_null),
        ],
    )
    mids, mid_sizes = _fields(count, [_branch(value_null), _lengths(value_lengths, value_null)])
    tails = [_EMPTY_ARRAY] * count if chunk.headers is None else [_headers(h) for h in chunk.headers]
    tail_sizes = np.ones(count, dtype=np.int64) if chunk.headers is None else np.array([len(t) for t in tails])
    parts: list[bytes] = [b""] * (5 * count)
    parts[0::5] = heads
    parts[1::5] = keys
    parts[2::5] = mids
    parts[3::5] = values
    parts[4::5] = tails
    return EncodedRecords(parts, head_sizes + key_lengths + mid_sizes + value_lengths + tail_sizes)


def _filled(items: list[bytes | None], null: np.ndarray) -> list[bytes]:
    """``items`` with b"" for None (a null key or value has no bytes after its branch)."""
    if not null.any():
        return items  # type: ignore[return-value]  # no None in it
    return [b"" if item is None else item for item in items]


#: A field of every record: (bytes, per record as rows of at most ``_MAX_VARINT`` columns; lengths).
_Field = tuple[np.ndarray, np.ndarray]


def _fields(count: int, fields: list[_Field]) -> tuple[list[bytes], np.ndarray]:
    """Per record, its ``fields`` one after the other, as one ``bytes`` each, and their lengths:
    the fields' rows side by side, each row's used bytes taken in order (row-major) at once."""
    table = np.concatenate([data for data, _ in fields], axis=1)
    used = np.concatenate([np.arange(data.shape[1])[None, :] < lengths[:, None] for data, lengths in fields], axis=1)
    flat = table[used].tobytes()
    sizes = used.sum(axis=1)
    bounds = np.concatenate(([0], np.cumsum(sizes))).tolist()
    return [flat[a:b] for a, b in pairwise(bounds)], sizes


def _constant(data: bytes, count: int) -> _Field:
    row = np.frombuffer(data, dtype=np.uint8)
    return np.broadcast_to(row, (count, len(row))), np.full(count, len(row), dtype=np.int64)


def _branch(null: np.ndarray) -> _Field:
    """A ``["null", "bytes"]`` union's branch per record."""
    return np.where(null, _NULL_BRANCH, _BYTES_BRANCH).astype(np.uint8)[:, None], np.ones(len(null), dtype=np.int64)


def _lengths(lengths: np.ndarray, null: np.ndarray) -> _Field:
    """The length of each present key or value as a varint; nothing for a null one."""
    data, sizes = _varints(lengths)
    return data, np.where(null, 0, sizes)


def _varints(values: np.ndarray) -> _Field:
    """Avro's zig-zag varint of each value: its bytes as a row (as many columns as the longest
    needs) and its length."""
    signed = values.astype(np.int64)
    z = ((signed << np.int64(1)) ^ (signed >> np.int64(63))).view(np.uint64)
    sizes = np.searchsorted(_VARINT_LIMITS, z, side="right").astype(np.int64) + 1
    width = int(sizes.max()) if len(sizes) else 1
    groups = (z[:, None] >> _SHIFTS[None, :width]) & np.uint64(0x7F)
    more = _COLUMNS[None, :width] < (sizes - 1)[:, None]
    return (groups | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8), sizes


#: The smallest zig-zag value that needs 2, 3, ... 10 bytes.
_VARINT_LIMITS = np.array([1 << (7 * i) for i in range(1, _MAX_VARINT)], dtype=np.uint64)
_SHIFTS = np.arange(_MAX_VARINT, dtype=np.uint64) * np.uint64(7)
_COLUMNS = np.arange(_MAX_VARINT)


def _headers(headers: Headers) -> bytes:
    """An array of headers as fastavro writes it: one block of them, then the end of the array."""
    if not headers:
        return _EMPTY_ARRAY
    parts = [varint(len(headers))]
    for key, value in headers:
        name = key.encode()
        parts.append(varint(len(name)) + name)
        parts.append(b"\x00" if value is None else b"\x02" + varint(len(value)) + value)
    parts.append(_EMPTY_ARRAY)
    return b"".join(parts)


def varint(n: int) -> bytes:
    """One zig-zag varint (headers, rare: one record at a time)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)
