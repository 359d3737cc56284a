"""The three maintenance jobs on one Iceberg table, through Iceberg's Spark actions (py4j).

The Java actions are used rather than the SQL procedures (``CALL ... rewrite_data_files``)
because only the actions take ``snapshotProperty``: every compaction commit carries the table's
applied position (``maintenance_policy.carried_position``), so the position survives the expiry of
every snapshot apply wrote. Each job retries a commit that lost a race against another writer
(CommitFailedException, ValidationException) with backoff; other errors propagate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import tenacity
from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import SparkSession

from ticdc_lake import maintenance_policy as policy
from ticdc_lake.maintenance_config import MaintenanceConfig
from ticdc_lake.maintenance_policy import TableReport

log = logging.getLogger(__name__)

_T = TypeVar("_T")
MIB = 1024 * 1024
#: Manifests are rewritten only above this count: an unchanged table gets no new snapshot.
MANIFESTS_BEFORE_REWRITE = 2


@dataclass(frozen=True, slots=True)
class Figures:
    """File counts and sizes of a table's current snapshot (from its summary: no Spark job)."""

    data_files: int
    delete_files: int
    snapshots: int
    bytes: int
    records: int


def figures(table: Any) -> Figures:
    table.refresh()
    snapshot = table.currentSnapshot()
    count = sum(1 for _ in table.snapshots())
    if snapshot is None:
        return Figures(0, 0, count, 0, 0)
    summary = snapshot.summary()

    def number(key: str) -> int:
        value = summary.get(key)
        return int(value) if value is not None else 0

    return Figures(
        number("total-data-files"),
        number("total-delete-files"),
        count,
        number("total-files-size"),
        number("total-records"),
    )


def _manifest_count(table: Any) -> int:
    snapshot = table.currentSnapshot()
    return sum(1 for _ in snapshot.allManifests(table.io())) if snapshot is not None else 0


def ancestor_summaries(table: Any) -> list[dict[str, str]]:
    """Summaries of the current snapshot and its ancestors, newest first."""
    summaries = []
    snapshot = table.currentSnapshot()
    while snapshot is not None:
        summaries.append({str(k): str(v) for k, v in dict(snapshot.summary()).items()})
        parent = snapshot.parentId()
        snapshot = table.snapshot(parent) if parent is not None else None
    return summaries


def java_throwable(error: BaseException) -> Any | None:
    """The Java exception behind a py4j error, also when PySpark converted it (``CapturedException``)."""
    if isinstance(error, Py4JJavaError):
        return error.java_exception
    if isinstance(error, CapturedException):
        return getattr(error, "_origin", None)
    return None


def exception_classes(error: BaseException) -> list[str]:
    """Java class names of a py4j error and its causes (empty for a Python error)."""
    names, cause, seen = [], java_throwable(error), 0
    while cause is not None and seen < 20:
        names.append(str(cause.getClass().getName()))
        cause, seen = cause.getCause(), seen + 1
    return names


def describe(error: BaseException) -> str:
    """One line for a person: the Java exception (class and message) rather than py4j's call trace."""
    throwable = java_throwable(error)
    if throwable is not None:
        return str(throwable.toString()).splitlines()[0][:400]
    return f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:400]}"


