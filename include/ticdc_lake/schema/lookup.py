"""Known table schemas, as the decoders and the binding of rows to versions look them up.

The bottom of the decode path: :class:`SchemaLookup` is what a decoder may ask, and
:class:`MemorySchemaLookup` the in-memory one the decode driver fills and broadcasts. This module
knows table schemas only (no events, no protocol), so ``schema/`` sits below ``protocols/``.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from ticdc_lake.schema.table_schema import TableSchema

if TYPE_CHECKING:
    from ticdc_lake.schema.ddl_facts import DdlKey, FoldedDdl
    from ticdc_lake.schema.offset_versions import OffsetVersions


class SchemaLookup(Protocol):
    """Known table schemas by exact (database, table, version)."""

    def get(self, database: str, table: str, version: int) -> TableSchema | None: ...

    def latest(self, database: str, table: str, at_ts: int) -> TableSchema | None:
        """The newest version not after ``at_ts`` (versions that are commit TSOs: DDL-derived schemas)."""
        ...


class MemorySchemaLookup:
    """A :class:`SchemaLookup` over an in-memory mapping (picklable, so Spark can broadcast it).

    Besides versions it holds what the decode driver derived for this run: the fold result of
    every DDL (:mod:`ticdc_lake.schema.ddl_fold`), which ``schema_facts`` gives to the DDL events,
    and ``infer_missing``: bind rows of tables with no known schema to one inferred from the rows
    (:mod:`ticdc_lake.schema.inference`) instead of leaving them unbound.
    """

    def __init__(self, schemas: Iterable[TableSchema] = ()) -> None:
        self._by_key: dict[tuple[str, str, int], TableSchema] = {}
        self._versions: dict[tuple[str, str], list[int]] = {}
        self._folded: dict[DdlKey, FoldedDdl] = {}
        self.infer_missing = False
        #: Offset-ordered runs (no commit TSO): how rows bind to versions by position (``schema.offset_versions``).
        self.offset_versions: OffsetVersions | None = None
        #: Per (database, table, version): the Iceberg type each column's values are carried in after
        #: decode (``ticdc_lake.carried_types``); a version not here carries its own column types.
        self.carried: dict[tuple[str, str, int], tuple[str, ...]] = {}
        for schema in schemas:
            self.add(schema)

    def add(self, schema: TableSchema) -> None:
        if schema.version is None:
            return
        key = (schema.database, schema.table, schema.version)
        if key not in self._by_key:
            insort(self._versions.setdefault((schema.database, schema.table), []), schema.version)
        self._by_key[key] = schema

    def get(self, database: str, table: str, version: int) -> TableSchema | None:
        return self._by_key.get((database, table, version))

    def latest(self, database: str, table: str, at_ts: int) -> TableSchema | None:
        versions = self._versions.get((database, table))
        if not versions:
            return None
        position = bisect_right(versions, at_ts)
        return self._by_key[(database, table, versions[position - 1])] if position else None

    def tables(self) -> list[tuple[str, str]]:
        """Every (database, table) with at least one version."""
        return list(self._versions)

    def knows_table(self, database: str, table: str) -> bool:
        return (database, table) in self._versions

    def add_folded(self, results: Mapping[DdlKey, FoldedDdl]) -> None:
        self._folded.update(results)

    def folded(self, key: DdlKey) -> FoldedDdl | None:
        """The fold result of the DDL with identity ``key`` (``ddl_fold.ddl_key``), if the driver folded it."""
        return self._folded.get(key)

    def as_mapping(self) -> Mapping[tuple[str, str, int], TableSchema]:
        return self._by_key

    def __len__(self) -> int:
        return len(self._by_key)
