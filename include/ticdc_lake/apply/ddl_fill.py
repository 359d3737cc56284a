"""The value existing rows get when ADD COLUMN adds a column: the upstream default, as canonical text.

MySQL gives every existing row the column's DEFAULT; a NOT NULL column without DEFAULT gets the
type's implicit default (0, '', the first ENUM member, the zero date, ...). A time-function
default (``CURRENT_TIMESTAMP``) is the time of the ALTER itself, which is the DDL's commit TSO.
Values are canonical text (``docs/canonical-values.md``) so apply casts them like row values.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from ticdc_lake import tso
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.schema.type_mapping import is_binary_type

_INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "bit", "year"})
_NUMBERS = _INTEGERS | {"float", "double", "decimal", "numeric"}
_ZERO = {
    "date": "0000-00-00",
    "datetime": "0000-00-00 00:00:00",
    "timestamp": "0000-00-00 00:00:00",
    "time": "00:00:00",
    "json": "null",
}


def implicit_default(column: ColumnSchema) -> str:
    """MySQL's implicit default of a NOT NULL column without DEFAULT, as canonical text."""
    kind = column.mysql_type.lower()
    if kind in _NUMBERS:
        return "0"
    if kind == "enum":
        return column.elements[0] if column.elements else ""
    return _ZERO.get(kind, "")


def fill_value(column: ColumnSchema, commit_ts: int, server_time_zone: str = "UTC") -> tuple[str | None, str | None]:
    """(canonical text for existing rows or None for NULL, a note when the default cannot be computed)."""
    default = column.default
    if default is None:
        return (None, None) if column.nullable else (implicit_default(column), None)
    kind = column.mysql_type.lower()
    upper = default.upper()
    if upper.startswith(("CURRENT_TIMESTAMP", "NOW(", "LOCALTIMESTAMP", "LOCALTIME")):
        return _now(kind, commit_ts, server_time_zone, column), None
    if upper.startswith(("CURRENT_DATE", "CURDATE(")) and kind == "date":
        return _local(commit_ts, server_time_zone).strftime("%Y-%m-%d"), None
    if "(" in default and kind not in ("char", "varchar", "text", "tinytext", "mediumtext", "longtext", "json"):
        return None, f"the default {default!r} of column {column.name!r} is an expression; existing rows get NULL"
    if is_binary_type(kind):
        return base64.b64encode(default.encode("utf-8")).decode("ascii"), None
    if kind == "timestamp":
        return _timestamp_text(default, server_time_zone), None
    return default, None


def _local(commit_ts: int, zone: str) -> datetime:
    return tso.to_datetime(commit_ts).astimezone(ZoneInfo(zone))


def _now(kind: str, commit_ts: int, zone: str, column: ColumnSchema) -> str:
    moment = tso.to_datetime(commit_ts)
    digits = column.fsp or 0
    if kind == "timestamp":
        text = moment.strftime("%Y-%m-%dT%H:%M:%S")
        return text + (f".{moment.microsecond:06d}"[: digits + 1] if digits else "") + "Z"
    local = moment.astimezone(ZoneInfo(zone))
    if kind == "date":
        return local.strftime("%Y-%m-%d")
    text = local.strftime("%Y-%m-%d %H:%M:%S")
    return text + (f".{local.microsecond:06d}"[: digits + 1] if digits else "")


def _timestamp_text(default: str, zone: str) -> str:
    """A TIMESTAMP literal default (server local time) as the canonical UTC instant."""
    if default.startswith("0000-00-00"):
        return default
    whole, _, fraction = default.partition(".")
    try:
        local = datetime.strptime(whole, "%Y-%m-%d %H:%M:%S").replace(tzinfo=ZoneInfo(zone))
    except ValueError:
        return default
    text = local.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{fraction}" if fraction else "") + "Z"
