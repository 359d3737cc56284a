"""ALTER TABLE specifications and their effect on a table schema, built structurally.

The post-DDL schema is derived from the pre-DDL schema by inserting, removing or replacing
:class:`ColumnSchema`/:class:`IndexSchema` entries, never by parsing SQL: the product's DDL parser
is under test, and the oracle must not share its mistakes. Rules follow TiDB: a multi-spec ALTER
may not touch one column twice, a primary-key or multi-column-index column cannot be dropped, a
dropped column's single-column indexes go with it, primary-key columns become NOT NULL.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.schema.tidb_lengths import tidb_default_length
from ticdc_sim.column_types import TEXT_TYPES

PRIMARY = "PRIMARY"


@dataclass(frozen=True, slots=True)
class AddColumnSpec:
    column: ColumnSchema
    first: bool = False
    after: str | None = None


@dataclass(frozen=True, slots=True)
class DropColumnSpec:
    name: str


@dataclass(frozen=True, slots=True)
class RenameColumnSpec:
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class ModifyColumnSpec:
    column: ColumnSchema


@dataclass(frozen=True, slots=True)
class AddIndexSpec:
    name: str
    columns: tuple[str, ...]
    unique: bool = False
    primary: bool = False


@dataclass(frozen=True, slots=True)
class DropIndexSpec:
    name: str


@dataclass(frozen=True, slots=True)
class DropPrimaryKeySpec:
    pass


AlterSpec = (
    AddColumnSpec
    | DropColumnSpec
    | RenameColumnSpec
    | ModifyColumnSpec
    | AddIndexSpec
    | DropIndexSpec
    | DropPrimaryKeySpec
)


def complete_column(column: ColumnSchema) -> ColumnSchema:
    """``column`` as TiDB describes it: display length, DECIMAL scale, charset and collation filled."""
    textual = column.mysql_type in TEXT_TYPES or column.mysql_type in ("enum", "set")
    charset, collation = ("utf8mb4", "utf8mb4_bin") if textual else ("binary", "binary")
    done = replace(column, charset=column.charset or charset, collation=column.collation or collation)
    if done.mysql_type == "decimal" and done.scale is None:
        done = replace(done, scale=0)
    if done.length is None:
        done = replace(done, length=tidb_default_length(done))
    return done


def touched_columns(spec: AlterSpec) -> tuple[str, ...]:
    """The column names a spec changes (TiDB rejects a multi-spec ALTER touching one twice)."""
    if isinstance(spec, AddColumnSpec | ModifyColumnSpec):
        return (spec.column.name,)
    if isinstance(spec, DropColumnSpec):
        return (spec.name,)
    if isinstance(spec, RenameColumnSpec):
        return (spec.old, spec.new)
    return ()


def check_specs(specs: tuple[AlterSpec, ...], where: str) -> None:
    if not specs:
        raise SchemaError(f"ALTER TABLE {where}: no specification given")
    seen: set[str] = set()
    for spec in specs:
        for name in touched_columns(spec):
            if name.lower() in seen:
                raise SchemaError(
                    f"ALTER TABLE {where}: column {name!r} is changed twice in one statement, which TiDB "
                    "rejects (error 8200); split the ALTER"
                )
            seen.add(name.lower())


def apply_spec(schema: TableSchema, spec: AlterSpec, where: str) -> TableSchema:
    """The schema after one spec (table id, version and names unchanged)."""
    columns = list(schema.columns)
    indexes = list(schema.indexes)
    names = [c.name.lower() for c in columns]

    def position(name: str) -> int:
        try:
            return names.index(name.lower())
        except ValueError:
            raise SchemaError(f"ALTER TABLE {where}: column {name!r} does not exist") from None

    if isinstance(spec, AddColumnSpec):
        if spec.column.name.lower() in names:
            raise SchemaError(f"ALTER TABLE {where}: column {spec.column.name!r} already exists")
        at = 0 if spec.first else position(spec.after) + 1 if spec.after is not None else len(columns)
        columns.insert(at, complete_column(spec.column))
    elif isinstance(spec, DropColumnSpec):
        at = position(spec.name)
        for index in indexes:
            if any(c.lower() == spec.name.lower() for c in index.columns) and (index.primary or len(index.columns) > 1):
                raise SchemaError(
                    f"ALTER TABLE {where}: cannot drop column {spec.name!r}, it is part of index {index.name!r} "
                    "(TiDB refuses it); drop the index first"
                )
        indexes = [i for i in indexes if i.columns[0].lower() != spec.name.lower()]
        del columns[at]
        if len(columns) == 0:
            raise SchemaError(f"ALTER TABLE {where}: cannot drop the last column {spec.name!r}")
    elif isinstance(spec, RenameColumnSpec):
        at = position(spec.old)
        if spec.new.lower() in names and spec.new.lower() != spec.old.lower():
            raise SchemaError(f"ALTER TABLE {where}: column {spec.new!r} already exists")
        columns[at] = replace(columns[at], name=spec.new)
        indexes = [
            replace(i, columns=tuple(spec.new if c.lower() == spec.old.lower() else c for c in i.columns))
            for i in indexes
        ]
    elif isinstance(spec, ModifyColumnSpec):
        columns[position(spec.column.name)] = complete_column(spec.column)
    elif isinstance(spec, AddIndexSpec):
        indexes = _add_index(schema, spec, indexes, columns, where)
        if spec.primary:
            pk = {c.lower() for c in spec.columns}
            columns = [replace(c, nullable=False) if c.name.lower() in pk else c for c in columns]
    elif isinstance(spec, DropIndexSpec):
        found = [i for i in indexes if i.name.lower() == spec.name.lower() and not i.primary]
        if not found:
            raise SchemaError(f"ALTER TABLE {where}: index {spec.name!r} does not exist")
        indexes.remove(found[0])
    else:
        primary = [i for i in indexes if i.primary]
        if not primary:
            raise SchemaError(f"ALTER TABLE {where}: the table has no primary key to drop")
        indexes.remove(primary[0])
    return _with_index_nullability(replace(schema, columns=tuple(columns), indexes=tuple(indexes)))


def _add_index(
    schema: TableSchema, spec: AddIndexSpec, indexes: list[IndexSchema], columns: list[ColumnSchema], where: str
) -> list[IndexSchema]:
    if not spec.columns:
        raise SchemaError(f"ALTER TABLE {where}: index {spec.name!r} needs at least one column")
    known = {c.name.lower(): c.name for c in columns}
    missing = [c for c in spec.columns if c.lower() not in known]
    if missing:
        raise SchemaError(f"ALTER TABLE {where}: index {spec.name!r} names unknown columns {missing}")
    if spec.primary and any(i.primary for i in indexes):
        raise SchemaError(f"ALTER TABLE {where}: the table already has a primary key; drop it first")
    name = PRIMARY if spec.primary else spec.name
    if any(i.name.lower() == name.lower() for i in indexes):
        raise SchemaError(f"ALTER TABLE {where}: index {name!r} already exists")
    index = IndexSchema(
        name=name,
        columns=tuple(known[c.lower()] for c in spec.columns),
        primary=spec.primary,
        unique=spec.unique or spec.primary,
    )
    return [*indexes, index]


def _with_index_nullability(schema: TableSchema) -> TableSchema:
    """Index ``nullable`` flags recomputed from the columns (as the catalog builds them)."""
    nullable = {c.name: c.nullable for c in schema.columns}
    indexes = tuple(replace(i, nullable=any(nullable.get(c, True) for c in i.columns)) for i in schema.indexes)
    return replace(schema, indexes=indexes)


def apply_specs(schema: TableSchema, specs: tuple[AlterSpec, ...], where: str) -> TableSchema:
    """The schema after a whole (multi-spec) ALTER, applied in statement order."""
    check_specs(specs, where)
    for spec in specs:
        schema = apply_spec(schema, spec, where)
    return schema
