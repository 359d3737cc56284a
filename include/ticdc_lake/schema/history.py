"""Schema history rows: one per (database, table, schema version), from DDL and BOOTSTRAP events.

At-least-once delivery and periodic BOOTSTRAP messages announce the same version many times;
they collapse to one row. A DDL's own record wins over a BOOTSTRAP of the same version (it has a
commit TSO and the DDL text); a ``preTableSchema`` only fills a version nothing else announced.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.schema.type_mapping import iceberg_type


@dataclass(frozen=True, slots=True)
class SchemaFact:
    """A table schema as one event announced it."""

    schema: TableSchema
    #: BOOTSTRAP, a DDL subtype (CREATE, ALTER, ...), or "inferred" for a pre-DDL schema.
    event: str
    commit_ts: int
    ddl_query: str | None
    topic: str
    partition: int
    offset: int

    def rank(self) -> tuple[int, int, str, int, int]:
        """Lower is better: a DDL record, then a BOOTSTRAP, then an inferred pre-DDL schema."""
        kind = 2 if self.event == "inferred" else 1 if self.event == "BOOTSTRAP" else 0
        return (kind, self.commit_ts, self.topic, self.partition, self.offset)


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
