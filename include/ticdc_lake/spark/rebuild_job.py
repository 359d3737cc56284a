"""Rebuild tables from the landed raw batches, without Kafka (``docs/rebuild.md``).

Four steps, each holding the pipeline's stage lock it touches (a scheduled run waits for it):

1. ``decode`` lock: every landed batch is decoded again (a decoder or DDL parser fix takes effect);
   quarantined messages that now decode are marked RESOLVED.
2. ``schema_history`` lock: the schema history stage as usual, then the versions of the rebuilt
   tables are corrected from the re-decoded DDL events.
3. ``apply`` lock, held through step 4: the chosen tables are reset (``rebuild_reset``).
4. The apply stage as usual: the reset tables are applied from the beginning up to the pipeline's
   watermark; every other table continues from its own position (a no-op when it is current).

The run ledger gets the stages' own rows and, under stage ``rebuild``, one row per rebuilt table
(rows in the table after the rebuild, its position and snapshot) and one for the pipeline.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession

from ticdc_lake import failpoints
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.errors import RebuildError, TicdcLakeError
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.spark import ledger, target_tables
from ticdc_lake.spark.apply_job import ApplySummary, run_apply
from ticdc_lake.spark.decode_job import DecodeSummary, run_decode
from ticdc_lake.spark.rebuild_reset import ResetOutcome, refresh_history, reset_tables, resolve_quarantine
from ticdc_lake.spark.rebuild_scope import RebuildScope, parse_request, resolve
from ticdc_lake.spark.schema_history_job import run_schema_history
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.stage_lock import stage_lock

log = logging.getLogger(__name__)

STAGE = "rebuild"


@dataclass(slots=True)
class RebuiltTable:
    database: str
    table: str
    iceberg_table: str
    status: LedgerStatus
    rows: int | None
    applied_ts: int
    snapshot_id: int | None
    message: str


@dataclass(slots=True)
class RebuildSummary:
    scope: RebuildScope
    decode: DecodeSummary
    versions_added: int
    versions_corrected: int
    resolved: int
    reset: ResetOutcome
    apply: ApplySummary | None
    tables: list[RebuiltTable] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def run_rebuild(
    spark: SparkSession,
    config: LakeConfig,
    pipeline: PipelineConfig,
    run_id: str,
    requested: str | Sequence[str],
) -> RebuildSummary:
    """Rebuild the tables ``requested`` names (``*``: every table) and apply the pipeline to its watermark."""
    names = parse_request(requested)
    if not names:
        raise RebuildError(f"pipeline {pipeline.id!r}: a rebuild needs table names (database.table) or '*'")
    started_at, started = datetime.now(UTC), time.monotonic()
    tables = SystemTables.of(config, pipeline)
    tables.ensure(spark)
    seconds: dict[str, float] = {}
    lap = time.monotonic()

    def step(name: str) -> None:
        nonlocal lap
        now = time.monotonic()
        seconds[name] = now - lap
        lap = now

    log.info("rebuild: pipeline %r, run %r, tables %s", pipeline.id, run_id, ", ".join(names))
    with stage_lock(pipeline, "decode", run_id):
        decoded: DecodeSummary = _unlocked(run_decode)(spark, config, pipeline, run_id, redecode=True)
        resolved = resolve_quarantine(spark, tables, pipeline, run_id)
    step("decode")
    with stage_lock(pipeline, "schema_history", run_id):
        added: int = _unlocked(run_schema_history)(spark, config, pipeline, run_id)
        scope = resolve(spark, tables, pipeline, names)
        corrected = refresh_history(spark, tables, pipeline, run_id, scope.names)
    step("schema_history")
    log.info("rebuild: %s", scope.describe())
    summary = RebuildSummary(scope, decoded, added, corrected, resolved, ResetOutcome(), None)
    failure: TicdcLakeError | None = None
    with stage_lock(pipeline, "apply", run_id):
        summary.reset = reset_tables(spark, tables, pipeline, scope)
        failpoints.hit("rebuild.after_reset")
        step("reset")
        try:
            summary.apply = _unlocked(run_apply)(spark, config, pipeline, run_id)
        except TicdcLakeError as exc:  # some table failed: record what the rebuild did, then fail
            failure = exc
        step("apply")
    summary.tables = [_outcome(spark, pipeline, summary, d, t) for d, t in scope.names]
    summary.seconds = seconds
    ledger.append(spark, tables, _ledger_rows(pipeline, run_id, summary, started_at, time.monotonic() - started))
    _log_summary(summary)
    if failure is not None:
        raise failure
    return summary


def _unlocked(function: Any) -> Any:
    """The stage function without its ``@locked`` wrapper: the rebuild holds the lock already."""
    return inspect.unwrap(function)


def _outcome(
    spark: SparkSession, pipeline: PipelineConfig, summary: RebuildSummary, database: str, table: str
) -> RebuiltTable:
    target = target_tables.TargetTable.for_upstream(pipeline, database, table)
    name = f"{database}.{table}"
    applied = summary.apply
    status, message = LedgerStatus.REBUILT, "applied from the beginning"
    if applied is None:
        status, message = LedgerStatus.FAILED, "apply failed (see the apply rows of this run)"
    elif name in applied.failed:
        status, message = LedgerStatus.FAILED, applied.failed[name]
    elif name in applied.held:
        status, message = LedgerStatus.HELD, applied.held[name]
    if not target_tables.exists(spark, target):
        rows, position, snapshot = None, 0, None
        if status == LedgerStatus.REBUILT:
            message = "no Iceberg table at the watermark (dropped or renamed away upstream, or no event yet)"
    else:
        position, snapshot = target_tables.applied_position(spark, target)
        rows = spark.table(target.sql_name).count()
    if applied is not None and applied.watermark is not None and status == LedgerStatus.REBUILT:
        message += f" to watermark {applied.watermark}"
    return RebuiltTable(database, table, target.display, status, rows, position, snapshot, message)


def _ledger_rows(
    pipeline: PipelineConfig, run_id: str, summary: RebuildSummary, started_at: datetime, elapsed: float
) -> list[ledger.LedgerRow]:
    watermark = ledger.tso(summary.apply.watermark if summary.apply else None)
    rows = []
    for t in summary.tables:
        row = ledger.stage_row(pipeline.id, run_id, STAGE, t.status, started_at, elapsed, None, t.message)
        row.database, row.table, row.iceberg_table = t.database, t.table, t.iceberg_table
        row.window_start, row.window_end, row.watermark = ledger.tso(0), ledger.tso(t.applied_ts), watermark
        row.rows_inserted, row.snapshot_id = t.rows, t.snapshot_id
        rows.append(row)
    failed = any(t.status == LedgerStatus.FAILED for t in summary.tables) or summary.apply is None
    message = (
        f"rebuilt {len(summary.tables)} table(s) ({summary.scope.describe()}); re-decoded {summary.decode.batches} "
        f"batch(es), {summary.decode.events} event(s); {summary.resolved} quarantined message(s) now decode; "
        f"{summary.versions_corrected} schema version(s) added or corrected; dropped "
        f"{', '.join(summary.reset.dropped) or 'nothing'}; low-water TSO was {summary.reset.low_water}"
    )
    pipeline_row = ledger.stage_row(
        pipeline.id,
        run_id,
        STAGE,
        LedgerStatus.FAILED if failed else LedgerStatus.OK,
        started_at,
        elapsed,
        summary.decode.events,
        message,
    )
    pipeline_row.watermark = watermark
    pipeline_row.rows_inserted = sum(t.rows or 0 for t in summary.tables)
    return [*rows, pipeline_row]


def _log_summary(summary: RebuildSummary) -> None:
    log.info(
        "rebuild summary (%s):",
        ", ".join(f"{k} {v:.1f}s" for k, v in summary.seconds.items()),
    )
    log.info("  %-40s %-8s %10s %22s  %s", "table", "status", "rows", "applied_ts", "note")
    for t in summary.tables:
        rows = "-" if t.rows is None else str(t.rows)
        log.info("  %-40s %-8s %10s %22s  %s", f"{t.database}.{t.table}", t.status, rows, t.applied_ts, t.message)


def rebuild_in_process(
    config: LakeConfig, pipeline: PipelineConfig, run_id: str, requested: str | Sequence[str]
) -> RebuildSummary:
    """:func:`run_rebuild` in this process's Spark (``ticdc-lake rebuild``); a session it starts, it stops."""
    from ticdc_lake.spark.session import pipeline_session

    started_here = SparkSession.getActiveSession() is None
    spark = pipeline_session(config, pipeline, STAGE)
    try:
        return run_rebuild(spark, config, pipeline, run_id, requested)
    finally:
        if started_here:
            spark.stop()
