"""Executing a DDL plan (``ticdc_lake.apply.ddl_plan``) with Iceberg Spark SQL, idempotently.

Every change first looks at the Iceberg table as it is (columns, types, existence), so executing a
plan again after a crash anywhere converges to the same table. When all changes are done the DDL's
commit TSO is recorded as the table's position (table property ``ticdc.ddl-applied-ts``); a table
name that leaves (RENAME, DROP) gets the position as a namespace property first, so the events of
the old name, read again by later runs, are recognised as applied (see ``docs/schema-evolution.md``).
"""

from __future__ import annotations

import logging

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from ticdc_lake import table_markers
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
from ticdc_lake.apply.ddl_plan import DdlPlan, IcebergColumn, dropped_name
from ticdc_lake.apply.merge_sql import spark_type, typed_value
from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import ApplyError
from ticdc_lake.identifiers import qualified, quote, sql_string
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import target_tables
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.table_positions import (
    DDL_POSITION,
    committing,
    iceberg_columns,
    mark_name,
    position,
    table_properties,
)
from ticdc_lake.spark.target_tables import TargetTable

log = logging.getLogger(__name__)

STRING_SUFFIX = "__ticdc_string"
#: Table property of a table kept after upstream DROP TABLE (``on_drop_table: keep``): the drop's TSO.
DROPPED_AT = table_markers.DROPPED_AT


def execute(
    spark: SparkSession,
    system: SystemTables,
    pipeline: PipelineConfig,
    target: TargetTable,
    plan: DdlPlan,
    commit_ts: int,
) -> list[str]:
    """Run the plan's changes against ``target`` (the table named before the DDL); notes of what was done."""
    notes = list(plan.notes)
    current = target
    for number, change in enumerate(plan.changes):
        last = number == len(plan.changes) - 1
        current = _change(spark, system, pipeline, current, change, commit_ts, last, notes)
    if current.name and target_tables.exists(spark, current):
        owner = table_markers.DDL_PIPELINE
        spark.sql(
            f"ALTER TABLE {current.sql_name} SET TBLPROPERTIES ('{DDL_POSITION}'='{commit_ts}', "
            f"'{owner}'={sql_string(pipeline.id)})"
        )
    return notes


def _change(
    spark: SparkSession,
    system: SystemTables,
    pipeline: PipelineConfig,
    target: TargetTable,
    change: Change,
    commit_ts: int,
    last: bool,
    notes: list[str],
) -> TargetTable:
    name = target.sql_name
    if isinstance(change, CreateNamespace | DropNamespace):
        space = TargetTable(target.catalog, pipeline.target.namespace_for(change.database), "")
        _namespace(spark, system, space, change, commit_ts, notes)
        return target
    if isinstance(change, CreateTable):
        _make_room(spark, system, target, notes)
        if target_tables.exists(spark, target):
            notes.append(f"{target.display} exists already")
        else:
            target_tables.create(spark, target, change.schema, pipeline.id)
        return target
    if isinstance(change, RenameIcebergTable):
        return _rename_table(spark, system, pipeline, target, change, commit_ts, notes)
    if isinstance(change, DropIcebergTable):
        _drop_table(spark, system, target, change, commit_ts, notes)
        return target
    columns = iceberg_columns(spark, target)
    if columns is None:
        notes.append(f"{target.display} does not exist: nothing to change")
        return target
    have = {c.name.lower(): c for c in columns}
    if isinstance(change, AddIcebergColumn):
        if change.name.lower() not in have:
            where = " FIRST" if change.first else ""
            if change.after is not None and change.after.lower() in have:
                where = f" AFTER {quote(change.after)}"
            spark.sql(f"ALTER TABLE {name} ADD COLUMN {quote(change.name)} {spark_type(change.type)}{where}")
        if change.fill is not None:
            value = typed_value(sql_string(change.fill), change.type)
            with committing(spark, _applied(pipeline, commit_ts) if last else {}):
                spark.sql(f"UPDATE {name} SET {quote(change.name)} = {value}")
    elif isinstance(change, DropIcebergColumn):
        if change.name.lower() in have:
            spark.sql(f"ALTER TABLE {name} DROP COLUMN {quote(change.name)}")
    elif isinstance(change, RenameIcebergColumn):
        if change.old.lower() in have and change.new.lower() not in have:
            spark.sql(f"ALTER TABLE {name} RENAME COLUMN {quote(change.old)} TO {quote(change.new)}")
    elif isinstance(change, WidenColumn):
        column = have.get(change.name.lower())
        if column is not None and column.type != change.type:
            spark.sql(f"ALTER TABLE {name} ALTER COLUMN {quote(change.name)} TYPE {spark_type(change.type)}")
    elif isinstance(change, ColumnToString):
        _to_string(spark, name, have, change.name)
    elif isinstance(change, MoveColumn):
        if change.name.lower() in have:
            where = "FIRST" if change.first or change.after is None else f"AFTER {quote(change.after)}"
            spark.sql(f"ALTER TABLE {name} ALTER COLUMN {quote(change.name)} {where}")
    elif isinstance(change, SetIdentifierFields):
        _identifier_fields(spark, target, have, change.columns, notes)
    elif isinstance(change, TruncateTable):
        target_tables.delete_all(spark, target, _applied(pipeline, commit_ts))
    return target


