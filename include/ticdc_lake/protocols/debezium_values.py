"""Debezium column values → canonical text (``docs/protocols.md``, ``docs/canonical-values.md``).

A Debezium value is read with its Kafka Connect field schema (``type``, ``name``,
``parameters``) and, when the changefeed sets ``enable-tidb-extension=true``, the TiDB type in
``tidb_type``. The conversions undo what TiCDC's encoder (``writeDebeziumFieldValue``) did:

* DATE: days since 1970-01-01 → ``YYYY-MM-DD``;
* DATETIME: epoch ms (``io.debezium.time.Timestamp``, fsp ≤ 3) or µs (``MicroTimestamp``), the
  wall time read as UTC → ``YYYY-MM-DD HH:MM:SS[.f…]``. The column fsp is not sent, so the
  fraction is written with its trailing zeros removed (``…56.100`` → ``…56.1``);
* TIMESTAMP: the ``ZonedTimestamp`` UTC text ``…Z``, already canonical (fraction digits = fsp),
  kept as sent. In a repeated daylight-saving hour of the server zone TiCDC sent one instant for
  both (``ticdc_lake.ambiguous_times``); nothing in the message tells which, so apply counts them;
* TIME: µs (negative or beyond 24 h) → ``[-]HH:MM:SS[.f…]``, trailing fraction zeros removed;
* BIT(1): boolean → ``0``/``1``; BIT(n>1): base64 little-endian bytes → the unsigned integer;
* BIGINT UNSIGNED: int64 two's complement (max → -1) → the unsigned value, when the column is
  known to be unsigned (``tidb_type``); otherwise the signed number as sent;
* DECIMAL: a JSON double (lossy) → Python ``repr`` of the double, written without exponent;
* binary strings: base64, already canonical; ENUM/SET: member names, already canonical.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from ticdc_lake.canonical import (
    YEAR_BOUNDS,
    base64_text,
    bit_bounds,
    datetime_text,
    float_text,
    integer_bounds,
    parse_integer,
    time_text,
)

#: Turns one non-null JSON value into its canonical text; raises ValueError with the reason.
Converter = Callable[[object], str]

_EPOCH_DATE = date(1970, 1, 1)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_CONNECT_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_US_PER_SECOND = 1_000_000
_DBZ = "io.debezium."
#: Connect logical names → the MySQL type they stand for.
_LOGICAL_TYPES = {
    "io.debezium.time.Date": "date",
    "io.debezium.time.Timestamp": "datetime",
    "io.debezium.time.MicroTimestamp": "datetime",
    "io.debezium.time.ZonedTimestamp": "timestamp",
    "io.debezium.time.MicroTime": "time",
    "io.debezium.time.Year": "year",
    "io.debezium.data.Bits": "bit",
    "io.debezium.data.Enum": "enum",
    "io.debezium.data.EnumSet": "set",
    "io.debezium.data.Json": "json",
    "io.debezium.data.TiDBVectorFloat32": "vector",
}


class Number(str):
    """The exact text of a JSON number that has a fraction or an exponent (``12345.123``)."""

    __slots__ = ()


def _first_occurrence(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object keeping the first of duplicated keys.

    TiCDC writes a NULL binary column that has a DEFAULT twice under one name: the default as
    base64, then as raw text (codec.go ``writeDebeziumFieldValue``: ``writeBinaryField`` then
    ``WriteStringField``). The first is the Debezium value.
    """
    document: dict[str, Any] = {}
    for key, value in pairs:
        document.setdefault(key, value)
    return document


#: Reads JSON keeping the text of non-integer numbers (FLOAT/DOUBLE are canonical as sent) and
#: the first of duplicated keys.
JSON_DECODER = json.JSONDecoder(parse_float=Number, object_pairs_hook=_first_occurrence)


