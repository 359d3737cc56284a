"""DDL and rows without commit TSO (Canal-JSON without the TiDB extension): versions by offset.

TiCDC sends a Canal-JSON DDL to partition 0 of its topic only, after every row before it and
before every row after it; without the extension it carries commit TSO 0. So:

* **DDL**: the copies of one DDL share its identity (TSO 0, database, table, SQL text). Each
  distinct DDL is folded (``schema.ddl_fold``) at a pseudo commit TSO, the offset of its first
  copy + 1, which is then the version it creates: versions grow with the offsets of partition 0
  and the fold finds the schema before a DDL as the newest version not after it, across runs.
  A ``CREATE TABLE`` of a table that is known and not dropped is a re-sent copy (TiDB refuses to
  create an existing table): it keeps the known version.
* **rows**: a row binds to the newest version that has all of its columns (Canal-JSON rows name
  every column), starting in partition 0 from the version in effect at the row's offset, in other
  partitions (no offset relation to the DDL) from the table's newest version. A row written
  before an ADD COLUMN but read after it binds to the newer version (the column is NULL, as
  upstream), so versions only move forward along a partition, also for rows re-sent by TiCDC.

Limits: two DDLs with the same text (ADD, DROP, then ADD again of one column) share the identity
of the first; a re-sent ALTER in a later run is folded again and fails (logged, no version).
After a DROP COLUMN, rows of other partitions written before it bind to an older version than
the rows after it, which apply refuses to interleave (the table is held).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace

from ticdc_lake.schema.ddl_facts import DROPPED, DdlFact, DdlKey, FoldedDdl
from ticdc_lake.schema.lookup import MemorySchemaLookup, SchemaLookup
from ticdc_lake.schema.table_schema import TableSchema

#: The partition TiCDC writes Canal-JSON DDL to.
DDL_PARTITION = 0
_NEWEST = 1 << 64


def fold_untimed(facts: Iterable[DdlFact], lookup: MemorySchemaLookup, protocol: str) -> dict[DdlKey, FoldedDdl]:
    """Every distinct DDL of ``facts`` (all at commit TSO 0) folded at its first copy's offset + 1."""
    from ticdc_lake.schema.ddl_fold import fold_ddls

    first: dict[DdlKey, DdlFact] = {}
    for fact in facts:
        seen = first.get(fact.key)
        if seen is None or (fact.partition, fact.offset, fact.index) < (seen.partition, seen.offset, seen.index):
            first[fact.key] = fact
    results: dict[DdlKey, FoldedDdl] = {}
    pseudo: dict[DdlKey, DdlFact] = {}
    for key, fact in first.items():
        known = _existing(fact, lookup)
        if known is not None:
            results[key] = FoldedDdl(known, None)
            continue
        pseudo[key] = replace(fact, commit_ts=fact.offset + 1, ordinal=0)
    folded = fold_ddls(pseudo.values(), lookup, protocol)
    for key, fact in pseudo.items():
        results[key] = folded[fact.key]
    return results


def _existing(fact: DdlFact, lookup: MemorySchemaLookup) -> TableSchema | None:
    """The known schema a re-sent ``CREATE TABLE`` names, else None."""
    if fact.ddl_type != "CREATE" or fact.database is None or fact.table is None:
        return None
    known = lookup.latest(fact.database, fact.table, _NEWEST)
    return known if known is not None and not known.extra.get(DROPPED) else None


def untimed_schema(
    database: str, table: str, columns: Collection[str], partition: int, offset: int, schemas: SchemaLookup
) -> TableSchema | None:
    """The schema a Canal-JSON row without commit TSO binds to (module docstring), or None: the row
    of ``database.table`` at ``offset`` of ``partition`` names ``columns``."""
    names = set(columns)
    bound = offset if partition == DDL_PARTITION else _NEWEST
    schema = schemas.latest(database, table, bound)
    while schema is not None and schema.version is not None:
        if not schema.extra.get(DROPPED) and names <= {c.name for c in schema.columns}:
            return schema
        if schema.version <= 0:
            return None
        schema = schemas.latest(database, table, schema.version - 1)
    return None
