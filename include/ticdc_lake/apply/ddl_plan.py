"""One upstream DDL → the ordered Iceberg changes that mirror it (docs/schema-evolution.md), no Spark.

The plan is made from the schema before and after the DDL, the parsed statement (a schema diff
cannot tell RENAME COLUMN from DROP + ADD, so column renames come from the statement) and the
Iceberg table's current columns (the type a MODIFY starts from is the Iceberg one: a column kept
as string stays string). The executor (``ticdc_lake.spark.ddl_apply``) makes every change
idempotent, so a plan may be executed again after a crash.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ticdc_lake.apply.ddl_changes import (
    AddIcebergColumn,
    Change,
    ColumnToString,
    CreateNamespace,
    CreateTable,
    DropIcebergColumn,
    DropIcebergTable,
    DropNamespace,
    MoveColumn,
    RenameIcebergColumn,
    RenameIcebergTable,
    SetIdentifierFields,
    TruncateTable,
    WidenColumn,
)
from ticdc_lake.apply.ddl_fill import fill_value
from ticdc_lake.config import DropColumnPolicy, DropTablePolicy, Policies, TypeChangePolicy
from ticdc_lake.schema.ddl_statements import (
    AddColumn,
    AlterTableStatement,
    CreateDatabaseStatement,
    DdlStatement,
    DropColumn,
    DropDatabaseStatement,
    ModifyColumn,
    RenameColumn,
    RenameTable,
    RenameTablesStatement,
    UnknownStatement,
)
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.schema.type_mapping import iceberg_type, is_lossless_widening

#: DDL types that need the schema after the DDL to be applied.
SCHEMA_CHANGING = frozenset({"CREATE", "ALTER", "RENAME", "CINDEX", "DINDEX"})


@dataclass(frozen=True, slots=True)
class IcebergColumn:
    name: str
    #: Iceberg type name as ``type_mapping.iceberg_type`` writes it (``long``, ``decimal(10,2)``).
    type: str
    required: bool = False


@dataclass(frozen=True, slots=True)
class DdlEvent:
    """What the plan needs of one DDL row of ``change_events``."""

    commit_ts: int
    ddl_type: str
    query: str
    database: str
    table: str | None
    pre: TableSchema | None = None
    post: TableSchema | None = None
    schema_error: str | None = None


@dataclass(slots=True)
class DdlPlan:
    changes: list[Change] = field(default_factory=list)
    #: Why the DDL cannot be applied: the table stops before it.
    held: str | None = None
    notes: list[str] = field(default_factory=list)


def parse_ddl(sql: str, default_database: str | None) -> list[DdlStatement]:
    """``ddl_parser.parse_ddl``, imported on first use: sqlglot takes about a second to import, and
    a run whose events hold no DDL never needs it."""
    from ticdc_lake.schema.ddl_parser import parse_ddl as parse

    return parse(sql, default_database)


def dropped_name(table: str, commit_ts: int) -> str:
    """Name of a table kept under ``on_drop_table: keep``, so a later CREATE of the name is fresh."""
    return f"{table}__dropped_{commit_ts}"


def describe(event: DdlEvent) -> str:
    return f"{event.database}.{event.table}" if event.table else event.database


def hold_message(event: DdlEvent, reason: str) -> str:
    return f"DDL {event.ddl_type} at commit ts {event.commit_ts} on {describe(event)} ({event.query!r}): {reason}"


def plan_ddl(
    event: DdlEvent,
    policies: Policies,
    current: Sequence[IcebergColumn] | None,
    server_time_zone: str = "UTC",
) -> DdlPlan:
    """The Iceberg changes for ``event``; ``current`` is None when the Iceberg table does not exist."""
    if event.schema_error:
        return DdlPlan(held=hold_message(event, f"its schema could not be derived: {event.schema_error}"))
    if event.table is None:
        return _database_plan(event, policies)
    kind = event.ddl_type.upper()
    if kind == "ERASE":
        return DdlPlan([DropIcebergTable(policies.on_drop_table is DropTablePolicy.KEEP)])
    if kind == "TRUNCATE":
        return DdlPlan([TruncateTable()])
    if event.post is None and (kind in SCHEMA_CHANGING or _may_change_schema(event)):
        return DdlPlan(held=hold_message(event, "the DDL event carries no table schema, so its effect is unknown"))
    if event.post is None:
        return DdlPlan(notes=["no change to the Iceberg table"])
    if kind == "CREATE":
        return DdlPlan([CreateTable(event.post)])
    if current is None and kind != "RENAME":
        # No row reached Iceberg yet (a table known from BOOTSTRAP or history only): start from the result.
        return DdlPlan([CreateTable(event.post)], notes=["the Iceberg table did not exist: created as after the DDL"])
    if event.pre is None:
        return DdlPlan(held=hold_message(event, "the schema before the DDL is unknown, so its effect is unknown"))
    return _alter_plan(event, event.pre, event.post, policies, current, server_time_zone)


def renamed_from(event: DdlEvent) -> tuple[str, str] | None:
    """The table's name before the DDL when it renames the table, from the schema before or the statement."""
    if event.table is None:
        return None
    if event.pre is not None:
        old = (event.pre.database, event.pre.table)
        return old if old != (event.database, event.table) else None
    if event.ddl_type.upper() not in ("RENAME", "ALTER"):
        return None
    wanted = (event.database.lower(), event.table.lower())
    for statement in parse_ddl(event.query, event.database):
        if isinstance(statement, RenameTablesStatement):
            for old_name, new_name in statement.renames:
                if ((new_name.database or event.database).lower(), new_name.table.lower()) == wanted:
                    return old_name.database or event.database, old_name.table
        elif isinstance(statement, AlterTableStatement):
            for spec in statement.specs:
                if (
                    isinstance(spec, RenameTable)
                    and (
                        (spec.new.database or event.database).lower(),
                        spec.new.table.lower(),
                    )
                    == wanted
                ):
                    return statement.table.database or event.database, statement.table.table
    return None