def _applied(pipeline: PipelineConfig, commit_ts: int) -> dict[str, str]:
    """The summary of a DDL's snapshot: its position, and whose (``target_tables.applied_by``)."""
    return {table_markers.APPLIED_TS: str(commit_ts), table_markers.PIPELINE: pipeline.id}


def _to_string(spark: SparkSession, name: str, have: dict[str, IcebergColumn], column: str) -> None:
    """int → string is no Iceberg promotion: add a string column, copy the text, drop, rename.

    Each step checks where an interrupted earlier run stopped.
    """
    old = have.get(column.lower())
    temp = column + STRING_SUFFIX
    if old is not None and old.type == "string" and temp.lower() not in have:
        return
    if old is not None and old.type != "string":
        if temp.lower() not in have:
            spark.sql(f"ALTER TABLE {name} ADD COLUMN {quote(temp)} STRING AFTER {quote(column)}")
        text = f"base64({quote(column)})" if old.type == "binary" else f"CAST({quote(column)} AS STRING)"
        spark.sql(f"UPDATE {name} SET {quote(temp)} = {text}")
        spark.sql(f"ALTER TABLE {name} DROP COLUMN {quote(column)}")
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN {quote(temp)} TO {quote(column)}")


def _identifier_fields(
    spark: SparkSession, target: TargetTable, have: dict[str, IcebergColumn], key: tuple[str, ...], notes: list[str]
) -> None:
    text = table_properties(spark, target).get("identifier-fields", "[]").strip("[]")
    existing = [p.strip() for p in text.split(",") if p.strip()]
    if [k.lower() for k in key] == [e.lower() for e in existing]:
        return
    if existing:
        spark.sql(f"ALTER TABLE {target.sql_name} DROP IDENTIFIER FIELDS {', '.join(quote(e) for e in existing)}")
    if not key:
        return
    optional = [k for k in key if k.lower() not in have or not have[k.lower()].required]
    if optional:
        notes.append(
            f"identifier fields not set: column(s) {optional} are optional in Iceberg (Iceberg cannot make a "
            "column required); apply still uses the upstream key"
        )
        return
    spark.sql(f"ALTER TABLE {target.sql_name} SET IDENTIFIER FIELDS {', '.join(quote(k) for k in key)}")


