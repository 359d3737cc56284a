"""Debezium column values → canonical text, a whole Arrow column at a time.

The vector twins of ``ticdc_lake.protocols.debezium_values.converter_for``: the same dispatch on
the Connect name, type and ``tidb_type``, the same bounds, the same texts, computed with
``pyarrow.compute`` and numpy over whole arrays. A twin says, row by row, whether it vouches for
its text (``ok``); a row it does not vouch for (a value the scalar converter rejects, or one the
twin cannot be sure of) goes to the Python decoder, which stays the specification. ``ok`` is
never True where the scalar converter raises or writes another text; it may be False where the
scalar would accept (the row then only costs the Python path). Types without an exact twin
(FLOAT/DOUBLE/DECIMAL, whose JSON text pyarrow does not keep; BIT(n>1); unsupported names) get
no reader at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.canonical import YEAR_BOUNDS
from ticdc_lake.protocols.debezium_values import (
    _CONNECT_INT_BITS,
    _DBZ,
    _LOGICAL,
    _ZONED,
    FieldType,
    _split_allowed,
    integer_range,
)
from ticdc_lake.spark.arrow_decode import typed_sources
from ticdc_lake.spark.arrow_decode.typed_sources import Typed

#: values → (texts, ok); see :class:`ColumnReader`.
Canonical = Callable[[pa.Array], tuple[pa.Array, pa.Array]]


@dataclass(frozen=True, slots=True)
class ColumnReader:
    #: The Arrow type pyarrow.json must read this column's JSON value as (pa.int64(), pa.string() or pa.bool_()).
    arrow_type: pa.DataType
    #: values (an Arrow array of arrow_type, may hold nulls) -> (texts: pa.string() array,
    #: ok: pa.bool_() array without nulls).
    #: For a null value: text null, ok True. For a non-null value: ok True only where the text equals what
    #: debezium_values.converter_for(ft)(value) returns for the Python value the reference decoder reads
    #: (an int, a str, a bool); ok False wherever the scalar converter raises (the row then goes to the
    #: Python decoder, which quarantines it with its exact reason) or where the twin cannot vouch.
    canonical: Canonical
    #: The values typed as the column's Iceberg type without their text (``typed_sources``), or None.
    typed: Typed | None = None


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_US_PER_SECOND = 1_000_000
_EPOCH = datetime(1970, 1, 1)
#: Days since 1970-01-01 of the first and last DATE Python's ``date`` holds (years 1..9999).
_DAYS = ((date.min - _EPOCH.date()).days, (date.max - _EPOCH.date()).days)
#: µs since the epoch of the first and last DATETIME Python's ``datetime`` holds.
_MICROS = (
    (datetime.min - _EPOCH) // _EPOCH.resolution,
    (datetime.max - _EPOCH) // _EPOCH.resolution,
)
#: ``time_text`` takes hours up to 838: |µs| up to 838:59:59.999999.
_TIME_MICROS = 839 * 3600 * _US_PER_SECOND - 1
#: The texts ``zoned_timestamp`` takes in one step (``_ZONED``), anchored for RE2.
_ZONED_RE2 = f"^(?:{_ZONED.pattern})$"
#: Standard padded base64 whose unused padding bits are zero: what ``base64_text`` returns unchanged.
_BASE64_RE2 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$"
_NULL_TEXT = pa.scalar(None, pa.string())
_TEXTS = typed_sources.texts
_STRING = pa.string()


def column_reader(ft: FieldType) -> ColumnReader | None:
    """None where the type has no vector twin (the table version's rows then decode in Python)."""
    name = ft.name or ""
    if name in _LOGICAL:
        return _LOGICAL_READERS.get(name)
    if name == "io.debezium.data.Bits":
        return None
    if name == "io.debezium.data.Enum":
        return ColumnReader(_STRING, _enum(_split_allowed(ft.parameters.get("allowed"), escaped=True)), _TEXTS)
    if name == "io.debezium.data.EnumSet":
        return ColumnReader(_STRING, _set(_split_allowed(ft.parameters.get("allowed"), escaped=False)), _TEXTS)
    if ft.name is not None and ft.name.startswith(_DBZ):
        return None
    if ft.connect_type == "boolean":
        return ColumnReader(pa.bool_(), _boolean, typed_sources.booleans)
    mysql_type = ft.mysql_type()
    if ft.connect_type in _CONNECT_INT_BITS:
        return _integer_reader(ft, mysql_type)
    if ft.connect_type in ("string", "bytes"):
        if mysql_type is not None and ("binary" in mysql_type or "blob" in mysql_type):
            return ColumnReader(_STRING, _base64)
        return ColumnReader(_STRING, _string, _TEXTS)
    if ft.connect_type in ("float", "double"):
        if mysql_type in ("decimal", "numeric"):
            return ColumnReader(pa.float64(), _decimal)
        return ColumnReader(pa.float64(), _float, _double)
    return None


def _integer_reader(ft: FieldType, mysql_type: str | None) -> ColumnReader | None:
    """``_integer_converter``'s bounds (``integer_range``) and BIGINT UNSIGNED wrap."""
    low, high = integer_range(ft, mysql_type)
    if mysql_type == "bigint" and ft.unsigned():
        # Every int64 wraps into 0..2^64-1, all of BIGINT UNSIGNED: nothing to check.
        whole = (low, high) == (0, (1 << 64) - 1)
        return ColumnReader(pa.int64(), _unsigned_bigint, typed_sources.unsigned_bigint) if whole else None
    return ColumnReader(pa.int64(), _integers(low, high), typed_sources.integers)


def _integers(low: int, high: int) -> Canonical:
    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = _typed(values, pa.int64())
        valid = None
        if low > _INT64_MIN:
            valid = pc.greater_equal(values, low)
        if high < _INT64_MAX:
            below = pc.less_equal(values, high)
            valid = below if valid is None else pc.and_(valid, below)
        return _finish(values, valid, pc.cast(values, _STRING))

    return canonical


def _unsigned_bigint(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    values = _typed(values, pa.int64())
    # int64 two's complement of a uint64 (max → -1): the same bits read unsigned.
    return _finish(values, None, pc.cast(pc.cast(values, pa.uint64(), safe=False), _STRING))


def _boolean(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    values = _typed(values, pa.bool_())
    return _finish(values, None, pc.if_else(values, "1", "0"))


def _string(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    values = _typed(values, _STRING)
    return _finish(values, None, values)


def _base64(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    values = _typed(values, _STRING)
    return _finish(values, pc.match_substring_regex(values, _BASE64_RE2), values)


def _zoned_timestamp(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    values = _typed(values, _STRING)
    return _finish(values, pc.match_substring_regex(values, _ZONED_RE2), values)


def _enum(members: tuple[str, ...] | None) -> Canonical:
    """``_enum``: the empty text (MySQL's invalid value) or one of the members."""
    value_set = None if members is None else pa.array(members, _STRING)

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = _typed(values, _STRING)
        if value_set is None:
            return _finish(values, None, values)
        valid = pc.or_(pc.equal(values, ""), pc.is_in(values, value_set=value_set))
        return _finish(values, valid, values)

    return canonical


def _set(members: tuple[str, ...] | None) -> Canonical:
    """``_set``: the empty text or members joined by ``,`` (unchecked when a member has a comma)."""
    checkable = members is not None and not any("," in m for m in members)
    value_set = pa.array(members if checkable and members is not None else (), _STRING)

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = _typed(values, _STRING)
        if not checkable:
            return _finish(values, None, values)
        parts = pc.split_pattern(values, ",")
        unknown = pc.invert(pc.is_in(pc.list_flatten(parts), value_set=value_set)).to_numpy(zero_copy_only=False)
        rows = pc.list_parent_indices(parts).to_numpy()
        has_unknown = np.bincount(rows[unknown], minlength=len(values)) > 0
        valid = pc.or_(pc.equal(values, ""), pa.array(~has_unknown))
        return _finish(values, valid, values)

    return canonical


def _date(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``date_from_days``: days since 1970-01-01 → ``YYYY-MM-DD``, years 1..9999."""
    values = _typed(values, pa.int64())
    valid = _between(values, *_DAYS)
    days = _where(valid, values)
    return _finish(values, valid, pc.cast(pc.cast(pc.cast(days, pa.int32()), pa.date32()), _STRING))


def _datetime(scale: int) -> Canonical:
    """``_datetime_from_micros`` of ``value * scale`` µs: ``YYYY-MM-DD HH:MM:SS[.f…]``."""
    bounds = (-(-_MICROS[0] // scale), _MICROS[1] // scale)

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = _typed(values, pa.int64())
        valid = _between(values, *bounds)
        micros = _where(valid, values)
        if scale != 1:
            micros = pc.multiply(micros, scale)
        # Arrow writes six fraction digits; the fraction's trailing zeros go, then a bare dot.
        full = pc.cast(pc.cast(micros, pa.timestamp("us")), _STRING)
        return _finish(values, valid, pc.utf8_rtrim(pc.utf8_rtrim(full, characters="0"), characters="."))

    return canonical


def _time(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``time_from_micros`` then ``time_text``: ``[-]HH:MM:SS[.f…]``, hours up to 838."""
    values = _typed(values, pa.int64())
    valid = _between(values, -_TIME_MICROS, _TIME_MICROS)
    micros = _where(valid, values).fill_null(0).to_numpy()
    seconds, fraction = np.divmod(np.abs(micros), _US_PER_SECOND)
    minutes, second = np.divmod(seconds, 60)
    hours, minute = np.divmod(minutes, 60)
    clock = pc.binary_join_element_wise(_two_digits(hours), _two_digits(minute), _two_digits(second), ":")
    # ``.f…`` without trailing zeros, empty for 0: 1000000 + f written, its leading 1 dropped.
    digits = pc.utf8_slice_codeunits(pc.cast(pa.array(fraction + _US_PER_SECOND), _STRING), 1)
    dotted = pc.binary_join_element_wise(".", pc.utf8_rtrim(digits, characters="0"), "")
    tail = pc.if_else(pa.array(fraction == 0), "", dotted)
    sign = pc.if_else(pa.array(micros < 0), "-", "")
    return _finish(values, valid, pc.binary_join_element_wise(sign, clock, tail, ""))


def _two_digits(numbers: np.ndarray) -> pa.Array:
    return pc.utf8_lpad(pc.cast(pa.array(numbers), _STRING), width=2, padding="0")


def _typed(values: pa.Array | pa.ChunkedArray, arrow_type: pa.DataType) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values if values.type == arrow_type else values.cast(arrow_type)


def _float(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """FLOAT/DOUBLE: the value's JSON text as sent (``float_text``). pyarrow keeps no text, so this is
    the shortest text that reads back to the double; the vector decoder takes a row only where its
    payload holds exactly that text (``json_text`` writes doubles the same way)."""
    values = _positive_zero(_typed(values, pa.float64()))
    return _finish(values, pc.is_finite(values), pc.cast(values, _STRING))


def _double(values: pa.Array, iceberg_type: str) -> pa.Array | None:
    """A DOUBLE typed at source: the double itself (its text reads back to it), -0 as 0 as its text
    has it. A FLOAT is typed from its text: ``float32`` of the text, not of the double."""
    return typed_sources.floats(_positive_zero(_typed(values, pa.float64())), iceberg_type)


def _positive_zero(values: pa.Array) -> pa.Array:
    """-0.0 as 0.0: its only text pyarrow writes, ``-0``, is the JSON integer 0 to the Python decoder."""
    return pc.if_else(pc.equal(values, 0.0), 0.0, values)


def _decimal(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """DECIMAL sent as a double: Python's ``repr`` of the double, written positionally (``_decimal``).
    pyarrow's text has the same shortest digits; without an exponent it is that positional text
    (``.0`` added to a whole number, as ``repr`` writes it); with one, the row goes to Python."""
    values = _positive_zero(_typed(values, pa.float64()))
    texts = pc.cast(values, _STRING)
    plain = pc.and_(pc.is_finite(values), pc.invert(pc.match_substring(texts, "e")))
    whole = pc.equal(values, pc.floor(values))
    return _finish(values, plain, pc.if_else(whole, pc.binary_join_element_wise(texts, ".0", ""), texts))


def _between(values: pa.Array, low: int, high: int) -> pa.Array:
    return pc.and_(pc.greater_equal(values, low), pc.less_equal(values, high))


def _where(valid: pa.Array, values: pa.Array) -> pa.Array:
    """``values`` with 0 in place of the rows not valid (so that no conversion overflows)."""
    return values if valid.false_count == 0 else pc.if_else(valid, values, 0)


def _finish(values: pa.Array, valid: pa.Array | None, texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(texts, ok): ok True for nulls and valid values, text null wherever ok is False or the value null.

    ``valid`` (None = every value) may be null where the value is null.
    """
    present = values.is_valid()
    if valid is None or valid.false_count == 0:
        if texts.null_count < values.null_count:  # a text made from a stand-in for null
            texts = pc.if_else(present, texts, _NULL_TEXT)
        return _as_string(texts), pa.array(np.ones(len(values), dtype=np.bool_))
    taken = pc.and_(present, valid.fill_null(False))
    ok = pc.or_(pc.invert(present), taken)
    return _as_string(pc.if_else(taken, texts, _NULL_TEXT)), ok


def _as_string(texts: pa.Array) -> pa.Array:
    return texts if texts.type == _STRING else texts.cast(_STRING)


_LOGICAL_READERS: dict[str, ColumnReader] = {
    "io.debezium.time.Date": ColumnReader(pa.int64(), _date, typed_sources.epoch_days),
    "io.debezium.time.Timestamp": ColumnReader(pa.int64(), _datetime(1000), typed_sources.epoch_micros(1000)),
    "io.debezium.time.MicroTimestamp": ColumnReader(pa.int64(), _datetime(1), typed_sources.epoch_micros(1)),
    "io.debezium.time.ZonedTimestamp": ColumnReader(_STRING, _zoned_timestamp),
    "io.debezium.time.MicroTime": ColumnReader(pa.int64(), _time),
    "io.debezium.time.Year": ColumnReader(pa.int64(), _integers(*YEAR_BOUNDS), typed_sources.integers),
    "io.debezium.data.Json": ColumnReader(_STRING, _string, _TEXTS),
    "io.debezium.data.TiDBVectorFloat32": ColumnReader(_STRING, _string, _TEXTS),
}
