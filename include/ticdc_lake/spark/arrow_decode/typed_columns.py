"""Canonical text columns as typed Arrow columns, a whole column at a time (``docs/typed-row-images.md``).

A vector decoder holds each column of a table version's row images as an Arrow array of canonical
texts (``docs/canonical-values.md``). :func:`typed_column` turns such an array into the Arrow
array of the column's Iceberg type with whole-array operations (RE2 matches, Arrow casts, numpy
over the text bytes), and says which texts the type cannot hold (a zero date, an INT UNSIGNED
beyond ``int``): those are NULL in the typed array and flagged, never changed into another value.

The specification is :func:`ticdc_lake.typed_values.typed_value` (what Spark's ``try_cast`` of
the text gives, apply's conversion today). Texts in the strict canonical form of the type take the
whole-array path; any other text (none that a decoder writes) is converted by the specification
one value at a time, so the result never depends on which path a value took.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.typed_values import UNREPRESENTABLE, decimal_type, typed_value

_FIXED_ARROW = {
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
}
#: The strict canonical form of each type's texts that the whole-array path converts.
_INTEGER = r"^-?(?:0|[1-9][0-9]{0,17})$"  # at most 18 digits: never beyond int64
_FLOAT = r"^-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$"
_BASE64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_TIME = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?"
_DATETIME = rf"^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}} {_TIME}$"
_TIMESTAMP = rf"^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}T{_TIME}Z$"
_INT32 = (-(2**31), 2**31 - 1)
_MONTH_DAYS = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)
#: Standard base64 alphabet -> 6-bit value; 64 for '=' (padding), 255 for anything else.
_BASE64_VALUES = np.full(256, 255, dtype=np.uint8)
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_BASE64_VALUES[np.frombuffer(_ALPHABET, np.uint8)] = np.arange(64, dtype=np.uint8)
_BASE64_VALUES[ord("=")] = 64


def arrow_type(iceberg_type: str) -> pa.DataType:
    """The Arrow type that holds values of ``iceberg_type`` (Iceberg's own type string)."""
    fixed = _FIXED_ARROW.get(iceberg_type)
    if fixed is not None:
        return fixed
    decimal = decimal_type(iceberg_type)
    if decimal is None:
        raise ValueError(f"no Arrow type for Iceberg type {iceberg_type!r}")
    return pa.decimal128(*decimal)


@dataclass(frozen=True)
class TypedColumn:
    #: The typed values: NULL where the text is NULL or the type cannot hold it.
    values: pa.Array
    #: Per row: a text the type cannot hold (apply counts these).
    unrepresentable: np.ndarray


def typed_column(texts: pa.Array, iceberg_type: str) -> TypedColumn:
    """The canonical ``texts`` (a ``string`` array) as values of ``iceberg_type`` (module docstring)."""
    kind = arrow_type(iceberg_type)
    count = len(texts)
    if iceberg_type == "string":
        return TypedColumn(texts, np.zeros(count, dtype=bool))
    if texts.null_count == count:
        return TypedColumn(pa.nulls(count, kind), np.zeros(count, dtype=bool))
    pattern, convert = _converter(iceberg_type, kind)
    strict = _mask(pc.match_substring_regex(texts, pattern))
    values, bad, strict = convert(texts, strict)
    slow = _mask(texts.is_valid()) & ~strict
    if slow.any():
        values, bad = _by_specification(texts, iceberg_type, kind, values, bad, slow)
    return TypedColumn(values, bad)


#: (texts, which are in the strict form) -> (typed values of those, which of those the type cannot
#: hold, which it converted: the strict ones, or none where Arrow refused one of them).
Converter = Callable[[pa.Array, np.ndarray], tuple[pa.Array, np.ndarray, np.ndarray]]


def _converter(iceberg_type: str, kind: pa.DataType) -> tuple[str, Converter]:
    if iceberg_type in ("int", "long"):
        return _INTEGER, lambda texts, strict: _integers(texts, strict, kind)
    if iceberg_type in ("float", "double"):
        return _FLOAT, lambda texts, strict: _cast(texts, strict, kind, "0")
    if iceberg_type == "binary":
        return _BASE64, _base64
    if iceberg_type == "date":
        return _DATE, _dates
    if iceberg_type in ("timestamp", "timestamptz"):
        pattern = _DATETIME if iceberg_type == "timestamp" else _TIMESTAMP
        return pattern, lambda texts, strict: _timestamps(texts, strict, kind)
    precision, scale = kind.precision, kind.scale
    if scale == 0:
        pattern = rf"^-?[0-9]{{1,{precision}}}$"
    elif precision == scale:
        pattern = rf"^-?0(?:\.[0-9]{{1,{scale}}})?$"
    else:
        pattern = rf"^-?[0-9]{{1,{precision - scale}}}(?:\.[0-9]{{1,{scale}}})?$"
    return pattern, lambda texts, strict: _cast(texts, strict, kind, "0")


def _mask(flags: pa.Array) -> np.ndarray:
    result: np.ndarray = flags.fill_null(False).to_numpy(zero_copy_only=False)
    return result


def _filled(texts: pa.Array, strict: np.ndarray, filler: str) -> pa.Array:
    return pc.if_else(pa.array(strict), texts, pa.scalar(filler, pa.string()))


def _none_bad(count: int) -> np.ndarray:
    return np.zeros(count, dtype=bool)


def _cast(
    texts: pa.Array, strict: np.ndarray, kind: pa.DataType, filler: str
) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Arrow's cast of the strict texts (exact for their form); where Arrow refuses any of them,
    none is taken (the specification converts them all)."""
    try:
        cast = pc.cast(_filled(texts, strict, filler), kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.nulls(len(texts), kind), _none_bad(len(texts)), _none_bad(len(texts))
    return pc.if_else(pa.array(strict), cast, pa.scalar(None, kind)), _none_bad(len(texts)), strict


def _integers(texts: pa.Array, strict: np.ndarray, kind: pa.DataType) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    numbers = pc.cast(_filled(texts, strict, "0"), pa.int64()).to_numpy()
    bad = np.zeros(len(texts), dtype=bool)
    if kind == pa.int32():
        bad = strict & ((numbers < _INT32[0]) | (numbers > _INT32[1]))
        numbers = np.where(bad, 0, numbers).astype(np.int32)
    return pa.array(numbers, kind, mask=~(strict & ~bad)), bad, strict


def _text_bytes(texts: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the data buffer, each text's start, each text's length) of a ``string``/``binary`` array."""
    offsets = np.frombuffer(texts.buffers()[1], np.int32)[texts.offset : texts.offset + len(texts) + 1]
    data_buffer = texts.buffers()[2]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return data, offsets[:-1], np.diff(offsets)


def _characters(data: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """The first ``width`` bytes of each text as digit values (byte - ``'0'``), one row per text;
    positions past a text's end hold what follows it (the caller masks them)."""
    index = np.minimum(starts[:, None] + np.arange(width, dtype=np.int32)[None, :], max(len(data) - 1, 0))
    return data[index].astype(np.int16) - 48


def _number(chars: np.ndarray, first: int, last: int) -> np.ndarray:
    """The decimal number of the digit columns ``first`` .. ``last - 1``."""
    number = chars[:, first].astype(np.int64)
    for position in range(first + 1, last):
        number = number * 10 + chars[:, position]
    return number


def _epoch_days(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(days from 1970-01-01, whether the date is in the proleptic Gregorian calendar): the
    vector form of ``typed_values.epoch_days``."""
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    month_ok = (month >= 1) & (month <= 12)
    days_in_month = _MONTH_DAYS[np.where(month_ok, month, 0)] + ((month == 2) & leap)
    valid = month_ok & (day >= 1) & (day <= days_in_month)
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468, valid


def _dates(texts: pa.Array, strict: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    data, starts, _ = _text_bytes(texts)
    rows = np.flatnonzero(strict)
    chars = _characters(data, starts[rows], 10)
    days, valid = _epoch_days(_number(chars, 0, 4), _number(chars, 5, 7), _number(chars, 8, 10))
    return (*_scattered(len(texts), rows, days.astype(np.int32), valid, pa.int32(), pa.date32()), strict)


def _timestamps(texts: pa.Array, strict: np.ndarray, kind: pa.DataType) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    data, starts, lengths = _text_bytes(texts)
    rows = np.flatnonzero(strict)
    chars = _characters(data, starts[rows], 26)
    days, valid = _epoch_days(_number(chars, 0, 4), _number(chars, 5, 7), _number(chars, 8, 10))
    hour, minute, second = _number(chars, 11, 13), _number(chars, 14, 16), _number(chars, 17, 19)
    valid &= (hour <= 23) & (minute <= 59) & (second <= 59)
    # the fraction's digits follow the '.' at 19, up to the end (or the 'Z'); missing ones are 0
    fraction_digits = lengths[rows] - 20 - (1 if kind.tz is not None else 0)
    fraction = np.where(np.arange(6)[None, :] < fraction_digits[:, None], chars[:, 20:26], 0)
    micros = ((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + _number(fraction, 0, 6)
    return (*_scattered(len(texts), rows, micros, valid, pa.int64(), kind), strict)


def _scattered(
    count: int, rows: np.ndarray, numbers: np.ndarray, valid: np.ndarray, storage: pa.DataType, kind: pa.DataType
) -> tuple[pa.Array, np.ndarray]:
    """Numbers of the strict ``rows`` (those not ``valid`` are unrepresentable) as a ``kind`` array of ``count``."""
    full = np.zeros(count, dtype=numbers.dtype)
    full[rows] = np.where(valid, numbers, 0)
    present = np.zeros(count, dtype=bool)
    present[rows[valid]] = True
    bad = np.zeros(count, dtype=bool)
    bad[rows[~valid]] = True
    return pa.array(full, storage, mask=~present).view(kind), bad


def _base64(texts: pa.Array, strict: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Standard base64 with padding, decoded over the concatenated texts (each a multiple of 4 long)."""
    picked = texts.filter(pa.array(strict))
    data, starts, lengths = _text_bytes(picked)
    quads = _BASE64_VALUES[data[starts[0] : starts[0] + lengths.sum()] if len(starts) else data[:0]].reshape(-1, 4)
    padding = (quads == 64).sum(axis=1)
    six = np.where(quads == 64, 0, quads).astype(np.uint32)
    word = (six[:, 0] << 18) | (six[:, 1] << 12) | (six[:, 2] << 6) | six[:, 3]
    decoded = np.stack([(word >> 16) & 0xFF, (word >> 8) & 0xFF, word & 0xFF], axis=1).astype(np.uint8)
    kept = decoded[np.arange(3)[None, :] < (3 - padding)[:, None]]
    last_quad = np.cumsum(lengths // 4) - 1  # the quad that ends each text (-1 before any)
    sizes = lengths // 4 * 3 - np.where(lengths > 0, padding[np.maximum(last_quad, 0)] if len(quads) else 0, 0)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int32)
    values = pa.Array.from_buffers(pa.binary(), len(sizes), [None, pa.py_buffer(offsets), pa.py_buffer(kept)])
    full = np.full(len(texts), -1, dtype=np.int64)
    full[np.flatnonzero(strict)] = np.arange(len(sizes))
    return values.take(pa.array(full, mask=full < 0)), _none_bad(len(texts)), strict


def _by_specification(
    texts: pa.Array, iceberg_type: str, kind: pa.DataType, values: pa.Array, bad: np.ndarray, slow: np.ndarray
) -> tuple[pa.Array, np.ndarray]:
    """``values`` with the ``slow`` rows converted by ``typed_values.typed_value``, one at a time."""
    rows = np.flatnonzero(slow)
    converted = [typed_value(text, iceberg_type) for text in texts.take(pa.array(rows)).to_pylist()]
    bad = bad.copy()
    bad[rows] = [value is UNREPRESENTABLE for value in converted]
    storage = {pa.date32(): pa.int32()}.get(kind, pa.int64() if pa.types.is_timestamp(kind) else kind)
    replacement = pa.array([None if v is UNREPRESENTABLE else v for v in converted], storage).view(kind)
    python = values.to_pylist() if storage == kind else values.view(storage).to_pylist()
    for row, value in zip(rows, replacement.view(storage).to_pylist(), strict=True):
        python[row] = value
    return pa.array(python, storage).view(kind), bad
