"""One offset-ordered segment as one MERGE that commits the table's new offsets in its snapshot.

The same MERGE statements as the commit-TSO apply (``ticdc_lake.spark.table_apply``), with the
offset-order rules: per key the event with the highest (topic, partition, offset, index) wins,
and a table without a key counts every event once (no transaction identity to deduplicate by).
"""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame, SparkSession

from ticdc_lake.apply.merge_sql import TargetColumn
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import table_positions
from ticdc_lake.spark.record_images import VersionLayout
from ticdc_lake.spark.segment_merge import merge_changes
from ticdc_lake.spark.target_tables import TargetTable

log = logging.getLogger(__name__)


def merge_segment(
    spark: SparkSession,
    target: TargetTable,
    dml: DataFrame,
    schema: TableSchema,
    props: dict[str, str],
    events_in: int,
    layout: VersionLayout | None = None,
) -> tuple[dict[str, int], int | None]:
    """MERGE ``dml`` (READY row events of one schema version, whose records read by ``layout``)
    into ``target``; the counts and snapshot id."""
    current = table_positions.iceberg_columns(spark, target) or []
    columns = [TargetColumn(c.name, c.type) for c in current]
    layouts = [layout] if layout is not None else []
    added, snapshot_id = merge_changes(
        spark, target, dml, schema.handle_key(), columns, props, offset_ordered=True, layouts=layouts
    )
    added["events_in"] = events_in
    log.info(
        "apply: %s: offset-ordered segment, %d event(s), +%d ~%d -%d, %d of %d net change(s) typed from records, "
        "snapshot %s",
        target.display,
        events_in,
        added["rows_inserted"],
        added["rows_updated"],
        added["rows_deleted"],
        added["typed_from_records"],
        added["net_changes"],
        snapshot_id,
    )
    return added, snapshot_id
