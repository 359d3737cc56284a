"""Builders of :class:`~ticdc_sim.model.DdlChange` for every DDL kind the simulator emits.

Post schemas are built structurally from the pre schema (:mod:`ticdc_sim.ddl_specs`)
and the SQL text from the same structure (:mod:`ticdc_sim.ddl_sql`), never the other
way round. ``ddl_type`` is TiCDC's Simple-protocol subtype (``getDDLType``): a single ADD
INDEX/PRIMARY KEY is CINDEX, a single DROP INDEX/PRIMARY KEY is DINDEX, every other ALTER
(multi-spec ones included, TiDB's MultiSchemaChange) is ALTER.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.ddl_specs import (
    AddColumnSpec,
    AddIndexSpec,
    AlterSpec,
    DropColumnSpec,
    DropIndexSpec,
    DropPrimaryKeySpec,
    ModifyColumnSpec,
    RenameColumnSpec,
    apply_specs,
)
from ticdc_sim.ddl_sql import (
    alter_table_sql,
    create_database_sql,
    create_index_sql,
    drop_database_sql,
    drop_index_sql,
    drop_table_sql,
    rename_table_sql,
    truncate_table_sql,
)
from ticdc_sim.model import DdlChange

__all__ = [
    "AddColumnSpec",
    "AddIndexSpec",
    "AlterSpec",
    "DropColumnSpec",
    "DropIndexSpec",
    "DropPrimaryKeySpec",
    "ModifyColumnSpec",
    "RenameColumnSpec",
    "alter_change",
    "alter_ddl_type",
    "create_database_change",
    "create_index_change",
    "drop_database_change",
    "drop_index_change",
    "drop_table_change",
    "rename_table_change",
    "truncate_table_change",
]


def alter_ddl_type(specs: Sequence[AlterSpec]) -> str:
    if len(specs) == 1 and isinstance(specs[0], AddIndexSpec):
        return "CINDEX"
    if len(specs) == 1 and isinstance(specs[0], DropIndexSpec | DropPrimaryKeySpec):
        return "DINDEX"
    return "ALTER"


def alter_change(pre: TableSchema, specs: Sequence[AlterSpec], version: int) -> DdlChange:
    """One ``ALTER TABLE`` statement with ``specs`` (one DDL event)."""
    specs = tuple(specs)
    post = replace(apply_specs(pre, specs, f"{pre.database}.{pre.table}"), version=version)
    sql = alter_table_sql(pre.database, pre.table, specs)
    return DdlChange(alter_ddl_type(specs), sql, pre.database, pre.table, post, pre)


def create_index_change(
    pre: TableSchema, name: str, columns: Sequence[str], unique: bool, version: int
) -> tuple[DdlChange, AlterSpec]:
    """``CREATE [UNIQUE] INDEX name ON t (...)`` (CINDEX) and the spec it amounts to."""
    spec = AddIndexSpec(name, tuple(columns), unique=unique)
    post = replace(apply_specs(pre, (spec,), f"{pre.database}.{pre.table}"), version=version)
    sql = create_index_sql(pre.database, pre.table, name, columns, unique)
    return DdlChange("CINDEX", sql, pre.database, pre.table, post, pre), spec


def drop_index_change(pre: TableSchema, name: str, version: int) -> tuple[DdlChange, AlterSpec]:
    """``DROP INDEX name ON t`` (DINDEX) and the spec it amounts to."""
    spec = DropIndexSpec(name)
    post = replace(apply_specs(pre, (spec,), f"{pre.database}.{pre.table}"), version=version)
    sql = drop_index_sql(pre.database, pre.table, name)
    return DdlChange("DINDEX", sql, pre.database, pre.table, post, pre), spec


def rename_table_change(pre: TableSchema, new_database: str, new_table: str, version: int) -> DdlChange:
    """One RENAME event. TiCDC splits ``RENAME TABLE a TO b, c TO d`` into one event per table,
    each with its own ``RENAME TABLE old TO new`` query (docs/reference-notes.md)."""
    post = replace(pre, database=new_database, table=new_table, version=version)
    sql = rename_table_sql([(pre.database, pre.table, new_database, new_table)])
    return DdlChange("RENAME", sql, new_database, new_table, post, pre)


def truncate_table_change(pre: TableSchema, new_table_id: int, version: int) -> DdlChange:
    """TRUNCATE: TiDB gives the table a new id."""
    post = replace(pre, table_id=new_table_id, version=version)
    return DdlChange("TRUNCATE", truncate_table_sql(pre.database, pre.table), pre.database, pre.table, post, pre)


def drop_table_change(pre: TableSchema) -> DdlChange:
    return DdlChange("ERASE", drop_table_sql(pre.database, pre.table), pre.database, pre.table, None, pre)


def create_database_change(database: str) -> DdlChange:
    return DdlChange("QUERY", create_database_sql(database), database, None, None)


def drop_database_change(database: str) -> DdlChange:
    return DdlChange("QUERY", drop_database_sql(database), database, None, None)
