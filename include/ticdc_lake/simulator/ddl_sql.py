"""DDL statement text for the simulated upstream (what TiCDC puts in a DDL event's query)."""

from __future__ import annotations

from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.simulator.column_types import TEXT_TYPES


def quote(name: str) -> str:
    """A MySQL identifier in backquotes."""
    return "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def column_definition(column: ColumnSchema) -> str:
    parts = [quote(column.name), column.type_text()]
    if (column.mysql_type in TEXT_TYPES or column.mysql_type in ("enum", "set")) and column.charset:
        parts.append(f"CHARACTER SET {column.charset}")
        if column.collation:
            parts.append(f"COLLATE {column.collation}")
    parts.append("NULL" if column.nullable else "NOT NULL")
    if column.default is not None:
        parts.append(f"DEFAULT {_literal(column.default)}")
    return " ".join(parts)


def create_table_sql(schema: TableSchema) -> str:
    """``CREATE TABLE `db`.`t` (...)`` with the columns, primary key and secondary indexes."""
    lines = [column_definition(c) for c in schema.columns]
    for index in schema.indexes:
        columns = ",".join(quote(c) for c in index.columns)
        if index.primary:
            lines.append(f"PRIMARY KEY ({columns})")
        elif index.unique:
            lines.append(f"UNIQUE KEY {quote(index.name)} ({columns})")
        else:
            lines.append(f"KEY {quote(index.name)} ({columns})")
    return f"CREATE TABLE {quote(schema.database)}.{quote(schema.table)} ({', '.join(lines)})"


def create_database_sql(database: str) -> str:
    return f"CREATE DATABASE {quote(database)}"
