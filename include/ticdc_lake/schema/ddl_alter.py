"""Follow a table's schema through ALTER TABLE, CREATE/DROP INDEX and RENAME TABLE statements.

Specs apply one after the other, each to the result of the previous one, with MySQL's rules:
column names and index names compare case-insensitively; an index loses a dropped column and
disappears with its last one; PRIMARY KEY columns become NOT NULL; an index added without a name
is named after its first column (``a``, ``a_2``, ...); a textual column added or redefined without
a character set takes the table's default (``extra["default_charset"]``) when that is known.
"""

from __future__ import annotations

from dataclasses import replace

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.ddl_charsets import DEFAULT_COLLATIONS, charset_of_collation, normalize_charset
from ticdc_lake.schema.ddl_defaults import NUMERIC_TYPES
from ticdc_lake.schema.ddl_keys import PRIMARY
from ticdc_lake.schema.ddl_statements import (
    AddColumn,
    AddIndex,
    AlterSpec,
    AlterTableStatement,
    ColumnPosition,
    ConvertCharset,
    CreateIndexStatement,
    DropColumn,
    DropIndex,
    DropIndexStatement,
    DropPrimaryKey,
    IgnoredSpec,
    ModifyColumn,
    RenameColumn,
    RenameIndex,
    RenameTable,
    RenameTablesStatement,
    SetColumnDefault,
    SetTableOptions,
    TableName,
)
from ticdc_lake.schema.ddl_types import TEXTUAL_TYPES, fill_table_charset
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema

#: ``TableSchema.extra`` keys this module reads and writes.
DEFAULT_CHARSET = "default_charset"
DEFAULT_COLLATION = "default_collation"
COMMENT = "comment"
#: Generated columns: ``{name: "VIRTUAL" | "STORED"}``.
GENERATED_COLUMNS = "generated_columns"

AlterLike = AlterTableStatement | CreateIndexStatement | DropIndexStatement | RenameTablesStatement


def apply_alter(schema: TableSchema, statement: AlterLike) -> TableSchema:
    """The schema after ``statement``; raises :class:`SchemaError` naming table, DDL and problem."""
    where = f"table {schema.database}.{schema.table}"
    if isinstance(statement, RenameTablesStatement):
        for old, new in statement.renames:
            if _same_table(old, schema):
                return replace(schema, database=new.database or schema.database, table=new.table)
        raise SchemaError(f"{where}: the DDL does not rename this table; the DDL was: {statement.sql}")
    if not _same_table(statement.table, schema):
        problem = f"the DDL changes table {statement.table}, not this one"
        raise SchemaError(f"{where}: {problem}; the DDL was: {statement.sql}")
    specs: tuple[AlterSpec, ...] = statement.specs if isinstance(statement, AlterTableStatement) else (statement.spec,)
    for spec in specs:
        schema = apply_spec(schema, spec, f"{where}: {{}}; the DDL was: {statement.sql}")
    return schema


def apply_spec(schema: TableSchema, spec: AlterSpec, where: str) -> TableSchema:
    """``schema`` after one spec; ``where`` is a message template with one ``{}`` for the problem."""
    result = _apply(schema, spec, where)
    return _settle_keys(result)


def _apply(schema: TableSchema, spec: AlterSpec, where: str) -> TableSchema:
    if isinstance(spec, AddColumn):
        return _add_column(schema, spec, where)
    if isinstance(spec, DropColumn):
        return _drop_column(schema, spec, where)
    if isinstance(spec, ModifyColumn):
        return _modify_column(schema, spec, where)
    if isinstance(spec, RenameColumn):
        _find_column(schema, spec.old_name, where)
        _check_new_column(schema, spec.new_name, where, replacing=spec.old_name)
        return _rename_column(schema, spec.old_name, spec.new_name)
    if isinstance(spec, SetColumnDefault):
        position = _find_column(schema, spec.name, where)
        columns = list(schema.columns)
        numeric = spec.numeric_default is not None and columns[position].mysql_type in NUMERIC_TYPES
        columns[position] = replace(columns[position], default=spec.numeric_default if numeric else spec.default)
        return replace(schema, columns=tuple(columns))
    if isinstance(spec, AddIndex):
        return add_index(schema, spec, where)
    if isinstance(spec, DropIndex | DropPrimaryKey):
        return _drop_index(schema, spec, where)
    if isinstance(spec, RenameIndex):
        position = _find_index(schema, spec.old_name, where)
        if _index_position(schema, spec.new_name) not in (None, position):
            raise SchemaError(where.format(f"RENAME INDEX: index {spec.new_name!r} already exists"))
        indexes = list(schema.indexes)
        indexes[position] = replace(indexes[position], name=spec.new_name)
        return replace(schema, indexes=tuple(indexes))
    if isinstance(spec, RenameTable):
        return replace(schema, database=spec.new.database or schema.database, table=spec.new.table)
    if isinstance(spec, SetTableOptions):
        return _set_options(schema, spec)
    if isinstance(spec, ConvertCharset):
        return _convert_charset(schema, spec)
    assert isinstance(spec, IgnoredSpec)
    return schema


