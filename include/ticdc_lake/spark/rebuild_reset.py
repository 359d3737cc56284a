"""The steps of a rebuild that change state: quarantine, schema history, and the reset of tables.

Each step is idempotent, and the reset runs in an order that keeps every intermediate state safe
for a plain apply run: first the pipeline's low-water TSO goes to 0 (every later apply reads all
events again), then the recorded positions of the names go to 0, then the Iceberg tables are
dropped. Killed anywhere, the state is either "table as before" (its own snapshots still carry its
position) or "table gone, nothing recorded", and any apply run, rebuild or not, brings the table
from the beginning to the watermark (``docs/rebuild.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from ticdc_lake.apply.ddl_plan import dropped_name
from ticdc_lake.config import PipelineConfig
from ticdc_lake.identifiers import qualified, sql_string
from ticdc_lake.schema.history import collapse
from ticdc_lake.spark import table_positions, target_tables
from ticdc_lake.spark.local_frames import local_frame
from ticdc_lake.spark.rebuild_scope import Name, RebuildScope
from ticdc_lake.spark.schema_history_job import rows_facts
from ticdc_lake.spark.schema_history_table import history_rows
from ticdc_lake.spark.system_tables import COLUMNS, SystemTables
from ticdc_lake.spark.target_tables import TargetTable

log = logging.getLogger(__name__)

#: Quarantine status of a message that a re-decode could read (its events are in ``change_events``).
RESOLVED = "RESOLVED"


@dataclass(slots=True)
class ResetOutcome:
    #: Iceberg tables dropped (display names), kept copies of dropped tables included.
    dropped: list[str] = field(default_factory=list)
    #: Names whose recorded position was set back to 0.
    positions: list[str] = field(default_factory=list)
    low_water: int = 0


def resolve_quarantine(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, run_id: str) -> int:
    """Mark RESOLVED the quarantined (or skipped) messages that now decode to READY events; returns how many.

    Messages that still fail were quarantined again by the re-decode and keep their status.
    """
    pid = sql_string(pipeline.id)
    rows = spark.sql(
        f"""SELECT DISTINCT q.topic, q.`partition`, q.`offset` FROM {tables.quarantine} q
            JOIN {tables.change_events} e ON e.pipeline = {pid} AND e.topic = q.topic
              AND e.`partition` = q.`partition` AND e.`offset` = q.`offset` AND e.status = 'READY'
            WHERE q.pipeline = {pid} AND q.status IN ('QUARANTINED', 'SKIPPED')"""
    ).collect()
    if not rows:
        return 0
    found = [(r["topic"], r["partition"], r["offset"]) for r in rows]
    local_frame(spark, found, "topic STRING, `partition` INT, `offset` BIGINT").createOrReplaceTempView("now_decoded")
    spark.sql(
        f"MERGE INTO {tables.quarantine} q USING now_decoded n ON q.pipeline = {pid} AND q.topic = n.topic "
        "AND q.`partition` = n.`partition` AND q.`offset` = n.`offset` AND q.status IN ('QUARANTINED', 'SKIPPED') "
        f"WHEN MATCHED THEN UPDATE SET status = '{RESOLVED}', resolved_run_id = {sql_string(run_id)}, "
        "resolved_at = current_timestamp()"
    )
    for topic, partition, offset in found[:20]:
        log.info(
            "rebuild: quarantined message at topic %r partition %d offset %d now decodes", topic, partition, offset
        )
    return len(found)


def refresh_history(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, run_id: str, names: Iterable[Name]
) -> int:
    """Replace the schema history versions of ``names`` with what the re-decoded DDL events say now.

    The schema history stage only adds versions it lacks; after a parser fix a version it has may
    be wrong. Versions recorded without an event (baseline, inferred from rows, registry) stay.
    Returns how many versions were added or corrected.
    """
    wanted = set(names)
    if not wanted:
        return 0
    pid = sql_string(pipeline.id)
    candidates = spark.sql(
        f"""SELECT kind, ddl_type, ddl_query, commit_ts, topic, `partition`, `offset`, `database`, `table`,
                   table_schema, pre_table_schema
            FROM {tables.change_events}
            WHERE pipeline = {pid} AND kind IN ('DDL', 'BOOTSTRAP')
              AND (table_schema IS NOT NULL OR pre_table_schema IS NOT NULL)"""
    ).collect()
    facts = rows_facts(spark, tables, pipeline, candidates)
    entries = [e for e in collapse(facts) if (e.key[0], e.key[1]) in wanted]
    if not entries:
        return 0
    rows = history_rows(pipeline.id, run_id, entries)
    spark.createDataFrame(rows, COLUMNS["schema_history"]).createOrReplaceTempView("rebuilt_schema_history")
    changed = spark.sql(
        f"""SELECT count(*) FROM rebuilt_schema_history n LEFT JOIN {tables.schema_history} h
            ON h.pipeline = n.pipeline AND h.`database` = n.`database` AND h.`table` = n.`table`
              AND h.schema_version = n.schema_version
            WHERE h.pipeline IS NULL OR h.table_schema <> n.table_schema OR NOT (h.dropped <=> n.dropped)"""
    ).first()
    count = int(changed[0]) if changed is not None else 0
    if count:
        spark.sql(
            f"MERGE INTO {tables.schema_history} h USING rebuilt_schema_history n ON h.pipeline = n.pipeline "
            "AND h.`database` = n.`database` AND h.`table` = n.`table` AND h.schema_version = n.schema_version "
            "WHEN MATCHED AND (h.table_schema <> n.table_schema OR NOT (h.dropped <=> n.dropped)) THEN UPDATE SET * "
            "WHEN NOT MATCHED THEN INSERT *"
        )
    log.info("rebuild: schema history of %d table name(s): %d version(s) added or corrected", len(wanted), count)
    return count


def reset_tables(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, scope: RebuildScope
) -> ResetOutcome:
    """Forget everything applied to the tables of ``scope``, in the crash-safe order of the module docstring."""
    outcome = ResetOutcome(low_water=table_positions.low_water(spark, tables, pipeline))
    if outcome.low_water:
        table_positions.mark_low_water(spark, tables, pipeline, 0)
    targets = scope.targets(pipeline)
    spaces = [TargetTable(pipeline.catalog, pipeline.target.namespace_for(d), "") for d in scope.databases]
    for target in [*targets, *spaces]:
        if table_positions.name_position(spark, tables, target):
            table_positions.mark_name(spark, tables, target, 0)
            outcome.positions.append(target.display)
    for target in targets:
        for doomed in [target, *_kept_copies(spark, target)]:
            if target_tables.exists(spark, doomed):
                spark.sql(f"DROP TABLE IF EXISTS {doomed.sql_name} PURGE")
                outcome.dropped.append(doomed.display)
    log.info(
        "rebuild: reset %s: low-water TSO %d -> 0, %d name position(s) cleared, dropped %s",
        scope.describe(),
        outcome.low_water,
        len(outcome.positions),
        ", ".join(outcome.dropped) or "no table (none existed)",
    )
    return outcome


def _kept_copies(spark: SparkSession, target: TargetTable) -> list[TargetTable]:
    """Tables kept under ``<name>__dropped_<TSO>`` (on_drop_table: keep): the replay makes them again."""
    prefix = dropped_name(target.name, 0)[: -len("0")]
    try:
        names = [
            r["tableName"] for r in spark.sql(f"SHOW TABLES IN {qualified(target.catalog, target.namespace)}").collect()
        ]
    except AnalysisException:
        return []
    return [
        TargetTable(target.catalog, target.namespace, n)
        for n in sorted(names)
        if n.startswith(prefix) and n[len(prefix) :].isdigit()
    ]
