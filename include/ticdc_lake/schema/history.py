"""Schema history rows: one per (database, table, schema version), from DDL and BOOTSTRAP events.

At-least-once delivery and periodic BOOTSTRAP messages announce the same version many times;
they collapse to one row. A DDL's own record wins over a BOOTSTRAP of the same version (it has a
commit TSO and the DDL text); a ``preTableSchema`` only fills a version nothing else announced.
Several DDLs of one commit TSO that change one table share its version: the last one
(``extra["ddl_step"]``, see ``ddl_fold``) is the row. A DROP TABLE gives a row that marks the
table dropped (``event`` ERASE, ``dropped`` true, the last columns, version = the drop's TSO).
Tables met mid-stream get a version-0 row (``event`` inferred) from the baseline folder
(``source`` baseline) or from their rows (``source`` inferred-from-rows); avro tables one row per
value writer schema (``source`` avro-registry).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ticdc_lake.schema.ddl_facts import DDL_STEP, DROPPED
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.schema.type_mapping import iceberg_type


@dataclass(frozen=True, slots=True)
class SchemaFact:
    """A table schema as one event announced it."""

    schema: TableSchema
    #: BOOTSTRAP, a DDL subtype (CREATE, ALTER, ERASE, ...), or "inferred" (a pre-DDL schema, a
    #: baseline statement, rows, a registry schema: ``schema.source`` says which).
    event: str
    commit_ts: int
    ddl_query: str | None
    topic: str | None
    partition: int | None
    offset: int | None
    dropped: bool = False

    def rank(self) -> tuple[int, int, int, str, int, int]:
        """Lower is better: a DDL record (the last of its TSO), then a BOOTSTRAP, then inferred."""
        kind = 2 if self.event == "inferred" else 1 if self.event == "BOOTSTRAP" else 0
        step = int(self.schema.extra.get(DDL_STEP, 0))
        return (kind, -step, self.commit_ts, self.topic or "", self.partition or 0, self.offset or 0)


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    fact: SchemaFact

    @property
    def key(self) -> tuple[str, str, int]:
        s = self.fact.schema
        assert s.version is not None
        return (s.database, s.table, s.version)

    def columns_json(self) -> str:
        return json.dumps(
            [
                {
                    "name": c.name,
                    "type": c.type_text(),
                    "mysql_type": c.mysql_type,
                    "length": c.length,
                    "scale": c.scale,
                    "fsp": c.fsp,
                    "unsigned": c.unsigned,
                    "nullable": c.nullable,
                    "default": c.default,
                    "charset": c.charset,
                    "collation": c.collation,
                    "elements": list(c.elements) if c.elements is not None else None,
                }
                for c in self.fact.schema.columns
            ],
            ensure_ascii=False,
        )

    def indexes_json(self) -> str:
        return json.dumps(
            [
                {"name": i.name, "columns": list(i.columns), "primary": i.primary, "unique": i.unique}
                for i in self.fact.schema.indexes
            ],
            ensure_ascii=False,
        )

    def iceberg_schema_json(self) -> str:
        return json.dumps(
            [{"name": c.name, "type": iceberg_type(c), "required": False} for c in self.fact.schema.columns],
            ensure_ascii=False,
        )


def event_facts(
    kind: str,
    ddl_type: str | None,
    ddl_query: str | None,
    commit_ts: int,
    position: tuple[str | None, int | None, int | None],
    table_schema: TableSchema | None,
    pre_table_schema: TableSchema | None,
) -> list[SchemaFact]:
    """The schema facts one DDL/BOOTSTRAP row of ``change_events`` states.

    A DDL that dropped its table (no post schema, a pre schema, DROP TABLE/DATABASE text) gives
    the dropped marker: the last columns at the drop's TSO, ``dropped`` true.
    """
    event = "BOOTSTRAP" if kind == "BOOTSTRAP" else (ddl_type or "QUERY")
    facts = []
    if table_schema is not None:
        dropped = bool(table_schema.extra.get(DROPPED))
        facts.append(SchemaFact(table_schema, event, commit_ts, ddl_query, *position, dropped=dropped))
    elif pre_table_schema is not None and kind == "DDL" and _drops(ddl_type, ddl_query):
        extra = {**pre_table_schema.extra, DROPPED: True}
        marker = replace(pre_table_schema, version=commit_ts, extra=extra)
        facts.append(SchemaFact(marker, "ERASE", commit_ts, ddl_query, *position, dropped=True))
    if pre_table_schema is not None:
        facts.append(SchemaFact(pre_table_schema, "inferred", commit_ts, None, *position))
    return facts


def _drops(ddl_type: str | None, ddl_query: str | None) -> bool:
    if ddl_type == "ERASE":
        return True
    if not ddl_query:
        return False
    from ticdc_lake.schema.ddl_parser import parse_ddl
    from ticdc_lake.schema.ddl_statements import DropDatabaseStatement, DropTablesStatement

    return any(isinstance(s, DropTablesStatement | DropDatabaseStatement) for s in parse_ddl(ddl_query, None))


def collapse(facts: Iterable[SchemaFact]) -> list[HistoryEntry]:
    """One entry per (database, table, version): the best-ranked fact, in version order."""
    best: dict[tuple[str, str, int], SchemaFact] = {}
    for fact in facts:
        s = fact.schema
        if s.version is None:
            continue
        key = (s.database, s.table, s.version)
        if key not in best or fact.rank() < best[key].rank():
            best[key] = fact
    return [HistoryEntry(best[k]) for k in sorted(best)]


def database_drop_facts(
    database: str,
    commit_ts: int,
    ddl_query: str | None,
    position: tuple[str | None, int | None, int | None],
    versions: Iterable[TableSchema],
) -> list[SchemaFact]:
    """DROP DATABASE drops every table in it: a dropped marker (event ERASE) for each table of
    ``database`` whose newest version before ``commit_ts`` is not dropped already.

    ``versions``: the known schema versions (history and this run's facts) of any tables.
    """
    newest: dict[str, TableSchema] = {}
    for schema in versions:
        if schema.database != database or schema.version is None or schema.version >= commit_ts:
            continue
        if schema.table not in newest or schema.version > (newest[schema.table].version or 0):
            newest[schema.table] = schema
    facts = []
    for schema in newest.values():
        if schema.extra.get(DROPPED):
            continue
        marker = replace(schema, version=commit_ts, extra={**schema.extra, DROPPED: True})
        facts.append(SchemaFact(marker, "ERASE", commit_ts, ddl_query, *position, dropped=True))
    return facts
