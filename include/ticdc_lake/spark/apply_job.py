"""Apply stage: normalized events → one Iceberg table per upstream table (docs/exactly-once.md).

A run goes through named phases, each timed and logged (``apply: phases ...``):

1. ``cut``: the landed scope, the partition and topic watermarks and the run's watermark
   (``ticdc_lake.apply.watermark_cut``; retired topics from ``spark.topic_retirement``);
2. ``tables``: per table, exactly the events with ``applied_ts < commit_ts <= watermark`` are
   applied: DDL events cut the window into segments, each applied with one MERGE that commits the
   new applied position in the same Iceberg snapshot (summary ``ticdc.applied-ts``), and the DDLs
   are applied in commit-TSO order in between (``ticdc_lake.spark.ddl_sequence``,
   ``docs/schema-evolution.md``); then the low-water mark moves up;
3. ``offset_ordered``: settings without commit TSO, in Kafka offset order (``spark.offset_apply``);
4. ``ledger``: one row per table and one for the stage, then the summary.

A crash leaves a state the next run converges from, and a re-run is a no-op.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake import failpoints, tso
from ticdc_lake.apply.quarantine_holds import Holds
from ticdc_lake.apply.watermark_cut import DecodedPart, TopicCut, pipeline_watermark, topic_cut
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.errors import ApplyError
from ticdc_lake.identifiers import sql_string
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ledger, offset_apply, table_positions, topic_retirement
from ticdc_lake.spark.ddl_sequence import collect_ddls, run_tables
from ticdc_lake.spark.quarantine_holds import quarantine_holds
from ticdc_lake.spark.record_images import history_layouts
from ticdc_lake.spark.schema_history_table import history_of
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.table_window import SchemaVersions
from ticdc_lake.stage_lock import locked

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ApplySummary:
    #: Per topic: the minimum over its partitions (None: a partition has none yet).
    watermarks: dict[str, int | None]
    #: The run's watermark: the lowest topic watermark; every table is applied up to it.
    watermark: int | None = None
    applied: list[str] = field(default_factory=list)
    held: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Cut:
    """The cut of this run (phase ``cut``): what apply reads and up to which TSO."""

    manifests: list[Manifest]
    decoded: list[DecodedPart]
    topics: TopicCut
    watermark: int | None
    #: Topics applied in this run, each mapped to the run's watermark.
    live: dict[str, int]
    #: (batch_id, topic, partition) whose decode wrote DDL events (``decoded_batches.ddl``).
    ddl_parts: frozenset[tuple[str, str, int]] = frozenset()


class _Phases:
    """Wall seconds of each phase of a run, logged in one line at the end."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - started

    def log(self) -> None:
        log.info("apply: phases %s", ", ".join(f"{name} {s:.1f}s" for name, s in self.seconds.items()))


@locked("apply")
def run_apply(spark: SparkSession, config: LakeConfig, pipeline: PipelineConfig, run_id: str) -> ApplySummary:
    started_at, started = datetime.now(UTC), time.monotonic()
    phases = _Phases()
    tables = SystemTables.of(config, pipeline)
    with phases.phase("cut"):
        tables.ensure(spark)
        cut = _cut(spark, tables, pipeline)
    summary = ApplySummary(cut.topics.watermarks, cut.watermark)
    rows: list[ledger.LedgerRow] = []
    with phases.phase("tables"):
        if cut.live and cut.topics.landed.parts:
            rows = _apply_tables(spark, config, tables, pipeline, run_id, cut, summary)
    whole = [m for m in cut.manifests if m.batch_id in cut.topics.landed.whole_batches]
    if pipeline.offset_ordered and whole:  # no TSO, no watermark: docs/offset-ordered-apply.md
        with phases.phase("offset_ordered"):
            rows = offset_apply.run_offset_ordered(spark, config, tables, pipeline, run_id, whole)
            _count_offset_ordered(rows, summary)
    with phases.phase("ledger"):
        rows.append(_stage_row(pipeline, run_id, summary, started_at, started))
        failpoints.hit("apply.before_ledger")
        ledger.append(spark, tables, rows)
    phases.log()
    _log_summary(rows)
    if summary.failed:
        raise ApplyError(
            "apply failed for "
            + ", ".join(sorted(summary.failed))
            + "; other tables were applied. "
            + " | ".join(f"{t}: {m}" for t, m in sorted(summary.failed.items()))
        )
    return summary


