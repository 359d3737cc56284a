"""Schema history stage: DDL/BOOTSTRAP events → the schema history table (docs/schema-history.md).

Every DDL row of ``change_events`` carries the schemas the decode stage derived for it (the
message's own, or its text folded in commit order, ``schema.ddl_fold``); this stage records one
row per (database, table, version) the history lacks (``schema.history``). Version-0 schemas of
tables met mid-stream (baseline, inferred from rows) are recorded by the decode stage itself,
with the same helpers (``spark.schema_history_table``).
"""

from __future__ import annotations

import logging
import re
import time
from datetime import UTC, datetime

from pyspark.sql import Row, SparkSession

from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.identifiers import sql_string
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.schema.history import SchemaFact, collapse, database_drop_facts, event_facts
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ledger, table_positions
from ticdc_lake.spark.schema_history_table import history_rows, known_versions, merge_history
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.stage_lock import locked

log = logging.getLogger(__name__)

_DROP_DATABASE = re.compile(r"\s*DROP\s+(DATABASE|SCHEMA)\b", re.IGNORECASE)


@locked("schema_history")
def run_schema_history(spark: SparkSession, config: LakeConfig, pipeline: PipelineConfig, run_id: str) -> int:
    """Record every schema version not yet in the history; returns how many were added."""
    started_at, started = datetime.now(UTC), time.monotonic()
    tables = SystemTables.of(config, pipeline)
    tables.ensure(spark)
    # change_events and the history as the last complete run read them: no version can be new.
    read = table_positions.system_state(spark, tables, "change_events", "schema_history")
    if read == table_positions.history_read(spark, tables, pipeline):
        log.info("schema history: no new table versions (change_events unchanged since the last run)")
        unchanged = ledger.stage_row(
            pipeline.id,
            run_id,
            "schema_history",
            LedgerStatus.NOOP,
            started_at,
            time.monotonic() - started,
            0,
            "change_events unchanged since the last run",
        )
        ledger.append(spark, tables, [unchanged])
        return 0
    pid = sql_string(pipeline.id)
    # Only versions the history lacks; DDL/BOOTSTRAP rows are few next to DML.
    candidates = spark.sql(
        f"""SELECT e.kind, e.ddl_type, e.ddl_query, e.commit_ts, e.topic, e.`partition`, e.`offset`,
                   e.table_schema, e.pre_table_schema
            FROM {tables.change_events} e
            WHERE e.pipeline = {pid} AND e.kind IN ('DDL', 'BOOTSTRAP')
              AND (e.table_schema IS NOT NULL OR e.pre_table_schema IS NOT NULL)"""
    ).collect()
    known = known_versions(spark, tables, pipeline)
    facts = rows_facts(spark, tables, pipeline, candidates)
    entries = [e for e in collapse(facts) if e.key not in known]
    elapsed = time.monotonic() - started
    if not entries:
        log.info("schema history: no new table versions (%d known)", len(known))
        noop = ledger.stage_row(
            pipeline.id,
            run_id,
            "schema_history",
            LedgerStatus.NOOP,
            started_at,
            elapsed,
            0,
            f"{len(known)} version(s) known",
        )
        ledger.append(spark, tables, [noop])
        table_positions.mark_history_read(spark, tables, pipeline, read)
        return 0
    merge_history(spark, tables, history_rows(pipeline.id, run_id, entries))
    # The history now holds every version of what was read (and only grows, but in a rebuild,
    # which rewrites change_events too): its state after this run's own commit.
    read = read.split(".")[0] + "." + table_positions.system_state(spark, tables, "schema_history")
    log.info("schema history: %d version(s) added in %.1fs", len(entries), time.monotonic() - started)
    added = ", ".join(f"{e.key[0]}.{e.key[1]}@{e.key[2]}" for e in entries[:20])
    done = ledger.stage_row(
        pipeline.id,
        run_id,
        "schema_history",
        LedgerStatus.OK,
        started_at,
        time.monotonic() - started,
        len(entries),
        f"added {added}",
    )
    ledger.append(spark, tables, [done])
    table_positions.mark_history_read(spark, tables, pipeline, read)
    return len(entries)


def rows_facts(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, rows: list[Row]
) -> list[SchemaFact]:
    """Schema facts of DDL/BOOTSTRAP change-event rows, plus the drops their DROP DATABASEs imply."""
    facts: list[SchemaFact] = []
    for row in rows:
        facts.extend(
            event_facts(
                row["kind"],
                row["ddl_type"],
                row["ddl_query"],
                int(row["commit_ts"]),
                (row["topic"], row["partition"], row["offset"]),
                _schema(row["table_schema"]),
                _schema(row["pre_table_schema"]),
            )
        )
    facts.extend(_database_drops(spark, tables, pipeline, facts))
    return facts


def _database_drops(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, facts: list[SchemaFact]
) -> list[SchemaFact]:
    """Dropped markers for the tables of every DROP DATABASE (the event names no table)."""
    pid = sql_string(pipeline.id)
    drops = [
        r
        for r in spark.sql(
            f"""SELECT `database`, commit_ts, ddl_query, topic, `partition`, `offset` FROM {tables.change_events}
                WHERE pipeline = {pid} AND kind = 'DDL' AND `table` IS NULL AND `database` IS NOT NULL"""
        ).collect()
        if _DROP_DATABASE.match(r["ddl_query"] or "")
    ]
    if not drops:
        return []
    versions = [f.schema for f in facts] + [
        TableSchema.from_json(r["table_schema"])
        for r in spark.sql(
            f"SELECT table_schema FROM {tables.schema_history} WHERE pipeline = {pid} "
            f"AND `database` IN ({', '.join(sorted({sql_string(r['database']) for r in drops}))})"
        ).collect()
    ]
    markers: list[SchemaFact] = []
    for r in drops:
        position = (r["topic"], r["partition"], r["offset"])
        markers.extend(database_drop_facts(r["database"], int(r["commit_ts"]), r["ddl_query"], position, versions))
    return markers


def _schema(text: str | None) -> TableSchema | None:
    return TableSchema.from_json(text) if text is not None else None
