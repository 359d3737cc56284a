"""Canal-JSON column values → canonical text, a whole Arrow column at a time.

The vector twins of ``ticdc_lake.protocols.canal_values.canonical_value``: the same dispatch on
the parsed ``mysqlType`` (:class:`~ticdc_lake.protocols.canal_values.ColumnType`), the same bounds
and texts. Every non-null Canal-JSON value is a JSON string, so every twin reads a string column.
Most twins are those of Simple JSON (:mod:`.simple_columns`), whose scalar converters are the same
``canonical`` functions; Canal-JSON's own are the binary strings (ISO-8859-1 text → base64, done
with numpy over the column's bytes), TIMESTAMP as wall time in the server's zone, and ENUM/SET
sent as a bare index/bitmask (kept as canonical integer text, named later by the bound schema:
:func:`naming_reader`, the twin of ``schema_facts._named``).

A twin says, row by row, whether it vouches for its text (``ok``): never True where the scalar
raises or writes another text; it may be False where the scalar accepts (non-canonical integer
forms, a TIMESTAMP in a skipped hour, …), which only costs the Python path. Types without a twin
(SET with members beyond :data:`~.simple_columns.MAX_SET_MEMBERS`) get no reader.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ticdc_lake.canonical import INTEGER_BITS, MAX_UNSIGNED_BIGINT, YEAR_BOUNDS, bit_bounds, integer_bounds
from ticdc_lake.protocols.canal_values import _TEXT_TYPES, ColumnType
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.spark.arrow_decode import simple_columns as simple
from ticdc_lake.spark.arrow_decode.debezium_columns import Canonical, ColumnReader

_STRING = pa.string()
#: ``canal_values._MAX_ENUM_INDEX``: a bare ENUM index is parsed in 0..65535.
_MAX_ENUM_INDEX = (1 << 16) - 1
_BASE64_ALPHABET = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)
_EQUALS = ord("=")
#: UTF-8 lead bytes of U+0080..U+00FF; any lead byte from 0xC4 on starts a character beyond U+00FF.
_LATIN_LEADS = (0xC2, 0xC3)
_BEYOND_LATIN = 0xC4
_ASCII_END = 0x80


def column_reader(column: ColumnType, server_time_zone: str) -> ColumnReader | None:
    """The twin of ``canonical_value(column, ·, zone_info(server_time_zone))``; None where it has none."""
    base = column.base
    if base in INTEGER_BITS:
        return ColumnReader(_STRING, simple.integer_twin(*integer_bounds(base, column.unsigned)))
    if column.binary:
        return ColumnReader(_STRING, latin1_base64)
    if base in _TEXT_TYPES:
        return ColumnReader(_STRING, simple.text_twin)
    if base == "enum":
        if column.members is None:
            return ColumnReader(_STRING, simple.integer_twin(0, _MAX_ENUM_INDEX))
        return ColumnReader(_STRING, simple.enum_twin(column.members))
    if base == "set":
        if column.members is None:
            return ColumnReader(_STRING, simple.integer_twin(0, MAX_UNSIGNED_BIGINT))
        if len(column.members) > simple.MAX_SET_MEMBERS:
            return None
        return ColumnReader(_STRING, simple.set_twin(column.members))
    if base == "bit":
        return ColumnReader(_STRING, simple.integer_twin(*bit_bounds(column.length)))
    if base == "year":
        return ColumnReader(_STRING, simple.integer_twin(*YEAR_BOUNDS))
    if base in ("float", "double"):
        return ColumnReader(_STRING, simple.float_twin)
    if base == "timestamp":
        return ColumnReader(_STRING, _server_timestamp(server_time_zone))
    if base == "decimal":
        return ColumnReader(_STRING, simple.matching_twin(simple.DECIMAL_PATTERN))
    if base == "date":
        return ColumnReader(_STRING, simple.matching_twin("^" + simple.DATE_PATTERN + "$"))
    if base == "datetime":
        return ColumnReader(_STRING, simple.matching_twin(simple.DATETIME_PATTERN))
    if base == "time":
        return ColumnReader(_STRING, simple.time_twin)
    return None


def naming_reader(column: ColumnSchema) -> Canonical | None:
    """The twin of ``schema_facts._named`` for a canonical index/bitmask text: the ENUM member or the
    SET members ``column`` (of the bound schema) names; None where it cannot (no members, or a SET
    beyond :data:`~.simple_columns.MAX_SET_MEMBERS`)."""
    elements = column.elements
    if elements is None:
        return None
    if column.mysql_type == "enum":
        return simple.enum_twin(elements)
    if len(elements) > simple.MAX_SET_MEMBERS:
        return None
    return simple.set_twin(elements)


def _server_timestamp(server_time_zone: str) -> Canonical:
    """``timestamp_utc_text(value, zone_info(server_time_zone))``: Simple JSON's TIMESTAMP twin, every
    value in the server's zone."""
    zoned = simple.timestamp_twin(server_time_zone)

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = simple.typed(values, _STRING)
        locations = pa.repeat(pa.scalar(server_time_zone), len(values))
        mask = values.is_null() if values.null_count else None
        objects = pa.StructArray.from_arrays([locations, values], fields=list(simple.TIMESTAMP_TYPE), mask=mask)
        return zoned(objects)

    return canonical