def _may_change_schema(event: DdlEvent) -> bool:
    statements = parse_ddl(event.query, event.database)
    return any(not isinstance(s, UnknownStatement) or s.may_change_schema for s in statements)


def _database_plan(event: DdlEvent, policies: Policies) -> DdlPlan:
    for statement in parse_ddl(event.query, event.database):
        if isinstance(statement, CreateDatabaseStatement):
            return DdlPlan([CreateNamespace(statement.database)])
        if isinstance(statement, DropDatabaseStatement):
            return DdlPlan([DropNamespace(statement.database, policies.on_drop_table is DropTablePolicy.KEEP)])
    return DdlPlan(notes=["a database DDL without effect on Iceberg"])


class _Columns:
    """The Iceberg columns as the plan changes them, so later specs see earlier ones."""

    def __init__(self, current: Sequence[IcebergColumn] | None, pre: TableSchema) -> None:
        if current is None:
            where = f"{pre.database}.{pre.table}"
            current = [IcebergColumn(c.name, iceberg_type(c, table=where)) for c in pre.columns]
        self.types = {c.name.lower(): c.type for c in current}

    def has(self, name: str) -> bool:
        return name.lower() in self.types


def _alter_plan(
    event: DdlEvent,
    pre: TableSchema,
    post: TableSchema,
    policies: Policies,
    current: Sequence[IcebergColumn] | None,
    zone: str,
) -> DdlPlan:
    plan = DdlPlan()
    columns = _Columns(current, pre)
    where = f"{post.database}.{post.table}"
    statement = next((s for s in parse_ddl(event.query, event.database) if isinstance(s, AlterTableStatement)), None)
    specs = list(statement.specs) if statement is not None else _diff_specs(pre, post)
    if specs is None:
        plan.held = hold_message(
            event, "the statement cannot be parsed and the schema change is ambiguous (columns both added and dropped)"
        )
        return plan
    touched_key = False
    old_key = {k.lower() for k in pre.handle_key()}
    for spec in specs:
        if isinstance(spec, AddColumn):
            column = post.column(spec.column.name) or spec.column
            fill, note = fill_value(column, event.commit_ts, zone)
            if note:
                plan.notes.append(note)
            position = spec.position
            plan.changes.append(
                AddIcebergColumn(
                    column.name,
                    iceberg_type(column, table=where),
                    first=bool(position and position.first),
                    after=position.after if position else None,
                    fill=fill,
                )
            )
            columns.types[column.name.lower()] = iceberg_type(column, table=where)
        elif isinstance(spec, DropColumn):
            if not columns.has(spec.name):
                continue
            if policies.on_drop_column is DropColumnPolicy.KEEP:
                plan.notes.append(f"column {spec.name!r} kept (on_drop_column: keep); new rows hold NULL in it")
                continue
            touched_key |= spec.name.lower() in old_key
            plan.changes.append(DropIcebergColumn(spec.name))
            columns.types.pop(spec.name.lower(), None)
        elif isinstance(spec, RenameColumn):
            _rename(plan, columns, spec.old_name, spec.new_name)
        elif isinstance(spec, ModifyColumn):
            if spec.old_name.lower() != spec.column.name.lower():
                _rename(plan, columns, spec.old_name, spec.column.name)
            column = post.column(spec.column.name) or spec.column
            held = _type_change(plan, columns, column.name, iceberg_type(column, table=where), policies, event)
            if held:
                return DdlPlan(held=held)
            if spec.position is not None:
                plan.changes.append(MoveColumn(column.name, spec.position.first, spec.position.after))
        elif isinstance(spec, RenameTable):
            new_database = spec.new.database or pre.database
            plan.changes.append(RenameIcebergTable(pre.database, pre.table, new_database, spec.new.table))
    renamed = (pre.database, pre.table) != (post.database, post.table)
    if renamed and not any(isinstance(c, RenameIcebergTable) for c in plan.changes):
        plan.changes.append(RenameIcebergTable(pre.database, pre.table, post.database, post.table))
    touched_key |= any(isinstance(c, ColumnToString) and c.name.lower() in old_key for c in plan.changes)
    if pre.handle_key() != post.handle_key() or touched_key:
        if old_key:
            plan.changes.insert(0, SetIdentifierFields(()))
        if post.handle_key():
            plan.changes.append(SetIdentifierFields(post.handle_key()))
    if not plan.changes and not plan.notes:
        plan.notes.append("no change to the Iceberg table")
    return plan


