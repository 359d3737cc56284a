"""What TiCDC's ``model.DDLEvent`` holds for a simulated DDL: the input of every DDL encoder.

TiCDC does not encode the DDL job as TiDB ran it. ``schemaStorage.BuildDDLEvents`` and
``DDLEvent.FromJobWithArgs`` (``cdc/entry/schema_storage.go``, ``cdc/model/sink.go``) decide:

* ``Query``: ``DROP TABLE`` is rebuilt as ``DROP TABLE `db`.`t``` (one event per dropped table);
  a multi-table ``RENAME TABLE a TO b, c TO d`` becomes one event per table with the query
  ``RENAME TABLE `olddb`.`a` TO `newdb`.`b``` and the action ``ActionRenameTable``;
* ``TableInfo``: the table after the DDL; for DROP TABLE the dropped table (the job's binlog table
  info); for schema-level DDL only the database name (``TableInfo.TableInfo`` nil, so Simple sends
  no ``tableSchema`` and Debezium no ``tableChanges``);
* ``PreTableInfo``: the table before (``Snapshot.PreTableInfo``); none for CREATE TABLE and
  schema-level DDL.

Encoders take names, query, action and schemas from here, never from the ``DdlChange`` directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.model import DdlChange
from ticdc_sim.sql_text import rename_pairs
from ticdc_sim.tidb_ddl import (
    CREATE_SCHEMA,
    CREATE_TABLE,
    DROP_SCHEMA,
    DROP_TABLE,
    MODIFY_SCHEMA_CHARSET,
    RENAME_TABLE,
    ddl_action,
)

_SCHEMA_ACTIONS = frozenset({CREATE_SCHEMA, DROP_SCHEMA, MODIFY_SCHEMA_CHARSET})


@dataclass(frozen=True, slots=True)
class TicdcDdlEvent:
    action: int
    query: str
    #: ``TableInfo.TableName``: the table the DDL leaves (the dropped one for DROP TABLE); "" for
    #: schema-level DDL.
    database: str
    table: str
    #: ``TableInfo.TableInfo``; None for schema-level DDL.
    table_schema: TableSchema | None
    #: ``PreTableInfo``; None for CREATE TABLE and schema-level DDL.
    pre_table_schema: TableSchema | None


def ticdc_event(ddl: DdlChange) -> TicdcDdlEvent:
    """The DDL event TiCDC's owner hands its encoders for ``ddl``; a SchemaError names what is missing."""
    action = ddl_action(ddl)
    where = f"DDL {ddl.sql!r} on {ddl.database}.{ddl.table}"
    if action in _SCHEMA_ACTIONS:
        return TicdcDdlEvent(action, ddl.sql, ddl.database, "", None, None)
    if action == DROP_TABLE:
        dropped = ddl.pre_table_schema or ddl.table_schema
        database = dropped.database if dropped else ddl.database
        table = dropped.table if dropped else ddl.table
        if not table:
            raise SchemaError(f"{where}: the simulator needs the dropped table's name")
        query = f"DROP TABLE `{database}`.`{table}`"
        return TicdcDdlEvent(action, query, database, table, dropped, ddl.pre_table_schema)
    after = ddl.table_schema
    if after is None:
        raise SchemaError(f"{where}: the simulator needs the table schema after the DDL")
    before = None if action == CREATE_TABLE else ddl.pre_table_schema
    query = ddl.sql
    if action == RENAME_TABLE and len(rename_pairs(ddl.sql)) > 1:
        if before is None:
            raise SchemaError(f"{where}: the simulator needs the table schema before the rename")
        query = f"RENAME TABLE `{before.database}`.`{before.table}` TO `{after.database}`.`{after.table}`"
    return TicdcDdlEvent(action, query, after.database, after.table, after, before)