def _cut(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig) -> _Cut:
    """Phase ``cut``: the manifests and decoded batches → the landed scope, the watermarks, the live topics."""
    manifests = LandingStore(pipeline.landing_uri, pipeline.id).manifests()
    rows = spark.sql(
        f"SELECT batch_id, topic, `partition`, max_watermark, run_id, ddl FROM {tables.decoded_batches} "
        f"WHERE pipeline = {sql_string(pipeline.id)}"
    ).collect()
    decoded = [
        DecodedPart(
            r["batch_id"],
            r["topic"],
            r["partition"],
            int(r["max_watermark"]) if r["max_watermark"] is not None else None,
            r["run_id"],
        )
        for r in rows
    ]
    # A count decode did not record (NULL) may hide DDL: such a part is read too.
    ddl_parts = frozenset((r["batch_id"], r["topic"], r["partition"]) for r in rows if r["ddl"] is None or r["ddl"])
    topics = topic_cut(manifests, decoded, pipeline.kafka.topics, where=pipeline.landing_uri)
    for (topic, partition), why in sorted(topics.landed.waiting.items()):
        log.warning(
            "apply: topic %r partition %d waits at offset %d: %s",
            topic,
            partition,
            topics.landed.ends[(topic, partition)],
            why,
        )
    _log_topic_watermarks(pipeline, topics)
    # One watermark for the whole pipeline: every table is applied to the same TSO, so the tables
    # of a run form a consistent cut (docs/consistent-reads.md). Topics without one wait.
    retired = topic_retirement.retired(spark, tables, pipeline, set(topics.landed.batch_ids), topics.behind)
    for topic, left in sorted(retired.items()):
        log.info(
            "apply: topic %r carries nothing after commit ts %d (its tables were dropped or renamed away; TiCDC "
            "sends it no more watermarks): it no longer holds the pipeline watermark",
            topic,
            left,
        )
    watermark, live = pipeline_watermark(topics.watermarks, retired)
    if watermark is not None and len(topics.watermarks) > 1:
        log.info(
            "apply: pipeline watermark %d (%s): the lowest of %d topic(s)",
            watermark,
            tso.to_datetime(watermark).isoformat(),
            len(live),
        )
    return _Cut(manifests, decoded, topics, watermark, live, ddl_parts)


def _log_topic_watermarks(pipeline: PipelineConfig, topics: TopicCut) -> None:
    for topic, mark in sorted(topics.watermarks.items()):
        if mark is not None:
            log.info("apply: topic %r watermark %d (%s)", topic, mark, tso.to_datetime(mark).isoformat())
            continue
        log.warning(
            "apply: topic %r has no watermark yet (partitions without one: %s); %s",
            topic,
            topics.silent_partitions(topic) or "no data landed",
            "its tables are applied in Kafka offset order" if pipeline.offset_ordered else "its tables wait",
        )
        if pipeline.offset_ordered:
            log.warning(
                "apply: pipeline %r is offset-ordered: %s without codec.enable_tidb_extension sends no commit "
                "TSO and no watermark; its events are applied in per-partition Kafka offset order, a weaker "
                "guarantee than commit-TSO order (docs/offset-ordered-apply.md)",
                pipeline.id,
                pipeline.protocol.value,
            )


def _apply_tables(
    spark: SparkSession,
    config: LakeConfig,
    tables: SystemTables,
    pipeline: PipelineConfig,
    run_id: str,
    cut: _Cut,
    summary: ApplySummary,
) -> list[ledger.LedgerRow]:
    """Phase ``tables``: every table of the live topics up to the watermark, then the new low-water mark."""
    landed = cut.topics.landed
    scope = _Scope(
        set(landed.whole_batches),
        set(landed.partial_parts),
        cut.live,
        table_positions.low_water(spark, tables, pipeline),
        {p.batch_id for p in cut.decoded if p.run_id == run_id and p.batch_id in landed.batch_ids},
        cut.ddl_parts,
    )
    if scope.settled():  # nothing to read: no scan to plan, no job (docs/apply-performance.md)
        events, ddls = spark.table(tables.change_events).where(F.lit(False)), []
    else:
        events = _events_in_scope(spark, tables, pipeline, scope)
        ddls = collect_ddls(_ddls_in_scope(spark, tables, pipeline, scope)) if scope.with_ddls() else []
    histories = _schemas(spark, tables, pipeline)
    holds = quarantine_holds(spark, tables, pipeline, config.source_path)
    # Above the low-water mark most tables have no events: the schema history names them, so each
    # still gets its ledger row (NOOP) as when every batch was read.
    known = list(histories) if scope.low > 0 else []
    rows = run_tables(spark, tables, pipeline, run_id, events, ddls, histories, cut.live, holds, known)
    low = _low_water_after(rows, summary, holds, cut.live)
    if low is not None and low > scope.low:
        table_positions.mark_low_water(spark, tables, pipeline, low)
    _count(rows, summary)
    return rows


