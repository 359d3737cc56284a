"""What one MERGE needs besides its statement: unrepresentable values, key bounds for pruning,
and the multiset counts (shared by the TSO-ordered and the offset-ordered apply)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ticdc_lake.apply.merge_sql import (
    BAD_VALUES_COLUMN,
    OP_COLUMN,
    TargetColumn,
    bound_literal,
    multiset_merge_statement,
)
from ticdc_lake.identifiers import quote
from ticdc_lake.spark.multiset_frame import CURRENT, DELTA


def bad_values_and_bounds(
    typed: DataFrame, key: Sequence[str], columns: Sequence[TargetColumn]
) -> tuple[int, dict[str, tuple[str, str]]]:
    """Unrepresentable values, and per key column of a range-able type the source's (min, max) as
    SQL literals: one job, which also materializes the persisted source the MERGE then reads."""
    types = {c.name: c.iceberg_type for c in columns}
    ranged = [k for k in key if k in types]
    aggs = [F.sum(BAD_VALUES_COLUMN)] + [f(F.col(quote(k))) for k in ranged for f in (F.min, F.max)]
    row = typed.agg(*aggs).first()
    assert row is not None
    bounds: dict[str, tuple[str, str]] = {}
    for i, k in enumerate(ranged):
        low, high = bound_literal(row[1 + 2 * i], types[k]), bound_literal(row[2 + 2 * i], types[k])
        if low is not None and high is not None:
            bounds[k] = (low, high)
    return int(row[0] or 0), bounds


def multiset_statement(target: str, source_view: str, columns: Sequence[TargetColumn], key: Sequence[str]) -> str:
    return multiset_merge_statement(target, source_view, columns)


def multiset_counts(source: DataFrame) -> tuple[int, tuple[int, int]]:
    """(unrepresentable values, (copies added, copies removed)) of a multiset MERGE source."""
    after = F.greatest(F.col(CURRENT) + F.col(DELTA), F.lit(0))
    row = source.agg(
        F.sum(F.when(F.col(OP_COLUMN) == "I", F.col(BAD_VALUES_COLUMN)).otherwise(0)),
        F.sum(F.greatest(after - F.col(CURRENT), F.lit(0))),
        F.sum(F.greatest(F.col(CURRENT) - after, F.lit(0))),
    ).first()
    assert row is not None
    return int(row[0] or 0), (int(row[1] or 0), int(row[2] or 0))
