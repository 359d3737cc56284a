"""Avro column values → canonical text, a whole Arrow column at a time.

The vector twins of ``ticdc_lake.protocols.avro_values.converter_for``: the same dispatch on the
column's ``tidb_type`` and Avro type, the same bounds and texts, computed with ``pyarrow.compute``
and numpy over the arrays :mod:`.avro_binary` reads. A twin says, row by row, whether it vouches
for its text (``ok``); ``ok`` is never True where the scalar converter raises or writes another
text. It may be False where the scalar would accept (the row then only costs the Python path):

* DECIMAL (precise) of more than 31 bytes of unscaled value (beyond Arrow's decimal256);
* BIT of more than 8 bytes; BIGINT UNSIGNED sent as a string not in canonical form;
* DATE, DATETIME, TIME outside the strict shapes of ``simple_columns`` (zero parts of a DATETIME
  the calendar rejects), TIMESTAMP in a skipped hour, after 2037 in a zone with rules, or the zero
  TIMESTAMP (as ``simple_columns`` documents).
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.canonical import MAX_UNSIGNED_BIGINT, YEAR_BOUNDS, bit_bounds
from ticdc_lake.protocols.avro_values import AvroColumn
from ticdc_lake.spark.arrow_decode import typed_sources
from ticdc_lake.spark.arrow_decode.debezium_columns import Canonical, ColumnReader
from ticdc_lake.spark.arrow_decode.simple_columns import (
    DATE_PATTERN,
    DATETIME_PATTERN,
    DECIMAL_PATTERN,
    TIME_PATTERN,
    TIMESTAMP_TYPE,
    integer_twin,
    timestamp_twin,
)

_STRING = pa.string()
_NULL_TEXT = pa.scalar(None, _STRING)
_BOUNDS = {
    "INT": (-(1 << 31), (1 << 31) - 1),
    "INT UNSIGNED": (0, (1 << 32) - 1),
    "BIGINT": (-(1 << 63), (1 << 63) - 1),
    "YEAR": YEAR_BOUNDS,
}
#: Arrow's decimal256 holds 76 digits: 31 bytes of two's complement (below 2**247) always fit.
_DECIMAL_BYTES = 31
_DECIMAL_WIDTH = 32
_BIT_BYTES = 8
_BASE64_ALPHABET = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)
_PAD = ord("=")
#: pyarrow's shortest text of a double with an exponent: one digit before the point.
_EXPONENT = r"^(?P<sign>-?)(?P<whole>[0-9])(?:\.(?P<fraction>[0-9]+))?e(?P<exponent>[+-][0-9]+)$"
_TEXT_CHECKS = {"DATE": "^" + DATE_PATTERN + "$", "DATETIME": DATETIME_PATTERN, "TIME": TIME_PATTERN}


def column_reader(column: AvroColumn, zone: ZoneInfo) -> ColumnReader | None:
    """The twin of ``converter_for(column, zone)``; ``arrow_type`` is what :mod:`.avro_binary` reads the
    column's Avro type as. None where the column has no twin (its rows then decode in Python)."""
    tidb_type, avro_type = column.tidb_type, column.avro_type
    if tidb_type in _BOUNDS and avro_type in ("int", "long"):
        return ColumnReader(pa.int64(), _integers_of(*_BOUNDS[tidb_type]), typed_sources.integers)
    if tidb_type == "BIGINT UNSIGNED":
        if avro_type == "long":
            return ColumnReader(pa.int64(), _unsigned_bigint, typed_sources.unsigned_bigint)
        return ColumnReader(_STRING, integer_twin(0, MAX_UNSIGNED_BIGINT)) if avro_type == "string" else None
    if tidb_type in ("FLOAT", "DOUBLE") and avro_type in ("float", "double"):
        return ColumnReader(pa.float32() if avro_type == "float" else pa.float64(), float_text, typed_sources.floats)
    if tidb_type == "DECIMAL":
        if avro_type == "decimal":
            return ColumnReader(pa.binary(), _decimal(column.scale or 0))
        return ColumnReader(_STRING, _matching(DECIMAL_PATTERN)) if avro_type == "string" else None
    if tidb_type == "BLOB" and avro_type == "bytes":
        return ColumnReader(pa.binary(), base64_text)
    if tidb_type == "BIT" and avro_type == "bytes":
        return ColumnReader(pa.binary(), _bit(*bit_bounds(column.length)))
    if avro_type != "string":
        return None
    if tidb_type in _TEXT_CHECKS:
        return ColumnReader(_STRING, _matching(_TEXT_CHECKS[tidb_type]))
    if tidb_type == "TIMESTAMP":
        return ColumnReader(_STRING, _zoned(zone.key))
    if tidb_type in ("TEXT", "ENUM", "SET", "JSON", "TiDBVECTORFloat32"):
        return ColumnReader(_STRING, _same, typed_sources.texts)
    return None