@dataclass(frozen=True, slots=True)
class FieldType:
    """The Connect schema of one column field, plus the TiDB extension ``tidb_type``."""

    connect_type: str
    name: str | None = None
    tidb_type: str | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)
    optional: bool = True

    def mysql_type(self) -> str | None:
        """The TiDB type name without ``unsigned`` when it is known, else None."""
        if self.tidb_type is not None:
            return self.tidb_type.removesuffix(" unsigned")
        if self.name is not None and self.name in _LOGICAL_TYPES:
            return _LOGICAL_TYPES[self.name]
        if self.connect_type == "boolean":
            return "bit"
        return None

    def unsigned(self) -> bool:
        return self.tidb_type is not None and self.tidb_type.endswith(" unsigned")

    def type_text(self) -> str:
        """``tidb_type`` if sent; else the MySQL type the Connect schema implies, or
        ``connect:<type>`` when the Connect type fits several MySQL types (int16, double, string)."""
        if self.tidb_type is not None:
            return self.tidb_type
        mysql_type = self.mysql_type()
        if mysql_type == "bit":
            return f"bit({self.parameters.get('length', '1')})"
        if mysql_type is not None:
            return mysql_type
        return f"connect:{self.connect_type}"


def field_type(spec: Mapping[str, Any]) -> FieldType:
    """A :class:`FieldType` from one Connect field schema; raises ValueError naming the key."""
    connect_type = spec.get("type")
    if not isinstance(connect_type, str):
        raise ValueError(f"'type' must be a string, got {_describe(connect_type)}")
    name = spec.get("name")
    if name is not None and not isinstance(name, str):
        raise ValueError(f"'name' must be a string, got {_describe(name)}")
    tidb_type = spec.get("tidb_type")
    if tidb_type is not None and not isinstance(tidb_type, str):
        raise ValueError(f"'tidb_type' must be a string, got {_describe(tidb_type)}")
    parameters = spec.get("parameters") or {}
    if not isinstance(parameters, dict) or not all(isinstance(v, str) for v in parameters.values()):
        raise ValueError(f"'parameters' must be an object of strings, got {_describe(parameters)}")
    optional = spec.get("optional", True)
    return FieldType(connect_type, name, tidb_type, parameters, optional is not False)


def converter_for(ft: FieldType | None) -> Converter:
    """The function that makes one Debezium JSON value canonical; ``None`` = no schema sent."""
    if ft is None:
        return untyped
    mysql_type = ft.mysql_type()
    logical = _LOGICAL.get(ft.name or "")
    if logical is not None:
        return logical
    if ft.name == "io.debezium.data.Bits":
        return _bits(_int_parameter(ft.parameters, "length"))
    if ft.name == "io.debezium.data.Enum":
        return _enum(_split_allowed(ft.parameters.get("allowed"), escaped=True))
    if ft.name == "io.debezium.data.EnumSet":
        return _set(_split_allowed(ft.parameters.get("allowed"), escaped=False))
    if ft.name is not None and ft.name.startswith(_DBZ):
        return _unsupported(ft.name)
    if ft.connect_type == "boolean":
        return _boolean
    if ft.connect_type in _CONNECT_INT_BITS:
        return _integer_converter(ft, mysql_type)
    if ft.connect_type in ("float", "double"):
        return _decimal if mysql_type in ("decimal", "numeric") else _float
    if ft.connect_type in ("string", "bytes"):
        if mysql_type is not None and ("binary" in mysql_type or "blob" in mysql_type):
            return _via_string(base64_text)
        return _string
    return _unsupported(ft.connect_type)


