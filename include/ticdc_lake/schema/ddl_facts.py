"""What the decode stage's first pass records of each DDL, and what the fold makes of it.

Plain, picklable data (travels from the Spark workers to the driver as JSON, and back in the
broadcast lookup); the fold itself is :mod:`ticdc_lake.schema.ddl_fold`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from ticdc_lake.schema.table_schema import TableSchema

#: ``TableSchema.extra`` key: True on the schema that marks a table dropped (version = drop TSO).
DROPPED = "dropped"
#: ``TableSchema.extra`` key: position of the DDL among the DDLs of its commit TSO (when > 0).
DDL_STEP = "ddl_step"

DdlKey = tuple[int, str | None, str | None, str | None]


def ddl_key(commit_ts: int, database: str | None, table: str | None, ddl_query: str | None) -> DdlKey:
    """The identity every copy of one DDL shares."""
    return (commit_ts, database, table, ddl_query)


@dataclass(frozen=True, slots=True)
class DdlFact:
    """One DDL event as the first pass of the decode stage saw it."""

    commit_ts: int
    database: str | None
    table: str | None
    ddl_type: str | None
    ddl_query: str | None
    topic: str
    partition: int
    offset: int
    index: int = 0
    #: Position among the distinct DDLs of this commit TSO in its partition (see :func:`number_ddls`).
    ordinal: int = 0
    table_id: int | None = None
    #: The full schemas the message carried (Simple, Debezium ``tableChanges``), version set.
    table_schema: TableSchema | None = None
    pre_table_schema: TableSchema | None = None

    @property
    def key(self) -> DdlKey:
        return ddl_key(self.commit_ts, self.database, self.table, self.ddl_query)

    def to_json(self) -> str:
        data: dict[str, Any] = {
            name: getattr(self, name) for name in self.__slots__ if name not in ("table_schema", "pre_table_schema")
        }
        data["table_schema"] = self.table_schema.to_json() if self.table_schema is not None else None
        data["pre_table_schema"] = self.pre_table_schema.to_json() if self.pre_table_schema is not None else None
        return json.dumps(data, sort_keys=True, ensure_ascii=False)

    @staticmethod
    def from_json(text: str) -> DdlFact:
        data = json.loads(text)
        for name in ("table_schema", "pre_table_schema"):
            data[name] = TableSchema.from_json(data[name]) if data[name] is not None else None
        return DdlFact(**data)


@dataclass(frozen=True, slots=True)
class FoldedDdl:
    """What one DDL did: the table after it, the table before it, or why it is unknown."""

    table_schema: TableSchema | None
    pre_table_schema: TableSchema | None
    error: str | None = None
    #: Tables the DDL dropped, as (database, table).
    dropped: tuple[tuple[str, str], ...] = ()


def number_ddls(facts: Iterable[DdlFact]) -> Iterator[DdlFact]:
    """``facts`` (in offset order within each partition) with their ``ordinal`` set.

    The ordinal is the position of the DDL's identity among the distinct identities of its commit
    TSO in its partition, in order of first appearance, so a re-delivered copy gets the ordinal of
    the first one.
    """
    seen: dict[tuple[str, int, int], list[DdlKey]] = {}
    for fact in facts:
        keys = seen.setdefault((fact.topic, fact.partition, fact.commit_ts), [])
        if fact.key not in keys:
            keys.append(fact.key)
        yield replace(fact, ordinal=keys.index(fact.key))