def _add_column(schema: TableSchema, spec: AddColumn, where: str) -> TableSchema:
    if _column_position(schema, spec.column.name) is not None:
        if spec.if_not_exists:
            return schema
        raise SchemaError(where.format(f"ADD COLUMN: column {spec.column.name!r} already exists"))
    column = _with_table_charset(schema, spec.column)
    columns = _insert(list(schema.columns), column, spec.position, schema, where)
    result = _set_generated(replace(schema, columns=tuple(columns)), column.name, spec.generated)
    for index in spec.indexes:
        result = add_index(result, AddIndex(index), where)
    return result


def _drop_column(schema: TableSchema, spec: DropColumn, where: str) -> TableSchema:
    position = _column_position(schema, spec.name)
    if position is None:
        if spec.if_exists:
            return schema
        raise SchemaError(where.format(f"DROP COLUMN: column {spec.name!r} does not exist"))
    name = schema.columns[position].name
    columns = schema.columns[:position] + schema.columns[position + 1 :]
    indexes = []
    for index in schema.indexes:
        remaining = tuple(c for c in index.columns if not _same(c, name))
        if index.columns and not remaining:
            continue  # the index loses its last column
        indexes.append(replace(index, columns=remaining))
    return _set_generated(replace(schema, columns=columns, indexes=tuple(indexes)), name, None)


def _modify_column(schema: TableSchema, spec: ModifyColumn, where: str) -> TableSchema:
    position = _find_column(schema, spec.old_name, where)
    old_name = schema.columns[position].name
    _check_new_column(schema, spec.column.name, where, replacing=old_name)
    renamed = _rename_column(schema, old_name, spec.column.name) if spec.column.name != old_name else schema
    column = _with_table_charset(schema, spec.column)
    columns = list(renamed.columns)
    if spec.position is None:
        columns[position] = column
    else:
        del columns[position]
        columns = _insert(columns, column, spec.position, renamed, where)
    result = _set_generated(replace(renamed, columns=tuple(columns)), column.name, spec.generated)
    for index in spec.indexes:
        result = add_index(result, AddIndex(index), where)
    return result


def add_index(schema: TableSchema, spec: AddIndex, where: str) -> TableSchema:
    """``schema`` with ``spec.index`` added at the end (named, checked, NOT NULL for a primary key)."""
    index = spec.index
    for name in index.columns:
        if _column_position(schema, name) is None:
            key = index.name or PRIMARY
            raise SchemaError(where.format(f"key {key!r} names column {name!r}, which does not exist"))
    columns = tuple(schema.columns[_find_column(schema, n, where)].name for n in index.columns)
    if index.primary:
        if any(i.primary for i in schema.indexes):
            if spec.if_not_exists:
                return schema
            raise SchemaError(where.format("the table already has a primary key"))
        index = replace(index, name=PRIMARY, columns=columns, unique=True)
        not_null = tuple(replace(c, nullable=False) if c.name in columns else c for c in schema.columns)
        return replace(schema, columns=not_null, indexes=(*schema.indexes, index))
    name = index.name or _free_index_name(schema, columns[0] if columns else "expression_index")
    if _index_position(schema, name) is not None:
        if spec.if_not_exists:
            return schema
        raise SchemaError(where.format(f"duplicate key name {name!r}"))
    return replace(schema, indexes=(*schema.indexes, replace(index, name=name, columns=columns)))


def _drop_index(schema: TableSchema, spec: DropIndex | DropPrimaryKey, where: str) -> TableSchema:
    if isinstance(spec, DropPrimaryKey) or _same(spec.name, PRIMARY):
        position = next((p for p, index in enumerate(schema.indexes) if index.primary), None)
        if position is None:
            raise SchemaError(where.format("DROP PRIMARY KEY: the table has no primary key"))
    else:
        position = _index_position(schema, spec.name)
        if position is None:
            if spec.if_exists:
                return schema
            raise SchemaError(where.format(f"DROP INDEX: index {spec.name!r} does not exist"))
    return replace(schema, indexes=schema.indexes[:position] + schema.indexes[position + 1 :])


def _set_options(schema: TableSchema, spec: SetTableOptions) -> TableSchema:
    extra = dict(schema.extra)
    charset = normalize_charset(spec.charset)
    collation = spec.collation.lower() if spec.collation else None
    if charset is None and collation is not None:
        charset = charset_of_collation(collation)
    if charset is not None:
        extra[DEFAULT_CHARSET] = charset
        extra[DEFAULT_COLLATION] = collation or DEFAULT_COLLATIONS.get(charset)
        if extra[DEFAULT_COLLATION] is None:
            del extra[DEFAULT_COLLATION]
    elif collation is not None:
        extra[DEFAULT_COLLATION] = collation
    if spec.comment is not None:
        extra[COMMENT] = spec.comment
    return replace(schema, extra=extra)


