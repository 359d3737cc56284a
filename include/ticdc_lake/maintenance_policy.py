"""Plain rules of table maintenance (no Spark, no Airflow): which tables, which locks, what to keep.

- Which tables: every table of the catalog that a configured pipeline owns (its upstream
  database and table, recorded as table properties, map to this namespace and pass the
  pipeline's include/exclude rules), plus the system tables.
- Which locks: a target table is written only by its pipeline's ``apply`` step, so its
  maintenance holds that pipeline's ``apply`` lock; the system tables are written by every Spark
  step of every pipeline of the catalog, so their maintenance holds all of those.
- What to keep: compaction commits carry the table's applied position (the ``ticdc.*`` snapshot
  summary keys apply writes), and expiry never removes the newest snapshot that carries it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from ticdc_lake import table_markers
from ticdc_lake.config import CatalogConfig, LakeConfig, PipelineConfig
from ticdc_lake.errors import ConfigError
from ticdc_lake.identifiers import UPSTREAM_DATABASE_PROPERTY, UPSTREAM_TABLE_PROPERTY
from ticdc_lake.maintenance_config import MaintenanceSchedules

JOBS: tuple[str, ...] = ("compact", "expire", "orphans")
#: The stage lock (``stage_lock``) of the step that writes target tables.
TARGET_WRITER_STAGES: tuple[str, ...] = ("apply",)
#: The stage locks of the steps that write the system tables (decode: change events, quarantine,
#: decoded batches; schema history; apply: ledger, quarantine, namespace properties).
SYSTEM_WRITER_STAGES: tuple[str, ...] = ("decode", "schema_history", "apply")
#: Snapshot summary keys that make up a table's applied position (readers take the newest value).
POSITION_PREFIX = "ticdc."
#: Snapshot summary key of a maintenance commit (the job that wrote it).
MAINTENANCE_KEY = "ticdc.maintenance"
#: Keys whose presence makes a snapshot "carry the position" (TSO-ordered and offset-ordered apply).
POSITION_KEYS: tuple[str, ...] = (table_markers.APPLIED_TS, "ticdc.applied-offsets")
#: Iceberg exceptions a concurrent writer causes; a retry with fresh metadata can succeed.
CONFLICTS: frozenset[str] = frozenset(
    {"org.apache.iceberg.exceptions.CommitFailedException", "org.apache.iceberg.exceptions.ValidationException"}
)


@dataclass(frozen=True, slots=True)
class TableScope:
    """One table to maintain and the pipeline locks its maintenance holds (pipeline id, stage)."""

    namespace: str
    name: str
    locks: tuple[tuple[str, str], ...]
    system: bool = False

    @property
    def display(self) -> str:
        return f"{self.namespace}.{self.name}"


def catalog_of(config: LakeConfig, name: str) -> CatalogConfig:
    """The catalog ``name`` of the pipeline file; ConfigError naming the file and the known ones."""
    if name not in config.catalogs:
        known = ", ".join(config.catalogs) or "none"
        raise ConfigError(f"{config.source_path}: no catalog {name!r} under 'catalogs:' (configured: {known})")
    return config.catalogs[name]


def catalog_pipelines(config: LakeConfig, catalog: str) -> list[PipelineConfig]:
    return sorted((p for p in config.pipelines if p.catalog == catalog), key=lambda p: p.id)


def owners(pipelines: Sequence[PipelineConfig], namespace: str, properties: Mapping[str, str]) -> list[str]:
    """Ids of the pipelines whose target rules put this table (by its upstream names) here."""
    database = properties.get(UPSTREAM_DATABASE_PROPERTY)
    table = properties.get(UPSTREAM_TABLE_PROPERTY)
    if database is None or table is None:
        return []
    return [
        p.id for p in pipelines if p.target.namespace_for(database) == namespace and p.target.wants(database, table)
    ]


def scope_of(
    pipelines: Sequence[PipelineConfig],
    system_namespace: str,
    namespace: str,
    name: str,
    properties: Mapping[str, str],
) -> TableScope | None:
    """The table's scope, or None when no configured pipeline owns it (it is left alone)."""
    if namespace == system_namespace:
        locks = tuple((p.id, s) for p in pipelines for s in SYSTEM_WRITER_STAGES)
        return TableScope(namespace, name, locks, system=True)
    found = owners(pipelines, namespace, properties)
    if not found:
        return None
    return TableScope(namespace, name, tuple((p, s) for p in found for s in TARGET_WRITER_STAGES))


