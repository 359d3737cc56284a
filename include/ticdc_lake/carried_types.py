"""The Iceberg type each column's values are carried in after decode, per table schema version.

A typed row image (docs/typed-row-images.md) holds each value in the type its target column has,
which is not always the version's own type: a column that an incompatible MODIFY turned into a
string column (``on_incompatible_type_change: keep_as_string``) takes every later value as its
canonical text, and a later version may type it DOUBLE or DATETIME, whose canonical text a typed
value cannot give back. So the carried type of a column is what the DDL planner
(:mod:`ticdc_lake.apply.ddl_plan`, the rules apply follows) makes of the table's versions in
commit order, with ``keep_as_string`` assumed: under ``fail`` the table is held at the DDL until
the policy becomes ``keep_as_string``, and then the column is string.

Decode and apply derive the same types from the schema history alone. The history cannot always
tell (several DDLs of one commit TSO share one version); apply checks these types against the
target's actual columns, so this is the common case made exact, not a guarantee.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass

from ticdc_lake.apply.ddl_changes import (
    AddIcebergColumn,
    Change,
    ColumnToString,
    CreateTable,
    DropIcebergColumn,
    RenameIcebergColumn,
    WidenColumn,
)
from ticdc_lake.apply.ddl_plan import DdlEvent, IcebergColumn, plan_ddl, renamed_from
from ticdc_lake.config import Policies, TypeChangePolicy
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.schema.ddl_facts import DROPPED
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.schema.type_mapping import iceberg_type

log = logging.getLogger(__name__)

#: History events that are not DDLs: apply changes no Iceberg table for them.
_NOT_DDL = frozenset({"BOOTSTRAP", "inferred"})


@dataclass(frozen=True, slots=True)
class HistoryVersion:
    """One ``schema_history`` row, as far as the carried types need it."""

    #: The table's schema at this version (``version`` set).
    schema: TableSchema
    #: BOOTSTRAP, a DDL subtype (CREATE, ALTER, RENAME, ERASE, ...) or ``inferred``.
    event: str
    ddl_query: str | None = None
    dropped: bool = False


@dataclass(slots=True)
class _Table:
    schema: TableSchema
    #: Iceberg column types by lower-case name, as apply's plans leave them.
    types: dict[str, str]


def carried_types(
    versions: Iterable[HistoryVersion], policies: Policies | None = None, server_time_zone: str = "UTC"
) -> dict[tuple[str, str, int], tuple[str, ...]]:
    """Per (database, table, version), the carried Iceberg type of each of the version's columns,
    in column order. ``versions``: every history row of a pipeline (any order); ``policies``: the
    pipeline's, whose ``on_drop_column`` decides whether a dropped column keeps its type."""
    rules = (policies or Policies()).model_copy(update={"on_incompatible_type_change": TypeChangePolicy.KEEP_AS_STRING})
    tables: dict[tuple[str, str], _Table] = {}
    carried: dict[tuple[str, str, int], tuple[str, ...]] = {}
    for step in sorted(versions, key=_order):
        schema = step.schema
        name = (schema.database, schema.table)
        assert schema.version is not None
        state = _advance(step, tables, rules, server_time_zone)
        # A column Iceberg has no type for: the version carries no typed images (apply fails it).
        with suppress(TicdcLakeError):
            carried[(*name, schema.version)] = tuple(
                state.types.get(c.name.lower()) or _own_type(c, schema) for c in schema.columns
            )
        if step.dropped or step.event.upper() == "ERASE":
            tables.pop(name, None)  # a later CREATE of the name is a new table
        else:
            tables[name] = _Table(schema, state.types)
    return carried


#: (event, DDL text, dropped) of a version, as its ``schema_history`` row has them.
VersionEvent = tuple[str, str | None, bool]


def versions_of(
    schemas: Mapping[tuple[str, str, int], TableSchema], events: Mapping[tuple[str, str, int], VersionEvent]
) -> list[HistoryVersion]:
    """The :class:`HistoryVersion` of every schema of ``schemas`` (by (database, table, version)):
    its event from ``events`` where given; else a table's dropped marker (``extra["dropped"]``) is
    an ERASE and any other version (BOOTSTRAP, baseline, registry or inferred) is no DDL."""
    versions = []
    for key, schema in schemas.items():
        event = events.get(key)
        if event is None:
            event = ("ERASE", None, True) if schema.extra.get(DROPPED) else ("inferred", None, False)
        versions.append(HistoryVersion(schema, *event))
    return versions


def _order(step: HistoryVersion) -> tuple[int, int]:
    # A table's ``inferred`` version 0 comes first; at one version, a non-DDL before the DDL.
    assert step.schema.version is not None
    return step.schema.version, 0 if step.event in _NOT_DDL else 1


def _advance(step: HistoryVersion, tables: dict[tuple[str, str], _Table], rules: Policies, zone: str) -> _Table:
    """The table's state after ``step``: the planner's changes applied to the state before it."""
    schema = step.schema
    name = (schema.database, schema.table)
    event = step.event.upper()
    previous = tables.get(name)
    if event == "RENAME" or previous is None:
        source = renamed_from(_ddl_event(step, None)) if step.event not in _NOT_DDL else None
        if source is not None and source in tables:
            previous = tables.pop(source)
    if previous is None or event == "CREATE":
        return _Table(schema, _types_of(schema))
    if step.event in _NOT_DDL or event == "ERASE":
        return _Table(schema, dict(previous.types))
    current = [IcebergColumn(n, t) for n, t in previous.types.items()]
    try:
        plan = plan_ddl(_ddl_event(step, previous.schema), rules, current, zone)
    except (TicdcLakeError, ValueError) as exc:
        log.warning("carried types: %s.%s version %s: %s", *name, schema.version, exc)
        return _Table(schema, dict(previous.types))
    types = dict(previous.types)
    if plan.held is None:
        for change in plan.changes:
            types = _changed(types, change)
    return _Table(schema, types)


def _changed(types: dict[str, str], change: Change) -> dict[str, str]:
    if isinstance(change, CreateTable):
        return _types_of(change.schema)
    if isinstance(change, AddIcebergColumn | WidenColumn):
        types[change.name.lower()] = change.type
    elif isinstance(change, ColumnToString):
        types[change.name.lower()] = "string"
    elif isinstance(change, DropIcebergColumn):
        types.pop(change.name.lower(), None)
    elif isinstance(change, RenameIcebergColumn) and change.old.lower() in types:
        types[change.new.lower()] = types.pop(change.old.lower())
    return types


def _ddl_event(step: HistoryVersion, pre: TableSchema | None) -> DdlEvent:
    schema = step.schema
    assert schema.version is not None
    return DdlEvent(
        commit_ts=schema.version,
        ddl_type=step.event,
        query=step.ddl_query or "",
        database=schema.database,
        table=schema.table,
        pre=pre,
        post=schema,
    )


def _types_of(schema: TableSchema) -> dict[str, str]:
    """The Iceberg types of ``schema``'s columns that have one, by lower-case name."""
    types = {}
    for column in schema.columns:
        try:
            types[column.name.lower()] = _own_type(column, schema)
        except TicdcLakeError:
            continue
    return types


def _own_type(column: ColumnSchema, schema: TableSchema) -> str:
    return iceberg_type(column, table=f"{schema.database}.{schema.table}")