def _convert_charset(schema: TableSchema, spec: ConvertCharset) -> TableSchema:
    options = _set_options(schema, SetTableOptions(charset=spec.charset, collation=spec.collation))
    charset = options.extra.get(DEFAULT_CHARSET)
    collation = options.extra.get(DEFAULT_COLLATION)
    columns = tuple(
        fill_table_charset(replace(c, charset=None, collation=None), charset, collation)
        if c.mysql_type in TEXTUAL_TYPES
        else c
        for c in schema.columns
    )
    return replace(options, columns=columns)


# ---------------------------------------------------------------- helpers


def _settle_keys(schema: TableSchema) -> TableSchema:
    """Primary key columns NOT NULL; each index ``nullable`` when one of its columns is."""
    primary = {name.lower() for index in schema.indexes if index.primary for name in index.columns}
    columns = tuple(replace(c, nullable=False) if c.name.lower() in primary else c for c in schema.columns)
    nullable = {c.name.lower(): c.nullable for c in columns}
    indexes = tuple(
        replace(i, nullable=not i.primary and any(nullable.get(n.lower(), True) for n in i.columns))
        for i in schema.indexes
    )
    return replace(schema, columns=columns, indexes=indexes)


def _with_table_charset(schema: TableSchema, column: ColumnSchema) -> ColumnSchema:
    return fill_table_charset(column, schema.extra.get(DEFAULT_CHARSET), schema.extra.get(DEFAULT_COLLATION))


def _insert(
    columns: list[ColumnSchema], column: ColumnSchema, position: ColumnPosition | None, schema: TableSchema, where: str
) -> list[ColumnSchema]:
    if position is None:
        return [*columns, column]
    if position.first:
        return [column, *columns]
    assert position.after is not None
    after = next((p for p, c in enumerate(columns) if _same(c.name, position.after)), None)
    if after is None:
        raise SchemaError(where.format(f"AFTER {position.after!r}: the column does not exist"))
    return [*columns[: after + 1], column, *columns[after + 1 :]]


def _rename_column(schema: TableSchema, old: str, new: str) -> TableSchema:
    columns = tuple(replace(c, name=new) if _same(c.name, old) else c for c in schema.columns)
    indexes = tuple(replace(i, columns=tuple(new if _same(n, old) else n for n in i.columns)) for i in schema.indexes)
    generated = {(new if _same(n, old) else n): kind for n, kind in schema.extra.get(GENERATED_COLUMNS, {}).items()}
    extra = {**schema.extra, GENERATED_COLUMNS: generated} if generated else schema.extra
    return replace(schema, columns=columns, indexes=indexes, extra=extra)


def _set_generated(schema: TableSchema, name: str, generated: str | None) -> TableSchema:
    current = {n: k for n, k in schema.extra.get(GENERATED_COLUMNS, {}).items() if not _same(n, name)}
    if generated is not None:
        current[name] = generated
    extra = {k: v for k, v in schema.extra.items() if k != GENERATED_COLUMNS}
    if current:
        extra[GENERATED_COLUMNS] = current
    return replace(schema, extra=extra)


def _check_new_column(schema: TableSchema, name: str, where: str, *, replacing: str) -> None:
    existing = _column_position(schema, name)
    if existing is not None and not _same(schema.columns[existing].name, replacing):
        raise SchemaError(where.format(f"column {name!r} already exists"))


def _find_column(schema: TableSchema, name: str, where: str) -> int:
    position = _column_position(schema, name)
    if position is None:
        raise SchemaError(where.format(f"column {name!r} does not exist"))
    return position


def _find_index(schema: TableSchema, name: str, where: str) -> int:
    position = _index_position(schema, name)
    if position is None:
        raise SchemaError(where.format(f"index {name!r} does not exist"))
    return position


def _column_position(schema: TableSchema, name: str) -> int | None:
    return next((p for p, c in enumerate(schema.columns) if _same(c.name, name)), None)


def _index_position(schema: TableSchema, name: str) -> int | None:
    return next((p for p, i in enumerate(schema.indexes) if _same(i.name, name)), None)


def _free_index_name(schema: TableSchema, base: str) -> str:
    name, suffix = base, 2
    while _index_position(schema, name) is not None:
        name, suffix = f"{base}_{suffix}", suffix + 1
    return name


def _same(a: str, b: str) -> bool:
    return a.lower() == b.lower()


def _same_table(name: TableName, schema: TableSchema) -> bool:
    if name.database is not None and not _same(name.database, schema.database):
        return False
    return _same(name.table, schema.table)