def untyped(value: object) -> str:
    """A value sent without schema: the JSON scalar as text (exact, but not interpreted).

    Integers stay integers (a DATE arrives as its day count, a DATETIME as epoch ms/µs, a TIME as
    µs, a BIGINT UNSIGNED above 2^63-1 as a negative number); booleans (BIT(1)) become ``1``/``0``;
    strings are kept (text, base64 binary, ENUM/SET names, the UTC TIMESTAMP text alike).
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Number):
        return float_text(str(value))
    if isinstance(value, str):
        return value
    raise ValueError(f"expected a JSON scalar, got {_describe(value)}")


def date_from_days(value: object) -> str:
    days = _int_value(value)
    try:
        day = _EPOCH_DATE + timedelta(days=days)
    except OverflowError:
        raise ValueError(f"{days} days since 1970-01-01 is outside the years 1..9999") from None
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def datetime_from_millis(value: object) -> str:
    return _datetime_from_micros(_int_value(value) * 1000)


def datetime_from_micros(value: object) -> str:
    return _datetime_from_micros(_int_value(value))


def time_from_micros(value: object) -> str:
    micros = _int_value(value)
    sign = "-" if micros < 0 else ""
    seconds, fraction = divmod(abs(micros), _US_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return time_text(f"{sign}{hours:02d}:{minute:02d}:{second:02d}{_fraction(fraction)}")


#: What :func:`zoned_timestamp` accepts (``datetime_text``'s fields and fraction between ``T`` and
#: ``Z``), matched in one step; any other text takes the checks that say what is wrong.
_ZONED = re.compile(
    r"[0-9]{4}-(?:0[0-9]|1[0-2])-(?:[0-2][0-9]|3[01])"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?Z"
)


def zoned_timestamp(value: object) -> str:
    """``YYYY-MM-DDTHH:MM:SS[.f…]Z`` in UTC, checked and kept as sent."""
    if type(value) is str and _ZONED.fullmatch(value) is not None:
        return value
    text = _str_value(value)
    if len(text) < 20 or text[10:11] != "T" or not text.endswith("Z"):
        raise ValueError(f"{text!r} is not a UTC timestamp YYYY-MM-DDTHH:MM:SS[.ffffff]Z")
    datetime_text(text[:10] + " " + text[11:-1])
    return text


def _datetime_from_micros(micros: int) -> str:
    try:
        moment = _NAIVE_EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        raise ValueError(f"{micros} µs since the epoch is outside the years 1..9999") from None
    # ``YYYY-MM-DD HH:MM:SS`` and ``.ffffff`` when there is a fraction, whose trailing zeros go (``_fraction``).
    text = moment.isoformat(" ")
    return text.rstrip("0") if moment.microsecond else text


def _fraction(micros: int) -> str:
    """``.f…`` without trailing zeros (empty for 0): the column fsp is not in the message."""
    return ("." + f"{micros:06d}".rstrip("0")) if micros else ""


def integer_range(ft: FieldType, mysql_type: str | None) -> tuple[int, int]:
    """The values an integer column takes: its MySQL type's (YEAR's), else its Connect width's."""
    if mysql_type == "year":
        return YEAR_BOUNDS
    if mysql_type is not None and mysql_type in ("tinyint", "smallint", "mediumint", "int", "bigint"):
        return integer_bounds(mysql_type, ft.unsigned())
    bits = _CONNECT_INT_BITS[ft.connect_type]
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _integer_converter(ft: FieldType, mysql_type: str | None) -> Converter:
    low, high = integer_range(ft, mysql_type)
    wraps = mysql_type == "bigint" and ft.unsigned()

    def convert(value: object) -> str:
        number = value if type(value) is int else _int_value(value)
        if wraps and _INT64[0] <= number < 0:
            number += 1 << 64  # int64 two's complement of a uint64 (max → -1)
        if not low <= number <= high:
            raise ValueError(f"{number} is outside the range {low}..{high}")
        return str(number)

    return convert


def _year(value: object) -> str:
    # A NULL YEAR with a DEFAULT arrives as the default's text: codec.go writeDebeziumFieldValue
    # puts col.GetDefaultValue() (a string in TiDB) in place of nil and has no YEAR case.
    number = parse_integer(value, *YEAR_BOUNDS) if isinstance(value, str) else _int_value(value)
    if not YEAR_BOUNDS[0] <= number <= YEAR_BOUNDS[1]:
        raise ValueError(f"{number} is outside the range {YEAR_BOUNDS[0]}..{YEAR_BOUNDS[1]}")
    return str(number)