def _count(rows: list[ledger.LedgerRow], summary: ApplySummary) -> None:
    """Adds the tables (and databases) of ``rows`` to the summary: applied, held (with why), failed (first line)."""
    for row in rows:
        name = f"{row.database}.{row.table}" if row.table is not None else f"database {row.database}"
        if row.status == LedgerStatus.APPLIED:
            summary.applied.append(name)
        elif row.status == LedgerStatus.HELD:
            summary.held[name] = row.message or ""
        elif row.status == LedgerStatus.FAILED:
            summary.failed[name] = (row.message or "").splitlines()[0][:500]


def _count_offset_ordered(rows: list[ledger.LedgerRow], summary: ApplySummary) -> None:
    """Adds the tables of offset-ordered ``rows`` to the summary (a failure keeps its first 500 characters)."""
    summary.applied += [f"{r.database}.{r.table}" for r in rows if r.status == LedgerStatus.APPLIED]
    summary.held.update({f"{r.database}.{r.table}": r.message or "" for r in rows if r.status == LedgerStatus.HELD})
    failed = {f"{r.database}.{r.table}": (r.message or "")[:500] for r in rows if r.status == LedgerStatus.FAILED}
    summary.failed.update(failed)


def _stage_row(
    pipeline: PipelineConfig, run_id: str, summary: ApplySummary, started_at: datetime, started: float
) -> ledger.LedgerRow:
    """The stage's own ledger row: status, the run's watermark and the counts of the summary."""
    return ledger.LedgerRow(
        pipeline.id,
        run_id,
        "apply",
        None,
        None,
        None,
        LedgerStatus.FAILED if summary.failed else LedgerStatus.OK,
        None,
        None,
        ledger.tso(summary.watermark),
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        f"{len(summary.applied)} applied, {len(summary.held)} held, {len(summary.failed)} failed",
        started_at,
        int((time.monotonic() - started) * 1000),
    )


@dataclass(frozen=True, slots=True)
class _Scope:
    """The events a run reads: of the landed scope (gap-free, decoded), up to the watermarks, above the low-water TSO
    (``table_positions.low_water``) except in batches decoded by this run (their replays are counted)."""

    batch_ids: set[str]
    #: (batch_id, topic, partition) read although their batch is not whole in scope.
    parts: set[tuple[str, str, int]]
    marks: dict[str, int]
    low: int
    this_run: set[str]
    #: (batch_id, topic, partition) whose decode wrote DDL events: the only ones the DDL read scans.
    ddl_parts: frozenset[tuple[str, str, int]] = frozenset()

    def settled(self) -> bool:
        """Whether the scope holds no event, known without reading: every event up to the
        watermark is at or below the low-water TSO and no batch was decoded by this run (a run
        with nothing new). Its tables still get their windows, holds and NOOP ledger rows."""
        return not self.this_run and 0 < max(self.marks.values(), default=0) <= self.low

    def ddl_scope(self) -> list[tuple[str, str, int]]:
        """The parts of the scope whose decode wrote DDL events (``decoded_batches.ddl``): the DDL
        read scans only their batches, so its cost follows the DDLs, not all events."""
        return sorted((b, t, p) for b, t, p in self.ddl_parts if b in self.batch_ids or (b, t, p) in self.parts)

    def with_ddls(self) -> bool:
        return bool(self.ddl_scope())


