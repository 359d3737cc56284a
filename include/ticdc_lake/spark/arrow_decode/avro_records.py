"""Typed row images as Avro records, encoded a whole column at a time (``docs/typed-row-images.md``).

One record per image, under the writer schema of its table version (:func:`writer_schema`: field
``c<i>`` is column ``i``, each a ``["null", type]`` union), so that spark-avro's ``from_avro``
reads the typed values back without parsing text. The schema is a pure function of the version's
Iceberg column types: a reader derives it from the schema history, and no schema travels with the
rows.

:func:`encode_records` builds the Avro binary encoding (the union branch, then the value: zig-zag
varints for ``int``/``long``/``date``/timestamps, little-endian IEEE floats, length-prefixed
bytes, decimals as the shortest big-endian two's complement) with numpy over whole Arrow arrays,
and joins the fields of each row with Arrow's element-wise binary join: no Python per value. The
same values give the same bytes, so records hash and group as the text maps they replace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.typed_values import decimal_type

_AVRO_TYPES: dict[str, Any] = {
    "int": "int",
    "long": "long",
    "float": "float",
    "double": "double",
    "string": "string",
    "binary": "bytes",
    "date": {"type": "int", "logicalType": "date"},
    "timestamp": {"type": "long", "logicalType": "local-timestamp-micros"},
    "timestamptz": {"type": "long", "logicalType": "timestamp-micros"},
}
_NULL_BRANCH, _VALUE_BRANCH = 0, 2  # zig-zag varints of union branches 0 ("null") and 1
_VARINT_BYTES = 10  # a 64-bit zig-zag varint takes at most 10 bytes


def avro_type(iceberg_type: str) -> Any:
    """The Avro type (with its logical type) that carries values of ``iceberg_type``."""
    if iceberg_type in _AVRO_TYPES:
        return _AVRO_TYPES[iceberg_type]
    decimal = decimal_type(iceberg_type)
    if decimal is None:
        raise ValueError(f"no Avro type for Iceberg type {iceberg_type!r}")
    return {"type": "bytes", "logicalType": "decimal", "precision": decimal[0], "scale": decimal[1]}


def writer_schema(iceberg_types: Sequence[str]) -> dict[str, Any]:
    """The Avro writer schema of a table version whose columns have ``iceberg_types``, in order."""
    fields = [{"name": f"c{i}", "type": ["null", avro_type(kind)]} for i, kind in enumerate(iceberg_types)]
    return {"type": "record", "name": "image", "fields": fields}


def encode_records(columns: Sequence[pa.Array], valid: np.ndarray | None = None) -> pa.Array:
    """One Avro record per row of the typed ``columns`` (the Arrow types of
    ``typed_columns.arrow_type``, in the writer schema's order; NULL values become the union's
    null branch). ``valid``: per row, whether there is an image; the record is NULL where not."""
    count = len(columns[0]) if columns else len(valid if valid is not None else [])
    fields = [_field(column) for column in columns]
    if not fields:
        records = pa.array(np.full(count, b"", dtype=object), pa.binary())
    elif len(fields) == 1:
        records = fields[0]
    else:
        records = pc.binary_join_element_wise(*fields, pa.scalar(b"", pa.binary()))
    if valid is not None and not valid.all():
        records = pc.if_else(pa.array(valid), records, pa.scalar(None, pa.binary()))
    return records


def _field(column: pa.Array) -> pa.Array:
    """Each row's union branch and value, as a ``binary`` array."""
    kind = column.type
    present = column.is_valid().to_numpy(zero_copy_only=False)
    if pa.types.is_date32(kind) or pa.types.is_int32(kind):
        return _varints(column.view(pa.int32()).fill_null(0).to_numpy().astype(np.int64), present)
    if pa.types.is_timestamp(kind) or pa.types.is_int64(kind):
        return _varints(column.view(pa.int64()).fill_null(0).to_numpy(), present)
    if pa.types.is_float32(kind) or pa.types.is_float64(kind):
        numbers = column.fill_null(0).to_numpy().astype("<f4" if pa.types.is_float32(kind) else "<f8")
        return _fixed(numbers.view(np.uint8).reshape(len(column), -1), present)
    if pa.types.is_decimal(kind):
        return _decimals(column, present)
    if pa.types.is_string(kind) or pa.types.is_binary(kind):
        data = column.cast(pa.binary()).fill_null(b"")
        lengths = pc.binary_length(data).to_numpy().astype(np.int64)
        prefix = _varints(lengths, present)
        return pc.binary_join_element_wise(prefix, data, pa.scalar(b"", pa.binary()))
    raise ValueError(f"no Avro encoding for Arrow type {kind}")


