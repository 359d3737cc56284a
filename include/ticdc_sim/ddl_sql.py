"""DDL statement text for the simulated upstream (what TiCDC puts in a DDL event's query)."""

from __future__ import annotations

from collections.abc import Sequence

from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim.column_types import TEXT_TYPES
from ticdc_sim.ddl_specs import (
    AddColumnSpec,
    AddIndexSpec,
    AlterSpec,
    DropColumnSpec,
    DropIndexSpec,
    ModifyColumnSpec,
    RenameColumnSpec,
    complete_column,
)


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


def table_name(database: str, table: str) -> str:
    return f"{quote(database)}.{quote(table)}"


def _columns(names: Sequence[str]) -> str:
    return "(" + ",".join(quote(c) for c in names) + ")"


def alter_spec_sql(spec: AlterSpec) -> str:
    """One ALTER TABLE specification (``ADD COLUMN ...``, ``DROP INDEX ...``)."""
    if isinstance(spec, AddColumnSpec):
        text = f"ADD COLUMN {column_definition(complete_column(spec.column))}"
        if spec.first:
            return text + " FIRST"
        return text + (f" AFTER {quote(spec.after)}" if spec.after is not None else "")
    if isinstance(spec, DropColumnSpec):
        return f"DROP COLUMN {quote(spec.name)}"
    if isinstance(spec, RenameColumnSpec):
        return f"RENAME COLUMN {quote(spec.old)} TO {quote(spec.new)}"
    if isinstance(spec, ModifyColumnSpec):
        return f"MODIFY COLUMN {column_definition(complete_column(spec.column))}"
    if isinstance(spec, AddIndexSpec):
        if spec.primary:
            return f"ADD PRIMARY KEY {_columns(spec.columns)}"
        return f"ADD {'UNIQUE ' if spec.unique else ''}INDEX {quote(spec.name)} {_columns(spec.columns)}"
    if isinstance(spec, DropIndexSpec):
        return f"DROP INDEX {quote(spec.name)}"
    return "DROP PRIMARY KEY"


def alter_table_sql(database: str, table: str, specs: Sequence[AlterSpec]) -> str:
    return f"ALTER TABLE {table_name(database, table)} " + ", ".join(alter_spec_sql(s) for s in specs)


def create_index_sql(database: str, table: str, name: str, columns: Sequence[str], unique: bool) -> str:
    kind = "UNIQUE INDEX" if unique else "INDEX"
    return f"CREATE {kind} {quote(name)} ON {table_name(database, table)} {_columns(columns)}"


def drop_index_sql(database: str, table: str, name: str) -> str:
    return f"DROP INDEX {quote(name)} ON {table_name(database, table)}"


def rename_table_sql(renames: Sequence[tuple[str, str, str, str]]) -> str:
    """``RENAME TABLE a TO b[, c TO d]`` for ``(old_db, old_table, new_db, new_table)`` tuples."""
    pairs = [f"{table_name(a, b)} TO {table_name(c, d)}" for a, b, c, d in renames]
    return "RENAME TABLE " + ", ".join(pairs)


def truncate_table_sql(database: str, table: str) -> str:
    return f"TRUNCATE TABLE {table_name(database, table)}"


def drop_table_sql(database: str, table: str) -> str:
    return f"DROP TABLE {table_name(database, table)}"


def drop_database_sql(database: str) -> str:
    return f"DROP DATABASE {quote(database)}"
