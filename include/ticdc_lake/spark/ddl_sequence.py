"""One apply run in commit-TSO order: DDL events of all tables split each table's window into segments.

For each DDL (global ``(commit_ts, ordinal)`` order) the table(s) it touches first get their DML
up to just below its commit TSO (one MERGE), then the DDL is applied; after the last DDL every
table is applied up to its topic's watermark. A table that cannot go on (rows waiting for a
schema, a DDL that cannot be applied or is refused by policy) is held at that TSO; a RENAME that
involves a held table waits too; the other tables go on. One table's exception fails only it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from pyspark.sql import DataFrame, SparkSession

from ticdc_lake import failpoints
from ticdc_lake.apply.ddl_changes import describe_change
from ticdc_lake.apply.ddl_plan import DdlEvent, plan_ddl, renamed_from
from ticdc_lake.apply.quarantine_holds import Holds
from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ddl_apply, ledger, table_positions
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.table_apply import apply_segment, group_net_changes, prepare_windows, read_position
from ticdc_lake.spark.table_window import SchemaVersions, TableWindow
from ticdc_lake.spark.target_tables import TargetTable

log = logging.getLogger(__name__)

Name = tuple[str, str]


@dataclass(frozen=True, slots=True)
class SequencedDdl:
    event: DdlEvent
    topic: str
    ordinal: int

    @property
    def name(self) -> Name | None:
        return (self.event.database, self.event.table) if self.event.table is not None else None

    #: The name before the DDL when it renames the table.
    old_name: Name | None = None


def collect_ddls(ddl_rows: DataFrame) -> list[SequencedDdl]:
    """Each DDL once, in ``(commit_ts, ordinal)`` order.

    Broadcast and redelivered copies are the same (commit_ts, database, table, ddl_query); the
    ordinal is the position among the DDLs of that commit TSO in a partition (lowest copy wins),
    so DDLs sharing a commit TSO keep their statement order.
    """
    has_error = "schema_error" in ddl_rows.columns
    columns = ["topic", "partition", "offset", "idx", "commit_ts", "database", "table", "ddl_type", "ddl_query"]
    columns += ["table_schema", "pre_table_schema"] + (["schema_error"] if has_error else [])
    rows = sorted(
        ddl_rows.select(*columns).collect(),
        key=lambda r: (r["topic"], r["partition"], int(r["commit_ts"]), r["offset"], r["idx"]),
    )
    found: dict[tuple[int, str, str | None, str], SequencedDdl] = {}
    previous, ordinal = None, 0
    for r in rows:
        group = (r["topic"], r["partition"], int(r["commit_ts"]))
        ordinal = ordinal + 1 if group == previous else 0
        previous = group
        key = (int(r["commit_ts"]), r["database"] or "", r["table"], r["ddl_query"] or "")
        if key in found and found[key].ordinal <= ordinal:
            continue
        event = DdlEvent(
            int(r["commit_ts"]),
            r["ddl_type"] or "QUERY",
            r["ddl_query"] or "",
            r["database"] or "",
            r["table"],
            TableSchema.from_json(r["pre_table_schema"]) if r["pre_table_schema"] else None,
            TableSchema.from_json(r["table_schema"]) if r["table_schema"] else None,
            r["schema_error"] if has_error else None,
        )
        found[key] = SequencedDdl(event, r["topic"], ordinal, renamed_from(event))
    return sorted(found.values(), key=lambda d: (d.event.commit_ts, d.ordinal))


def run_tables(
    spark: SparkSession,
    system: SystemTables,
    pipeline: PipelineConfig,
    run_id: str,
    events: DataFrame,
    ddls: list[SequencedDdl],
    histories: dict[Name, SchemaVersions],
    marks: dict[str, int],
    holds: Holds | None = None,
    known: Iterable[Name] = (),
) -> list[ledger.LedgerRow]:
    """``holds``: tables (and topics) that quarantined messages hold back; each is capped and reported HELD.
    ``known``: further table names that get a window (and a ledger row) without events in ``events``."""
    names: dict[Name, str] = {}
    for r in events.select("database", "table", "topic").distinct().orderBy("database", "table").collect():
        names.setdefault((r["database"], r["table"]), r["topic"])
    evented = set(names)  # the tables with events in scope: only they can have rows to apply
    for held_name, held in (holds.tables if holds else {}).items():
        names.setdefault(held_name, held.topic)
    for ddl in ddls:
        for name in (ddl.old_name, ddl.name):
            if name is not None:
                names.setdefault(name, ddl.topic)
    for name in known:  # every live topic has the pipeline's watermark: any of them will do
        names.setdefault(name, min(marks))
    windows: dict[Name, TableWindow] = {}
    positions = table_positions.name_positions(spark, system)
    for (database, table), topic in sorted(names.items()):
        if pipeline.target.wants(database, table) and topic in marks:
            window = TableWindow(pipeline, run_id, database, table, marks[topic])
            windows[(database, table)] = window
            cap = holds.for_table(database, table, topic) if holds else None
            if cap is not None:
                window.hold_at, window.hold_reason = cap.position, cap.reason
            _guarded(window, partial(read_position, spark, system, window, positions))
    cached: list[DataFrame | None] = [None, None]

    # Per table (and database, as (database, "")): the commit TSOs of its DDLs, which cut its window.
    cut: dict[Name, list[int]] = {}
    for d in ddls:
        for n in (d.old_name, d.name or (d.event.database, "")):
            if n is not None:
                cut.setdefault(n, []).append(d.event.commit_ts)

    def group(live: Sequence[TableWindow], rows: DataFrame) -> None:  # net changes in one job where they can
        cached[1] = group_net_changes(spark, live, rows, histories, cut)

    def prepare() -> None:
        # Fewer than two tables with events cannot be grouped: their counts job also counts duplicates.
        identity = len(evented & windows.keys()) < 2
        # Only the tables with events can have rows to give a carrier to.
        layouts = {n: list(h.layouts.values()) for n in evented if (h := histories.get(n)) is not None and h.layouts}
        cached[0] = prepare_windows(
            spark, list(windows.values()), events, run_id, group, identity=identity, layouts=layouts
        )

    _guarded_all([w for w in windows.values() if not w.failed], prepare)
    try:
        return _sequenced(spark, system, pipeline, run_id, ddls, histories, marks, windows)
    finally:
        for frame in cached:
            if frame is not None:
                frame.unpersist()


def _sequenced(
    spark: SparkSession,
    system: SystemTables,
    pipeline: PipelineConfig,
    run_id: str,
    ddls: list[SequencedDdl],
    histories: dict[Name, SchemaVersions],
    marks: dict[str, int],
    windows: dict[Name, TableWindow],
) -> list[ledger.LedgerRow]:
    """The DDLs in commit order with each table's rows up to each, then every table up to the watermark."""
    log.info("apply: %d table(s), %d DDL event(s) up to the watermark", len(windows), len(ddls))
    rows: list[ledger.LedgerRow] = []
    for ddl in ddls:
        if ddl.name is None:
            if pipeline.target.wants(ddl.event.database, "*"):
                # DROP DATABASE drops the database's tables: their rows before it are applied first.
                for (database, _), window in windows.items():
                    if database == ddl.event.database:
                        upper = ddl.event.commit_ts - 1
                        versions = histories.get((window.database, window.table), SchemaVersions())
                        _guarded(window, partial(apply_segment, spark, window, upper, versions))
                rows.extend(_database_ddl(spark, system, pipeline, run_id, ddl, marks))
            continue
        involved = [windows[n] for n in dict.fromkeys((ddl.old_name, ddl.name)) if n is not None and n in windows]
        if involved:
            _table_ddl(spark, system, pipeline, ddl, involved, histories)
    for window in windows.values():
        key = (window.database, window.table)
        _guarded(window, partial(apply_segment, spark, window, window.watermark, histories.get(key, SchemaVersions())))
        failpoints.hit("apply.between_tables")
    return rows + [w.final_row() for w in windows.values()]


