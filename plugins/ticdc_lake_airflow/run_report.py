"""What one pipeline run did, told to Airflow: log summary, asset events, metrics, lineage.

The Spark application records every step in the run ledger (one row per run, stage and table)
and every decoded batch in ``decoded_batches``; after ``spark-submit`` returns, the transform
task reads THIS run's rows back with pyiceberg (:func:`load_report`) and

* logs a per-table summary table (:func:`summary_lines`), also when the run failed;
* emits the pipeline's asset event and one per table the run applied changes to
  (:func:`ticdc_lake_airflow.assets.emit_asset_events`), with the applied TSO, its wall time, row counts and snapshot;
* sends StatsD metrics through Airflow's own ``stats`` (:mod:`ticdc_lake_airflow.metrics`);
* keeps the report for the OpenLineage facets (:mod:`ticdc_lake_airflow.lineage`).

Reporting never fails a run that succeeded: a report that cannot be read is a warning.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ticdc_lake import tso
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.identifiers import iceberg_table_name
from ticdc_lake.run_ledger import LedgerStatus

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TableOutcome:
    """One target table's ledger row of the run's apply step."""

    database: str
    table: str
    catalog: str
    namespace: str
    name: str
    status: str
    events: int
    inserted: int
    updated: int
    deleted: int
    #: The TSO the table is applied up to after the run (or held at).
    applied_ts: int | None
    snapshot_id: int | None
    seconds: float
    message: str = ""

    @property
    def changed(self) -> bool:
        """The run changed the table (rows or DDL): its asset gets an event."""
        return self.status == LedgerStatus.APPLIED

    @property
    def applied_at(self) -> datetime | None:
        return tso.to_datetime(self.applied_ts) if self.applied_ts else None

    @property
    def identifier(self) -> str:
        return f"{self.catalog}.{self.namespace}.{self.name}"


@dataclass(frozen=True, slots=True)
class RunReport:
    pipeline: str
    run_id: str
    catalog: str
    #: Status of each step that wrote its pipeline-level ledger row (decode, schema_history, apply).
    steps: dict[str, str]
    #: The apply step's watermark: every table not held is applied up to it.
    watermark: int | None
    #: From ``decoded_batches``: what this run decoded.
    batches: int
    messages: int
    events: int
    quarantined: int
    pending: int
    tables: list[TableOutcome] = field(default_factory=list)
    #: Database-level DDL rows and other notes, ``(what, status, message)``.
    notes: list[tuple[str, str, str]] = field(default_factory=list)

    def total(self, what: str) -> int:
        return sum(int(getattr(t, what)) for t in self.tables)

    @property
    def changed(self) -> list[TableOutcome]:
        return [t for t in self.tables if t.changed]

    def lag_seconds(self, now: datetime) -> float | None:
        """How far the watermark is behind ``now`` (its TSO's wall time)."""
        if self.watermark is None:
            return None
        return max(0.0, (now - tso.to_datetime(self.watermark)).total_seconds())


def _int(value: Any) -> int:
    return int(value) if value is not None else 0


def _newest_rows(ledger: Iterable[Mapping[str, Any]], run_id: str) -> list[Mapping[str, Any]]:
    """The run's rows, the newest per (stage, database, table): a retried task wrote its rows again."""
    newest: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    mine = [r for r in ledger if r["run_id"] == run_id]
    for row in sorted(mine, key=lambda r: r.get("started_at") or datetime.min.replace(tzinfo=UTC)):
        newest[(row["stage"], row["database"], row["table"])] = row
    return list(newest.values())


def build_report(
    pipeline: PipelineConfig,
    run_id: str,
    ledger: Iterable[Mapping[str, Any]],
    decoded: Iterable[Mapping[str, Any]],
) -> RunReport:
    """The report of ``run_id`` from its ledger rows and its ``decoded_batches`` rows (pure)."""
    steps: dict[str, str] = {}
    watermark: int | None = None
    decode_events = 0
    tables: list[TableOutcome] = []
    notes: list[tuple[str, str, str]] = []
    for row in _newest_rows(ledger, run_id):
        stage, status, message = row["stage"], row["status"], row.get("message") or ""
        if row["table"] is None and row["database"] is None:
            steps[stage] = status
            if stage == "apply" and row.get("watermark") is not None:
                watermark = int(row["watermark"])
            if stage == "decode":
                decode_events = _int(row.get("events_in"))
            continue
        if stage != "apply":
            continue
        database = row["database"]
        if row["table"] is None:
            notes.append((f"database {database}", status, message))
            continue
        tables.append(
            TableOutcome(
                database=database,
                table=row["table"],
                catalog=pipeline.catalog,
                namespace=pipeline.target.namespace_for(database),
                name=iceberg_table_name(row["table"]),
                status=status,
                events=_int(row.get("events_in")),
                inserted=_int(row.get("rows_inserted")),
                updated=_int(row.get("rows_updated")),
                deleted=_int(row.get("rows_deleted")),
                applied_ts=int(row["window_end"]) if row.get("window_end") is not None else None,
                snapshot_id=int(row["snapshot_id"]) if row.get("snapshot_id") is not None else None,
                seconds=_int(row.get("duration_ms")) / 1000,
                message=message,
            )
        )
    mine = [r for r in decoded if r["run_id"] == run_id]
    events = sum(_int(r.get("events")) for r in mine)
    return RunReport(
        pipeline=pipeline.id,
        run_id=run_id,
        catalog=pipeline.catalog,
        steps=steps,
        watermark=watermark,
        batches=len({r["batch_id"] for r in mine}),
        messages=sum(_int(r.get("messages")) for r in mine),
        events=events if mine else decode_events,
        quarantined=sum(_int(r.get("quarantined")) for r in mine),
        pending=sum(_int(r.get("pending")) for r in mine),
        tables=sorted(tables, key=lambda t: (t.namespace, t.name)),
        notes=notes,
    )


def prefetch_report_imports() -> threading.Thread:
    """Import what :func:`load_report` needs (pyiceberg, pyarrow: about 2 CPU s) in a daemon thread.

    For a task that waits on Spark work running elsewhere (the Spark run service): the imports then
    overlap the wait instead of following it. A ``spark-submit`` task starts it only once the
    driver said its Spark work is done: at the JVM's start or during the work they would compete
    with it for the same cores; during Spark's stop and the JVM's exit a core is free.
    """

    def load() -> None:
        try:
            import pyarrow  # noqa: F401
            import pyiceberg.catalog.sql  # the JDBC catalogs' reader (SQLAlchemy)
            import pyiceberg.expressions
            import pyiceberg.io.pyarrow
            import pyiceberg.table  # noqa: F401

            import ticdc_lake.catalog
            import ticdc_lake.run_ledger  # noqa: F401
        except ImportError:  # load_report then says what is missing, in the task log
            pass

    thread = threading.Thread(target=load, name="run-report-imports", daemon=True)
    thread.start()
    return thread


def load_report(config: LakeConfig, pipeline: PipelineConfig, run_id: str) -> RunReport:
    """Read the run's ledger and ``decoded_batches`` rows from the catalog (pyiceberg)."""
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.expressions import And, EqualTo

    from ticdc_lake.catalog import load_catalog
    from ticdc_lake.run_ledger import ledger_rows

    ledger = ledger_rows(config, pipeline, run_id=run_id)
    catalog_config = config.catalog_for(pipeline)
    catalog = load_catalog(pipeline.catalog, catalog_config)
    try:
        table = catalog.load_table((catalog_config.system_namespace, "decoded_batches"))
        scan = table.scan(
            row_filter=And(EqualTo("pipeline", pipeline.id), EqualTo("run_id", run_id)),  # type: ignore[call-arg, arg-type]
            selected_fields=("batch_id", "run_id", "messages", "events", "quarantined", "pending"),
        )
        decoded = scan.to_arrow().to_pylist()
    except NoSuchTableError:
        decoded = []
    return build_report(pipeline, run_id, ledger, decoded)


_COLUMNS = (
    ("table", "<", 36),
    ("status", "<", 8),
    ("events", ">", 8),
    ("inserted", ">", 9),
    ("updated", ">", 8),
    ("deleted", ">", 8),
    ("applied_ts", ">", 19),
    ("applied_at (UTC)", "<", 24),
    ("seconds", ">", 8),
)


def summary_lines(report: RunReport, now: datetime | None = None) -> list[str]:
    """The run's summary: one line per step, then a table with one row per target table."""
    now = now or datetime.now(UTC)
    steps = ", ".join(f"{s} {v}" for s, v in report.steps.items()) or "no step recorded"
    lines = [f"run summary: pipeline {report.pipeline!r} run {report.run_id!r}: {steps}"]
    lines.append(
        f"  decoded {report.batches} batch(es), {report.messages} message(s) -> {report.events} event(s), "
        f"{report.quarantined} quarantined, {report.pending} pending"
    )
    if report.watermark is not None:
        lag = report.lag_seconds(now) or 0.0
        lines.append(
            f"  watermark {report.watermark} ({tso.to_datetime(report.watermark).isoformat()}), {lag:.0f} s behind now"
        )
    lines.append(
        f"  {len(report.tables)} table(s): {len(report.changed)} changed, "
        f"+{report.total('inserted')} ~{report.total('updated')} -{report.total('deleted')} rows"
    )
    lines.append("  " + " ".join(f"{name:{align}{width}}" for name, align, width in _COLUMNS))
    for t in report.tables:
        applied_at = t.applied_at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if t.applied_at else "-"
        values = (
            t.identifier,
            t.status,
            t.events,
            t.inserted,
            t.updated,
            t.deleted,
            t.applied_ts if t.applied_ts is not None else "-",
            applied_at,
            f"{t.seconds:.1f}",
        )
        cells = " ".join(f"{v!s:{a}{w}}" for v, (_, a, w) in zip(values, _COLUMNS, strict=True))
        note = (
            f"  {t.message.splitlines()[0][:160]}"
            if t.status in (LedgerStatus.HELD, LedgerStatus.FAILED) and t.message
            else ""
        )
        lines.append(f"  {cells}{note}")
    for what, status, message in report.notes:
        lines.append(f"  {what}: {status} {message.splitlines()[0][:160] if message else ''}".rstrip())
    return lines


def report_run(
    context: Any,
    config: LakeConfig,
    pipeline: PipelineConfig,
    *,
    succeeded: bool,
    logger: Any = None,
) -> RunReport | None:
    """After ``spark-submit``: log the summary, emit asset events (on success) and metrics.

    Returns the report (kept by the operator for its OpenLineage facets), None when it could not
    be read; reporting problems are logged, never raised.
    """
    from ticdc_lake_airflow.assets import emit_asset_events, pipeline_asset
    from ticdc_lake_airflow.metrics import emit, transform_metrics

    out = logger or log
    run_id = str(context["run_id"])
    started = time.monotonic()
    try:
        report = load_report(config, pipeline, run_id)
    except Exception as exc:  # the run's outcome must not depend on its report
        out.warning("run report of pipeline %r run %r could not be read: %s", pipeline.id, run_id, exc)
        return None
    out.info("run report read in %.1f s", time.monotonic() - started)
    for line in summary_lines(report):
        out.info("%s", line)
    sent = emit(transform_metrics(report))
    if succeeded:
        uris = emit_asset_events(context["outlet_events"], report)
        out.info(
            "asset events: %s and %d table(s)%s; %d metric(s) sent",
            pipeline_asset(report.pipeline).uri,
            len(uris),
            (": " + ", ".join(uris)) if uris else "",
            sent,
        )
    return report


def failed_tables(report: RunReport) -> str:
    """``"; failed: <table>: <reason>, ..."`` for the tables the run failed, "" when none did."""
    failed = [t for t in report.tables if t.status == LedgerStatus.FAILED]
    if not failed:
        return ""
    return "; failed: " + " | ".join(f"{t.identifier}: {(t.message.splitlines() or [''])[0][:300]}" for t in failed)
