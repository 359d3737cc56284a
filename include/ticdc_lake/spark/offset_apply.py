"""Apply in per-partition Kafka offset order, for protocol settings without commit TSO or watermarks.

Canal-JSON and avro without ``codec.enable_tidb_extension`` give every event commit TSO 0 and
send no watermark (docs/offset-ordered-apply.md). Per table, a run applies every row event of the landed and
decoded prefix at or after the table's position (the next offset per partition, snapshot summary
``ticdc.applied-offsets``), ordered per key by (topic, partition, offset, index) only, one MERGE
per schema version segment (``ticdc_lake.apply.offset_plan``); a version change first evolves the
Iceberg table with an ALTER planned from the two versions' schemas. The position is committed in
the MERGE's snapshot, so a landed offset is never applied twice, a re-run is a no-op and a crash
converges. This is weaker than commit-TSO order: see ``docs/offset-ordered-apply.md``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake import failpoints, table_markers
from ticdc_lake.apply import offset_plan as plan
from ticdc_lake.apply.ddl_plan import DdlEvent, plan_ddl
from ticdc_lake.apply.quarantine_holds import Holds
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ddl_apply, ledger, target_tables
from ticdc_lake.spark.offset_merge import merge_segment
from ticdc_lake.spark.offset_stats import barriers, row_stats
from ticdc_lake.spark.quarantine_holds import quarantine_holds
from ticdc_lake.spark.record_images import VersionLayout, foreign_layouts, history_layouts
from ticdc_lake.spark.schema_history_table import history_of
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.table_positions import iceberg_columns
from ticdc_lake.spark.target_tables import TargetTable

log = logging.getLogger(__name__)

GUARANTEE = "offset-ordered apply, weaker than commit-TSO order (docs/offset-ordered-apply.md)"


@dataclass(slots=True)
class OffsetWindow:
    database: str
    table: str
    target: TargetTable
    start: dict[plan.Partition, int] = field(default_factory=dict)
    position: dict[plan.Partition, int] = field(default_factory=dict)
    version: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    replays: int = 0
    notes: list[str] = field(default_factory=list)
    held: str | None = None
    failed: str | None = None
    snapshot_id: int | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: float = field(default_factory=time.monotonic)


def run_offset_ordered(
    spark: SparkSession,
    config: LakeConfig,
    tables: SystemTables,
    pipeline: PipelineConfig,
    run_id: str,
    prefix: Sequence[Manifest],
) -> list[ledger.LedgerRow]:
    """Apply every table of the prefix in offset order; one ledger row per table."""
    log.warning("apply: pipeline %r: %s", pipeline.id, GUARANTEE)
    ends: dict[plan.Partition, int] = {}
    for manifest in prefix:
        for rng in manifest.ranges:
            ends[(rng.topic, rng.partition)] = max(ends.get((rng.topic, rng.partition), 0), rng.end)
    events = (
        spark.table(tables.change_events)
        .where((F.col("pipeline") == pipeline.id) & F.col("batch_id").isin(sorted(m.batch_id for m in prefix)))
        .where(F.col("kind").isin("DML", "DDL") & F.col("table").isNotNull())
    )
    topics: dict[tuple[str, str], str] = {}
    for r in events.select("database", "table", "topic").distinct().orderBy("database", "table", "topic").collect():
        topics.setdefault((r["database"], r["table"]), r["topic"])
    windows = [
        _window(spark, pipeline, database, table)
        for (database, table) in sorted(topics)
        if pipeline.target.wants(database, table)
    ]
    if not windows:
        return []
    holds = quarantine_holds(spark, tables, pipeline, config.source_path)
    histories, layouts = _histories(spark, tables, pipeline)
    cuts = barriers(spark, windows, events, ends)
    ranges, replays, written = row_stats(spark, windows, events, ends, cuts, run_id)
    for w in windows:
        name = (w.database, w.table)
        w.replays = replays.get(name, 0)
        parts = (
            topics[name],
            histories.get(name, {}),
            layouts.get(name, {}),
            written.get(name, set()),
            ranges.get(name, []),
            ends,
            cuts.get(name, {}),
        )
        _guarded(w, partial(_apply_table, spark, tables, pipeline, run_id, w, events, holds, *parts))
        failpoints.hit("apply.between_tables")
    return [_ledger_row(pipeline, run_id, w) for w in windows]


def _window(spark: SparkSession, pipeline: PipelineConfig, database: str, table: str) -> OffsetWindow:
    target = TargetTable.for_upstream(pipeline, database, table)
    window = OffsetWindow(database, table, target)
    loaded = target_tables.iceberg_table(spark, target)
    window.start, window.version = read_offsets(loaded, pipeline)
    window.position = dict(window.start)
    owner = target_tables.applied_by(loaded) if loaded is not None else None
    window.held = target_tables.foreign_note(target, owner, pipeline.id)
    return window


def read_offsets(table: Any, pipeline: PipelineConfig) -> tuple[dict[plan.Partition, int], int | None]:
    """The next offsets and schema version from the newest snapshot of this pipeline that has them,
    of a loaded target table (None: no table)."""
    for snapshot in target_tables.ancestors(table) if table is not None else ():
        summary = snapshot.summary()
        text = summary.get(plan.OFFSETS_PROP)
        if text is not None and summary.get(table_markers.PIPELINE) == pipeline.id:
            version = summary.get(plan.VERSION_PROP)
            return plan.parse_offsets(str(text)), int(version) if version not in (None, "") else None
    return {}, None


def _apply_table(
    spark: SparkSession,
    system: SystemTables,
    pipeline: PipelineConfig,
    run_id: str,
    w: OffsetWindow,
    events: DataFrame,
    holds: Holds,
    topic: str,
    history: dict[int, TableSchema],
    layouts: dict[int, VersionLayout],
    written: set[tuple[int, int]],
    found: list[plan.VersionRange | tuple[str, int]],
    ends: dict[plan.Partition, int],
    cuts: dict[plan.Partition, int],
) -> None:
    if w.held:  # another pipeline's table (_window)
        return
    hold = holds.for_table(w.database, w.table, topic) if holds else None
    if hold is not None:
        w.held = hold.reason
        return
    foreign = foreign_layouts(pipeline.id, f"{w.database}.{w.table}", written, list(layouts.values()))
    if foreign is not None:
        w.held = foreign
        return
    pending = [f for f in found if isinstance(f, tuple)]
    if pending:
        w.held = (
            f"{sum(n for _, n in pending)} row event(s) from {min(p for p, _ in pending)} wait for their table schema "
            "(PENDING); in offset order nothing after them can be applied before them"
        )
        return
    ranges = [f for f in found if isinstance(f, plan.VersionRange)]
    final = plan.final_offsets({k: v for k, v in ends.items() if k[0] == topic}, cuts, w.start)
    segments = plan.plan_segments(ranges, w.start, final) if ranges else []
    if isinstance(segments, str):
        w.held = f"{segments} (topic {topic!r})"
        return
    mine = events.where((F.col("database") == w.database) & (F.col("table") == w.table))
    for segment in segments:
        schema = history.get(segment.version) if segment.version is not None else None
        if schema is None:
            w.held = (
                f"{segment.events} row event(s) of schema version {segment.version} have no table schema in the "
                "schema history; re-run the schema_history task of this run"
            )
            return
        if not _evolve(spark, system, pipeline, w, history, schema):
            return
        ready = (F.col("kind") == "DML") & (F.col("status") == "READY")
        dml = mine.where(ready & F.col("schema_version").eqNullSafe(F.lit(segment.version)))
        dml = dml.where(_in_window(w.position, segment.after))
        props = {
            plan.OFFSETS_PROP: plan.format_offsets(segment.after),
            plan.VERSION_PROP: str(segment.version),
            table_markers.PIPELINE: pipeline.id,
            table_markers.RUN_ID: run_id,
        }
        layout = layouts.get(segment.version) if segment.version is not None else None
        added, w.snapshot_id = merge_segment(spark, w.target, dml, schema, props, segment.events, layout)
        for name, value in added.items():
            w.counts[name] = w.counts.get(name, 0) + value
        w.position, w.version = dict(segment.after), segment.version
    if cuts:
        where = ", ".join(f"{t}/{p}@{o}" for (t, p), o in sorted(cuts.items()))
        w.held = (
            f"a TRUNCATE, DROP or RENAME of the table (at {where}) carries no commit TSO, so rows of other "
            "partitions cannot be ordered against it: the table stops there. Apply the DDL to the Iceberg table by "
            "hand and start a new pipeline after it, or use codec.enable_tidb_extension (docs/offset-ordered-apply.md)"
        )


def _in_window(start: dict[plan.Partition, int], end: dict[plan.Partition, int]) -> Any:
    """Rows with ``start <= offset < end`` in their partition."""
    condition = F.lit(False)
    for (topic, partition), upper in end.items():
        here = (F.col("topic") == topic) & (F.col("partition") == partition)
        condition = condition | (
            here & (F.col("offset") >= start.get((topic, partition), 0)) & (F.col("offset") < upper)
        )
    return condition


def _evolve(
    spark: SparkSession,
    system: SystemTables,
    pipeline: PipelineConfig,
    w: OffsetWindow,
    history: dict[int, TableSchema],
    schema: TableSchema,
) -> bool:
    """Create the table, or change it from the last applied version's schema to ``schema``."""
    current = iceberg_columns(spark, w.target)
    if current is None:
        target_tables.create(spark, w.target, schema, pipeline.id)
        log.info("apply: created %s (key %s)", w.target.display, list(schema.handle_key()) or "whole row")
        return True
    pre = history.get(w.version) if w.version is not None else None
    if pre is not None and w.version != schema.version:
        event = DdlEvent(0, "ALTER", "", w.database, w.table, pre, schema)
        ddl = plan_ddl(event, pipeline.policies, current, pipeline.codec.server_time_zone)
        if ddl.held:
            w.held = ddl.held
            return False
        notes = ddl_apply.execute(spark, system, pipeline, w.target, ddl, 0)
        w.notes.append(f"schema version {w.version} -> {schema.version}" + (f" ({'; '.join(notes)})" if notes else ""))
        current = iceberg_columns(spark, w.target) or []
    names = {c.name.lower() for c in current}
    missing = [c.name for c in schema.columns if c.name.lower() not in names]
    if missing:
        w.held = (
            f"column(s) {missing} of upstream schema version {schema.version} are not in {w.target.display} and "
            "no earlier applied version is known to plan the change from"
        )
        return False
    return True


