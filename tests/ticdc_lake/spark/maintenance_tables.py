"""Test and benchmark helper: a target table as apply leaves it after many small MERGEs."""

from __future__ import annotations

from typing import Any

from ticdc_lake import table_markers
from ticdc_lake.identifiers import UPSTREAM_DATABASE_PROPERTY, UPSTREAM_TABLE_PROPERTY
from ticdc_lake.spark.table_positions import committing
from ticdc_lake.spark.target_tables import TABLE_PROPERTIES, TargetTable


def many_small_merges(
    spark: Any,
    target: TargetTable,
    pipeline_id: str,
    merges: int,
    *,
    database: str = "shop",
    width: int = 2,
    create: bool = True,
) -> None:
    """A keyed merge-on-read table (properties as apply creates it, upstream ``database.<name>``)
    that took ``merges`` small MERGEs, each committing an applied position (``1000 + n``) as apply
    does. MERGE n inserts ``width`` new keys, updates ``width`` existing ones (a delete file and a
    data file) of the MERGE before and deletes a key of the one before that. ``create=False``: the
    table exists (``create_target``), the MERGEs only."""
    if create:
        create_target(spark, target, database)
    for n in range(1, merges + 1):
        merge(spark, target, pipeline_id, n, width)


def create_target(spark: Any, target: TargetTable, database: str = "shop") -> None:
    props = {**TABLE_PROPERTIES, UPSTREAM_DATABASE_PROPERTY: database, UPSTREAM_TABLE_PROPERTY: target.name}
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS `{target.catalog}`.`{target.namespace}`")
    listed = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
    spark.sql(
        f"CREATE TABLE {target.sql_name} (id INT NOT NULL, v STRING, n INT) USING iceberg TBLPROPERTIES ({listed})"
    )
    spark.sql(f"ALTER TABLE {target.sql_name} SET IDENTIFIER FIELDS id")


def merge(spark: Any, target: TargetTable, pipeline_id: str, n: int, width: int = 2) -> None:
    """MERGE number ``n`` (``n >= 1``) of :func:`many_small_merges`."""
    fresh = [(width * n + i, f"v{n}", "U") for i in range(width)]
    changed = [(width * (n - 1) + i, f"u{n}", "U") for i in range(width)] if n > 1 else []
    deleted = [(width * (n - 2) + width - 1, None, "D")] if n > 2 else []
    rows = [*fresh, *changed, *deleted]
    values = ", ".join(f"({k}, {'NULL' if v is None else repr(v)}, '{op}')" for k, v, op in rows)
    marker = {
        table_markers.APPLIED_TS: str(1000 + n),
        table_markers.PIPELINE: pipeline_id,
        table_markers.RUN_ID: f"run-{n}",
        table_markers.WATERMARK: str(1000 + n),
    }
    with committing(spark, marker):
        spark.sql(
            f"""MERGE INTO {target.sql_name} t
            USING (SELECT * FROM VALUES {values} AS s(id, v, op)) s ON t.id = s.id
            WHEN MATCHED AND s.op = 'D' THEN DELETE
            WHEN MATCHED THEN UPDATE SET v = s.v, n = {n}
            WHEN NOT MATCHED AND s.op = 'U' THEN INSERT (id, v, n) VALUES (s.id, s.v, {n})"""
        )
