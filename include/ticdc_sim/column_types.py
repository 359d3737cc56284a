"""TiDB column types as the simulator understands them: categories, TiDB defaults, value rules.

Protocol-free: the reference model uses it to validate and normalize the Python values of a row
(see :mod:`ticdc_sim.model` for the value types), every encoder uses the categories.
"""

from __future__ import annotations

import json
import math
import struct
from datetime import UTC, date, datetime
from decimal import Decimal

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.schema.tidb_lengths import LOB_BYTES, tidb_default_length

#: A Python value of one column: int, Decimal, float, str, bytes, date, datetime or None (NULL).
Value = int | Decimal | float | str | bytes | date | datetime | None

_INT_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
INTEGER_TYPES = frozenset(_INT_BITS)
FLOAT_TYPES = frozenset({"float", "double"})
TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})
BINARY_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
TEMPORAL_TYPES = frozenset({"date", "datetime", "timestamp", "time", "year"})
SUPPORTED_TYPES = (
    INTEGER_TYPES | FLOAT_TYPES | TEXT_TYPES | BINARY_TYPES | TEMPORAL_TYPES | {"decimal", "json", "enum", "set", "bit"}
)

_TIMESTAMP_MIN = datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
_TIMESTAMP_MAX = datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC)


def integer_range(column: ColumnSchema) -> tuple[int, int]:
    """Inclusive value range of an integer column (BIGINT UNSIGNED: 0 .. 2**64-1)."""
    bits = _INT_BITS[column.mysql_type]
    if column.unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def display_length(column: ColumnSchema) -> int:
    """The column's display length: the declared one, else TiDB's default."""
    return column.length if column.length is not None else tidb_default_length(column)


def float32(value: float) -> float:
    """``value`` rounded to the nearest IEEE-754 single-precision float."""
    result: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return result


def decimal_quantum(column: ColumnSchema) -> Decimal:
    return Decimal(1).scaleb(-(column.scale or 0))


def normalize_value(column: ColumnSchema, value: Value, where: str) -> Value:
    """Check ``value`` against ``column`` and return it the way TiDB would store it.

    Normalizations: DECIMAL carries the column scale, BINARY(n) is zero-padded to n bytes, CHAR
    loses trailing spaces, FLOAT is rounded to single precision, TIMESTAMP is converted to UTC,
    SET members are put in definition order. Anything else that does not fit raises
    :class:`SchemaError` naming ``where`` (``db.table``) and the column.
    """
    if value is None:
        if not column.nullable:
            raise SchemaError(f"{where}.{column.name}: NULL in a NOT NULL column")
        return None
    tp = column.mysql_type
    if tp not in SUPPORTED_TYPES:
        raise SchemaError(f"{where}.{column.name}: type {tp!r} is not supported by the simulator")

    def bad(expected: str) -> SchemaError:
        return _value_error(column, where, value, expected)

    if tp in INTEGER_TYPES or tp in ("year", "bit"):
        if not isinstance(value, int) or isinstance(value, bool):
            raise bad("an int")
        low, high = integer_range(column) if tp in INTEGER_TYPES else _other_int_range(column)
        if not low <= value <= high:
            raise bad(f"an int in [{low}, {high}]")
        return value
    if tp in FLOAT_TYPES:
        if not isinstance(value, float) or not math.isfinite(value):
            raise bad("a finite float")
        return float32(value) if tp == "float" else value
    if tp == "decimal":
        if not isinstance(value, Decimal) or not value.is_finite():
            raise bad("a finite Decimal")
        quantized = value.quantize(decimal_quantum(column))
        if quantized != value:
            raise bad(f"a Decimal with at most {column.scale or 0} fraction digits")
        if quantized.adjusted() >= (column.length or 10) - (column.scale or 0) and quantized != 0:
            raise bad(f"a Decimal that fits decimal({column.length},{column.scale})")
        return quantized if quantized != 0 else Decimal(0).quantize(decimal_quantum(column))
    if tp in TEXT_TYPES or tp in ("json", "enum", "set", "time"):
        if not isinstance(value, str):
            raise bad("a str")
        return _normalize_text(column, value, where)
    if tp in BINARY_TYPES:
        if not isinstance(value, bytes):
            raise bad("bytes")
        limit = LOB_BYTES.get(tp, display_length(column))
        if len(value) > limit:
            raise bad(f"at most {limit} bytes")
        return value.ljust(limit, b"\x00") if tp == "binary" else value
    if tp == "date":
        if not isinstance(value, date) or isinstance(value, datetime):
            raise bad("a datetime.date")
        return value
    if tp in ("datetime", "timestamp"):
        if not isinstance(value, datetime):
            raise bad("a datetime.datetime")
        if value.microsecond % 10 ** (6 - (column.fsp or 0)):
            raise bad(f"at most {column.fsp or 0} fraction digits")
        if tp == "datetime":
            if value.tzinfo is not None:
                raise bad("a naive datetime (DATETIME has no zone)")
            return value
        if value.tzinfo is None:
            raise bad("a timezone-aware datetime (TIMESTAMP is an instant)")
        instant = value.astimezone(UTC)
        if not _TIMESTAMP_MIN <= instant <= _TIMESTAMP_MAX:
            raise bad("an instant in TiDB's TIMESTAMP range (1970-01-01 00:00:01 .. 2038-01-19 03:14:07 UTC)")
        return instant
    raise bad("a supported value")  # pragma: no cover - every supported type is handled above