def _histories(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig
) -> tuple[dict[tuple[str, str], dict[int, TableSchema]], dict[tuple[str, str], dict[int, VersionLayout]]]:
    """Per table, its schema versions and how their typed records read (``record_images.history_layouts``)."""
    rows = history_of(spark, tables, pipeline)
    result: dict[tuple[str, str], dict[int, TableSchema]] = {}
    for r in rows:
        result.setdefault((r["database"], r["table"]), {})[int(r["schema_version"])] = TableSchema.from_json(
            r["table_schema"]
        )
    layouts = history_layouts(rows, pipeline.policies, pipeline.codec.server_time_zone)
    return result, {name: {layout.version: layout for layout in found} for name, found in layouts.items()}


def _guarded(w: OffsetWindow, action: Any) -> None:
    try:
        action()
    except Exception as exc:  # one table's failure must not stop the others
        log.exception("apply: %s.%s failed; the other tables go on", w.database, w.table)
        w.failed = (str(exc) if isinstance(exc, TicdcLakeError) else f"{type(exc).__name__}: {exc}")[:4000]


def _ledger_row(pipeline: PipelineConfig, run_id: str, w: OffsetWindow) -> ledger.LedgerRow:
    """TSO columns NULL; the offsets window is in the message."""
    status = LedgerStatus.APPLIED if w.counts.get("events_in") else LedgerStatus.NOOP
    parts = [f"{GUARANTEE}: offsets {plan.describe_offsets(w.start)} -> {plan.describe_offsets(w.position)}"]
    parts += w.notes
    if w.failed:
        status, parts = LedgerStatus.FAILED, [*parts, w.failed]
    elif w.held:
        status, parts = LedgerStatus.HELD, [*parts, w.held]
    c = w.counts
    return ledger.LedgerRow(
        pipeline.id, run_id, "apply", w.database, w.table, w.target.display, status, None, None, None,
        c.get("events_in", 0), w.replays, c.get("rows_inserted", 0), c.get("rows_updated", 0),
        c.get("rows_deleted", 0), c.get("unrepresentable_values", 0), w.snapshot_id, "; ".join(parts),
        w.started_at, int((time.monotonic() - w.started) * 1000),
    )  # fmt: skip
