"""The Simple protocol's ``tableSchema`` JSON object ↔ :class:`TableSchema`.

Simple DDL and BOOTSTRAP messages carry ``tableSchema`` (and ``preTableSchema``)::

    {"schema": <database>, "table", "tableID", "version",
     "columns": [{"name", "dataType": {"mysqlType", "charset", "collate", "length"?, "decimal"?,
                  "elements"?, "unsigned"?, "zerofill"?}, "nullable", "default"}],
     "indexes": [{"name", "unique", "primary", "nullable", "columns": [names]}]}

``schema`` is the database name and ``version`` the schema version DML messages refer to. In
``dataType``, ``decimal`` is the scale of DECIMAL and the fractional-second precision of
DATETIME/TIMESTAMP/TIME; the encoder omits it (and ``length``) when 0. ``zerofill`` only
affects display and is not kept.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventKind, SourcePosition
from ticdc_lake.protocols.ddl_text import schema_ddl_database
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema

_FSP_TYPES = frozenset({"datetime", "timestamp", "time"})
_DECIMAL_TYPES = frozenset({"decimal", "numeric"})
_MAX_UINT64 = (1 << 64) - 1
#: Generous upper bounds: a LONGTEXT is 2^32 - 1 long; TiDB fsp is at most 6 and scale 30.
_MAX_LENGTH = 1 << 32
_MAX_DECIMAL = 1 << 8


class _Reader:
    """Typed access to one JSON object with error messages that name the field path."""

    def __init__(self, protocol: str, where: str) -> None:
        self.protocol = protocol
        self.where = where

    def fail(self, path: str, problem: str) -> DecodeError:
        return DecodeError(self.protocol, f"{path} {problem}{self.where}")

    def obj(self, value: object, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"must be a JSON object, got {describe_json(value)}")
        return value

    def field(self, parent: dict[str, Any], key: str, path: str) -> object:
        if key not in parent:
            raise self.fail(f"{path}.{key}", "is missing")
        return parent[key]

    def string(self, parent: dict[str, Any], key: str, path: str) -> str:
        value = self.field(parent, key, path)
        if not isinstance(value, str):
            raise self.fail(f"{path}.{key}", f"must be a string, got {describe_json(value)}")
        return value

    def optional_string(self, parent: dict[str, Any], key: str, path: str) -> str | None:
        """A string that may be absent or null; the empty string also reads as None."""
        if parent.get(key) is None:
            return None
        return self.string(parent, key, path) or None

    def boolean(self, parent: dict[str, Any], key: str, path: str, *, default: bool | None = None) -> bool:
        """A required boolean, or an optional one when ``default`` is given."""
        if key not in parent and default is not None:
            return default
        value = self.field(parent, key, path)
        if not isinstance(value, bool):
            raise self.fail(f"{path}.{key}", f"must be true or false, got {describe_json(value)}")
        return value

    def integer(self, parent: dict[str, Any], key: str, path: str, *, low: int, high: int) -> int:
        value = self.field(parent, key, path)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise self.fail(f"{path}.{key}", f"must be an integer in {low}..{high}, got {describe_json(value)}")
        return value

    def optional_integer(self, parent: dict[str, Any], key: str, path: str, *, low: int, high: int) -> int | None:
        if key not in parent:
            return None
        return self.integer(parent, key, path, low=low, high=high)

    def names(self, parent: dict[str, Any], key: str, path: str, *, required: bool = False) -> tuple[str, ...] | None:
        value = self.field(parent, key, path) if required else parent.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(f"{path}.{key}", f"must be an array of strings, got {describe_json(value)}")
        return tuple(value)


def describe_json(value: object) -> str:
    """A short description of a parsed JSON value for error messages: ``string "x"``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal | float):
        return f"number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "…"
        return 'string "' + shown + '"'
    if isinstance(value, list):
        return "an array"
    return "an object"


def table_schema_from_simple(
    value: object, *, source: str, field: str = "tableSchema", protocol: str = "simple-json"
) -> TableSchema:
    """Parse a Simple ``tableSchema`` object (already loaded from JSON) into a TableSchema.

    ``source`` is recorded on the result (``simple-bootstrap`` or ``simple-ddl``); ``field``
    names the object in error messages. Raises :class:`DecodeError` naming the field path.
    """
    reader = _Reader(protocol, "")
    data = reader.obj(value, field)
    database = reader.string(data, "schema", field)
    table = reader.string(data, "table", field)
    reader.where = f" (table {database}.{table})"
    table_id = reader.optional_integer(data, "tableID", field, low=0, high=_MAX_UINT64)
    version = reader.integer(data, "version", field, low=0, high=_MAX_UINT64)
    raw_columns = reader.field(data, "columns", field)
    if not isinstance(raw_columns, list):
        raise reader.fail(f"{field}.columns", f"must be an array, got {describe_json(raw_columns)}")
    columns = tuple(_column(reader, item, f"{field}.columns[{position}]") for position, item in enumerate(raw_columns))
    known = {column.name for column in columns}
    if len(known) != len(columns):
        raise reader.fail(f"{field}.columns", "names a column twice")
    raw_indexes = data.get("indexes")
    if raw_indexes is None:
        raw_indexes = []
    if not isinstance(raw_indexes, list):
        raise reader.fail(f"{field}.indexes", f"must be an array, got {describe_json(raw_indexes)}")
    indexes = tuple(
        _index(reader, item, f"{field}.indexes[{position}]", known) for position, item in enumerate(raw_indexes)
    )
    return TableSchema(
        database=database,
        table=table,
        columns=columns,
        indexes=indexes,
        table_id=table_id,
        version=version,
        source=source,
    )


