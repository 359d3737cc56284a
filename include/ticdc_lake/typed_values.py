"""Canonical text as the typed value of an Iceberg type: the specification of a typed row image.

A row image is ``column -> canonical text`` (``docs/canonical-values.md``); apply turns each text
into the target column's type with Spark's ``try_cast`` (``apply.merge_sql.typed_value``).
:func:`typed_value` is the same conversion one value at a time in plain Python, and what the
vectorized conversion (``spark.arrow_decode.typed_columns``) must agree with: dates and times
become day and microsecond counts of the proleptic Gregorian calendar, so year 0 and other values
Python's ``datetime`` cannot hold convert as Spark converts them, and a text the type cannot hold
is :data:`UNREPRESENTABLE` (apply counts it), never a changed value.
"""

from __future__ import annotations

import base64
import binascii
import re
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation

#: Returned by :func:`typed_value` for a text the Iceberg type cannot hold (apply counts it).
UNREPRESENTABLE = object()

_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,6}))?"
_DATETIME = re.compile(rf"([0-9]{{4}})-([0-9]{{2}})-([0-9]{{2}}) {_TIME}")
_TIMESTAMP = re.compile(rf"([0-9]{{4}})-([0-9]{{2}})-([0-9]{{2}})T{_TIME}Z")
_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL_TYPE = re.compile(r"decimal\(([0-9]+),([0-9]+)\)")
_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
#: Enough digits for any DECIMAL text (MySQL: 65), so that quantize never rounds twice or fails.
_DECIMALS = Context(prec=100)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def decimal_type(iceberg_type: str) -> tuple[int, int] | None:
    """(precision, scale) of an Iceberg ``decimal(P,S)`` type string, None for any other type."""
    found = _DECIMAL_TYPE.fullmatch(iceberg_type)
    return (int(found[1]), int(found[2])) if found else None


def epoch_days(year: int, month: int, day: int) -> int | None:
    """Days from 1970-01-01 of a proleptic Gregorian date, None for a date not in the calendar."""
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= month <= 12 or not 1 <= day <= (29 if month == 2 and leap else _MONTH_DAYS[month - 1]):
        return None
    y = year - (month <= 2)  # days_from_civil (H. Hinnant), exact for every year
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _micros(found: re.Match[str]) -> int | None:
    days = epoch_days(int(found[1]), int(found[2]), int(found[3]))
    hour, minute, second = int(found[4]), int(found[5]), int(found[6])
    if days is None or hour > 23 or minute > 59 or second > 59:
        return None
    fraction = int((found[7] or "").ljust(6, "0"))
    return ((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + fraction


def typed_value(text: str, iceberg_type: str) -> object:
    """The value of canonical ``text`` in ``iceberg_type`` as a carrier stores it (int, Decimal,
    float, str, bytes; dates as epoch days, timestamps as epoch microseconds), or
    :data:`UNREPRESENTABLE` where Spark's ``try_cast`` of the text gives NULL.

    Specified for canonical texts (``docs/canonical-values.md``), which is all a decoder hands
    over; a text outside that form that Python cannot read as the type is :data:`UNREPRESENTABLE`.
    """
    if iceberg_type == "string":
        return text
    if iceberg_type in _INT_RANGE:
        low, high = _INT_RANGE[iceberg_type]
        number = int(text) if _INTEGER.fullmatch(text) else None
        return number if number is not None and low <= number <= high else UNREPRESENTABLE
    if iceberg_type in ("float", "double"):
        try:
            return float(text)
        except ValueError:
            return UNREPRESENTABLE
    if iceberg_type == "binary":
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return UNREPRESENTABLE
    if iceberg_type == "date":
        found = _DATE.fullmatch(text)
        days = epoch_days(int(found[1]), int(found[2]), int(found[3])) if found else None
        return UNREPRESENTABLE if days is None else days
    if iceberg_type in ("timestamp", "timestamptz"):
        found = (_DATETIME if iceberg_type == "timestamp" else _TIMESTAMP).fullmatch(text)
        micros = _micros(found) if found else None
        return UNREPRESENTABLE if micros is None else micros
    decimal = decimal_type(iceberg_type)
    if decimal is None:
        raise ValueError(f"no typed value for Iceberg type {iceberg_type!r}")
    precision, scale = decimal
    try:  # Spark's cast rounds half up to the scale, then checks the precision
        value = Decimal(text).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP, context=_DECIMALS)
    except InvalidOperation:
        return UNREPRESENTABLE
    return value if len(value.as_tuple().digits) <= precision or value == 0 else UNREPRESENTABLE
