"""``canal_bindings.untimed_bindings`` against the Python decoder's binding of each row alone.

Rows without commit TSO bind by position (``schema_facts._bind_schema``: ``untimed_ddl.untimed_schema``
in an offset-ordered run, else the version at TSO 0); the vector decoder finds the answer for a whole
group by sorting partition 0 by offset and splitting where the answer changes. Here random tables
(versions with and without the row's columns, dropped ones) and random positions check that every
row gets exactly the schema object (or unbound) the per-row rule gives, and that rows the Python
decoder makes PENDING or binds to an inferred schema are left out.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from ticdc_lake.schema.ddl_facts import DROPPED
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.offset_versions import OffsetVersions
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.schema.untimed_ddl import untimed_schema
from ticdc_lake.spark.arrow_decode.canal_bindings import untimed_bindings

ROW_COLUMNS = ("id", "a", "b")
UNBOUND = "unbound"
LEFT_OUT = "left out"


def _lookup(rng: random.Random, *, ordered: bool, infer_missing: bool) -> MemorySchemaLookup:
    known = MemorySchemaLookup()
    for version in sorted(rng.sample(range(0, 400), rng.randint(0, 8))):
        names = ROW_COLUMNS if rng.random() < 0.6 else ("id", "a")
        extra = {DROPPED: True} if rng.random() < 0.15 else {}
        columns = tuple(ColumnSchema(name, "int") for name in names)
        known.add(TableSchema("db", "t", columns, (), version=version, extra=extra))
    known.offset_versions = OffsetVersions() if ordered else None
    known.infer_missing = infer_missing
    return known


def _per_row(known: MemorySchemaLookup, partition: int, offset: int, *, ordered: bool) -> object:
    """What the Python decoder makes of one row (``schema_facts._bind_schema``), as the vector path sees it."""
    if ordered:
        schema = untimed_schema("db", "t", ROW_COLUMNS, partition, offset, known)
        if schema is None and known.knows_table("db", "t"):
            return LEFT_OUT  # PENDING
    else:
        schema = known.latest("db", "t", 0)
    if schema is None:
        return LEFT_OUT if known.infer_missing and not known.knows_table("db", "t") else UNBOUND
    return schema


@pytest.mark.parametrize("seed", range(60))
def test_untimed_bindings_bind_each_row_as_alone(seed: int) -> None:
    rng = random.Random(seed)
    ordered, infer_missing = rng.random() < 0.75, rng.random() < 0.3
    known = _lookup(rng, ordered=ordered, infer_missing=infer_missing)
    count = rng.randint(1, 300)
    partitions = np.array([rng.choice((0, 0, 0, 1, 2)) for _ in range(count)], dtype=np.int64)
    offsets = np.array([rng.randint(0, 450) for _ in range(count)], dtype=np.int64)
    candidates = np.array(sorted(rng.sample(range(count), rng.randint(1, count))), dtype=np.int64)
    got: dict[int, object] = {}
    for rows, schema in untimed_bindings(known, "db", "t", ROW_COLUMNS, partitions, offsets, candidates):
        assert list(rows) == sorted(rows)
        for row in rows.tolist():
            assert row not in got, f"row {row} bound twice"
            got[row] = UNBOUND if schema is None else schema
    for row in candidates.tolist():
        wanted = _per_row(known, int(partitions[row]), int(offsets[row]), ordered=ordered)
        assert got.get(row, LEFT_OUT) is wanted, (row, partitions[row], offsets[row], got.get(row), wanted)
    assert set(got) <= set(candidates.tolist())


def test_no_candidates() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert untimed_bindings(MemorySchemaLookup(), "db", "t", ROW_COLUMNS, empty, empty, empty) == []