def _boolean(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    raise ValueError(f"expected true or false (BIT(1)), got {_describe(value)}")


def _bits(length: int | None) -> Converter:
    low, high = bit_bounds(length)

    def convert(value: object) -> str:
        text = base64_text(_str_value(value))
        number = int.from_bytes(binascii.a2b_base64(text), "little")
        if not low <= number <= high:
            raise ValueError(f"{text!r} (little-endian {number}) is outside the range {low}..{high}")
        return str(number)

    return convert


def _float(value: object) -> str:
    if isinstance(value, Number):
        return float_text(str(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"expected a JSON number, got {_describe(value)}")


def _decimal(value: object) -> str:
    """DECIMAL sent as a double: the double's ``repr``, written positionally (no exponent)."""
    if isinstance(value, bool) or not isinstance(value, (int, Number)):
        raise ValueError(f"expected a JSON number, got {_describe(value)}")
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{value!r} is not a finite number")
    text = repr(number)
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    return text


def _via_string(canonical: Callable[[str], str]) -> Converter:
    def convert(value: object) -> str:
        return canonical(_str_value(value))

    return convert


def _enum(members: tuple[str, ...] | None) -> Converter:
    def convert(value: object) -> str:
        text = value if type(value) is str else _str_value(value)
        if text and members is not None and text not in members:
            raise ValueError(f"{text!r} is not one of the ENUM members {members}")
        return text

    return convert


def _set(members: tuple[str, ...] | None) -> Converter:
    checkable = members is not None and not any("," in m for m in members)

    def convert(value: object) -> str:
        text = _str_value(value)
        if text and checkable and members is not None:
            unknown = [part for part in text.split(",") if part not in members]
            if unknown:
                raise ValueError(f"{unknown[0]!r} is not one of the SET members {members}")
        return text

    return convert


def _split_allowed(allowed: str | None, *, escaped: bool) -> tuple[str, ...] | None:
    """Members from ``parameters.allowed``; ENUM escapes commas in members as ``\\,``."""
    if allowed is None:
        return None
    if not escaped:
        return tuple(allowed.split(","))
    members, current, index = [], [], 0
    while index < len(allowed):
        char = allowed[index]
        if char == "\\" and allowed[index + 1 : index + 2] == ",":
            current.append(",")
            index += 2
            continue
        if char == ",":
            members.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    members.append("".join(current))
    return tuple(members)


def _unsupported(what: str) -> Converter:
    def convert(value: object) -> str:
        raise ValueError(
            f"Connect type {what!r} is not supported by the decoder; exclude the table from the "
            "pipeline (target.exclude) or ask for the type to be supported"
        )

    return convert


def _int_parameter(parameters: Mapping[str, str], key: str) -> int | None:
    text = parameters.get(key)
    return int(text) if text is not None and text.isascii() and text.isdigit() else None


def _int_value(value: object) -> int:
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError(f"expected a JSON integer, got {_describe(value)}")


def _str_value(value: object) -> str:
    if type(value) is str or (isinstance(value, str) and not isinstance(value, Number)):
        return value
    raise ValueError(f"expected a JSON string, got {_describe(value)}")


#: A string column's value is its text (``_str_value`` itself, one call less per value).
_string = _str_value


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Number):
        return f"the number {value}"
    if isinstance(value, int):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


describe_json = _describe

_LOGICAL: dict[str, Converter] = {
    "io.debezium.time.Date": date_from_days,
    "io.debezium.time.Timestamp": datetime_from_millis,
    "io.debezium.time.MicroTimestamp": datetime_from_micros,
    "io.debezium.time.ZonedTimestamp": zoned_timestamp,
    "io.debezium.time.MicroTime": time_from_micros,
    "io.debezium.time.Year": _year,
    "io.debezium.data.Json": _string,
    "io.debezium.data.TiDBVectorFloat32": _string,
}
