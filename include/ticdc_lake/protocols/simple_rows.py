"""Row images of the Simple protocol, shared by its JSON and Avro encodings.

Both encodings refer a DML to its table schema by (database, table, schemaVersion); each builds
per-column converters once per schema version and applies them the same way. The JSON encoding's
converters (:func:`converter_for`) are here too: the Avro encoding checks its values with them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ticdc_lake.canonical import (
    INTEGER_BITS,
    MAX_UNSIGNED_BIGINT,
    YEAR_BOUNDS,
    base64_text,
    bit_bounds,
    date_text,
    datetime_text,
    decimal_text,
    enum_name,
    float_text,
    integer_bounds,
    integer_text,
    parse_integer,
    set_names,
    time_text,
    timestamp_utc_text,
    zone_info,
)
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import RowImage
from ticdc_lake.protocols.simple_schema import describe_json
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.schema.type_mapping import is_binary_type

#: Turns one non-null value into its canonical text; raises ValueError with the reason.
Converter = Callable[[object], str]
Converters = dict[str, Converter]
ConverterFactory = Callable[[ColumnSchema, str], Converter]

CACHE_LIMIT = 4096


class ConverterCache:
    """Converters by column name, built once per (database, table, version) and schema."""

    def __init__(self, factory: ConverterFactory) -> None:
        self._factory = factory
        self._entries: dict[tuple[str, str, int], tuple[TableSchema, Converters]] = {}

    def get(self, schema: TableSchema, database: str, table: str, version: int, zone: str) -> Converters:
        key = (database, table, version)
        cached = self._entries.get(key)
        if cached is not None and (cached[0] is schema or cached[0] == schema):
            return cached[1]
        if len(self._entries) >= CACHE_LIMIT:
            self._entries.clear()
        converters = {col.name: self._factory(col, zone) for col in schema.columns}
        self._entries[key] = (schema, converters)
        return converters


def row_image(
    protocol: str, row: dict[str, Any], field: str, converters: Converters, schema: TableSchema, where: str
) -> RowImage:
    """The canonical image of one ``data`` or ``old`` row; DecodeError naming the column and table."""
    image: RowImage = {}
    for name, value in row.items():
        convert = converters.get(name)
        if convert is None:
            raise DecodeError(
                protocol,
                f"column {name!r} in '{field}' is not in the schema of table {where}; the row and the "
                "table schema announced for its schemaVersion disagree (check this table's DDL and "
                "BOOTSTRAP messages)",
            )
        if value is None:
            image[name] = None
            continue
        try:
            image[name] = convert(value)
        except ValueError as exc:
            column = schema.column(name)
            type_text = column.type_text() if column is not None else "?"
            raise DecodeError(protocol, f"column {name!r} ({type_text}) of table {where} in '{field}': {exc}") from None
    return image


#: TIMESTAMP locations that mean "the TiCDC server's zone": read as ``codec.server_time_zone``.
_SERVER_ZONE_NAMES = frozenset({"", "Local"})
_TEXT_TYPES = frozenset(
    {"char", "varchar", "var_string", "tinytext", "text", "mediumtext", "longtext", "json", "vector"}
)


def converter_for(column: ColumnSchema, server_time_zone: str) -> Converter:
    """The function that makes one Simple JSON value of ``column`` canonical.

    ``server_time_zone`` reads TIMESTAMP values whose location is ``Local`` or empty.
    """
    mysql_type = column.mysql_type
    if mysql_type in INTEGER_BITS:
        return _integer(*integer_bounds(mysql_type, column.unsigned))
    if mysql_type == "year":
        return _integer(*YEAR_BOUNDS)
    if mysql_type == "bit":
        return _integer(*bit_bounds(column.length))
    if is_binary_type(mysql_type):
        return _via(base64_text)
    if mysql_type in _TEXT_TYPES:
        return _text
    simple = _SIMPLE.get(mysql_type)
    if simple is not None:
        return _via(simple)
    if mysql_type == "timestamp":
        return _timestamp(server_time_zone)
    if mysql_type == "enum":
        return _members(enum_name, column.elements)
    if mysql_type == "set":
        return _members(set_names, column.elements)
    return _unsupported(mysql_type)


_SIMPLE: dict[str, Callable[[str], str]] = {
    "float": float_text,
    "double": float_text,
    "decimal": decimal_text,
    "numeric": decimal_text,
    "date": date_text,
    "datetime": datetime_text,
    "time": time_text,
}


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    raise _not_a_string(value)


def _not_a_string(value: object) -> ValueError:
    return ValueError(f"expected a JSON string, got {describe_json(value)}")


def _via(canonical: Callable[[str], str]) -> Converter:
    def convert(value: object) -> str:
        if isinstance(value, str):
            return canonical(value)
        raise _not_a_string(value)

    return convert


def _integer(low: int, high: int) -> Converter:
    def convert(value: object) -> str:
        if isinstance(value, str):
            return integer_text(value, low, high)
        raise _not_a_string(value)

    return convert


def _members(name: Callable[[int, tuple[str, ...] | None], str], elements: tuple[str, ...] | None) -> Converter:
    def convert(value: object) -> str:
        return name(parse_integer(_text(value), 0, MAX_UNSIGNED_BIGINT), elements)

    return convert


def _timestamp(server_time_zone: str) -> Converter:
    def convert(value: object) -> str:
        if not isinstance(value, dict):
            raise ValueError(f'expected a JSON object {{"location", "value"}}, got {describe_json(value)}')
        location, local = value.get("location"), value.get("value")
        if not isinstance(local, str):
            raise ValueError(f"'value' must be a string, got {describe_json(local)}")
        if not isinstance(location, str):
            raise ValueError(f"'location' must be a string, got {describe_json(location)}")
        zone = zone_info(server_time_zone if location in _SERVER_ZONE_NAMES else location)
        return timestamp_utc_text(local, zone)

    return convert


def _unsupported(mysql_type: str) -> Converter:
    def convert(value: object) -> str:
        raise ValueError(
            f"MySQL type {mysql_type!r} is not supported by the decoder; exclude the table from the "
            "pipeline (target.exclude) or ask for the type to be supported"
        )

    return convert
