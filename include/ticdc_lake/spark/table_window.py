"""The state of one table during one apply run: its window, position, holds and counts."""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import DataFrame

from ticdc_lake.apply.duplicates import in_window
from ticdc_lake.config import PipelineConfig
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ledger
from ticdc_lake.spark.record_images import VersionLayout
from ticdc_lake.spark.target_tables import TargetTable

_COUNTS = (
    "events_in",
    "rows_inserted",
    "rows_updated",
    "rows_deleted",
    "unrepresentable_values",
    "ambiguous_time_values",
    # Not in the ledger: a keyed MERGE's net changes, those typed from their records, the values
    # Spark rendered (the log says them).
    "net_changes",
    "typed_from_records",
    "rendered_values",
)


@dataclass(slots=True)
class SchemaVersions:
    """A table's schema history: by version, and by commit TSO for rows that carry no version."""

    by_version: dict[int, TableSchema] = field(default_factory=dict)
    by_ts: list[tuple[int, int]] = field(default_factory=list)
    #: Per version, how its rows' typed records read (``record_images.history_layouts``); a version
    #: decode writes no record for is not here.
    layouts: dict[int, VersionLayout] = field(default_factory=dict)

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
    #: Why the row at ``pending_ts`` waits, as decode recorded it (``change_events.schema_error``).
    pending_reason: str | None = None
    #: A quarantined message's cap (``ticdc_lake.apply.quarantine_holds``): nothing after it is applied.
    hold_at: int | None = None
    hold_reason: str = ""
    ddls: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    snapshot_id: int | None = None
    events: DataFrame | None = None
    #: From :func:`prepare_windows`, for ``(applied_ts, watermark]``: READY row events, their schema
    #: versions and lowest and highest commit TSO (None: not counted, each segment counts its own).
    ready: int | None = None
    ready_versions: tuple[int, ...] = ()
    first_ready: int = 0
    last_ready: int = 0
    #: The schema after the last DDL applied in this run, for rows without a schema version.
    ddl_schema: TableSchema | None = None
    #: From :func:`prepare_windows`: per commit TSO, READY row events above the position that repeat
    #: an earlier one, by the keyed rule and by the multiset rule (``ticdc_lake.apply.duplicates``).
    duplicates: dict[int, int] = field(default_factory=dict)
    copy_duplicates: dict[int, int] = field(default_factory=dict)
    #: Whether the schema of the rows merged last has no key (multiset rule for duplicates).
    keyless: bool = False
    #: From ``table_apply.group_net_changes``: this table's part of the run's grouped net changes
    #: (columns image, op, commit_ts) and the key they were computed by; used by the segment that
    #: holds all the window's READY rows when its schema has that key.
    net: DataFrame | None = None
    net_key: tuple[str, ...] = ()

    def unordered_note(self) -> str:
        return (
            f"{self.unordered} row event(s) carry no commit TSO (Canal-JSON or avro without the TiDB extension, "
            "avro DELETE tombstones): they can only be ordered by Kafka offset and the TSO-ordered apply does "
            "not apply them (docs/protocols.md, Ordering)"
        )

    def hold(self, reason: str) -> None:
        if self.held is None:
            self.held = reason

    def ledger_row(self, status: LedgerStatus, message: str | None = None, **counts: int | None) -> ledger.LedgerRow:
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
            counts.get("duplicates_skipped"),
            counts.get("ambiguous_time_values"),
        )

    def final_row(self) -> ledger.LedgerRow:
        """The run's one ledger row for this table."""
        parts = [*self.ddls]
        status = LedgerStatus.APPLIED if self.counts["events_in"] or self.ddls else LedgerStatus.NOOP
        if self.failed:
            status, parts = LedgerStatus.FAILED, [*parts, self.failed]
        elif self.held:
            status, parts = LedgerStatus.HELD, [*parts, self.held]
        return self.ledger_row(
            status,
            "; ".join(parts) or None,
            replays_skipped=self.replays,
            duplicates_skipped=self.duplicates_skipped(),
            snapshot_id=self.snapshot_id,
            **self.counts,
        )

    def target_table(self) -> TargetTable:
        return TargetTable.for_upstream(self.pipeline, self.database, self.table)

    def duplicates_skipped(self) -> int:
        """The duplicates of what this run applied, ``(applied_ts, position]``: a held table counts
        the rest in the run that applies them, so no duplicate is counted twice."""
        keyed = in_window(self.duplicates, self.applied_ts, self.position)
        if not keyed:  # the multiset rule counts a subset of the keyed one
            return 0
        return in_window(self.copy_duplicates, self.applied_ts, self.position) if self.keyless else keyed