def _other_int_range(column: ColumnSchema) -> tuple[int, int]:
    if column.mysql_type == "year":
        return 1901, 2155
    return 0, (1 << display_length(column)) - 1  # bit(n)


def _value_error(column: ColumnSchema, where: str, value: object, expected: str) -> SchemaError:
    return SchemaError(f"{where}.{column.name} ({column.type_text()}): expected {expected}, got {value!r}")


def _normalize_text(column: ColumnSchema, value: str, where: str) -> str:
    def bad(expected: str) -> SchemaError:
        return _value_error(column, where, value, expected)

    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise bad("valid Unicode text (no lone surrogates)") from exc
    tp = column.mysql_type
    if tp == "char":
        value = value.rstrip(" ")
    if tp in ("char", "varchar") and len(value) > display_length(column):
        raise bad(f"at most {display_length(column)} characters")
    if tp in LOB_BYTES and len(encoded) > LOB_BYTES[tp]:
        raise bad(f"at most {LOB_BYTES[tp]} UTF-8 bytes")
    if tp == "json":
        try:
            json.loads(value)
        except ValueError as exc:
            raise bad("JSON text") from exc
    if tp == "enum" and value not in (column.elements or ()):
        raise bad(f"one of the members {list(column.elements or ())}")
    if tp == "set":
        members = [m for m in value.split(",") if m] if value else []
        elements = list(column.elements or ())
        if any(m not in elements for m in members):
            raise bad(f"members of {elements} separated by commas")
        return ",".join(e for e in elements if e in members)
    return value


def enum_index(column: ColumnSchema, value: str) -> int:
    """1-based position of ``value`` among the ENUM members (TiDB's enum value)."""
    return (column.elements or ()).index(value) + 1


def set_bitmask(column: ColumnSchema, value: str) -> int:
    """TiDB's SET value: bit i is set when member i is present."""
    members = set(value.split(",")) if value else set()
    return sum(1 << i for i, e in enumerate(column.elements or ()) if e in members)


def format_datetime_text(moment: datetime, fsp: int) -> str:
    """``YYYY-MM-DD HH:MM:SS`` plus exactly ``fsp`` fraction digits (TiDB's text form)."""
    text = moment.strftime("%Y-%m-%d %H:%M:%S") if moment.year >= 1000 else _early(moment)
    if fsp:
        text += "." + f"{moment.microsecond:06d}"[:fsp]
    return text


def _early(moment: datetime) -> str:
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} {moment.strftime('%H:%M:%S')}"


def decimal_text(column: ColumnSchema, value: Decimal) -> str:
    """TiDB's DECIMAL text: fixed notation with exactly the column scale."""
    return format(value.quantize(decimal_quantum(column)), "f")
