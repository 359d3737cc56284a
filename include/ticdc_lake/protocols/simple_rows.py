"""Row images of the Simple protocol, shared by its JSON and Avro encodings.

Both encodings refer a DML to its table schema by (database, table, schemaVersion); each builds
per-column converters once per schema version and applies them the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ticdc_lake.errors import DecodeError
from ticdc_lake.events import RowImage
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema

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