def _table_ddl(
    spark: SparkSession,
    system: SystemTables,
    pipeline: PipelineConfig,
    ddl: SequencedDdl,
    involved: list[TableWindow],
    histories: dict[Name, SchemaVersions],
) -> None:
    event = ddl.event
    source, dest = involved[0], involved[-1]
    # Positions at the start of the run: DDLs sharing a commit TSO (RENAME a TO b, b TO c) all run.
    if event.commit_ts <= source.applied_ts or (dest is not source and event.commit_ts <= dest.applied_ts):
        return  # applied by an earlier run
    blocked = [w for w in involved if w.held or w.failed]
    if blocked:
        b = blocked[0]
        for w in involved:
            if w is not b:
                w.hold(f"DDL {event.ddl_type} at commit ts {event.commit_ts} waits for {b.database}.{b.table}")
        return
    if event.commit_ts > source.watermark:
        return
    for w in involved:
        key = (w.database, w.table)
        _guarded(w, partial(apply_segment, spark, w, event.commit_ts - 1, histories.get(key, SchemaVersions())))
    stopped = [w for w in involved if w.held or w.failed]
    if stopped:
        for w in involved:
            other = stopped[0]
            w.hold(f"DDL {event.ddl_type} at commit ts {event.commit_ts} waits for {other.database}.{other.table}")
        return

    if event.pre is None and event.post is not None and event.ddl_type.upper() != "CREATE":
        # Protocols without the schema before a DDL: the one in effect (last DDL of this run, else history).
        history = histories.get((source.database, source.table), SchemaVersions())
        event = replace(event, pre=source.ddl_schema or history.at(event.commit_ts - 1))

    def apply() -> None:
        target = source.target_table()
        plan = plan_ddl(
            event, pipeline.policies, table_positions.iceberg_columns(spark, target), pipeline.codec.server_time_zone
        )
        if plan.held:
            for w in involved:
                w.hold(plan.held)
            return
        notes = ddl_apply.execute(spark, system, pipeline, target, plan, event.commit_ts)
        failpoints.hit("apply.after_ddl")
        done = ", ".join([describe_change(c) for c in plan.changes] + notes) or "no change"
        log.info("apply: %s.%s: DDL %s at %d: %s", event.database, event.table, event.ddl_type, event.commit_ts, done)
        for w in involved:
            w.ddls.append(f"DDL {event.ddl_type} at {event.commit_ts} ({done})")
            w.position = w.upper = event.commit_ts
        dest.ddl_schema = event.post

    _guarded_all(involved, apply)


