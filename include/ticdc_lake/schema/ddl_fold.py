"""Fold the DDL of a decode run into table schemas, in commit order.

Canal-JSON, Open Protocol, Avro (TiDB extension) and Debezium without ``tableChanges`` send a DDL
as SQL text only. Its effect is a function of the schema in effect before it, so the DDL of a run
are first de-duplicated (Simple, Open and Debezium send each DDL to every partition, at-least-once
delivery adds copies), put in commit order, and applied one after the other, each to the result of
the previous one for its table. Every DDL gets a post schema (``version`` = its commit TSO,
``source`` = ``<protocol>-ddl``) and a pre schema, or the reason there is none (``error``), which
apply reports when it holds the table at that DDL.

The identity of a DDL is (commit TSO, database, table, SQL text): copies share it. Several DDLs
can share a commit TSO (a multi-table RENAME, batched CREATE TABLE); they keep the order in which
they appear in their partition (``ordinal``). When several of them change one table, they share
its version; ``extra["ddl_step"]`` (the position among the DDLs of that TSO) tells the last one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.ddl_facts import DDL_STEP, DROPPED, DdlFact, DdlKey, FoldedDdl, ddl_key, number_ddls
from ticdc_lake.schema.ddl_statements import (
    AlterTableStatement,
    CreateDatabaseStatement,
    CreateIndexStatement,
    CreateTableLikeStatement,
    CreateTableStatement,
    DdlStatement,
    DropDatabaseStatement,
    DropIndexStatement,
    DropTablesStatement,
    RenameTablesStatement,
    TableName,
    TruncateTableStatement,
    UnknownStatement,
)
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema

__all__ = ["DDL_STEP", "DROPPED", "DdlFact", "DdlKey", "FoldedDdl", "ddl_key", "fold_ddls", "number_ddls"]


def fold_ddls(facts: Iterable[DdlFact], schemas: MemorySchemaLookup, protocol: str) -> dict[DdlKey, FoldedDdl]:
    """Every distinct DDL of ``facts`` folded in commit order onto ``schemas``.

    ``schemas`` holds what is known before (schema history, BOOTSTRAP); the post schemas and the
    dropped-table markers are added to it, so rows after a DDL bind to the version it created.
    """
    unique: dict[DdlKey, DdlFact] = {}
    for fact in facts:
        best = unique.get(fact.key)
        if best is None or _place(fact) < _place(best):
            unique[fact.key] = fact
    ordered = sorted(unique.values(), key=_place)
    state = _Fold(schemas, protocol)
    results: dict[DdlKey, FoldedDdl] = {}
    step_of: dict[int, int] = {}
    for fact in ordered:
        step = step_of[fact.commit_ts] = step_of.get(fact.commit_ts, -1) + 1
        results[fact.key] = state.step(fact, step)
    return results


def _place(fact: DdlFact) -> tuple[int, int, str, int, int, int]:
    return (fact.commit_ts, fact.ordinal, fact.topic, fact.partition, fact.offset, fact.index)


class _Fold:
    """The schema in effect per table while folding, over what ``schemas`` knew before."""

    def __init__(self, schemas: MemorySchemaLookup, protocol: str) -> None:
        self.schemas = schemas
        self.source = f"{protocol}-ddl"
        #: (database, table) -> (TSO of the last step that touched it, schema or None if gone).
        self.touched: dict[tuple[str, str], tuple[int, TableSchema | None]] = {}

    def step(self, fact: DdlFact, step: int) -> FoldedDdl:
        if fact.table_schema is not None:
            carried = fact.table_schema
            if carried.version is None:
                carried = replace(carried, version=fact.commit_ts)
            pre = fact.pre_table_schema
            if pre is not None and pre.version is not None:
                self.schemas.add(pre)
            if pre is None and fact.ddl_type != "CREATE":
                pre = self._carried_pre(fact, carried)
            self._put(carried.database, carried.table, fact.commit_ts, carried)
            return FoldedDdl(carried, pre)
        if not fact.ddl_query:
            return FoldedDdl(None, fact.pre_table_schema)
        from ticdc_lake.schema.ddl_parser import parse_ddl  # sqlglot loads only where DDL text is met

        changes: list[tuple[TableSchema | None, TableSchema | None]] = []
        dropped: list[tuple[str, str]] = []
        for statement in parse_ddl(fact.ddl_query, fact.database):
            try:
                self._statement(statement, fact, step, changes, dropped)
            except SchemaError as exc:
                pre = fact.pre_table_schema or (changes[0][0] if changes else None)
                if pre is None and fact.database is not None and fact.table is not None:
                    pre = self._current((fact.database, fact.table), fact.commit_ts)
                return FoldedDdl(None, pre, str(exc), tuple(dropped))
        pre, post = _for_event(changes, fact)
        return FoldedDdl(post, fact.pre_table_schema or pre, None, tuple(dropped))

    def _carried_pre(self, fact: DdlFact, carried: TableSchema) -> TableSchema | None:
        """The table before a DDL whose message carried only the schema after it (Debezium
        ``tableChanges``): the one its text names (the old name for a RENAME), as in effect before."""
        name = (carried.database, carried.table)
        if fact.ddl_query:
            from ticdc_lake.schema.ddl_parser import parse_ddl

            for statement in parse_ddl(fact.ddl_query, fact.database)[:1]:
                if isinstance(statement, RenameTablesStatement):
                    olds = [old for old, new in statement.renames if new.table.lower() == carried.table.lower()]
                    name = _resolved(olds[0], fact) if olds else name
                elif isinstance(statement, AlterTableStatement):
                    name = _resolved(statement.table, fact)
        return self._current(name, fact.commit_ts)

    # ------------------------------------------------------------ statements

    def _statement(
        self,
        statement: DdlStatement,
        fact: DdlFact,
        step: int,
        changes: list[tuple[TableSchema | None, TableSchema | None]],
        dropped: list[tuple[str, str]],
    ) -> None:
        ts = fact.commit_ts
        from ticdc_lake.schema.ddl_parser import apply_alter, held_error

        if isinstance(statement, UnknownStatement):
            if statement.may_change_schema:
                raise held_error(statement.sql, statement.reason)
            return
        if isinstance(statement, CreateDatabaseStatement):
            return
        if isinstance(statement, DropDatabaseStatement):
            for database, table in self._tables_of(statement.database, ts):
                changes.append((self._drop(database, table, ts), None))
                dropped.append((database, table))
            return
        if isinstance(statement, CreateTableStatement):
            if statement.if_not_exists and self._current(_split(statement.schema), ts) is not None:
                return
            changes.append((None, self._new(statement.schema, fact, step)))
            return
        if isinstance(statement, CreateTableLikeStatement):
            source = self._require(statement.source, ts, statement.sql)
            name = _resolved(statement.table, fact)
            if statement.if_not_exists and self._current(name, ts) is not None:
                return
            copy = replace(source, database=name[0], table=name[1], table_id=None, extra=_without_marks(source.extra))
            changes.append((None, self._new(copy, fact, step)))
            return
        if isinstance(statement, AlterTableStatement | CreateIndexStatement | DropIndexStatement):
            base = self._require(statement.table, ts, statement.sql)
            post = apply_alter(base, statement)
            if (post.database, post.table) != (base.database, base.table):
                self._put(base.database, base.table, ts, None)  # ALTER TABLE ... RENAME TO
            changes.append((base, self._new(post, fact, step, keep_id=base.table_id)))
            return
        if isinstance(statement, RenameTablesStatement):
            for old, new in statement.renames:
                base = self._require(old, ts, statement.sql)
                target = _resolved(new, fact, base.database)
                self._put(base.database, base.table, ts, None)
                moved = replace(base, database=target[0], table=target[1])
                changes.append((base, self._new(moved, fact, step, keep_id=base.table_id)))
            return
        if isinstance(statement, TruncateTableStatement):
            for truncated in statement.tables:
                base = self._require(truncated, ts, statement.sql)
                changes.append((base, self._new(base, fact, step, keep_id=None)))
            return
        assert isinstance(statement, DropTablesStatement)
        for gone in statement.tables:
            last = self._current(_resolved(gone, fact), ts)
            if last is None:
                continue  # nothing known to drop: nothing to hold either
            changes.append((self._drop(last.database, last.table, ts), None))
            dropped.append((last.database, last.table))

    # ------------------------------------------------------------ state

    def _new(self, schema: TableSchema, fact: DdlFact, step: int, keep_id: int | None = None) -> TableSchema:
        """``schema`` as the version this DDL creates, put in effect."""
        is_event_table = (schema.database, schema.table) == (fact.database, fact.table)
        table_id = fact.table_id if is_event_table and fact.table_id is not None else keep_id or schema.table_id
        extra = _without_marks(schema.extra)
        if step:
            extra[DDL_STEP] = step
        post = replace(schema, version=fact.commit_ts, source=self.source, table_id=table_id, extra=extra)
        self._put(post.database, post.table, fact.commit_ts, post)
        return post

    def _drop(self, database: str, table: str, ts: int) -> TableSchema | None:
        """Mark the table dropped (a schema with ``extra["dropped"]`` at ``ts``); returns its last schema."""
        last = self._current((database, table), ts)
        if last is not None:
            marker = replace(last, version=ts, source=self.source, extra={**_without_marks(last.extra), DROPPED: True})
            self.schemas.add(marker)
        self.touched[(database, table)] = (ts, None)
        return last

    def _put(self, database: str, table: str, ts: int, schema: TableSchema | None) -> None:
        self.touched[(database, table)] = (ts, schema)
        if schema is not None:
            self.schemas.add(schema)

    def _current(self, name: tuple[str, str], ts: int) -> TableSchema | None:
        """The schema in effect just before a DDL at ``ts``: this fold's last step or the newer known version.

        Names compare exactly, else case-insensitively (TiDB's default ``lower_case_table_names=2``).
        """
        if name not in self.touched and not self.schemas.knows_table(*name):
            folded = (name[0].lower(), name[1].lower())
            names = [*self.touched, *self.schemas.tables()]
            name = next((n for n in names if (n[0].lower(), n[1].lower()) == folded), name)
        known = self.schemas.latest(name[0], name[1], ts - 1) if ts > 0 else None
        if known is not None and known.extra.get(DROPPED):
            known = None
        touched = self.touched.get(name)
        if touched is None:
            return known
        if known is not None and known.version is not None and known.version > touched[0]:
            return known
        return touched[1]

    def _require(self, name: TableName, ts: int, sql: str) -> TableSchema:
        if name.database is None:
            raise SchemaError(f"cannot apply DDL {sql!r}: it names table {name.table!r} without a database")
        schema = self._current((name.database, name.table), ts)
        if schema is None:
            raise SchemaError(
                f"cannot apply DDL {sql!r} at commit ts {ts}: no schema of table {name} is known before it (the "
                "pipeline started after the table was created, or the table was dropped or renamed); add its SHOW "
                "CREATE TABLE statement to the pipeline's schema_baseline_uri folder, or re-create the table upstream"
            )
        return schema

    def _tables_of(self, database: str, ts: int) -> list[tuple[str, str]]:
        names = {name for name in self.schemas.tables() if name[0] == database}
        names.update(name for name in self.touched if name[0] == database)
        return sorted(name for name in names if self._current(name, ts) is not None)


def _split(schema: TableSchema) -> tuple[str, str]:
    return (schema.database, schema.table)


def _resolved(name: TableName, fact: DdlFact, default: str | None = None) -> tuple[str, str]:
    return (name.database or default or fact.database or "", name.table)


def _without_marks(extra: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in extra.items() if k not in (DROPPED, DDL_STEP)}


def _for_event(
    changes: list[tuple[TableSchema | None, TableSchema | None]], fact: DdlFact
) -> tuple[TableSchema | None, TableSchema | None]:
    """The (pre, post) of the event's own table among the statement's changes.

    RENAME TABLE a TO b reaches us as an event of table b: pre is a's schema, post b's.
    """
    if not changes:
        return None, None
    mine = [
        (pre, post)
        for pre, post in changes
        if (post is not None and _split(post) == (fact.database, fact.table))
        or (post is None and pre is not None and _split(pre) == (fact.database, fact.table))
    ]
    chosen = mine or changes
    return chosen[0][0], chosen[-1][1]
