"""Simple Avro DML messages read a whole batch at a time with numpy: the fixed fields, then the maps.

The Python decoder reads one value at a time with ``fastavro.schemaless_reader`` and the message
schema (``resources/simple_message.avsc.json``). :func:`read_dml` reads every value of a batch at
once, keeping one position per value: first the fixed fields of the ``DML`` record for all values
together (as :mod:`.avro_binary` reads a flat record), then the ``data`` and ``old`` maps one entry
index at a time across all values that still have entries (a mask of them), each entry its key and
its value union's branch and value.

A value is ``ok`` only where ``fastavro`` reads it to exactly what is returned and stops at its end:

* it begins with the bytes ``0x16 0x06 0x06``: union index 11 (the ``Message`` record), ``type``
  DML (enum index 3), payload union index 3 (the ``DML`` record), each written in one byte;
* ``version`` is 1; ``type`` (the DML type) is 0, 1 or 2 (``fastavro`` reads a negative enum index
  from the end of the symbols: such a value is not ok); ``claimCheckLocation`` is null;
  ``handleKeyOnly`` is null or false; ``checksum`` is null or a record (an int, the byte 0 or 1, two
  longs; the Python decoder ignores it);
* every varint is well formed (:func:`.avro_binary.read_longs`: at most 10 bytes fitting 64 bits),
  every union branch is one of the union's (0 or 1; 0..7 for map values), every length is not
  negative and lies within the value, the ``data`` and ``old`` maps end with a 0 count (a negative
  count is followed by the block's byte size, which ``fastavro`` reads and ignores), and hold at
  most :data:`MAX_ENTRIES` entries;
* the value ends exactly where the ``old`` union ends.

Strings (names, map keys, string values, ``Timestamp`` fields) are returned as byte ranges; the
caller checks that they are UTF-8 (``fastavro`` decodes them strictly), since a value is ``ok`` here
before its strings are made Arrow arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ticdc_lake.spark.arrow_decode.avro_binary import gathered_ranges, read_longs
from ticdc_lake.spark.arrow_decode.simple_avro_columns import BYTES, DOUBLE, FLOAT, LONG, STRING, TIMESTAMP, UNSIGNED

#: The first three bytes of every Simple Avro DML value.
DML_HEAD = (0x16, 0x06, 0x06)
#: Branches of the map values' union.
_BRANCHES = 8
_CHECKSUM_LONGS = 2
#: Entries a map may have here (TiDB tables have at most 4,096 columns): a value whose map goes on
#: longer is not ok, so that a damaged count cannot keep the loop going one entry at a time.
MAX_ENTRIES = 4096


@dataclass
class Entries:
    """The entries of the ``data`` (or ``old``) maps of the ok values, in (value, entry) order."""

    #: Index of the value (message) each entry belongs to.
    message: np.ndarray
    key_start: np.ndarray
    key_stop: np.ndarray
    branch: np.ndarray
    #: ``long``/``UnsignedBigint``: the value; others 0.
    number: np.ndarray
    #: ``float``/``double``: where its bytes start; ``string``/``bytes``/``Timestamp.location``: its bytes.
    first_start: np.ndarray
    first_stop: np.ndarray
    #: ``Timestamp.value``: its bytes.
    second_start: np.ndarray
    second_stop: np.ndarray


@dataclass
class DmlValues:
    """What :func:`read_dml` read of each value; only where ``ok`` do the fields mean anything."""

    ok: np.ndarray
    data: np.ndarray
    database: tuple[np.ndarray, np.ndarray]
    table: tuple[np.ndarray, np.ndarray]
    table_id: np.ndarray
    #: 0 INSERT, 1 UPDATE, 2 DELETE.
    kind: np.ndarray
    commit_ts: np.ndarray
    schema_version: np.ndarray
    #: Whether ``data`` / ``old`` is a map (not null).
    has_data: np.ndarray
    has_old: np.ndarray
    data_entries: Entries
    old_entries: Entries


def read_dml(values: pa.Array) -> DmlValues:
    """Each value of ``values`` (binary, may hold nulls) read as a Simple Avro DML (module docstring)."""
    count = len(values)
    if values.type != pa.binary():
        values = values.cast(pa.binary())
    buffers = values.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[values.offset : values.offset + count + 1].astype(np.int64)
    buffer = buffers[2]
    data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, dtype=np.uint8)
    starts, ends = offsets[:-1], offsets[1:]
    ok = values.is_valid().to_numpy(zero_copy_only=False) & (ends - starts >= len(DML_HEAD) + 1)
    last = max(len(data) - 1, 0)
    for at, byte in enumerate(DML_HEAD):
        ok &= data[np.minimum(starts + at, last)] == byte if len(data) else False
    reader = _Reader(data, starts + len(DML_HEAD), ends, ok)
    reader.ok &= reader.long() == 1  # version
    database = reader.string()
    table = reader.string()
    table_id = reader.long()
    kind = reader.long()
    reader.ok &= (kind >= 0) & (kind <= 2)
    commit_ts = reader.long()
    reader.long()  # buildTs
    schema_version = reader.long()
    reader.ok &= reader.long() == 0  # claimCheckLocation: null
    handle_key_only = reader.long()
    reader.ok &= (handle_key_only == 0) | ((handle_key_only == 1) & (reader.byte(handle_key_only == 1) == 0))
    checksum = reader.branch() == 1
    reader.long(checksum)  # version
    reader.ok &= reader.byte(checksum) <= 1  # corrupted
    for _ in range(_CHECKSUM_LONGS):  # current, previous
        reader.long(checksum)
    has_data = reader.branch()
    data_entries = reader.map(has_data)
    has_old = reader.branch()
    old_entries = reader.map(has_old)
    ok = reader.ok & (reader.pos == ends)
    return DmlValues(
        ok=ok,
        data=data,
        database=database,
        table=table,
        table_id=table_id,
        kind=kind,
        commit_ts=commit_ts.view(np.uint64),
        schema_version=schema_version.view(np.uint64),
        has_data=has_data == 1,
        has_old=has_old == 1,
        data_entries=_kept(data_entries, ok),
        old_entries=_kept(old_entries, ok),
    )


def strings(data: np.ndarray, start: np.ndarray, stop: np.ndarray) -> pa.Array:
    """The byte ranges of ``data`` as a ``binary`` array (their bytes gathered into one buffer)."""
    return gathered_ranges(data, start, stop - start)


def key_columns(data: np.ndarray, start: np.ndarray, stop: np.ndarray, names: list[str]) -> np.ndarray:
    """Per byte range: the index of the name in ``names`` whose UTF-8 bytes it holds exactly, else -1
    (names unique; a range holding a name's bytes is valid UTF-8)."""
    column = np.full(len(start), -1, dtype=np.int64)
    length = stop - start
    for code, name in enumerate(names):
        expected = np.frombuffer(name.encode("utf-8"), dtype=np.uint8)
        candidates = np.flatnonzero(length == len(expected))
        if not len(candidates):
            continue
        held = data[start[candidates][:, None] + np.arange(len(expected), dtype=np.int64)]
        column[candidates[(held == expected).all(axis=1)]] = code
    return column


class _Reader:
    """One position per value; each read advances the values that are still ok (and ``where``)."""

    def __init__(self, data: np.ndarray, pos: np.ndarray, ends: np.ndarray, ok: np.ndarray) -> None:
        self.data = data
        self.pos = pos.copy()
        self.ends = ends
        self.ok = ok.copy()

    def long(self, where: np.ndarray | None = None) -> np.ndarray:
        value, width, good = read_longs(self.data, self.pos, self.ends)
        active = self.ok if where is None else self.ok & where
        self.ok &= good | ~active
        self.pos = np.where(active & self.ok, self.pos + width, self.pos)
        return np.where(active & self.ok, value, 0)

    def branch(self) -> np.ndarray:
        """A ``["null", T]`` union's branch (0 or 1)."""
        branch = self.long()
        self.ok &= (branch == 0) | (branch == 1)
        return np.where(self.ok, branch, 0)

    def byte(self, where: np.ndarray) -> np.ndarray:
        """One byte (a boolean) where ``where``; 0 elsewhere."""
        active = self.ok & where
        self.ok &= (self.pos < self.ends) | ~active
        active &= self.ok
        last = max(len(self.data) - 1, 0)
        value = self.data[np.minimum(self.pos, last)] if len(self.data) else np.zeros(len(self.pos), np.uint8)
        self.pos = np.where(active, self.pos + 1, self.pos)
        return np.where(active, value, 0)

    def string(self) -> tuple[np.ndarray, np.ndarray]:
        """A string's byte range (start, stop)."""
        length = self.long()
        self.ok &= (length >= 0) & (self.pos + length <= self.ends)
        start = self.pos
        self.pos = np.where(self.ok, self.pos + length, self.pos)
        return start, np.where(self.ok, self.pos, start)

    def map(self, where: np.ndarray) -> Entries:
        """The map of each value ``where`` it is present, one entry index at a time across the values."""
        remaining = np.zeros(len(self.pos), dtype=np.int64)
        active = self.ok & (where == 1)
        pieces: list[tuple[np.ndarray, ...]] = []
        while active.any():
            if len(pieces) > MAX_ENTRIES:
                self.ok &= ~active
                break
            rows = np.flatnonzero(active)
            pos, ends = self.pos[rows], self.ends[rows]
            good = np.ones(len(rows), dtype=bool)
            rest = remaining[rows]
            need = rest == 0
            count, width, fine = read_longs(self.data, pos, ends)
            good &= fine | ~need
            pos = np.where(need & good, pos + width, pos)
            negative = need & good & (count < 0)
            _, width, fine = read_longs(self.data, pos, ends)  # a negative count's block size
            good &= fine | ~negative
            pos = np.where(negative & good, pos + width, pos)
            # A block cannot hold more entries than bytes are left (each entry takes two at least).
            magnitude = np.where(need, np.abs(np.maximum(count, -(1 << 62))), rest)
            good &= magnitude <= ends - pos
            done = need & (count == 0) & good
            rest = np.where(need, magnitude, rest)
            reading = good & ~done
            entry = _entry(self.data, pos, ends)
            good &= entry[0] | ~reading
            reading &= good
            pos = np.where(reading, entry[1], pos)
            pieces.append((rows[reading], *(part[reading] for part in entry[2:])))
            remaining[rows] = np.where(reading, rest - 1, rest)
            self.pos[rows] = pos
            self.ok[rows] &= good
            active[rows] = good & ~done
        return _entries(pieces)


def _entry(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, ...]:
    """(good, next position, key start, key stop, branch, number, first start, first stop, second start,
    second stop) of the map entry at each position."""
    key_length, width, good = read_longs(data, pos, ends)
    key_start = pos + width
    good &= (key_length >= 0) & (key_start + key_length <= ends)
    key_stop = np.where(good, key_start + key_length, key_start)
    branch, width, fine = read_longs(data, key_stop, ends)
    good &= fine & (branch >= 0) & (branch < _BRANCHES)
    at = key_stop + width
    number, width, fine = read_longs(data, at, ends)
    varint = (branch == LONG) | (branch == UNSIGNED)
    sized = (branch == STRING) | (branch == BYTES) | (branch == TIMESTAMP)
    good &= fine | ~(varint | sized)
    good &= (number >= 0) | ~sized
    first_start = np.where(sized, at + width, at)
    first_stop = np.where(sized, first_start + np.where(good, number, 0), at)
    first_stop = np.where(branch == FLOAT, at + 4, np.where(branch == DOUBLE, at + 8, first_stop))
    first_stop = np.where(varint, at + width, first_stop)
    good &= first_stop <= ends
    second_length, width, fine = read_longs(data, first_stop, ends)
    stamp = branch == TIMESTAMP
    good &= (fine & (second_length >= 0)) | ~stamp
    second_start = np.where(stamp, first_stop + width, first_stop)
    second_stop = np.where(stamp & good, second_start + second_length, second_start)
    good &= second_stop <= ends
    following = np.where(stamp, second_stop, first_stop)
    number = np.where(varint, number, 0)
    return good, following, key_start, key_stop, branch, number, first_start, first_stop, second_start, second_stop


def _entries(pieces: list[tuple[np.ndarray, ...]]) -> Entries:
    """The entries read in rounds (entry 0 of every map, then entry 1, ...), in (value, entry) order."""
    if not pieces:
        empty = np.zeros(0, dtype=np.int64)
        return Entries(*([empty] * 9))
    parts = [np.concatenate(column) for column in zip(*pieces, strict=True)]
    rounds = np.concatenate([np.full(len(piece[0]), n, dtype=np.int64) for n, piece in enumerate(pieces)])
    order = np.lexsort((rounds, parts[0]))
    return Entries(*(part[order] for part in parts))


def _kept(entries: Entries, ok: np.ndarray) -> Entries:
    """Only the entries of ok values."""
    keep = ok[entries.message] if len(entries.message) else np.zeros(0, dtype=bool)
    return Entries(*(getattr(entries, name)[keep] for name in Entries.__dataclass_fields__))
