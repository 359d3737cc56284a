"""Column fields of TiCDC's Debezium messages (``pkg/sink/codec/debezium/codec.go``, ``helper.go``).

* :meth:`DebeziumFields.schema` = ``writeDebeziumFieldSchema``: the Connect field schema, with
  ``tidb_type`` first under the TiDB extension and the column default converted per type;
* :meth:`DebeziumFields.members` = ``writeDebeziumFieldValue``: the value, including TiCDC's quirk
  of writing a column's DEFAULT where the row holds NULL (and, for a binary column, writing that
  default twice: base64, then as a plain string under the same name).

Values reproduce Go's arithmetic: DATE as days since 1970-01-01, DATETIME as epoch ms (fsp ≤ 3) or
µs read as UTC, both with the two-digit-year shift (years < 70 + 2000, < 100 + 1900); TIMESTAMP
as the UTC text with exactly fsp fraction digits; TIME as µs; BIT(1) as a boolean and BIT(n) as
base64 little-endian bytes; DECIMAL as a float64 (``strconv.ParseFloat`` of the text); BIGINT
UNSIGNED as ``int64(u)``; numbers through jsoniter's float formatting.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_sim.column_types import BINARY_TYPES, INTEGER_TYPES, TEXT_TYPES, Value, display_length
from ticdc_sim.go_text import Members, RawJson, jsoniter_float
from ticdc_sim.tidb_columns import (
    has_binary_charset,
    is_unsigned,
    mounter_text,
    unsigned_int64,
)

_EPOCH = datetime(1970, 1, 1)
_EPOCH_DATE = date(1970, 1, 1)
_STRING_TYPES = TEXT_TYPES | BINARY_TYPES
_ZONED_EPOCH = "1970-01-01T00:00:00Z"


def _float64(value: float) -> RawJson:
    return RawJson(jsoniter_float(value, 64))


def _shift_two_digit_year(moment: datetime) -> datetime:
    """Go ``t.AddDate(2000|1900, 0, 0)`` for years < 70 / < 100 (Feb 29 of a non-leap year → Mar 1)."""
    if moment.year >= 100:
        return moment
    year = moment.year + (2000 if moment.year < 70 else 1900)
    try:
        return moment.replace(year=year)
    except ValueError:
        return moment.replace(year=year, month=3, day=1)


def date_days(day: date) -> int:
    """A DATE as ``io.debezium.time.Date``: days since 1970-01-01 after the two-digit-year shift."""
    shifted = _shift_two_digit_year(datetime(day.year, day.month, day.day))
    return (shifted.date() - _EPOCH_DATE).days


def datetime_epoch(moment: datetime, fsp: int) -> int:
    """A DATETIME read as UTC: epoch ms (fsp ≤ 3, ``Timestamp``) or µs (``MicroTimestamp``)."""
    delta = _shift_two_digit_year(moment.replace(tzinfo=None)) - _EPOCH
    return delta // timedelta(milliseconds=1) if fsp <= 3 else delta // timedelta(microseconds=1)


def zoned_timestamp(instant: datetime, fsp: int) -> str:
    """A TIMESTAMP as ``io.debezium.time.ZonedTimestamp``: UTC, exactly ``fsp`` fraction digits."""
    utc = instant.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if fsp > 0:
        text += "." + f"{utc.microsecond:06d}"[:fsp]
    return text + "Z"


def time_micros(text: str, column: ColumnSchema) -> int:
    """TiDB TIME text ``[-]HH:MM:SS[.f]`` (hours up to 838) as µs (``types.StrToDuration``)."""
    body = text[1:] if text.startswith("-") else text
    clock, _, fraction = body.partition(".")
    parts = clock.split(":")
    digits_ok = all(p.isascii() and p.isdigit() for p in parts) and (not fraction or fraction.isdigit())
    if len(parts) != 3 or not digits_ok:
        raise SchemaError(f"column {column.name!r} (time): {text!r} is not TiDB TIME text [-]HH:MM:SS[.ffffff]")
    hours, minutes, seconds = (int(p) for p in parts)
    micros = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + int((fraction + "000000")[:6])
    return -micros if text.startswith("-") else micros


def bit_bytes(column: ColumnSchema, value: int) -> str:
    """BIT(n>1) as ``getBitFromUint64``: the little-endian bytes, ceil(n/8) of them, in base64."""
    size = (display_length(column) + 7) // 8
    return base64.b64encode(value.to_bytes(8, "little")[:size]).decode("ascii")


def _parse_datetime(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


class DebeziumFields:
    """Field schemas and values of one TiCDC server (time zone) and extension setting."""

    def __init__(self, zone: ZoneInfo, tidb_extension: bool) -> None:
        self._zone = zone
        self._tidb_extension = tidb_extension

    # ------------------------------------------------------------------------ schema
    def schema(self, column: ColumnSchema) -> dict[str, object]:
        """``writeDebeziumFieldSchema``: the Connect field of ``column``."""
        tp = column.mysql_type
        field: dict[str, object] = {}
        if self._tidb_extension:
            field["tidb_type"] = tidb_type(column)
        optional = column.nullable
        if tp == "bit" and display_length(column) == 1:
            field.update(type="boolean", optional=optional)
        elif tp == "bit":
            length = str(display_length(column))
            field.update(type="bytes", optional=optional, name="io.debezium.data.Bits", version=1)
            field["parameters"] = {"length": length}
        elif tp in _STRING_TYPES:
            field.update(type="string", optional=optional)
        elif tp in ("enum", "set"):
            name, allowed = (
                ("Enum", _enum_allowed(column)) if tp == "enum" else ("EnumSet", ",".join(column.elements or ()))
            )
            field.update(type="string", optional=optional, name=f"io.debezium.data.{name}", version=1)
            field["parameters"] = {"allowed": allowed}
        else:
            connect_type, logical = _connect_type(column)
            field.update(type=connect_type, optional=optional)
            if logical is not None:
                field.update(name=logical, version=1)
        field["field"] = column.name
        default = self._schema_default(column)
        if default is not _ABSENT:
            field["default"] = default
        return field

    def _schema_default(self, column: ColumnSchema) -> object:
        text = column.default
        if text is None:
            return _ABSENT
        tp = column.mysql_type
        if tp == "bit":
            number = _bit_default(column, text)
            return number != 0 if display_length(column) == 1 else bit_bytes(column, number)
        if tp in _STRING_TYPES or tp in ("enum", "set", "json"):
            return text
        if tp == "date":
            parsed = _parse_datetime(text)
            if parsed is None:
                return 0 if not column.nullable else _ABSENT
            return date_days(parsed.date())
        if tp == "datetime":
            parsed = _parse_datetime(text)
            return 0 if parsed is None else datetime_epoch(parsed, column.fsp or 0)
        if tp == "timestamp":
            parsed = _parse_datetime(text)
            if parsed is None:  # CURRENT_TIMESTAMP, zero
                return _ZONED_EPOCH if not column.nullable else _ABSENT
            return zoned_timestamp(parsed.replace(tzinfo=UTC), column.fsp or 0)  # parsed in UTC here
        if tp == "time":
            return time_micros(text, column)
        parsed_float = float(text)  # integers, YEAR, FLOAT, DOUBLE, DECIMAL: strconv.ParseFloat
        if tp == "year" and parsed_float < 100:
            parsed_float += 2000 if parsed_float < 70 else 1900
        return _float64(parsed_float)

    # ------------------------------------------------------------------------ values
    def members(self, columns: Sequence[ColumnSchema], row: Mapping[str, Value]) -> Members:
        """``writeDebeziumFieldValues``: the row image object, columns in table order."""
        out = Members()
        for column in columns:
            if column.name in row:
                out.extend(self.value(column, row[column.name]))
        return out

    def value(self, column: ColumnSchema, value: Value) -> list[tuple[str, object]]:
        """The (name, JSON value) pairs ``writeDebeziumFieldValue`` writes for one column."""
        name = column.name
        if value is None:
            if column.default is None:
                return [(name, None)]
            return self._default_value(column, column.default)
        tp = column.mysql_type
        if tp == "bit" and isinstance(value, int):
            return [(name, value != 0 if display_length(column) == 1 else bit_bytes(column, value))]
        if tp in BINARY_TYPES and isinstance(value, bytes):
            return [(name, base64.b64encode(value).decode("ascii"))]
        if tp in INTEGER_TYPES and isinstance(value, int) and not isinstance(value, bool):
            return [(name, unsigned_int64(value) if column.unsigned else value)]
        if tp == "year" and isinstance(value, int):
            return [(name, value)]
        if tp in ("float", "double") and isinstance(value, float):
            return [(name, RawJson(jsoniter_float(value, 32 if tp == "float" else 64)))]
        if tp == "decimal" and isinstance(value, Decimal):
            return [(name, _float64(float(mounter_text(column, value, self._zone))))]
        if tp == "date" and isinstance(value, date) and not isinstance(value, datetime):
            return [(name, date_days(value))]
        if tp == "datetime" and isinstance(value, datetime):
            return [(name, datetime_epoch(value, column.fsp or 0))]
        if tp == "timestamp" and isinstance(value, datetime):
            return [(name, zoned_timestamp(value, column.fsp or 0))]
        if tp == "time" and isinstance(value, str):
            return [(name, time_micros(value, column))]
        if isinstance(value, str) and (tp in TEXT_TYPES or tp in ("enum", "set", "json")):
            return [(name, value)]
        raise SchemaError(f"column {column.name!r} ({column.type_text()}): cannot encode {value!r} for Debezium")

    def _default_value(self, column: ColumnSchema, text: str) -> list[tuple[str, object]]:
        """A NULL written as the column default (the mounter value is then TiDB's default string)."""
        name, tp = column.name, column.mysql_type
        if tp == "bit":
            return self.value(column, _bit_default(column, text))
        if tp in _STRING_TYPES:
            if has_binary_charset(column):  # codec.go writes the binary field, then the string field
                return [(name, base64.b64encode(text.encode("utf-8")).decode("ascii")), (name, text)]
            return [(name, text)]
        if tp in INTEGER_TYPES:
            number = int(text)
            return [(name, unsigned_int64(number) if column.unsigned else number)]
        if tp in ("float", "double", "decimal"):
            return [(name, _float64(float(text)))]
        if tp == "year":
            return [(name, text)]  # no YEAR case in writeDebeziumFieldValue: the string as is
        if tp in ("date", "datetime"):
            parsed = datetime(1970, 1, 1) if tp == "datetime" and text == "CURRENT_TIMESTAMP" else _parse_datetime(text)
            if parsed is None:
                return [(name, None)]
            fsp = column.fsp or 0
            return [(name, date_days(parsed.date()) if tp == "date" else datetime_epoch(parsed, fsp))]
        if tp == "timestamp":
            parsed = _parse_datetime(text)
            if parsed is None:
                return [(name, None)]
            return [(name, zoned_timestamp(parsed.replace(tzinfo=self._zone), column.fsp or 0))]
        if tp == "time":
            return [(name, time_micros(text, column))]
        return [(name, text)]  # ENUM, SET, JSON: the string


def _bit_default(column: ColumnSchema, text: str) -> int:
    """A BIT default as its integer (the simulator writes BIT defaults as integer text)."""
    if not (text.isascii() and text.isdigit()):
        raise SchemaError(f"column {column.name!r} (bit): default {text!r} is not an integer")
    return int(text)


class _Absent:
    """No ``default`` key in the field schema."""


_ABSENT = _Absent()


def tidb_type(column: ColumnSchema) -> str:
    """``getTiDBType``: the TiDB type name, plus `` unsigned`` except for YEAR, BIT, CHAR, VARCHAR, DECIMAL."""
    tp = column.mysql_type
    if tp in ("year", "bit", "char", "binary", "varchar", "varbinary", "decimal"):
        return tp
    return tp + " unsigned" if is_unsigned(column) else tp


def _connect_type(column: ColumnSchema) -> tuple[str, str | None]:
    tp, unsigned = column.mysql_type, column.unsigned
    ints = {"tinyint": "int16", "mediumint": "int32", "bigint": "int64"}
    if tp in ints:
        return ints[tp], None
    if tp == "smallint":
        return ("int32" if unsigned else "int16"), None
    if tp == "int":
        return ("int64" if unsigned else "int32"), None
    if tp == "float":
        return "float", None  # TiDB decimal -1 (no FLOAT(M,D) in the simulator)
    if tp in ("double", "decimal"):
        return "double", None
    logical = {
        "date": ("int32", "io.debezium.time.Date"),
        "datetime": (
            "int64",
            "io.debezium.time.Timestamp" if (column.fsp or 0) <= 3 else "io.debezium.time.MicroTimestamp",
        ),
        "timestamp": ("string", "io.debezium.time.ZonedTimestamp"),
        "time": ("int64", "io.debezium.time.MicroTime"),
        "json": ("string", "io.debezium.data.Json"),
        "year": ("int32", "io.debezium.time.Year"),
    }
    if tp in logical:
        return logical[tp]
    raise SchemaError(f"column {column.name!r}: type {tp!r} is not supported by the Debezium encoder")


def _enum_allowed(column: ColumnSchema) -> str:
    """ENUM members joined by ``,`` after ``common.EscapeEnumAndSetOptions``."""
    escaped = (e.replace(",", "\\,").replace("\\'", "'").replace("''", "'") for e in column.elements or ())
    return ",".join(escaped)