def _rename_table(
    spark: SparkSession,
    system: SystemTables,
    pipeline: PipelineConfig,
    source: TargetTable,
    change: RenameIcebergTable,
    commit_ts: int,
    notes: list[str],
) -> TargetTable:
    dest = TargetTable.for_upstream(pipeline, change.database, change.table)
    _make_room(spark, system, dest, notes)
    there, here = target_tables.exists(spark, dest), target_tables.exists(spark, source)
    if here and there:
        if position(spark, system, dest) < commit_ts:
            raise ApplyError(
                f"RENAME of {source.display} to {dest.display} at commit ts {commit_ts}: both tables exist; "
                f"move {dest.display} away (it is not the result of this rename) and re-run"
            )
        spark.sql(f"DROP TABLE {source.sql_name} PURGE")  # a copy rebuilt from replayed events
        notes.append(f"{source.display} was rebuilt from replayed events and dropped: {dest.display} has them")
        return dest
    if here:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {qualified(dest.catalog, dest.namespace)}")
        mark_name(spark, system, source, commit_ts)
        spark.sql(f"ALTER TABLE {source.sql_name} RENAME TO {qualified(dest.namespace, dest.name)}")
        notes.append(f"renamed to {dest.display}")
    elif not there:
        notes.append(f"neither {source.display} nor {dest.display} exists; nothing to rename")
        return dest
    names = TableSchema(change.database, change.table, ())
    spark.sql(f"ALTER TABLE {dest.sql_name} SET TBLPROPERTIES ({target_tables.upstream_properties(names)})")
    return dest


def _drop_table(
    spark: SparkSession,
    system: SystemTables,
    target: TargetTable,
    change: DropIcebergTable,
    commit_ts: int,
    notes: list[str],
) -> None:
    """``keep``: the table stays under its name, marked dropped; ``drop``: it is purged."""
    if not target_tables.exists(spark, target):
        return
    if change.keep:
        spark.sql(f"ALTER TABLE {target.sql_name} SET TBLPROPERTIES ('{DROPPED_AT}'='{commit_ts}')")
        notes.append(
            f"kept with its data (on_drop_table: keep); a later CREATE of the name moves it to "
            f"{dropped_name(target.name, commit_ts)}"
        )
    else:
        mark_name(spark, system, target, commit_ts)
        spark.sql(f"DROP TABLE {target.sql_name} PURGE")
        notes.append("Iceberg table dropped (on_drop_table: drop)")


def _make_room(spark: SparkSession, system: SystemTables, target: TargetTable, notes: list[str]) -> None:
    """A dropped table kept under ``target``'s name moves to ``<table>__dropped_<drop TSO>``.

    Called before a CREATE or RENAME gives the name to another table, so that table is fresh.
    """
    if not target_tables.exists(spark, target):
        return
    dropped = table_properties(spark, target).get(DROPPED_AT)
    if dropped is None:
        return
    kept = TargetTable(target.catalog, target.namespace, dropped_name(target.name, int(dropped)))
    mark_name(spark, system, target, int(dropped))
    if target_tables.exists(spark, kept):
        spark.sql(f"DROP TABLE {target.sql_name} PURGE")  # a copy rebuilt from replayed events
    else:
        spark.sql(f"ALTER TABLE {target.sql_name} RENAME TO {qualified(kept.namespace, kept.name)}")
    notes.append(f"the dropped table kept under this name moved to {kept.display}")


def _namespace(
    spark: SparkSession,
    system: SystemTables,
    space: TargetTable,
    change: CreateNamespace | DropNamespace,
    commit_ts: int,
    notes: list[str],
) -> None:
    """CREATE DATABASE: the namespace. DROP DATABASE drops its tables as MySQL does: each is kept
    marked dropped (on_drop_table: keep; the namespace stays while it holds tables) or purged."""
    name = qualified(space.catalog, space.namespace)
    if isinstance(change, CreateNamespace):
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}")
        return
    try:
        left = sorted(r["tableName"] for r in spark.sql(f"SHOW TABLES IN {name}").collect())
    except AnalysisException:
        return
    for table in left:
        drop = DropIcebergTable(change.keep_tables)
        target = TargetTable(space.catalog, space.namespace, table)
        if change.keep_tables and DROPPED_AT in table_properties(spark, target):
            continue  # dropped before, kept under its name
        _drop_table(spark, system, target, drop, commit_ts, [])
    if change.keep_tables and left:
        notes.append(
            f"namespace {space.catalog}.{space.namespace} kept with {len(left)} table(s) marked dropped "
            f"(on_drop_table: keep): {', '.join(left)}"
        )
    else:
        spark.sql(f"DROP NAMESPACE IF EXISTS {name}")
        if left:
            notes.append(f"dropped {len(left)} table(s) with the namespace (on_drop_table: drop): {', '.join(left)}")
