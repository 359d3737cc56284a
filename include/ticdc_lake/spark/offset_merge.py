"""One offset-ordered segment as one MERGE that commits the table's new offsets in its snapshot.

The same MERGE statements as the commit-TSO apply (``ticdc_lake.spark.table_apply``), with the
offset-order rules: per key the event with the highest (topic, partition, offset, index) wins,
and a table without a key counts every event once (no transaction identity to deduplicate by).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from pyspark.sql import DataFrame, SparkSession

from ticdc_lake import failpoints
from ticdc_lake.apply.merge_sql import OP_COLUMN, TargetColumn, merge_statement, typed_projection
from ticdc_lake.identifiers import quote
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import table_positions, target_tables
from ticdc_lake.spark.merge_inputs import bad_values_and_bounds, multiset_counts, multiset_statement
from ticdc_lake.spark.multiset_frame import multiset_deltas, multiset_source
from ticdc_lake.spark.net_change_frame import net_changes
from ticdc_lake.spark.target_tables import TargetTable

log = logging.getLogger(__name__)


def merge_segment(
    spark: SparkSession,
    target: TargetTable,
    dml: DataFrame,
    schema: TableSchema,
    props: dict[str, str],
    events_in: int,
) -> tuple[dict[str, int], int | None]:
    """MERGE ``dml`` (READY row events of one schema version) into ``target``; the counts and snapshot id."""
    current = table_positions.iceberg_columns(spark, target) or []
    columns = [TargetColumn(c.name, c.type) for c in current]
    key = schema.handle_key()
    if key:
        typed = net_changes(dml, key, offset_ordered=True).selectExpr(
            *typed_projection("image", columns), f"op AS {quote(OP_COLUMN)}"
        )
        statement: Callable[..., str] = merge_statement
    else:
        typed = multiset_source(multiset_deltas(dml, dedupe_copies=False), spark.table(target.sql_name), columns)
        statement = multiset_statement
    typed = typed.persist()
    multiset: tuple[int, int] | None = None
    try:
        if key:
            bad, bounds = bad_values_and_bounds(typed, key, columns)
            statement = partial(merge_statement, bounds=bounds)
        else:
            bad, multiset = multiset_counts(typed)
        view = f"ticdc_offsets_{abs(hash(target.display)) % 10**8}"
        typed.createOrReplaceTempView(view)
        failpoints.hit("apply.before_merge")
        with table_positions.committing(spark, props):
            failpoints.hit("apply.during_merge")
            spark.sql(statement(target.sql_name, view, columns, key))
    finally:
        typed.unpersist()
    failpoints.hit("apply.after_merge")
    snapshot_id, summary = target_tables.latest_snapshot(spark, target)
    added = {
        "events_in": events_in,
        "rows_inserted": int(summary.get("spark.merge-into.num-target-rows-inserted", 0)),
        "rows_updated": int(summary.get("spark.merge-into.num-target-rows-matched-updated", 0)),
        "rows_deleted": int(summary.get("spark.merge-into.num-target-rows-matched-deleted", 0)),
        "unrepresentable_values": bad,
    }
    if multiset is not None:
        added["rows_inserted"], added["rows_deleted"] = multiset
    log.info(
        "apply: %s: offset-ordered segment, %d event(s), +%d ~%d -%d, snapshot %s",
        target.display,
        events_in,
        added["rows_inserted"],
        added["rows_updated"],
        added["rows_deleted"],
        snapshot_id,
    )
    return added, snapshot_id
