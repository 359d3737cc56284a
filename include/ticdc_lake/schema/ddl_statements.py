"""What :func:`ticdc_lake.schema.ddl_parser.parse_ddl` returns: one dataclass per DDL statement.

Every statement keeps its own SQL text (``sql``). Names are as written, unquoted; a table name
without a database takes the caller's default database, ``None`` when there is none.

ALTER TABLE specs describe changes, not results: a column in :class:`AddColumn` or
:class:`ModifyColumn` without an explicit character set has ``charset=None`` (the table's default,
which :func:`ticdc_lake.schema.ddl_alter.apply_alter` fills in), and an index added without a name
has ``name=""`` (named by ``apply_alter`` the way TiDB does).
"""

from __future__ import annotations

from dataclasses import dataclass

from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema


@dataclass(frozen=True, slots=True)
class TableName:
    database: str | None
    table: str

    def __str__(self) -> str:
        return self.table if self.database is None else f"{self.database}.{self.table}"


@dataclass(frozen=True, slots=True)
class ColumnPosition:
    """``FIRST`` (``first=True``) or ``AFTER <after>``."""

    first: bool = False
    after: str | None = None


# ---------------------------------------------------------------- ALTER TABLE specs


@dataclass(frozen=True, slots=True)
class AddColumn:
    column: ColumnSchema
    position: ColumnPosition | None = None
    #: Keys declared on the column itself (``ADD COLUMN c INT UNIQUE``).
    indexes: tuple[IndexSchema, ...] = ()
    #: ``VIRTUAL`` or ``STORED`` for a generated column.
    generated: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class ModifyColumn:
    """``MODIFY COLUMN`` (``old_name == column.name``) or ``CHANGE COLUMN`` (maybe a rename)."""

    old_name: str
    column: ColumnSchema
    position: ColumnPosition | None = None
    indexes: tuple[IndexSchema, ...] = ()
    generated: str | None = None


@dataclass(frozen=True, slots=True)
class RenameColumn:
    old_name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class SetColumnDefault:
    """``ALTER COLUMN c SET DEFAULT x`` or, with ``default=None``, ``DROP DEFAULT``.

    A bit or hex literal (``b'101'``, ``x'41'``) means a number for a BIT or numeric column
    (``numeric_default``) and text for any other column (``default``).
    """

    name: str
    default: str | None
    numeric_default: str | None = None


@dataclass(frozen=True, slots=True)
class AddIndex:
    """A primary key, unique key or plain index; ``name=""`` when the DDL gives none."""

    index: IndexSchema
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropIndex:
    name: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropPrimaryKey:
    pass


@dataclass(frozen=True, slots=True)
class RenameIndex:
    old_name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class RenameTable:
    """``ALTER TABLE ... RENAME [TO|AS] new``."""

    new: TableName


@dataclass(frozen=True, slots=True)
class SetTableOptions:
    """Table default character set / collation / comment; existing columns keep theirs."""

    charset: str | None = None
    collation: str | None = None
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class ConvertCharset:
    """``CONVERT TO CHARACTER SET``: the table default and every textual column change."""

    charset: str
    collation: str | None = None


@dataclass(frozen=True, slots=True)
class IgnoredSpec:
    """A spec without effect on columns and keys (partitioning, ALGORITHM, TTL, ...)."""

    text: str
    reason: str


AlterSpec = (
    AddColumn
    | DropColumn
    | ModifyColumn
    | RenameColumn
    | SetColumnDefault
    | AddIndex
    | DropIndex
    | DropPrimaryKey
    | RenameIndex
    | RenameTable
    | SetTableOptions
    | ConvertCharset
    | IgnoredSpec
)


# ---------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class CreateTableStatement:
    sql: str
    schema: TableSchema
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class CreateTableLikeStatement:
    """``CREATE TABLE t LIKE source``: the caller copies the source table's schema."""

    sql: str
    table: TableName
    source: TableName
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class AlterTableStatement:
    sql: str
    table: TableName
    specs: tuple[AlterSpec, ...]


@dataclass(frozen=True, slots=True)
class CreateIndexStatement:
    """``CREATE [UNIQUE] INDEX``: the same change as ``ALTER TABLE ... ADD INDEX``."""

    sql: str
    table: TableName
    spec: AddIndex


@dataclass(frozen=True, slots=True)
class DropIndexStatement:
    sql: str
    table: TableName
    spec: DropIndex


@dataclass(frozen=True, slots=True)
class RenameTablesStatement:
    sql: str
    renames: tuple[tuple[TableName, TableName], ...]


@dataclass(frozen=True, slots=True)
class TruncateTableStatement:
    sql: str
    tables: tuple[TableName, ...]


@dataclass(frozen=True, slots=True)
class DropTablesStatement:
    sql: str
    tables: tuple[TableName, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class CreateDatabaseStatement:
    sql: str
    database: str
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropDatabaseStatement:
    sql: str
    database: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class UnknownStatement:
    """A statement this parser cannot turn into schema facts; ``reason`` says why.

    ``may_change_schema`` is False only for statements that never change a table's columns or
    keys (views, sequences, ``ALTER DATABASE``, ``SET``, ...); True for unreadable DDL, whose
    table must be held until its schema is known (see ``ddl_parser.held_error``).
    """

    sql: str
    reason: str
    may_change_schema: bool = True


DdlStatement = (
    CreateTableStatement
    | CreateTableLikeStatement
    | AlterTableStatement
    | CreateIndexStatement
    | DropIndexStatement
    | RenameTablesStatement
    | TruncateTableStatement
    | DropTablesStatement
    | CreateDatabaseStatement
    | DropDatabaseStatement
    | UnknownStatement
)
