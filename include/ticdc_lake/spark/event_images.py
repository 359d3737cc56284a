"""Readable row images of ``change_events``: every image as a map of text, whichever form the row carries.

A DML row carries its images as maps of canonical text, as typed records (``record_images``), or
both. :func:`readable` gives every row its maps: the row's own where it has them, else made from
its records with its version's layout (``record_images.history_layouts``): per column the text
decode kept beside the record (a value the carried type could not hold, as sent) or the text of
the typed value, which is the text TiCDC sent for integers, dates, strings and binary and Spark's
text of the value for the other types (``1.50`` for a DECIMAL(10,2) sent as ``1.5``, ``1.0E10``
for a DOUBLE sent as ``1e+10``, a date-time in the session's zone); a column the image lacks is
not in its map. ``ticdc-lake events`` prints them (``list_events``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.identifiers import quote
from ticdc_lake.spark.record_images import SIDES, TableLayouts, history_layouts, same_schema_groups
from ticdc_lake.spark.record_projection import from_avro_sql, value_text
from ticdc_lake.spark.schema_history_table import history_of
from ticdc_lake.spark.system_tables import SystemTables

#: The columns ``list_events`` prints, images last.
LISTED = ("commit_ts", "op", "status", "schema_version", "topic", "partition", "offset", "idx", "before", "after")


def readable(events: DataFrame, layouts: TableLayouts) -> DataFrame:
    """``events`` (``change_events`` rows) with ``before`` and ``after`` maps on every row that has
    those images: its own, else made from its records (module docstring)."""
    return events.withColumns({side: F.coalesce(F.col(side), _from_record(side, layouts)) for side in SIDES})


def _from_record(side: str, layouts: TableLayouts) -> Column:
    record, untyped = F.col(f"{side}_record"), F.col(f"{side}_untyped")
    chosen: Column | None = None
    for (database, table), versions in layouts.items():
        of_table = (F.col("database") == database) & (F.col("table") == table)
        for same in same_schema_groups(versions):
            layout = same[0]
            fields = from_avro_sql(quote(f"{side}_record"), layout)
            entries = []
            for i, (name, kind) in enumerate(zip(layout.names, layout.types, strict=True)):
                # A name with a NULL text in ``untyped``: the image lacks the column.
                absent = F.coalesce(F.map_contains_key(untyped, F.lit(name)) & untyped[name].isNull(), F.lit(False))
                text = F.coalesce(untyped[name], F.expr(value_text(f"{fields}['c{i}']", kind)))
                entries.append(F.when(~absent, F.struct(F.lit(name).alias("key"), text.alias("value"))))
            made = F.map_from_entries(F.filter(F.array(*entries), lambda e: e.isNotNull()))
            mine = of_table & record.isNotNull() & F.col("schema_version").isin([v.version for v in same])
            chosen = F.when(mine, made) if chosen is None else chosen.when(mine, made)
    return chosen if chosen is not None else F.lit(None).cast("map<string,string>")


def table_events(
    spark: SparkSession,
    tables: SystemTables,
    pipeline: PipelineConfig,
    database: str,
    table: str,
    since: int | None = None,
) -> DataFrame:
    """The DML rows of ``database.table`` in the pipeline's ``change_events`` (from commit TSO
    ``since`` on), readable (:func:`readable`), in commit and source order."""
    history = history_of(spark, tables, pipeline)
    layouts = history_layouts(history, pipeline.policies, pipeline.codec.server_time_zone)
    mine = {name: versions for name, versions in layouts.items() if name == (database, table)}
    rows = spark.table(tables.change_events).where(
        (F.col("pipeline") == pipeline.id)
        & (F.col("kind") == "DML")
        & (F.col("database") == database)
        & (F.col("table") == table)
    )
    if since is not None:
        rows = rows.where(F.col("commit_ts") >= since)
    order = ("commit_ts", "topic", "partition", "offset", "idx")
    return readable(rows, mine).orderBy(*order)


def event_lines(rows: Sequence[Any]) -> list[str]:
    """One JSON document per row (``LISTED`` columns; TSOs and versions as numbers; text as UTF-8,
    as ``ticdc-lake decode`` prints it, so a name or value in any script reads as stored)."""
    lines = []
    for r in rows:
        found = {c: r[c] for c in LISTED}
        for c in ("commit_ts", "schema_version"):
            found[c] = int(found[c]) if found[c] is not None else None
        for side in SIDES:
            found[side] = dict(found[side]) if found[side] is not None else None
        lines.append(json.dumps(found, ensure_ascii=False))
    return lines


def list_events(
    config: LakeConfig, pipeline: PipelineConfig, database: str, table: str, since: int | None, limit: int
) -> list[str]:
    """``ticdc-lake events``: the first ``limit`` of :func:`table_events`, as :func:`event_lines`."""
    from ticdc_lake.spark.sql_shell import session

    running = SparkSession.getActiveSession()  # a session of the caller's (a notebook, a test) stays up
    spark = running or session(config, "ticdc-lake-events")
    try:
        tables = SystemTables.of(config, pipeline)
        return event_lines(table_events(spark, tables, pipeline, database, table, since).limit(limit).collect())
    finally:
        if running is None:
            spark.stop()
