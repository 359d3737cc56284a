"""Applying one table's DML, segment by segment, each with one MERGE.

A segment is the table's DML with ``position < commit_ts <= upper``: the run cuts the window at
each DDL of the table (``ticdc_lake.spark.ddl_sequence``). The MERGE writes the Iceberg table's
current columns (a column kept after DROP COLUMN gets NULL, a column kept as string gets the
canonical text) and commits ``upper`` as the applied position in the same snapshot.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake.apply.merge_sql import (
    BAD_VALUES_COLUMN,
    OP_COLUMN,
    TargetColumn,
    merge_statement,
    multiset_merge_statement,
    typed_projection,
)
from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import SchemaError
from ticdc_lake.identifiers import quote
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ledger, table_positions, target_tables
from ticdc_lake.spark.multiset_frame import CURRENT, DELTA, multiset_deltas, multiset_source
from ticdc_lake.spark.net_change_frame import net_changes
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.target_tables import TargetTable

log = logging.getLogger(__name__)

SNAPSHOT_PROPERTY = table_positions.SNAPSHOT_PROPERTY
_COUNTS = ("events_in", "rows_inserted", "rows_updated", "rows_deleted", "unrepresentable_values")


@dataclass(slots=True)
class SchemaVersions:
    """A table's schema history: by version, and by commit TSO for rows that carry no version."""

    by_version: dict[int, TableSchema] = field(default_factory=dict)
    by_ts: list[tuple[int, int]] = field(default_factory=list)

    def add(self, version: int, commit_ts: int, schema: TableSchema) -> None:
        self.by_version[version] = schema
        bisect.insort(self.by_ts, (commit_ts, version))

    def at(self, commit_ts: int) -> TableSchema | None:
        """The newest version at or before ``commit_ts``."""
        index = bisect.bisect_right(self.by_ts, (commit_ts, 1 << 64))
        return self.by_version[self.by_ts[index - 1][1]] if index else None


@dataclass(slots=True)
class TableWindow:
    pipeline: PipelineConfig
    run_id: str
    database: str
    table: str
    watermark: int
    #: Position at the start of the run (the ledger's window start).
    applied_ts: int = 0
    upper: int | None = None
    target: str | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: float = field(default_factory=time.monotonic)
    #: Row events of this table without a commit TSO (offset-ordered protocol settings).
    unordered: int = 0
    #: Position now: events up to it are applied.
    position: int = 0
    held: str | None = None
    failed: str | None = None
    replays: int = 0
    pending_ts: int | None = None
    ddls: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    snapshot_id: int | None = None
    events: DataFrame | None = None
    #: The schema after the last DDL applied in this run, for rows without a schema version.
    ddl_schema: TableSchema | None = None

    def unordered_note(self) -> str:
        return (
            f"{self.unordered} row event(s) carry no commit TSO (Canal-JSON or avro without the TiDB extension, "
            "avro DELETE tombstones): they can only be ordered by Kafka offset and the TSO-ordered apply does "
            "not apply them (docs/protocols.md, Ordering)"
        )

    def hold(self, reason: str) -> None:
        if self.held is None:
            self.held = reason

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

    def final_row(self) -> ledger.LedgerRow:
        """The run's one ledger row for this table."""
        parts = [*self.ddls]
        status = "APPLIED" if self.counts["events_in"] or self.ddls else "NOOP"
        if self.failed:
            status, parts = "FAILED", [*parts, self.failed]
        elif self.held:
            status, parts = "HELD", [*parts, self.held]
        return self.ledger_row(
            status,
            "; ".join(parts) or None,
            replays_skipped=self.replays,
            snapshot_id=self.snapshot_id,
            **self.counts,
        )

    def target_table(self) -> TargetTable:
        return TargetTable.for_upstream(self.pipeline, self.database, self.table)


def prepare(spark: SparkSession, system: SystemTables, window: TableWindow, events: DataFrame) -> None:
    """Read the table's position and count what this run will not apply (replays, unordered rows)."""
    target = window.target_table()
    window.target = target.display
    window.applied_ts = window.position = window.upper = table_positions.position(spark, system, target)
    mine = events.where((F.col("database") == window.database) & (F.col("table") == window.table))
    window.events = mine
    window.replays, window.unordered = _replays_and_unordered(mine, window)
    if window.unordered:
        log.warning("apply: %s.%s: %s", window.database, window.table, window.unordered_note())
    pending = (
        mine.where((F.col("commit_ts") > window.position) & (F.col("status") == "PENDING"))
        .agg(F.min("commit_ts"))
        .first()
    )
    if pending is not None and pending[0] is not None:
        window.pending_ts = int(pending[0])