def _rows(matrix: np.ndarray, lengths: np.ndarray, keep: np.ndarray | None = None) -> pa.Array:
    """Each row of ``matrix`` as one ``binary`` value: its first ``lengths[r]`` bytes, or the bytes
    ``keep`` marks (then ``lengths`` counts them)."""
    if keep is None:
        keep = np.arange(matrix.shape[1])[None, :] < lengths[:, None]
    data = matrix[keep]
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    return pa.Array.from_buffers(pa.binary(), len(lengths), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _branches(present: np.ndarray) -> np.ndarray:
    return np.where(present, _VALUE_BRANCH, _NULL_BRANCH).astype(np.uint8)


def _varints(numbers: np.ndarray, present: np.ndarray) -> pa.Array:
    """The branch byte, then (where present) the zig-zag varint of each int64 number."""
    signed = numbers.astype(np.int64)
    unsigned = ((signed << 1) ^ (signed >> 63)).view(np.uint64)
    sizes = np.ones(len(numbers), dtype=np.int64)
    for k in range(1, _VARINT_BYTES):
        longer = unsigned >= np.uint64(1 << (7 * k))
        if not longer.any():
            break
        sizes += longer
    widest = int(sizes.max()) if len(sizes) else 1
    matrix = np.empty((len(numbers), 1 + widest), dtype=np.uint8)
    matrix[:, 0] = _branches(present)
    for k in range(widest):
        group = ((unsigned >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        matrix[:, 1 + k] = group | ((k < sizes - 1) * np.uint8(0x80)).astype(np.uint8)
    return _rows(matrix, 1 + np.where(present, sizes, 0))


def _fixed(values: np.ndarray, present: np.ndarray) -> pa.Array:
    """The branch byte, then (where present) each row's fixed-size bytes."""
    matrix = np.concatenate((_branches(present)[:, None], values), axis=1)
    return _rows(matrix, 1 + np.where(present, values.shape[1], 0))


def _decimals(column: pa.Array, present: np.ndarray) -> pa.Array:
    """The branch byte, then (where present) the length and the shortest big-endian two's
    complement of each unscaled value (what Java's ``BigInteger.toByteArray`` gives)."""
    count = len(column)
    little = np.frombuffer(column.buffers()[1], np.uint8).reshape(-1, 16)[column.offset : column.offset + count]
    big = little[:, ::-1]
    # a leading byte is redundant when it only repeats the sign of the byte after it
    redundant = ((big[:, :-1] == 0x00) & (big[:, 1:] < 0x80)) | ((big[:, :-1] == 0xFF) & (big[:, 1:] >= 0x80))
    lead = np.where(redundant.all(axis=1), 15, np.argmin(redundant, axis=1))
    size = 16 - lead
    matrix = np.empty((count, 2 + 16), dtype=np.uint8)
    matrix[:, 0] = _branches(present)
    matrix[:, 1] = (size * 2).astype(np.uint8)  # the zig-zag varint of 1..16 is one byte
    matrix[:, 2:] = big
    keep = np.empty((count, 2 + 16), dtype=bool)
    keep[:, :2] = [True, True]
    keep[:, 2:] = np.arange(16)[None, :] >= lead[:, None]
    keep[~present, 1:] = False
    return _rows(matrix, np.where(present, 2 + size, 1), keep)
