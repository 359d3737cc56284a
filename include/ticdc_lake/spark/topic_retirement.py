"""Reading what ``ticdc_lake.apply.topic_retirement`` needs from ``change_events`` (lagging topics only)."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ticdc_lake.apply.topic_retirement import Departure, NameActivity, retired_topics
from ticdc_lake.config import PipelineConfig
from ticdc_lake.spark.ddl_sequence import collect_ddls
from ticdc_lake.spark.system_tables import SystemTables


def retired(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, batch_ids: set[str], candidates: set[str]
) -> dict[str, int]:
    """The retired topics among ``candidates`` (topics behind the others), from the decoded prefix."""
    if not candidates or not batch_ids:
        return {}
    events = spark.table(tables.change_events).where(
        (F.col("pipeline") == pipeline.id) & F.col("batch_id").isin(sorted(batch_ids)) & (F.col("commit_ts") > 0)
    )
    mine = events.where(F.col("topic").isin(sorted(candidates)) & F.col("table").isNotNull())
    activity = [
        NameActivity(r["topic"], (r["database"], r["table"]), int(r["last"]))
        for r in mine.where(F.col("kind") == "DML")
        .groupBy("topic", "database", "table")
        .agg(F.max("commit_ts").alias("last"))
        .collect()
    ]
    departures: list[Departure] = []
    for ddl in collect_ddls(mine.where(F.col("kind") == "DDL")):
        kind = ddl.event.ddl_type.upper()
        if ddl.old_name is not None:
            departures.append(Departure(ddl.topic, ddl.old_name, ddl.event.commit_ts))
        elif kind == "ERASE" and ddl.name is not None:
            departures.append(Departure(ddl.topic, ddl.name, ddl.event.commit_ts))
        elif ddl.name is not None:
            activity.append(NameActivity(ddl.topic, ddl.name, ddl.event.commit_ts))
    drops: dict[str, int] = {}
    database_ddls = events.where((F.col("kind") == "DDL") & F.col("table").isNull() & F.col("database").isNotNull())
    for ddl in collect_ddls(database_ddls):
        if ddl.event.ddl_type.upper() == "ERASE":
            drops[ddl.event.database] = max(ddl.event.commit_ts, drops.get(ddl.event.database, 0))
    return retired_topics(candidates, activity, departures, drops)