def _column(reader: _Reader, value: object, path: str) -> ColumnSchema:
    data = reader.obj(value, path)
    name = reader.string(data, "name", path)
    type_path = f"{path}.dataType"
    data_type = reader.obj(reader.field(data, "dataType", path), type_path)
    mysql_type = reader.string(data_type, "mysqlType", type_path).lower()
    length = reader.optional_integer(data_type, "length", type_path, low=-1, high=_MAX_LENGTH)
    decimal = reader.optional_integer(data_type, "decimal", type_path, low=-1, high=_MAX_DECIMAL) or 0
    scale = fsp = None
    if mysql_type in _DECIMAL_TYPES:
        scale = max(decimal, 0)
    elif mysql_type in _FSP_TYPES:
        fsp = max(decimal, 0)
    return ColumnSchema(
        name=name,
        mysql_type=mysql_type,
        length=length if length is not None and length > 0 else None,
        scale=scale,
        fsp=fsp,
        unsigned=reader.boolean(data_type, "unsigned", type_path, default=False),
        nullable=reader.boolean(data, "nullable", path),
        default=_default(reader, data, path),
        charset=reader.optional_string(data_type, "charset", type_path),
        collation=reader.optional_string(data_type, "collate", type_path),
        elements=reader.names(data_type, "elements", type_path),
    )


def _default(reader: _Reader, data: dict[str, Any], path: str) -> str | None:
    """The column default as text; BIT defaults arrive as JSON numbers."""
    value = data.get("default")
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | Decimal) and not isinstance(value, bool):
        return str(value)
    raise reader.fail(f"{path}.default", f"must be a string, a number or null, got {describe_json(value)}")


def _index(reader: _Reader, value: object, path: str, known: set[str]) -> IndexSchema:
    data = reader.obj(value, path)
    name = reader.string(data, "name", path)
    columns = reader.names(data, "columns", path, required=True) or ()
    for column in columns:
        if column not in known:
            raise reader.fail(f"{path}.columns", f"names column {column!r}, which the table does not have")
    return IndexSchema(
        name=name,
        columns=columns,
        primary=reader.boolean(data, "primary", path),
        unique=reader.boolean(data, "unique", path),
        nullable=reader.boolean(data, "nullable", path),
    )


def table_schema_to_simple(schema: TableSchema) -> dict[str, Any]:
    """The Simple ``tableSchema`` object for ``schema`` (the inverse of :func:`table_schema_from_simple`).

    Omits ``length``/``decimal`` when 0 or unknown and ``unsigned`` when false, as TiCDC does.
    Defaults are written as strings (TiCDC writes BIT defaults as numbers).
    """
    return {
        "schema": schema.database,
        "table": schema.table,
        "tableID": schema.table_id or 0,
        "version": schema.version or 0,
        "columns": [_column_to_simple(column) for column in schema.columns],
        "indexes": [
            {
                "name": index.name,
                "unique": index.unique,
                "primary": index.primary,
                "nullable": index.nullable,
                "columns": list(index.columns),
            }
            for index in schema.indexes
        ],
    }


def _column_to_simple(column: ColumnSchema) -> dict[str, Any]:
    data_type: dict[str, Any] = {
        "mysqlType": column.mysql_type,
        "charset": column.charset or "",
        "collate": column.collation or "",
    }
    if column.length:
        data_type["length"] = column.length
    decimal = column.scale if column.mysql_type in _DECIMAL_TYPES else column.fsp
    if decimal:
        data_type["decimal"] = decimal
    if column.elements is not None:
        data_type["elements"] = list(column.elements)
    if column.unsigned:
        data_type["unsigned"] = True
    return {
        "name": column.name,
        "dataType": data_type,
        "nullable": column.nullable,
        "default": column.default,
    }


def ddl_event(
    kind: str,
    query: str | None,
    commit_ts: int,
    after: TableSchema | None,
    before: TableSchema | None,
    position: SourcePosition,
) -> ChangeEvent:
    """A Simple DDL message (JSON or Avro) as a DDL event.

    Names come from the table schemas; schema-level DDL carries none (TiCDC's table info has no
    ``TableInfo`` for it), so the database is read from the statement. For ERASE TiCDC sends the
    dropped table as ``tableSchema`` (the DROP TABLE job's table info) next to ``preTableSchema``:
    the event has no table after it, so that schema becomes ``pre_table_schema`` when no
    ``preTableSchema`` came, and ``table_schema`` is None.
    """
    if kind == "ERASE":
        after, before = None, before or after
    named = after or before
    database = named.database if named else (schema_ddl_database(query) if query else None)
    return ChangeEvent(
        kind=EventKind.DDL,
        position=position,
        commit_ts=commit_ts,
        database=database,
        table=named.table if named else None,
        table_id=named.table_id if named else None,
        schema_version=after.version if after else None,
        ddl_type=kind,
        ddl_query=query,
        table_schema=after,
        pre_table_schema=before,
    )
