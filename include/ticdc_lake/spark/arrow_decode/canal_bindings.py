"""Schema versions of a group of Canal-JSON rows (one table, one ``mysqlType`` text), found for all
of them at once, and the naming of their bare ENUM/SET numbers by the version (``schema_facts._bind_schema``).

With the TiDB extension a row binds to ``lookup.latest(database, table, commitTs)``
(:func:`tso_bindings`). Without ``codec.enable_tidb_extension`` a Canal-JSON row has commit TSO 0 and
``facts.offset_ordered``; ``schema_facts._bind_schema`` binds it by position, and
:func:`untimed_bindings` gives each row of a group (one table, one ``mysqlType`` text, so one set of
column names) the same answer, asking the same functions the Python decoder asks:

* in an offset-ordered decode run (the lookup has ``offset_versions``, ``schema_facts._by_columns``):
  ``untimed_ddl.untimed_schema`` of the row's columns, partition and offset. In a partition other
  than 0 the offset does not matter (one call for all such rows); in partition 0 the answer is the
  newest version not after the offset that has every column and is not a dropped table's (walked down
  from ``latest(offset)``), which only moves forward with the offset, so the rows are sorted by
  offset and a part whose first and last rows get the same answer is bound whole (else split in
  halves). Where it has no answer: the row is PENDING in the Python decoder if the table is known,
  bound to an inferred schema if the lookup says ``infer_missing`` (both never taken), else left
  unbound (READY, no schema version);
* otherwise: ``lookup.latest(database, table, 0)`` for every row; none: unbound where the Python
  decoder leaves it so (``schema_facts.infers_schema`` false), never taken where it infers a schema.

Positions are read from a :class:`~ticdc_lake.landing.message_batch.MessageBatch`'s columns, so no
``RawMessage`` is made for them (:func:`positions`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.events import RawMessage
from ticdc_lake.landing.message_batch import MessageBatch
from ticdc_lake.protocols.canal_values import ColumnType
from ticdc_lake.protocols.schema_facts import infers_schema
from ticdc_lake.schema.inference import MISSING_FACTS
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.schema.untimed_ddl import DDL_PARTITION, untimed_schema
from ticdc_lake.spark.arrow_decode.canal_columns import naming_reader
from ticdc_lake.spark.arrow_decode.debezium_columns import Canonical, ColumnReader

#: (indexes of the rows, the schema they bind to, or None: unbound).
Binding = tuple[np.ndarray, TableSchema | None]


def positions(messages: Sequence[RawMessage]) -> tuple[np.ndarray, np.ndarray]:
    """(partition, offset) of every message, as int64 arrays."""
    if isinstance(messages, MessageBatch):
        partitions = messages.partitions.to_numpy(zero_copy_only=False).astype(np.int64)
        offsets = messages.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        return partitions, offsets
    count = len(messages)
    partitions = np.fromiter((m.partition for m in messages), dtype=np.int64, count=count)
    offsets = np.fromiter((m.offset for m in messages), dtype=np.int64, count=count)
    return partitions, offsets


def untimed_bindings(
    lookup: MemorySchemaLookup,
    database: str,
    table: str,
    columns: Collection[str],
    partitions: np.ndarray,
    offsets: np.ndarray,
    candidates: np.ndarray,
) -> list[Binding]:
    """The ``candidates`` (indexes into ``partitions``/``offsets``) by what they bind to (module
    docstring); rows the Python decoder makes PENDING or binds to an inferred schema are left out."""
    if len(candidates) == 0:
        return []
    if getattr(lookup, "offset_versions", None) is None:
        schema = lookup.latest(database, table, 0)
        if schema is not None:
            return [(candidates, schema)] if schema.version is not None else []
        return [(candidates, None)] if not infers_schema(lookup, database, table) else []
    unbound = not lookup.knows_table(database, table) and not getattr(lookup, "infer_missing", False)
    bound: dict[int, tuple[list[np.ndarray], TableSchema | None]] = {}

    def add(part: np.ndarray, schema: TableSchema | None) -> None:
        if schema is not None or unbound:
            bound.setdefault(id(schema), ([], schema))[0].append(part)

    others = candidates[partitions[candidates] != DDL_PARTITION]
    if len(others):
        add(others, untimed_schema(database, table, columns, int(partitions[others[0]]), 0, lookup))
    first = candidates[partitions[candidates] == DDL_PARTITION]
    first = first[np.argsort(offsets[first], kind="stable")]

    def split(part: np.ndarray) -> None:
        low = untimed_schema(database, table, columns, DDL_PARTITION, int(offsets[part[0]]), lookup)
        high = (
            low
            if len(part) == 1
            else untimed_schema(database, table, columns, DDL_PARTITION, int(offsets[part[-1]]), lookup)
        )
        if low is high:
            add(part, low)
            return
        half = len(part) // 2
        split(part[:half])
        split(part[half:])

    if len(first):
        split(first)
    return [(np.sort(np.concatenate(parts)), schema) for parts, schema in bound.values()]


def tso_bindings(
    lookup: MemorySchemaLookup, database: str, table: str, commit_ts: np.ndarray, candidates: np.ndarray
) -> list[tuple[np.ndarray, TableSchema]]:
    """The ``candidates`` by the schema version they bind to (``lookup.latest`` at their commit TSO):
    the rows in commit order, cut in halves until both ends of a part bind to the same version
    (versions only grow with the commit TSO); rows bound to none are left out."""
    bound: dict[int, tuple[list[np.ndarray], TableSchema]] = {}

    def split(part: np.ndarray) -> None:
        low = lookup.latest(database, table, int(commit_ts[part[0]]))
        high = low if len(part) == 1 else lookup.latest(database, table, int(commit_ts[part[-1]]))
        if low is high:
            if low is not None:
                bound.setdefault(id(low), ([], low))[0].append(part)
            return
        half = len(part) // 2
        split(part[:half])
        split(part[half:])

    split(candidates[np.argsort(commit_ts[candidates], kind="stable")])
    return [(np.sort(np.concatenate(parts)), schema) for parts, schema in bound.values()]


def named_readers(
    columns: dict[str, tuple[ColumnType, ColumnReader]], schema: TableSchema | None
) -> dict[str, ColumnReader]:
    """The group's twins with the naming of bare ENUM/SET numbers by ``schema`` (``schema_facts._bind_schema``):
    a number no column of ``schema`` (or no schema) names makes the Python decoder's row PENDING."""
    readers: dict[str, ColumnReader] = {}
    for name, (column, reader) in columns.items():
        if not (column.enum_or_set and column.members is None):
            readers[name] = reader
            continue
        described = schema.column(name) if schema is not None else None
        if (
            described is not None
            and described.elements is None
            and schema is not None
            and schema.extra.get(MISSING_FACTS)
        ):
            readers[name] = reader  # members unknown (an inferred schema): the numbers are the values
            continue
        naming = naming_reader(described) if described is not None else None
        readers[name] = ColumnReader(reader.arrow_type, _then(reader.canonical, naming))
    return readers


def _then(first: Canonical, naming: Canonical | None) -> Canonical:
    """``first``, then ``naming`` on its text; without ``naming`` only null values are vouched for."""

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        texts, ok = first(values)
        if naming is None:
            return texts, pc.and_(ok, texts.is_null())
        named, named_ok = naming(texts)
        return named, pc.and_(ok, named_ok)

    return canonical
