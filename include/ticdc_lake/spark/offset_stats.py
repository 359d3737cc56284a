"""The offset-ordered apply's Spark jobs over a run's events: barrier DDL copies and row statistics.

Both read the table positions as a broadcast frame of (table, topic, partition, next offset), so
one job covers every table of the run (``ticdc_lake.spark.offset_apply``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake.apply import offset_plan as plan
from ticdc_lake.spark.local_frames import local_frame

_NO_CUT = 1 << 62


def _positions(spark: SparkSession, windows: Sequence[Any], ends: dict[plan.Partition, int]) -> DataFrame:
    rows = [(w.database, w.table, t, p, w.start.get((t, p), 0)) for w in windows for (t, p) in sorted(ends)]
    return local_frame(spark, rows, "database STRING, table STRING, topic STRING, partition INT, next BIGINT")


def barriers(
    spark: SparkSession, windows: Sequence[Any], events: DataFrame, ends: dict[plan.Partition, int]
) -> dict[tuple[str, str], dict[plan.Partition, int]]:
    """Per table and partition, the offset of the first not yet applied TRUNCATE/DROP/RENAME copy."""
    found: dict[tuple[str, str], dict[plan.Partition, int]] = {}
    joined = events.where((F.col("kind") == "DDL") & F.upper("ddl_type").isin(*plan.BARRIER_DDL)).join(
        F.broadcast(_positions(spark, windows, ends)), ["database", "table", "topic", "partition"]
    )
    fresh = joined.where(F.col("offset") >= F.col("next"))
    for r in fresh.groupBy("database", "table", "topic", "partition").agg(F.min("offset").alias("cut")).collect():
        found.setdefault((r["database"], r["table"]), {})[(r["topic"], r["partition"])] = int(r["cut"])
    return found


def row_stats(
    spark: SparkSession,
    windows: Sequence[Any],
    events: DataFrame,
    ends: dict[plan.Partition, int],
    cuts: dict[tuple[str, str], dict[plan.Partition, int]],
    run_id: str,
) -> tuple[
    dict[tuple[str, str], list[plan.VersionRange | tuple[str, int]]],
    dict[tuple[str, str], int],
    dict[tuple[str, str], set[tuple[int, int]]],
]:
    """One Spark job: the fresh row events per table, partition, status and version; replays per
    table; the (version, layout fingerprint) pairs of the fresh READY rows' typed records per table."""
    joined = events.where(F.col("kind") == "DML").join(
        F.broadcast(_positions(spark, windows, ends)), ["database", "table", "topic", "partition"]
    )
    cut = F.lit(_NO_CUT)
    for (database, table), found in cuts.items():
        for (topic, partition), offset in found.items():
            here = (F.col("database") == database) & (F.col("table") == table) & (F.col("topic") == topic)
            cut = F.when(here & (F.col("partition") == partition), F.lit(offset)).otherwise(cut)
    fresh = (F.col("offset") >= F.col("next")) & (F.col("offset") < cut)
    replay = (F.col("offset") < F.col("next")) & (F.col("run_id") == run_id)
    grouped = (
        joined.where(fresh | replay)
        .groupBy("database", "table", "topic", "partition", "status", "schema_version", fresh.alias("fresh"))
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.min("offset").alias("first"),
            F.max("offset").alias("last"),
            F.collect_set("record_layout").alias("layouts"),
        )
    )
    ranges: dict[tuple[str, str], list[plan.VersionRange | tuple[str, int]]] = {}
    replays: dict[tuple[str, str], int] = {}
    layouts: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for r in grouped.collect():
        name = (r["database"], r["table"])
        if not r["fresh"]:
            replays[name] = replays.get(name, 0) + int(r["n"])
        elif r["status"] != "READY":
            ranges.setdefault(name, []).append((f"{r['topic']}/{r['partition']}@{r['first']}", int(r["n"])))
        else:
            version = int(r["schema_version"]) if r["schema_version"] is not None else None
            if version is not None and r["layouts"]:
                layouts.setdefault(name, set()).update((version, int(f)) for f in r["layouts"])
            ranges.setdefault(name, []).append(
                plan.VersionRange(
                    version, r["topic"], int(r["partition"]), int(r["first"]), int(r["last"]), int(r["n"])
                )
            )
    return ranges, replays, layouts