def _rename(plan: DdlPlan, columns: _Columns, old: str, new: str) -> None:
    if columns.has(old) and not columns.has(new):
        plan.changes.append(RenameIcebergColumn(old, new))
        columns.types[new.lower()] = columns.types.pop(old.lower())


def _type_change(
    plan: DdlPlan, columns: _Columns, name: str, wanted: str, policies: Policies, event: DdlEvent
) -> str | None:
    have = columns.types.get(name.lower())
    if have is None or have == wanted or have == "string":
        return None
    if is_lossless_widening(have, wanted):
        plan.changes.append(WidenColumn(name, wanted))
        columns.types[name.lower()] = wanted
        return None
    if policies.on_incompatible_type_change is TypeChangePolicy.FAIL:
        return hold_message(
            event,
            f"column {name!r} changes from Iceberg type {have} to {wanted}, which Iceberg cannot do in place; "
            "set policies.on_incompatible_type_change to keep_as_string to keep the column as text",
        )
    plan.changes.append(ColumnToString(name))
    plan.notes.append(f"column {name!r} kept as string ({have} -> {wanted}, on_incompatible_type_change)")
    columns.types[name.lower()] = "string"
    return None


def _diff_specs(pre: TableSchema, post: TableSchema) -> list[AddColumn | DropColumn | ModifyColumn] | None:
    """Specs read off the two schemas when the statement is not an ALTER TABLE the parser knows."""
    before = {c.name.lower() for c in pre.columns}
    after = {c.name.lower() for c in post.columns}
    if (before - after) and (after - before):
        return None
    specs: list[AddColumn | DropColumn | ModifyColumn] = []
    for column in post.columns:
        if column.name.lower() not in before:
            specs.append(AddColumn(column))
        else:
            specs.append(ModifyColumn(column.name, column))
    specs.extend(DropColumn(c.name) for c in pre.columns if c.name.lower() not in after)
    return specs