def latin1_base64(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Binary strings: each character one byte (U+0000..U+00FF, ISO-8859-1), the bytes as standard
    padded base64 (``canonical_value``); ok False for a character beyond U+00FF (the scalar raises)."""
    values = simple.typed(values, _STRING)
    count = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[values.offset : values.offset + count + 1]
    start, stop = int(offsets[0]), int(offsets[-1])
    data = values.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8)[start:stop] if data is not None else np.zeros(0, np.uint8)
    local = (offsets - start).astype(np.int64)
    row_of = np.repeat(np.arange(count), np.diff(local))
    # Valid UTF-8 (an Arrow string): ASCII bytes stay, a lead 0xC2/0xC3 and its continuation make one byte.
    beyond = np.zeros(count, dtype=bool)
    beyond[row_of[raw >= _BEYOND_LATIN]] = True
    lead = np.isin(raw, _LATIN_LEADS)
    keep = (raw < _ASCII_END) | lead
    latin = raw.copy()
    lead_at = np.flatnonzero(lead)
    latin[lead_at] = ((raw[lead_at] & 0x03) << 6) | (raw[np.minimum(lead_at + 1, len(raw) - 1)] & 0x3F)
    latin = latin[keep]
    rows = row_of[keep]
    sizes = np.bincount(rows, minlength=count).astype(np.int64)
    groups = (sizes + 2) // 3
    padded = np.zeros(int(groups.sum()) * 3, dtype=np.uint8)
    latin_start = np.concatenate(([0], np.cumsum(sizes)))[:-1]
    pad_start = np.concatenate(([0], np.cumsum(groups * 3)))[:-1]
    padded[pad_start[rows] + np.arange(len(latin)) - latin_start[rows]] = latin
    triples = padded.reshape(-1, 3).astype(np.uint32)
    number = (triples[:, 0] << 16) | (triples[:, 1] << 8) | triples[:, 2]
    sextets = np.stack([(number >> shift) & 0x3F for shift in (18, 12, 6, 0)], axis=1)
    text = _BASE64_ALPHABET[sextets].ravel()
    ends = np.cumsum(groups * 4)
    rest = sizes % 3
    text[ends[rest == 1] - 1] = _EQUALS
    text[ends[rest == 1] - 2] = _EQUALS
    text[ends[rest == 2] - 1] = _EQUALS
    out_offsets = np.concatenate(([0], ends)).astype(np.int32)
    present = values.is_valid()
    validity = None if not values.null_count else present.buffers()[1]
    if validity is not None and present.offset:
        validity = pa.array(present.to_numpy(zero_copy_only=False)).buffers()[1]
    texts = pa.Array.from_buffers(
        _STRING, count, [validity, pa.py_buffer(out_offsets.tobytes()), pa.py_buffer(text.tobytes())]
    )
    ok = pa.array(~beyond) if count else pa.array([], pa.bool_())
    return simple.finish(values, ok, texts)