def _up_to_watermark(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, scope: _Scope) -> DataFrame:
    limit = F.lit(None).cast("decimal(20,0)")
    for topic, mark in scope.marks.items():
        limit = F.when(F.col("topic") == topic, F.lit(mark).cast("decimal(20,0)")).otherwise(limit)
    landed = F.col("batch_id").isin(sorted(scope.batch_ids))
    for batch, topic, partition in sorted(scope.parts):
        landed = landed | ((F.col("batch_id") == batch) & (F.col("topic") == topic) & (F.col("partition") == partition))
    frame = (
        spark.table(tables.change_events)
        .where((F.col("pipeline") == pipeline.id) & landed)
        .where(F.col("commit_ts") <= limit)
    )
    if scope.low > 0:  # Iceberg skips the files of older batches by their commit_ts bounds
        above = F.col("commit_ts") > F.lit(scope.low).cast("decimal(20,0)")
        frame = frame.where(above | F.col("batch_id").isin(sorted(scope.this_run)) if scope.this_run else above)
    return frame


def _events_in_scope(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, scope: _Scope) -> DataFrame:
    frame = _up_to_watermark(spark, tables, pipeline, scope)
    return frame.where(F.col("kind").isin("DML", "DDL") & F.col("table").isNotNull())


def _ddls_in_scope(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, scope: _Scope) -> DataFrame:
    """Table and database DDL with a commit TSO (DDL without one cannot be ordered), read only from
    the batch partitions whose decode wrote DDL (Iceberg prunes the other batches' files)."""
    parts = scope.ddl_scope()
    batches = sorted({b for b, _, _ in parts})
    frame = _up_to_watermark(spark, tables, pipeline, scope).where(F.col("batch_id").isin(batches))
    wrote = F.lit(False)
    for batch, topic, partition in parts:
        wrote = wrote | ((F.col("batch_id") == batch) & (F.col("topic") == topic) & (F.col("partition") == partition))
    return frame.where(wrote & (F.col("kind") == "DDL") & (F.col("commit_ts") > 0) & F.col("database").isNotNull())


def _low_water_after(
    rows: list[ledger.LedgerRow], summary: ApplySummary, holds: Holds | None, live: dict[str, int]
) -> int | None:
    """The new low-water TSO: no table (held, failed or new) and no quarantine hold is below it, and
    no live topic lacks a watermark (its events are unbounded; retired topics get none); None when a
    database DDL failed (it is retried from its commit TSO) or a table's position is unknown."""
    if summary.watermark is None or any(m is None and t not in live for t, m in summary.watermarks.items()):
        return None
    low = summary.watermark
    for row in rows:
        if row.table is None:
            if row.status == LedgerStatus.FAILED:
                return None
            continue
        if row.status == LedgerStatus.NOOP:  # every event of it up to the watermark is applied: no constraint
            continue
        if row.window_end is None:
            return None
        low = min(low, int(row.window_end))
    for hold in [*(holds.tables.values() if holds else ()), *(holds.topics.values() if holds else ())]:
        low = min(low, hold.position)
    return low


def _schemas(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig
) -> dict[tuple[str, str], SchemaVersions]:
    result: dict[tuple[str, str], SchemaVersions] = {}
    rows = history_of(spark, tables, pipeline)
    for r in rows:
        result.setdefault((r["database"], r["table"]), SchemaVersions()).add(
            int(r["schema_version"]), int(r["commit_ts"]), TableSchema.from_json(r["table_schema"])
        )
    for name, layouts in history_layouts(rows, pipeline.policies, pipeline.codec.server_time_zone).items():
        result[name].layouts.update((layout.version, layout) for layout in layouts)
    return result


def _log_summary(rows: list[ledger.LedgerRow]) -> None:
    """One line per table: counts, then what the DDLs did or why the table is held (the ledger message)."""
    log.info("apply summary:")
    header = ("table", "status", "events", "replays", "dups", "ins", "upd", "del", "ddl / reason")
    log.info("  %-40s %-8s %10s %8s %6s %8s %8s %8s  %s", *header)
    for r in rows:
        where = f"database {r.database}" if r.database else "(pipeline)"
        name = f"{r.database}.{r.table}" if r.table else where
        log.info(
            "  %-40s %-8s %10s %8s %6s %8s %8s %8s  %s",
            name,
            r.status,
            r.events_in if r.events_in is not None else "-",
            r.replays_skipped if r.replays_skipped is not None else "-",
            r.duplicates_skipped if r.duplicates_skipped is not None else "-",
            r.rows_inserted or 0,
            r.rows_updated or 0,
            r.rows_deleted or 0,
            (r.message or "")[:200] if r.database else "",
        )
