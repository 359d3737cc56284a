"""Avro binary records of one flat writer schema read a whole batch at a time, field by field, with numpy.

The Python decoder reads one record at a time with ``fastavro.schemaless_reader``; :func:`read_records`
reads every record of a batch that shares a writer schema at once: it keeps one position per record
into the batch's concatenated bytes and, for each field in schema order, reads the union branch and
the value of every record together (a varint is gathered as up to 10 bytes at each position), then
advances the positions.

A record is ``ok`` only where ``fastavro`` reads it to exactly the values returned, and no more:

* every varint (a union branch, an int or long, a string or bytes length) ends within 10 bytes and
  fits 64 bits (a 10th byte of 0 or 1; ``fastavro`` wraps a wider one around);
* every union branch is 0 or 1 (``fastavro`` also takes a negative branch, counted from the end
  of the union: such a record is not ok here and goes to the Python decoder);
* a boolean is the byte 0 or 1; lengths are not negative; every value lies within the record;
* a ``string`` is valid UTF-8 (Python's strict codec, as ``fastavro`` decodes it);
* the record ends exactly at its message's end (the Python decoder rejects trailing bytes).

Values come back as Arrow arrays: ``int``/``long`` as int64 (``int`` is not range-checked, as
``fastavro`` does not check it; the column converters do), ``float`` as float32, ``double`` as
float64, ``boolean`` as bool, ``string`` as string, ``bytes`` as binary; null where the record
chose the ``"null"`` branch or is not ok.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.spark.arrow_decode.row_batches import utf8_texts

#: Avro primitive types this reader supports, and the Arrow type each reads as.
ARROW_TYPES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int64(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
_MAX_VARINT = 10
_SHIFTS = (np.arange(_MAX_VARINT, dtype=np.uint64) * np.uint64(7)).astype(np.uint64)
_WIDTHS = {"float": 4, "double": 8}


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a flat record: its Avro type and, for a two-branch union with ``"null"``, where ``"null"`` is."""

    name: str
    kind: str
    null_branch: int | None = None


def field_specs(document: Any) -> list[FieldSpec] | None:
    """The fields of a record schema (parsed JSON) whose every field this reader supports; else None.

    A field type is a primitive (by name or ``{"type": primitive, ...}``, other attributes such as
    ``logicalType`` ignored as the Python decoder strips them) or a union of ``"null"`` and one such.
    """
    if not isinstance(document, dict) or document.get("type") != "record":
        return None
    fields = document.get("fields")
    if not isinstance(fields, list):
        return None
    specs = []
    for field in fields:
        if not isinstance(field, dict) or not isinstance(field.get("name"), str):
            return None
        spec = _field_spec(field["name"], field.get("type"))
        if spec is None:
            return None
        specs.append(spec)
    return specs


def _field_spec(name: str, node: Any) -> FieldSpec | None:
    if isinstance(node, list):
        if len(node) != 2 or node.count("null") != 1:
            return None
        null_branch = node.index("null")
        kind = _primitive(node[1 - null_branch])
        return None if kind is None or kind == "null" else FieldSpec(name, kind, null_branch)
    kind = _primitive(node)
    return None if kind is None else FieldSpec(name, kind)


def _primitive(node: Any) -> str | None:
    if isinstance(node, dict):
        node = node.get("type")
    return node if isinstance(node, str) and node in ARROW_TYPES else None


@dataclass
class Records:
    """What :func:`read_records` read: one Arrow array per field, and per record whether it is ok."""

    columns: dict[str, pa.Array]
    ok: np.ndarray


def read_records(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, fields: Sequence[FieldSpec]) -> Records:
    """The records at ``data[starts[i]:ends[i]]`` (``data``: uint8), each as ``fields`` (module docstring)."""
    count = len(starts)
    pos = starts.astype(np.int64).copy()
    ends = ends.astype(np.int64)
    ok = np.ones(count, dtype=bool)
    raw: list[tuple[FieldSpec, np.ndarray, Any]] = []
    for spec in fields:
        present = ok.copy()
        if spec.null_branch is not None:
            branch, width, good = read_longs(data, pos, ends)
            ok &= good & ((branch == 0) | (branch == 1))
            pos = np.where(ok, pos + width, pos)
            present = ok & (branch != spec.null_branch)
        values: Any = None
        if spec.kind in ("int", "long"):
            values, width, good = read_longs(data, pos, ends)
        elif spec.kind in _WIDTHS:
            size = _WIDTHS[spec.kind]
            good = pos + size <= ends
            picked = _gather(data, pos, size).copy()
            values = picked.view("<f4" if size == 4 else "<f8").reshape(count)
            width = np.full(count, size, dtype=np.int64)
        elif spec.kind == "boolean":
            good = pos < ends
            values = _gather(data, pos, 1).reshape(count)
            good &= values <= 1
            width = np.ones(count, dtype=np.int64)
        elif spec.kind in ("string", "bytes"):
            length, width, good = read_longs(data, pos, ends)
            good &= (length >= 0) & (pos + width + length <= ends)
            values = (pos + width, np.where(good, length, 0))
            width = width + np.where(good, length, 0)
        else:  # "null": no bytes
            good = np.ones(count, dtype=bool)
            width = np.zeros(count, dtype=np.int64)
        ok &= good | ~present
        pos = np.where(present & ok, pos + width, pos)
        raw.append((spec, present, values))
    ok &= pos == ends
    columns: dict[str, pa.Array] = {}
    for spec, present, values in raw:
        valid = present & ok
        column = _column(data, spec.kind, valid, values)
        if spec.kind == "string":
            texts = utf8_texts(column)  # a value not valid UTF-8 becomes null: its record is not ok
            ok &= ~(valid & ~texts.is_valid().to_numpy(zero_copy_only=False))
            column = texts
        columns[spec.name] = column
    if not ok.all():  # a record found bad after its columns were made (UTF-8): none of its values count
        columns = {name: _masked(column, ok) for name, column in columns.items()}
    return Records(columns, ok)