def _database_ddl(
    spark: SparkSession,
    system: SystemTables,
    pipeline: PipelineConfig,
    run_id: str,
    ddl: SequencedDdl,
    marks: dict[str, int],
) -> list[ledger.LedgerRow]:
    event = ddl.event
    space = TargetTable(pipeline.catalog, pipeline.target.namespace_for(event.database), "")
    if event.commit_ts <= table_positions.name_position(spark, system, space):
        return []
    window = TableWindow(pipeline, run_id, event.database, "", marks.get(ddl.topic, event.commit_ts))
    window.target = f"{space.catalog}.{space.namespace}"
    try:
        plan = plan_ddl(event, pipeline.policies, None)
        notes = ddl_apply.execute(spark, system, pipeline, space, plan, event.commit_ts)
        table_positions.mark_name(spark, system, space, event.commit_ts)
        done = ", ".join([describe_change(c) for c in plan.changes] + notes) or "no change"
        row = window.ledger_row(LedgerStatus.APPLIED, f"DDL {event.ddl_type} at {event.commit_ts} ({done})")
    except Exception as exc:  # one database's failure must not stop the tables
        log.exception("apply: database DDL %r failed", event.query)
        row = window.ledger_row(LedgerStatus.FAILED, _reason(exc))
    row.table = None
    return [row]


def _reason(exc: Exception) -> str:
    return (str(exc) if isinstance(exc, TicdcLakeError) else f"{type(exc).__name__}: {exc}")[:4000]


def _guarded(window: TableWindow, action: Callable[[], None]) -> None:
    _guarded_all([window], action)


def _guarded_all(windows: Iterable[TableWindow], action: Callable[[], None]) -> None:
    """Run ``action``; an exception fails these tables only (the others go on)."""
    group = list(windows)
    if any(w.failed for w in group):
        return
    try:
        action()
    except Exception as exc:  # one table's failure must not stop the others
        log.exception("apply: %s failed; the other tables go on", ", ".join(f"{w.database}.{w.table}" for w in group))
        for w in group:
            w.failed = _reason(exc)