def _integers_of(low: int, high: int) -> Canonical:
    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        inside = pc.and_(pc.greater_equal(values, low), pc.less_equal(values, high))
        return _finish(values, inside, values.cast(_STRING))

    return canonical


def _unsigned_bigint(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``int64(u)`` read back unsigned: the same 64 bits as uint64."""
    return _finish(values, None, values.view(pa.uint64()).cast(_STRING))


def float_text(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``go_float_text``: the shortest digits of the float32/float64 (pyarrow's text of the same width),
    written positionally as Go's ``'f'`` format does; not a finite number: not ok (the scalar raises)."""
    return _finish(values, pc.is_finite(values), _positional(values.cast(_STRING)))


def _positional(texts: pa.Array) -> pa.Array:
    """pyarrow's number texts with the exponent written out: ``1.5e+20`` → ``150000000000000000000``,
    ``1e-7`` → ``0.0000001`` (the digits are kept, only the point moves)."""
    parts = pc.extract_regex(texts, _EXPONENT)
    exponent_rows = parts.is_valid()
    if not pc.any(exponent_rows).as_py():
        return texts
    sign, whole, fraction = parts.field("sign"), parts.field("whole"), parts.field("fraction")
    digits = pc.binary_join_element_wise(whole, fraction, "")
    count = pc.utf8_length(digits).to_numpy(zero_copy_only=False).astype(np.int64)
    exponent = pc.utf8_ltrim(pc.if_else(exponent_rows, parts.field("exponent"), "0"), characters="+")
    point = 1 + exponent.cast(pa.int64()).to_numpy(zero_copy_only=False)
    zeros_after = pc.binary_repeat("0", pa.array(np.maximum(point - count, 0)))
    zeros_before = pc.binary_repeat("0", pa.array(np.maximum(-point, 0)))
    result = pc.if_else(
        pa.array(point >= count),
        pc.binary_join_element_wise(sign, digits, zeros_after, ""),
        pc.binary_join_element_wise(sign, "0.", zeros_before, digits, ""),
    )
    inside = (point > 0) & (point < count) & exponent_rows.to_numpy(zero_copy_only=False)
    for at in np.unique(point[inside]).tolist():  # the point falls among the digits: one slice per place
        split = pc.binary_join_element_wise(
            sign, pc.utf8_slice_codeunits(digits, 0, at), ".", pc.utf8_slice_codeunits(digits, at), ""
        )
        result = pc.if_else(pa.array(inside & (point == at)), split, result)
    return pc.if_else(exponent_rows, result, texts)


def _decimal(scale: int) -> Canonical:
    """The unscaled two's-complement big-endian integer written with ``scale`` fraction digits."""

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        count = len(values)
        starts, lengths, data = _binary_parts(values)
        fits = (lengths >= 1) & (lengths <= _DECIMAL_BYTES) & values.is_valid().to_numpy(zero_copy_only=False)
        size = np.where(fits, lengths, 0)
        # Little-endian 32-byte two's complement: byte k is byte (length - 1 - k) of the value, sign-extended.
        reach = np.arange(_DECIMAL_WIDTH, dtype=np.int64)
        index = starts[:, None] + size[:, None] - 1 - reach
        inside = reach[None, :] < size[:, None]
        picked = (
            data[np.clip(index, 0, max(len(data) - 1, 0))] if len(data) else np.zeros((count, _DECIMAL_WIDTH), np.uint8)
        )
        top = data[np.clip(starts, 0, max(len(data) - 1, 0))] if len(data) else np.zeros(count, np.uint8)
        negative = (size > 0) & (top >= 0x80)
        raw = np.where(inside, picked, np.where(negative[:, None], 0xFF, 0)).astype(np.uint8)
        unscaled = pa.Array.from_buffers(pa.decimal256(76, 0), count, [None, pa.py_buffer(raw.tobytes())])
        digits = pc.utf8_ltrim(unscaled.cast(_STRING), characters="-")
        if scale:
            padded = pc.utf8_lpad(digits, width=scale + 1, padding="0")
            digits = pc.binary_join_element_wise(
                pc.utf8_slice_codeunits(padded, 0, -scale), pc.utf8_slice_codeunits(padded, -scale), "."
            )
        texts = pc.if_else(pa.array(negative), pc.binary_join_element_wise("-", digits, ""), digits)
        return _finish(values, pa.array(fits), texts)

    return canonical


def _bit(low: int, high: int) -> Canonical:
    """Big-endian bytes (1 to 8 of them) as the unsigned integer, within BIT(n)'s bounds."""

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        count = len(values)
        starts, lengths, data = _binary_parts(values)
        fits = (lengths >= 1) & (lengths <= _BIT_BYTES) & values.is_valid().to_numpy(zero_copy_only=False)
        size = np.where(fits, lengths, 0)
        reach = np.arange(_BIT_BYTES, dtype=np.int64)
        index = starts[:, None] + size[:, None] - 1 - reach
        inside = reach[None, :] < size[:, None]
        picked = data[np.clip(index, 0, max(len(data) - 1, 0))] if len(data) else np.zeros(index.shape, np.uint8)
        raw = np.where(inside, picked, 0).astype(np.uint8)
        number = np.ascontiguousarray(raw).view("<u8").reshape(count)
        fits &= (number >= np.uint64(low)) & (number <= np.uint64(high))
        return _finish(values, pa.array(fits), pa.array(number, pa.uint64()).cast(_STRING))

    return canonical


def base64_text(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Standard base64 with padding (``base64.b64encode``), three bytes to four characters at once."""
    count = len(values)
    starts, lengths, data = _binary_parts(values)
    lengths = np.where(values.is_valid().to_numpy(zero_copy_only=False), lengths, 0)
    groups = (lengths + 2) // 3
    first = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(groups, out=first[1:])
    total = int(first[-1])
    owner = np.repeat(np.arange(count, dtype=np.int64), groups)
    at = starts[owner] + 3 * (np.arange(total, dtype=np.int64) - first[owner])
    remaining = starts[owner] + lengths[owner] - at  # bytes left from this group's first
    last = max(len(data) - 1, 0)
    byte = [
        np.where(remaining > k, data[np.minimum(at + k, last)] if len(data) else 0, 0).astype(np.uint32)
        for k in range(3)
    ]
    number = (byte[0] << 16) | (byte[1] << 8) | byte[2]
    chars = np.empty((total, 4), dtype=np.uint8)
    for k in range(4):
        chars[:, k] = _BASE64_ALPHABET[(number >> (18 - 6 * k)) & 63]
    chars[:, 2] = np.where(remaining > 1, chars[:, 2], _PAD)
    chars[:, 3] = np.where(remaining > 2, chars[:, 3], _PAD)
    offsets = (4 * first).astype(np.int64)
    texts = pa.Array.from_buffers(
        pa.large_string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())]
    ).cast(_STRING)
    return _finish(values, None, texts)


def _matching(pattern: str) -> Canonical:
    """A string returned as sent where it matches ``pattern`` (within what the scalar check accepts)."""

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        return _finish(values, pc.match_substring_regex(values, pattern), values)

    return canonical


def _same(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    return _finish(values, None, values)


def _zoned(zone: str) -> Canonical:
    """``timestamp_utc_text`` of the server wall time: Simple JSON's twin with the server's zone as location."""
    convert = timestamp_twin(zone)

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        locations = pa.repeat(pa.scalar(zone, _STRING), len(values))
        objects = pa.StructArray.from_arrays(
            [locations, values], fields=list(TIMESTAMP_TYPE), mask=pc.invert(values.is_valid())
        )
        return convert(objects)

    return canonical


def _binary_parts(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start of each value in the data buffer, its length, the data buffer as uint8) of a binary array."""
    if values.type != pa.binary():
        values = values.cast(pa.binary())
    buffers = values.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[values.offset : values.offset + len(values) + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, dtype=np.uint8)
    return offsets[:-1], offsets[1:] - offsets[:-1], data


def _finish(values: pa.Array, valid: pa.Array | None, texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(texts, ok): ok True for nulls and valid values; the text null wherever ok is False or the value null."""
    present = values.is_valid()
    if valid is None:
        return pc.if_else(present, texts, _NULL_TEXT), pa.array(np.ones(len(values), dtype=bool))
    taken = pc.and_(present, valid).fill_null(False)
    return pc.if_else(taken, texts, _NULL_TEXT), pc.or_(pc.invert(present), taken)