def apply_segment(spark: SparkSession, window: TableWindow, upper: int, history: SchemaVersions) -> None:
    """Apply the table's ready DML with ``position < commit_ts <= upper`` (less when held)."""
    if window.held or window.failed or window.events is None:
        return
    if window.pending_ts is not None and window.pending_ts <= upper:
        upper = window.pending_ts - 1
        window.hold(
            f"DML at commit ts {window.pending_ts} waits for its table schema version (no BOOTSTRAP or DDL seen yet)"
        )
    if upper <= window.position:
        return
    segment = window.events.where((F.col("commit_ts") > window.position) & (F.col("commit_ts") <= upper))
    dml = segment.where((F.col("kind") == "DML") & (F.col("status") == "READY"))
    used = sorted(int(r[0]) for r in dml.select("schema_version").distinct().collect() if r[0] is not None)
    schema = _schema_for(window, used, history, upper)
    events_in = dml.count()
    if events_in == 0:
        window.position = window.upper = upper
        return
    if schema is None:
        window.hold(
            f"{events_in} row event(s) up to commit ts {upper} have no table schema: no CREATE TABLE, BOOTSTRAP "
            "or readable DDL of this table was seen"
        )
        return
    mismatch = _check_versions(used, history, schema)
    if mismatch is not None:
        window.hold(mismatch)
        return
    target = window.target_table()
    if not target_tables.exists(spark, target):
        target_tables.create(spark, target, schema)
        log.info("apply: created %s (key %s)", target.display, list(schema.handle_key()) or "whole row")
    current = table_positions.iceberg_columns(spark, target) or []
    names = {c.name.lower() for c in current}
    missing = [c.name for c in schema.columns if c.name.lower() not in names]
    if missing:
        window.hold(
            f"column(s) {missing} of upstream schema version {schema.version} are not in {target.display}: a DDL "
            f"that adds them was not applied; rows from commit ts {window.position + 1} wait"
        )
        return
    columns = [TargetColumn(c.name, c.type) for c in current]
    _merge(spark, window, target, dml, schema, columns, upper, events_in)


def _merge(
    spark: SparkSession,
    window: TableWindow,
    target: TargetTable,
    dml: DataFrame,
    schema: TableSchema,
    columns: list[TargetColumn],
    upper: int,
    events_in: int,
) -> None:
    key = schema.handle_key()
    if key:
        typed = net_changes(dml, key).selectExpr(*typed_projection("image", columns), f"op AS {quote(OP_COLUMN)}")
        statement = merge_statement
    else:
        typed = multiset_source(multiset_deltas(dml), spark.table(target.sql_name), columns)
        statement = _multiset_statement
    typed = typed.persist()
    multiset: tuple[int, int] | None = None
    try:
        if key:
            bad = int(typed.agg(F.sum(BAD_VALUES_COLUMN)).first()[0] or 0)  # type: ignore[index]
        else:
            bad, multiset = _multiset_counts(typed)
        view = f"ticdc_changes_{abs(hash((window.database, window.table))) % 10**8}"
        typed.createOrReplaceTempView(view)
        props = {
            target_tables.APPLIED_TS: str(upper),
            target_tables.PIPELINE_PROP: window.pipeline.id,
            target_tables.RUN_ID_PROP: window.run_id,
            target_tables.WATERMARK_PROP: str(window.watermark),
        }
        with table_positions.committing(spark, props):
            spark.sql(statement(target.sql_name, view, columns, key))
    finally:
        typed.unpersist()
    snapshot_id, summary = target_tables.latest_snapshot(spark, target)
    added = {
        "events_in": events_in,
        "rows_inserted": int(summary.get("spark.merge-into.num-target-rows-inserted", 0)),
        "rows_updated": int(summary.get("spark.merge-into.num-target-rows-matched-updated", 0)),
        "rows_deleted": int(summary.get("spark.merge-into.num-target-rows-matched-deleted", 0)),
        "unrepresentable_values": bad,
    }
    if multiset is not None:  # copies deleted and inserted again are not changes
        added["rows_inserted"], added["rows_deleted"] = multiset[0], multiset[1]
    for name, value in added.items():
        window.counts[name] += value
    window.snapshot_id = snapshot_id
    if bad:
        log.warning("apply: %s: %d value(s) Iceberg cannot hold were written as NULL", target.display, bad)
    log.info(
        "apply: %s: segment (%d, %d], %d event(s), +%d ~%d -%d, snapshot %s",
        target.display,
        window.position,
        upper,
        events_in,
        added["rows_inserted"],
        added["rows_updated"],
        added["rows_deleted"],
        snapshot_id,
    )
    window.position = window.upper = upper


def _multiset_statement(target: str, source_view: str, columns: Sequence[TargetColumn], key: Sequence[str]) -> str:
    return multiset_merge_statement(target, source_view, columns)


def _multiset_counts(source: DataFrame) -> tuple[int, tuple[int, int]]:
    """(unrepresentable values, (copies added, copies removed)) of a multiset MERGE source."""
    after = F.greatest(F.col(CURRENT) + F.col(DELTA), F.lit(0))
    row = source.agg(
        F.sum(F.when(F.col(OP_COLUMN) == "I", F.col(BAD_VALUES_COLUMN)).otherwise(0)),
        F.sum(F.greatest(after - F.col(CURRENT), F.lit(0))),
        F.sum(F.greatest(F.col(CURRENT) - after, F.lit(0))),
    ).first()
    assert row is not None
    return int(row[0] or 0), (int(row[1] or 0), int(row[2] or 0))


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


def _schema_for(window: TableWindow, used: list[int], history: SchemaVersions, upper: int) -> TableSchema | None:
    if used:
        missing = [v for v in used if v not in history.by_version]
        if missing:
            raise SchemaError(
                f"{window.database}.{window.table}: schema version(s) {missing} are used by decoded events but "
                "missing from the schema history table; re-run the schema_history task of this run"
            )
        return history.by_version[used[-1]]
    return history.at(upper) or window.ddl_schema


def _check_versions(used: list[int], history: SchemaVersions, schema: TableSchema) -> str | None:
    for version in used:
        other = history.by_version[version]
        if [(c.name, c.mysql_type, c.length, c.scale, c.unsigned) for c in other.columns] != [
            (c.name, c.mysql_type, c.length, c.scale, c.unsigned) for c in schema.columns
        ]:
            return f"schema versions {version} and {schema.version} differ inside one apply segment"
    return None
