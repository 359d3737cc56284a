"""One upstream table across its whole life: names, schema versions, DDLs and row history.

A lineage is what RENAME TABLE moves (rows and history follow the table) and what DROP TABLE
ends; a CREATE of a dropped name starts a new lineage. TRUNCATE stays in the lineage (the name
and history continue; the rows end at its TSO and the schema gets a new table id).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TypeVar

from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.column_types import Value
from ticdc_sim.ddl_specs import AlterSpec

Row = dict[str, Value]
Key = tuple[Value, ...]
TableRef = tuple[str, str]
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class RowVersion:
    """A row as of ``ts`` (None: deleted). ``origin`` is the row's last DML write, (commit_ts, image
    in the schema of then); a DDL that rewrites the row keeps it, so the Iceberg oracle can replay
    the DDLs after the write under its policies."""

    ts: int
    row: Row | None
    origin: tuple[int, Row] | None = None


@dataclass(frozen=True, slots=True)
class DdlRecord:
    """A DDL of this lineage with the ALTER specs that drove it (empty for other DDL)."""

    ts: int
    ddl_type: str
    sql: str
    specs: tuple[AlterSpec, ...]
    pre: TableSchema | None
    post: TableSchema | None


@dataclass(slots=True)
class Lineage:
    lineage_id: int
    created_ts: int
    key_columns: tuple[str, ...]
    #: (from_ts, (database, table)), ascending; RENAME appends.
    names: list[tuple[int, TableRef]]
    #: (from_ts, schema), ascending; every schema-changing DDL appends.
    schemas: list[tuple[int, TableSchema]]
    ddls: list[DdlRecord] = field(default_factory=list)
    #: key -> versions, ts ascending.
    versions: dict[Key, list[RowVersion]] = field(default_factory=dict)
    dropped_ts: int | None = None
    #: The next hidden row id of a keyless table (its rows are keyed ``(rowid,)``).
    next_rowid: int = 1

    @property
    def schema(self) -> TableSchema:
        return self.schemas[-1][1]

    @property
    def name(self) -> TableRef:
        return self.names[-1][1]

    def exists_at(self, tso: int) -> bool:
        return self.created_ts <= tso and (self.dropped_ts is None or tso < self.dropped_ts)

    def name_at(self, tso: int) -> TableRef | None:
        """The table's name at ``tso``; None when it did not exist then."""
        if not self.exists_at(tso):
            return None
        return _last_at(self.names, tso)

    def schema_at(self, tso: int) -> TableSchema | None:
        if not self.exists_at(tso):
            return None
        return _last_at(self.schemas, tso)

    def current(self, key: Key) -> Row | None:
        history = self.versions.get(key)
        return history[-1].row if history else None

    def current_version(self, key: Key) -> RowVersion | None:
        history = self.versions.get(key)
        return history[-1] if history else None

    def live_keys(self) -> list[Key]:
        return [k for k, history in self.versions.items() if history[-1].row is not None]

    def versions_at(self, tso: int) -> list[tuple[Key, RowVersion]]:
        """The live row versions as of ``tso`` (ignoring a drop), in history order."""
        result: list[tuple[Key, RowVersion]] = []
        for key, history in self.versions.items():
            position = bisect.bisect_right(history, tso, key=lambda version: version.ts)
            if position and history[position - 1].row is not None:
                result.append((key, history[position - 1]))
        return result

    def append(self, key: Key, version: RowVersion) -> None:
        self.versions.setdefault(key, []).append(version)


def _last_at(entries: list[tuple[int, _T]], tso: int) -> _T | None:
    position = bisect.bisect_right(entries, tso, key=lambda entry: entry[0])
    return entries[position - 1][1] if position else None


def key_sort_value(key: Key) -> tuple[tuple[int, object], ...]:
    """A total order of keys (NULL never appears in a key, but keep the sort total anyway)."""
    return tuple((0, v) if v is not None else (1, 0) for v in key)
