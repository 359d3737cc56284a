"""The Iceberg changes a DDL plan is made of (``ticdc_lake.apply.ddl_plan``), and their ledger text."""

from __future__ import annotations

from dataclasses import dataclass

from ticdc_lake.schema.table_schema import TableSchema


@dataclass(frozen=True, slots=True)
class CreateTable:
    schema: TableSchema


@dataclass(frozen=True, slots=True)
class AddIcebergColumn:
    name: str
    type: str
    first: bool = False
    after: str | None = None
    #: Canonical text every existing row gets; None leaves them NULL.
    fill: str | None = None


@dataclass(frozen=True, slots=True)
class DropIcebergColumn:
    name: str


@dataclass(frozen=True, slots=True)
class RenameIcebergColumn:
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class WidenColumn:
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class ColumnToString:
    """``keep_as_string``: existing values become their text, later values are written as text."""

    name: str


@dataclass(frozen=True, slots=True)
class MoveColumn:
    name: str
    first: bool = False
    after: str | None = None


@dataclass(frozen=True, slots=True)
class SetIdentifierFields:
    """Empty ``columns``: no identifier fields."""

    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RenameIcebergTable:
    old_database: str
    old_table: str
    database: str
    table: str


@dataclass(frozen=True, slots=True)
class TruncateTable:
    pass


@dataclass(frozen=True, slots=True)
class DropIcebergTable:
    #: True (``on_drop_table: keep``): the table is renamed to :func:`dropped_name` and kept.
    keep: bool


@dataclass(frozen=True, slots=True)
class CreateNamespace:
    database: str


@dataclass(frozen=True, slots=True)
class DropNamespace:
    """DROP DATABASE drops its tables too: ``keep_tables`` (on_drop_table: keep) keeps each one,
    marked dropped; otherwise they are purged and the namespace is dropped."""

    database: str
    keep_tables: bool = True


Change = (
    CreateTable
    | AddIcebergColumn
    | DropIcebergColumn
    | RenameIcebergColumn
    | WidenColumn
    | ColumnToString
    | MoveColumn
    | SetIdentifierFields
    | RenameIcebergTable
    | TruncateTable
    | DropIcebergTable
    | CreateNamespace
    | DropNamespace
)


def describe_change(change: Change) -> str:
    """A short text of one change for the run ledger: ``ADD COLUMN c``."""
    match change:
        case CreateTable():
            return "CREATE TABLE"
        case AddIcebergColumn(name=name, fill=fill):
            return f"ADD COLUMN {name}" + (f" (existing rows: {fill!r})" if fill is not None else "")
        case DropIcebergColumn(name=name):
            return f"DROP COLUMN {name}"
        case RenameIcebergColumn(old=old, new=new):
            return f"RENAME COLUMN {old} TO {new}"
        case WidenColumn(name=name, type=kind):
            return f"COLUMN {name} TYPE {kind}"
        case ColumnToString(name=name):
            return f"COLUMN {name} KEPT AS STRING"
        case MoveColumn(name=name):
            return f"MOVE COLUMN {name}"
        case SetIdentifierFields(columns=columns):
            return f"IDENTIFIER FIELDS ({', '.join(columns)})"
        case RenameIcebergTable(database=database, table=table):
            return f"RENAME TABLE TO {database}.{table}"
        case TruncateTable():
            return "TRUNCATE"
        case DropIcebergTable(keep=keep):
            return "DROP TABLE (kept)" if keep else "DROP TABLE"
        case CreateNamespace(database=database):
            return f"CREATE NAMESPACE for {database}"
        case DropNamespace(database=database):
            return f"DROP NAMESPACE for {database}"
    return str(change)