def read_longs(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The zigzag varint at each position: (value as int64, its width in bytes, whether it is well formed
    within ``ends``: at most 10 bytes, fitting 64 bits). Varints of one byte (most lengths, branches and
    small numbers) are read without gathering ten bytes each."""
    count = len(pos)
    if not len(data):
        return _wide_longs(data, pos, ends)
    first = data[np.minimum(pos, len(data) - 1)]
    single = (pos < ends) & (first < 0x80)
    value = (first >> 1).astype(np.int64) ^ -(first & 1).astype(np.int64)
    width = np.ones(count, dtype=np.int64)
    good = single.copy()
    rest = np.flatnonzero(~single)
    if len(rest):
        value[rest], width[rest], good[rest] = _wide_longs(data, pos[rest], ends[rest])
    return value, width, good


def _wide_longs(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`read_longs` by gathering ten bytes at each position."""
    count = len(pos)
    reach = np.arange(_MAX_VARINT, dtype=np.int64)
    index = pos[:, None] + reach
    inside = index < ends[:, None]
    last = max(len(data) - 1, 0)
    raw = data[np.minimum(index, last)] if len(data) else np.zeros((count, _MAX_VARINT), dtype=np.uint8)
    raw = np.where(inside, raw, 0x80)  # a byte beyond the end continues: such a varint never ends
    ending = (raw & 0x80) == 0
    found = ending.any(axis=1)
    stop = np.argmax(ending, axis=1)
    width = (stop + 1).astype(np.int64)
    used = reach[None, :] <= stop[:, None]
    parts = np.where(used, (raw & 0x7F).astype(np.uint64) << _SHIFTS[None, :], np.uint64(0))
    bits = np.bitwise_or.reduce(parts, axis=1)
    fits = (width < _MAX_VARINT) | (raw[:, _MAX_VARINT - 1] <= 1)
    good = found & fits
    bits = np.where(good, bits, np.uint64(0))
    value = (bits >> np.uint64(1)).astype(np.int64) ^ -(bits & np.uint64(1)).astype(np.int64)
    return value, width, good


def _gather(data: np.ndarray, pos: np.ndarray, size: int) -> np.ndarray:
    """``size`` bytes at each position (clamped into ``data``; the caller checks the bounds)."""
    if not len(data):
        return np.zeros((len(pos), size), dtype=np.uint8)
    index = np.clip(pos[:, None] + np.arange(size, dtype=np.int64), 0, len(data) - 1)
    gathered: np.ndarray = data[index]
    return gathered


def _column(data: np.ndarray, kind: str, valid: np.ndarray, values: Any) -> pa.Array:
    mask = ~valid
    if kind in ("int", "long", "float", "double", "boolean"):
        if kind == "boolean":
            values = values == 1
        return pa.array(values, ARROW_TYPES[kind], mask=mask)
    if kind == "null":
        return pa.nulls(len(valid))
    starts, lengths = values
    return gathered_ranges(data, starts, np.where(valid, lengths, 0), valid)


def gathered_ranges(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, valid: np.ndarray | None = None
) -> pa.Array:
    """The byte ranges of ``data`` as a ``binary`` array whose bytes are gathered into one buffer; null
    where ``valid`` is False (those ranges must be empty)."""
    count = len(starts)
    lengths = lengths.astype(np.int64)
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(total, dtype=np.int64)
    body = data[index] if total else np.zeros(0, dtype=np.uint8)
    validity = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    nulls = 0 if valid is None else int((~valid).sum())
    array = pa.Array.from_buffers(
        pa.large_binary(), count, [validity, pa.py_buffer(offsets), pa.py_buffer(body)], null_count=nulls
    )
    return array.cast(pa.binary())


def _masked(column: pa.Array, ok: np.ndarray) -> pa.Array:
    if column.type == pa.null():
        return column
    return pc.if_else(pa.array(ok), column, pa.scalar(None, column.type))