def with_retries(what: str, settings: MaintenanceConfig, report: TableReport, attempt: Callable[[], _T]) -> _T:
    """Run ``attempt`` (which reloads what it needs); retry commit conflicts with backoff (tenacity)."""

    def counted() -> _T:
        report.attempts += 1
        return attempt()

    def before_sleep(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        classes = exception_classes(error) if error is not None else []
        log.warning(
            "%s: commit conflict with another writer (%s), attempt %d of %d; retrying in %.1f s",
            what,
            classes[-1] if classes else "?",
            state.attempt_number,
            settings.commit_attempts,
            state.upcoming_sleep,
        )

    report.attempts = 0
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(lambda error: policy.is_conflict(exception_classes(error))),
        stop=tenacity.stop_after_attempt(settings.commit_attempts),
        wait=lambda state: policy.backoff_s(state.attempt_number, settings.retry_backoff_s),
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(counted)


def _actions(spark: SparkSession) -> Any:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return jvm.org.apache.iceberg.spark.actions.SparkActions.get(spark._jsparkSession)


def _key_order(spark: SparkSession, table: Any) -> Any | None:
    """A sort order on the table's identifier (key) fields; None for a table without a key."""
    names = sorted(str(n) for n in table.schema().identifierFieldNames())
    if not names:
        return None
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    builder = jvm.org.apache.iceberg.SortOrder.builderFor(table.schema())
    for name in names:
        builder = builder.asc(name)
    return builder.build()


def _with_position(action: Any, position: dict[str, str], job: str) -> Any:
    for key, value in position.items():
        action = action.snapshotProperty(key, value)
    return action.snapshotProperty(policy.MAINTENANCE_KEY, job)


def compact(spark: SparkSession, table: Any, settings: MaintenanceConfig, report: TableReport) -> None:
    """Rewrite small data files and those with delete files, drop the deletes that no longer apply,
    rewrite the manifests. Every commit carries the current applied position."""

    def attempt() -> None:
        table.refresh()
        if table.currentSnapshot() is None:
            return
        position = policy.carried_position(ancestor_summaries(table))
        rewrite = _with_position(_actions(spark).rewriteDataFiles(table), position, "compact")
        order = _key_order(spark, table) if settings.sort_by_key else None
        rewrite = rewrite.sort(order) if order is not None else rewrite.binPack()
        options = {
            "target-file-size-bytes": str(settings.target_file_size_mb * MIB),
            "min-input-files": str(settings.min_input_files),
            "delete-file-threshold": str(settings.delete_file_threshold),
            "partial-progress.enabled": "false",
        }
        for key, value in options.items():
            rewrite = rewrite.option(key, value)
        result = rewrite.execute()
        report.removed_files += int(result.rewrittenDataFilesCount()) + int(result.removedDeleteFilesCount())
        table.refresh()
        if figures(table).delete_files > 0:
            # Position deletes of rewritten files are dangling now: rewriting the delete files
            # drops them (and merges the small ones left).
            deletes = _with_position(_actions(spark).rewritePositionDeletes(table), position, "compact")
            done = deletes.option("rewrite-all", "true").execute()
            report.removed_files += int(done.rewrittenDeleteFilesCount())
            table.refresh()
        if settings.rewrite_manifests and _manifest_count(table) > MANIFESTS_BEFORE_REWRITE:
            _with_position(_actions(spark).rewriteManifests(table), position, "compact").execute()

    with_retries(f"compact {report.table}", settings, report, attempt)


def expire(
    spark: SparkSession, table: Any, settings: MaintenanceConfig, report: TableReport, now: datetime | None = None
) -> None:
    """Expire snapshots older than the retention window, keeping ``min_snapshots`` and the newest
    snapshot that carries each position key; deletes the files only they referenced."""
    before = policy.expire_before(now or datetime.now(UTC), settings.retention_window)

    def attempt() -> None:
        table.refresh()
        if table.currentSnapshot() is None:
            return
        keep = policy.snapshots_to_retain(ancestor_summaries(table), settings.min_snapshots)
        if keep > settings.min_snapshots:
            log.info("expire %s: keeping the newest %d snapshots (down to the applied position)", report.table, keep)
        action = _actions(spark).expireSnapshots(table)
        result = action.expireOlderThan(int(before.timestamp() * 1000)).retainLast(keep).execute()
        report.removed_files += sum(
            int(n)
            for n in (
                result.deletedDataFilesCount(),
                result.deletedPositionDeleteFilesCount(),
                result.deletedEqualityDeleteFilesCount(),
                result.deletedManifestsCount(),
                result.deletedManifestListsCount(),
            )
        )

    with_retries(f"expire {report.table}", settings, report, attempt)


def remove_orphans(
    spark: SparkSession, table: Any, settings: MaintenanceConfig, report: TableReport, now: datetime | None = None
) -> None:
    """Delete files under the table's location that no snapshot references and that are older than
    ``orphan_min_age`` (a write in progress has young unreferenced files: they stay)."""
    before = (now or datetime.now(UTC)) - settings.orphan_age

    def attempt() -> None:
        table.refresh()
        result = _actions(spark).deleteOrphanFiles(table).olderThan(int(before.timestamp() * 1000)).execute()
        report.removed_files += sum(1 for _ in result.orphanFileLocations())

    with_retries(f"orphans {report.table}", settings, report, attempt)


JOB_FUNCTIONS: dict[str, Callable[..., None]] = {"compact": compact, "expire": expire, "orphans": remove_orphans}
