"""Applying one table's window of events with one MERGE."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake.apply.merge_sql import (
    BAD_VALUES_COLUMN,
    OP_COLUMN,
    merge_statement,
    spark_type,
    typed_projection,
)
from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import SchemaError
from ticdc_lake.identifiers import quote
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ledger, target_tables
from ticdc_lake.spark.net_change_frame import net_changes
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.target_tables import TargetTable

log = logging.getLogger(__name__)

SNAPSHOT_PROPERTY = "spark.sql.iceberg.snapshot-property."


@dataclass(slots=True)
class TableWindow:
    pipeline: PipelineConfig
    run_id: str
    database: str
    table: str
    watermark: int
    applied_ts: int = 0
    upper: int | None = None
    target: str | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: float = field(default_factory=time.monotonic)

    #: Row events of this table without a commit TSO (offset-ordered protocol settings).
    unordered: int = 0

    def unordered_note(self) -> str:
        return (
            f"{self.unordered} row event(s) carry no commit TSO (Canal-JSON or avro without the TiDB extension, "
            "avro DELETE tombstones): they can only be ordered by Kafka offset and the TSO-ordered apply does "
            "not apply them (docs/protocols.md, Ordering)"
        )

    def ledger_row(self, status: str, message: str | None = None, **counts: int | None) -> ledger.LedgerRow:
        if self.unordered:
            message = f"{message}; {self.unordered_note()}" if message else self.unordered_note()
        return ledger.LedgerRow(
            self.pipeline.id,
            self.run_id,
            "apply",
            self.database,
            self.table,
            self.target,
            status,
            ledger.tso(self.applied_ts),
            ledger.tso(self.upper),
            ledger.tso(self.watermark),
            counts.get("events_in"),
            counts.get("replays_skipped"),
            counts.get("rows_inserted"),
            counts.get("rows_updated"),
            counts.get("rows_deleted"),
            counts.get("unrepresentable_values"),
            counts.get("snapshot_id"),
            message,
            self.started_at,
            int((time.monotonic() - self.started) * 1000),
        )


def apply_table(
    spark: SparkSession, tables: SystemTables, window: TableWindow, events: DataFrame, versions: dict[int, TableSchema]
) -> ledger.LedgerRow:
    target = TargetTable.for_upstream(window.pipeline, window.database, window.table)
    window.target = target.display
    exists = target_tables.exists(spark, target)
    window.applied_ts = target_tables.applied_position(spark, target)[0] if exists else 0
    mine = events.where((F.col("database") == window.database) & (F.col("table") == window.table))
    replays, window.unordered = _replays_and_unordered(mine, window)
    if window.unordered:
        log.warning("apply: %s.%s: %s", window.database, window.table, window.unordered_note())
    fresh = mine.where(F.col("commit_ts") > window.applied_ts)
    upper, held = window.watermark, None
    pending = fresh.where(F.col("status") == "PENDING").agg(F.min("commit_ts")).first()
    if pending is not None and pending[0] is not None:
        upper = min(upper, int(pending[0]) - 1)
        held = f"DML at commit ts {int(pending[0])} waits for its table schema version (no BOOTSTRAP or DDL seen yet)"
    for ddl in fresh.where(F.col("kind") == "DDL").orderBy("commit_ts", "offset").collect():
        if ddl["ddl_type"] != "CREATE" and int(ddl["commit_ts"]) <= upper:
            upper = int(ddl["commit_ts"]) - 1
            held = (
                f"DDL {ddl['ddl_type']} at commit ts {int(ddl['commit_ts'])} ({ddl['ddl_query']!r}) is not applied: "
                "this version applies CREATE TABLE only; the table waits before it"
            )
            break
    window.upper = upper
    if upper <= window.applied_ts:
        return window.ledger_row("HELD" if held else "NOOP", held, events_in=0, replays_skipped=replays)
    fresh = fresh.where(F.col("commit_ts") <= upper)
    dml = fresh.where((F.col("kind") == "DML") & (F.col("status") == "READY"))
    used = sorted(int(r[0]) for r in dml.select("schema_version").distinct().collect() if r[0] is not None)
    creates = [r["table_schema"] for r in fresh.where(F.col("ddl_type") == "CREATE").collect() if r["table_schema"]]
    schema = _schema_for(window, used, versions, creates)
    if schema is None:
        waiting = dml.count()
        if waiting:
            held = (
                f"{waiting} row event(s) up to commit ts {upper} have no table schema: no CREATE TABLE, BOOTSTRAP "
                "or readable DDL of this table was seen"
            )
        return window.ledger_row("HELD" if held else "NOOP", held, events_in=0, replays_skipped=replays)
    mismatch = _check_versions(used, versions, schema)
    columns = target_tables.target_columns(schema)
    if not exists:
        target_tables.create(spark, target, schema)
        log.info("apply: created %s (key %s)", target.display, list(schema.handle_key()) or "whole row")
    elif mismatch is None:
        wanted = [(c.name, _simple(c.iceberg_type)) for c in columns]
        if target_tables.current_columns(spark, target) != wanted:
            mismatch = f"the Iceberg table's columns differ from upstream schema version {schema.version}"
    if mismatch is not None:
        return window.ledger_row(
            "HELD", mismatch + "; schema evolution is not applied by this version", events_in=0, replays_skipped=replays
        )
    events_in = dml.count()
    if events_in == 0:
        return window.ledger_row("HELD" if held else "NOOP", held, events_in=0, replays_skipped=replays)

    net = net_changes(dml, schema.handle_key())
    typed = net.selectExpr(*typed_projection("image", columns), f"op AS {quote(OP_COLUMN)}").persist()
    try:
        bad = int(typed.agg(F.sum(BAD_VALUES_COLUMN)).first()[0] or 0)  # type: ignore[index]
        view = f"ticdc_changes_{abs(hash((window.database, window.table))) % 10**8}"
        typed.createOrReplaceTempView(view)
        props = {
            target_tables.APPLIED_TS: str(upper),
            target_tables.PIPELINE_PROP: window.pipeline.id,
            target_tables.RUN_ID_PROP: window.run_id,
            target_tables.WATERMARK_PROP: str(window.watermark),
        }
        for key, value in props.items():
            spark.conf.set(SNAPSHOT_PROPERTY + key, value)
        try:
            spark.sql(merge_statement(target.sql_name, view, columns, schema.handle_key()))
        finally:
            for key in props:
                spark.conf.unset(SNAPSHOT_PROPERTY + key)
    finally:
        typed.unpersist()
    snapshot_id, summary = target_tables.latest_snapshot(spark, target)
    counts = {
        "rows_inserted": int(summary.get("spark.merge-into.num-target-rows-inserted", 0)),
        "rows_updated": int(summary.get("spark.merge-into.num-target-rows-matched-updated", 0)),
        "rows_deleted": int(summary.get("spark.merge-into.num-target-rows-matched-deleted", 0)),
    }
    if bad:
        log.warning("apply: %s: %d value(s) Iceberg cannot hold were written as NULL", target.display, bad)
    log.info(
        "apply: %s: window (%d, %d], %d event(s), %d replay(s) skipped, +%d ~%d -%d, snapshot %s",
        target.display,
        window.applied_ts,
        upper,
        events_in,
        replays,
        counts["rows_inserted"],
        counts["rows_updated"],
        counts["rows_deleted"],
        snapshot_id,
    )
    return window.ledger_row(
        "HELD" if held else "APPLIED",
        held,
        events_in=events_in,
        replays_skipped=replays,
        unrepresentable_values=bad,
        snapshot_id=snapshot_id,
        **counts,
    )


def _replays_and_unordered(mine: DataFrame, window: TableWindow) -> tuple[int, int]:
    """Row events of this run at or below the applied position, and row events without a commit TSO."""
    dml = F.col("kind") == "DML"
    replay = (
        dml & (F.col("run_id") == window.run_id) & (F.col("commit_ts") <= window.applied_ts) & (F.col("commit_ts") > 0)
    )
    counts = mine.agg(
        F.sum(F.when(replay, 1).otherwise(0)), F.sum(F.when(dml & (F.col("commit_ts") == 0), 1).otherwise(0))
    ).first()
    assert counts is not None
    return int(counts[0] or 0), int(counts[1] or 0)


def _schema_for(
    window: TableWindow, used: list[int], versions: dict[int, TableSchema], creates: list[str]
) -> TableSchema | None:
    if used:
        missing = [v for v in used if v not in versions]
        if missing:
            raise SchemaError(
                f"{window.database}.{window.table}: schema version(s) {missing} are used by decoded events but "
                "missing from the schema history table; re-run the schema_history task of this run"
            )
        return versions[used[-1]]
    if creates:
        return TableSchema.from_json(creates[-1])
    return None


def _check_versions(used: list[int], versions: dict[int, TableSchema], schema: TableSchema) -> str | None:
    for version in used:
        other = versions[version]
        if [(c.name, c.mysql_type, c.length, c.scale, c.unsigned) for c in other.columns] != [
            (c.name, c.mysql_type, c.length, c.scale, c.unsigned) for c in schema.columns
        ]:
            return f"schema versions {version} and {schema.version} differ inside one apply window"
    return None


def _simple(iceberg_type: str) -> str:
    """Spark's ``simpleString`` of the type, as ``current_columns`` reports it."""
    return spark_type(iceberg_type).lower()