def carried_position(summaries: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """The ``ticdc.*`` summary values a reader finds now: per key, the newest ancestor's value.

    ``summaries``: the current snapshot and its ancestors, newest first. A maintenance commit
    carrying these leaves every reader of the position (table_positions, offset apply, consistent
    reads) with the same answer, even once every older snapshot is expired.
    """
    carried: dict[str, str] = {}
    for summary in summaries:
        for key, value in summary.items():
            if key.startswith(POSITION_PREFIX) and key != MAINTENANCE_KEY and key not in carried:
                carried[key] = value
    return carried


def snapshots_to_retain(summaries: Sequence[Mapping[str, str]], min_snapshots: int) -> int:
    """How many of the newest ancestors expiry must keep: at least ``min_snapshots``, and down to
    the newest snapshot carrying each position key (a reader walks back to it)."""
    keep = min_snapshots
    for key in POSITION_KEYS:
        for index, summary in enumerate(summaries):
            if key in summary:
                keep = max(keep, index + 1)
                break
    return keep


def expire_before(now: datetime, retention: timedelta) -> datetime:
    """Snapshots committed before this instant may go (the time-travel window is ``retention``)."""
    return now - retention


def due_jobs(schedules: MaintenanceSchedules, when: datetime) -> list[str]:
    """The jobs whose cron schedule has a tick at ``when`` (minute precision, UTC)."""
    from croniter import croniter  # type: ignore[import-untyped]

    due = []
    for job in JOBS:
        cron = getattr(schedules, job)
        if cron is not None and croniter.match(cron, when.replace(second=0, microsecond=0)):
            due.append(job)
    return due


def jobs_of_run(schedules: MaintenanceSchedules, when: datetime, requested: Sequence[str] | None) -> list[str]:
    """The jobs a DAG run executes: those ``requested`` (run conf), else those due at its logical
    date, else (a manual trigger at a time no schedule ticks) every job with a schedule."""
    if requested:
        unknown = sorted(set(requested) - set(JOBS))
        if unknown:
            raise ValueError(f"unknown maintenance job(s) {unknown}; choose from {list(JOBS)}")
        return [j for j in JOBS if j in requested]
    due = due_jobs(schedules, when)
    return due or [j for j in JOBS if getattr(schedules, j) is not None]


def is_conflict(exception_classes: Iterable[str]) -> bool:
    """True when a Java exception (or one of its causes) is a commit conflict worth retrying."""
    return any(name in CONFLICTS for name in exception_classes)


def backoff_s(attempt: int, base_s: float) -> float:
    """Seconds to wait after the ``attempt``-th (1-based) conflict: base, 2 x base, 4 x base..."""
    return float(base_s * (2 ** (attempt - 1)))


class MaintenanceStatus(StrEnum):
    """How a maintenance job ended for one table (not a ledger status: maintenance writes no ledger)."""

    OK = "OK"
    #: Nothing to do, or the table was dropped meanwhile.
    NOOP = "NOOP"
    #: The pipeline's lock was not obtained in time: retryable.
    BUSY = "BUSY"
    FAILED = "FAILED"


@dataclass(slots=True)
class TableReport:
    """What one job did to one table: figures before and after, for the log and the summary."""

    table: str
    job: str
    status: MaintenanceStatus = MaintenanceStatus.OK
    data_files: tuple[int, int] = (0, 0)
    delete_files: tuple[int, int] = (0, 0)
    snapshots: tuple[int, int] = (0, 0)
    bytes: tuple[int, int] = (0, 0)
    removed_files: int = 0
    attempts: int = 1
    seconds: float = 0.0
    #: Seconds spent waiting for the pipeline locks (included in ``seconds``).
    waited: float = 0.0
    message: str = ""
    started: float = field(default_factory=time.monotonic)

    def line(self) -> str:
        def pair(values: tuple[int, int]) -> str:
            return f"{values[0]}→{values[1]}"

        text = (
            f"{self.job} {self.table}: {self.status}, data files {pair(self.data_files)}, delete files "
            f"{pair(self.delete_files)}, snapshots {pair(self.snapshots)}, bytes {pair(self.bytes)}, "
            f"removed files {self.removed_files}, {self.seconds:.1f} s"
        )
        if self.waited >= 1:
            text += f" (waited {self.waited:.1f} s for the pipeline lock)"
        if self.attempts > 1:
            text += f", {self.attempts} attempts"
        return text + (f": {self.message}" if self.message else "")


def summary_lines(catalog: str, job: str, reports: Sequence[TableReport]) -> list[str]:
    """The end-of-job summary: totals, then one line per table."""
    counts = {s: sum(1 for r in reports if r.status == s) for s in MaintenanceStatus}
    head = (
        f"maintenance {job} of catalog {catalog!r}: {len(reports)} table(s): {counts[MaintenanceStatus.OK]} ok, "
        f"{counts[MaintenanceStatus.NOOP]} unchanged, {counts[MaintenanceStatus.BUSY]} busy, "
        f"{counts[MaintenanceStatus.FAILED]} failed; data files "
        f"{sum(r.data_files[0] for r in reports)}→{sum(r.data_files[1] for r in reports)}, delete files "
        f"{sum(r.delete_files[0] for r in reports)}→{sum(r.delete_files[1] for r in reports)}, removed files "
        f"{sum(r.removed_files for r in reports)}, {sum(r.seconds for r in reports):.1f} s"
    )
    return [head, *("  " + r.line() for r in reports)]
