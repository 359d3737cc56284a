"""The canonical row images a decoder must produce for simulator model values, per protocol.

Written from ``docs/canonical-values.md`` and the loss tables of ``docs/protocols.md``, independently
of every encoder and decoder: floats are printed with numpy's Dragon4 shortest-digit formatting,
not with the simulator's Go-format helpers, and nothing here imports protocol code.

:func:`canonical_text` is the lossless canonical text of a model value; :func:`expected_text`
applies what each protocol loses:

* ``simple-json``, ``simple-avro``: nothing;
* ``canal-json`` (bare ``mysqlType``): ENUM/SET arrive as the 1-based index / bitmask number;
* ``canal-json-cc`` (``content-compatible``): nothing (the type lists the members);
* ``open``: ENUM/SET as numbers; FLOAT/DOUBLE as Go ``encoding/json`` prints them (``1e-7``
  below 1e-6 and from 1e21) and ``-0`` read back as ``0``;
* ``debezium`` (with the TiDB extension): DECIMAL as the ``repr`` of the float64, positional;
  FLOAT/DOUBLE as jsoniter prints them (``1e-07``) and ``-0`` as ``0``; DATE/DATETIME years below
  100 shifted (+2000 below 70, else +1900); DATETIME/TIME fractions without trailing zeros; NULL
  replaced by the column default.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import numpy as np

from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema

Value = int | Decimal | float | str | bytes | date | datetime | None

INTEGER_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})
BINARY_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
PROTOCOLS = ("simple-json", "simple-avro", "debezium", "canal-json", "canal-json-cc", "open")


def _np_float(value: float, bits: int) -> np.floating:
    return np.float32(value) if bits == 32 else np.float64(value)


def float_positional(value: float, bits: int) -> str:
    """Shortest round-trip digits in fixed notation (Go ``FormatFloat(v, 'f', -1, bits)``)."""
    return str(np.format_float_positional(_np_float(value, bits), unique=True, trim="-"))


def float_scientific(value: float, bits: int) -> str:
    """Shortest round-trip digits as ``d.ddde±XX`` (Go ``FormatFloat(v, 'e', -1, bits)``)."""
    return str(np.format_float_scientific(_np_float(value, bits), unique=True, trim="-", exp_digits=2))


def _go_json_number(value: float, bits: int, shorten_exponent: bool) -> str:
    magnitude = abs(_np_float(value, bits))
    low, high = _np_float(1e-6, bits), _np_float(1e21, bits)
    if magnitude == 0 or low <= magnitude < high:
        text = float_positional(value, bits)
    else:
        text = float_scientific(value, bits)
        if shorten_exponent and "e-0" in text:
            text = text.replace("e-0", "e-")
    return "0" if text == "-0" else text  # JSON -0 is read back as the integer 0


def canonical_text(column: ColumnSchema, value: Value) -> str | None:
    """The lossless canonical text of a model value (``docs/canonical-values.md``)."""
    if value is None:
        return None
    tp = column.mysql_type
    if isinstance(value, bool):
        raise TypeError(f"{column.name}: booleans are not model values")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_positional(value, 32 if tp == "float" else 64)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime):
        fraction = "." + f"{value.microsecond:06d}"[: column.fsp] if column.fsp else ""
        if tp == "timestamp":
            utc = value.astimezone(UTC)
            return f"{_date(utc.date())}T{utc:%H:%M:%S}{fraction}Z"
        return f"{_date(value.date())} {value:%H:%M:%S}{fraction}"
    if isinstance(value, date):
        return _date(value)
    return value  # CHAR/VARCHAR/TEXT, JSON, TIME, ENUM and SET names


def _date(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def expected_text(protocol: str, column: ColumnSchema, value: Value) -> str | None:
    """What ``protocol``'s decoder must return for ``value`` (see the module docstring)."""
    tp = column.mysql_type
    if protocol in ("simple-json", "simple-avro", "canal-json-cc"):
        return canonical_text(column, value)
    if protocol in ("canal-json", "open") and tp in ("enum", "set") and isinstance(value, str):
        return str(_enum_or_set_number(column, value))
    if protocol == "open" and isinstance(value, float):
        return _go_json_number(value, 32 if tp == "float" else 64, shorten_exponent=True)
    if protocol in ("canal-json", "open"):
        return canonical_text(column, value)
    if protocol != "debezium":
        raise ValueError(f"unknown protocol {protocol!r}")
    return _debezium_text(column, value)


def _enum_or_set_number(column: ColumnSchema, value: str) -> int:
    elements = list(column.elements or ())
    if column.mysql_type == "enum":
        return elements.index(value) + 1
    members = set(value.split(",")) if value else set()
    return sum(1 << i for i, name in enumerate(elements) if name in members)


def _debezium_text(column: ColumnSchema, value: Value) -> str | None:
    tp = column.mysql_type
    if value is None:
        if column.default is None:
            return None
        return _debezium_text(column, _default_value(column, column.default))
    if isinstance(value, float):
        return _go_json_number(value, 32 if tp == "float" else 64, shorten_exponent=False)
    if isinstance(value, Decimal):
        text = repr(float(value))
        return format(Decimal(text), "f") if "e" in text else text
    if isinstance(value, datetime) and tp == "datetime":
        shifted = _shift_year(value)
        text = f"{_date(shifted.date())} {shifted:%H:%M:%S}"
        return text + _trimmed_fraction(shifted.microsecond)
    if isinstance(value, date) and not isinstance(value, datetime):
        return _date(_shift_year(datetime(value.year, value.month, value.day)).date())
    if tp == "time" and isinstance(value, str):
        clock, _, fraction = value.partition(".")
        return clock + _trimmed_fraction(int((fraction + "000000")[:6]) if fraction else 0)
    return canonical_text(column, value)


def _trimmed_fraction(micros: int) -> str:
    return "." + f"{micros:06d}".rstrip("0") if micros else ""


def _shift_year(moment: datetime) -> datetime:
    """Debezium's two-digit-year rule: years < 70 + 2000, < 100 + 1900 (Feb 29 → Mar 1 if needed)."""
    if moment.year >= 100:
        return moment
    year = moment.year + (2000 if moment.year < 70 else 1900)
    try:
        return moment.replace(year=year)
    except ValueError:
        return moment.replace(year=year, month=3, day=1)


def _default_value(column: ColumnSchema, text: str) -> Value:
    """The model value of a column DEFAULT, for the types the round-trip tests give defaults."""
    tp = column.mysql_type
    if tp in INTEGER_TYPES:
        return int(text)
    if tp == "decimal":
        return Decimal(text)
    if tp == "date":
        return date.fromisoformat(text)
    if tp in ("varchar", "char", "text", "enum", "set"):
        return text
    raise ValueError(f"{column.name}: no round-trip expectation for a {tp} default")


def expected_image(protocol: str, schema: TableSchema, row: Mapping[str, Value]) -> dict[str, str | None]:
    """The decoded row image ``protocol`` must give for the model row ``row``."""
    image: dict[str, str | None] = {}
    for name, value in row.items():
        column = schema.column(name)
        assert column is not None, name
        image[name] = expected_text(protocol, column, value)
    return image


def time_text(micros: int, fsp: int) -> str:
    """TiDB's TIME text of a signed µs count with ``fsp`` fraction digits (hours at least two digits)."""
    sign = "-" if micros < 0 else ""
    whole = timedelta(microseconds=abs(micros))
    seconds = whole.days * 86400 + whole.seconds
    text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return text + ("." + f"{whole.microseconds:06d}"[:fsp] if fsp else "")
