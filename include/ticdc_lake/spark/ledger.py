"""The run ledger: one row per run, stage and table, queryable by people."""

from __future__ import annotations

from dataclasses import astuple, dataclass, replace
from datetime import datetime
from decimal import Decimal

from pyspark.sql import DataFrame, SparkSession

from ticdc_lake.redaction import redact
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.spark.local_frames import local_frame
from ticdc_lake.spark.system_tables import COLUMNS, UNSHUFFLED_WRITE, SystemTables


@dataclass(slots=True)
class LedgerRow:
    pipeline: str
    run_id: str
    stage: str
    database: str | None
    table: str | None
    iceberg_table: str | None
    status: LedgerStatus
    window_start: Decimal | None
    window_end: Decimal | None
    watermark: Decimal | None
    events_in: int | None
    replays_skipped: int | None
    rows_inserted: int | None
    rows_updated: int | None
    rows_deleted: int | None
    unrepresentable_values: int | None
    snapshot_id: int | None
    message: str | None
    started_at: datetime
    duration_ms: int
    #: Row events above the position that repeat an earlier one (``docs/exactly-once.md``); NULL where
    #: not counted (stage rows, the offset-ordered apply, which has no transaction identity).
    duplicates_skipped: int | None = None
    #: TIMESTAMP values of the applied rows in an interval TiCDC sends for two instants (a repeated
    #: daylight-saving hour of ``codec.server_time_zone``), so each may be one shift off
    #: (``ticdc_lake.ambiguous_times``); NULL where not counted (stage rows, the offset-ordered apply).
    ambiguous_time_values: int | None = None


def stage_row(
    pipeline: str,
    run_id: str,
    stage: str,
    status: LedgerStatus,
    started_at: datetime,
    seconds: float,
    events_in: int | None = None,
    message: str | None = None,
) -> LedgerRow:
    """The pipeline-level ledger row of a stage (no table)."""
    return LedgerRow(
        pipeline,
        run_id,
        stage,
        None,
        None,
        None,
        status,
        None,
        None,
        None,
        events_in,
        None,
        None,
        None,
        None,
        None,
        None,
        message,
        started_at,
        int(seconds * 1000),
    )


def tso(value: int | None) -> Decimal | None:
    return Decimal(value) if value is not None else None


def append(spark: SparkSession, tables: SystemTables, rows: list[LedgerRow]) -> None:
    """Append ``rows``; their messages pass through :func:`ticdc_lake.redaction.redact` first, since
    they quote errors, DDL text and settings and the ledger is read by many people."""
    if rows:
        clean = redacted(rows)
        # A few rows: one task, one file, no shuffle before the write.
        ledger_frame(spark, clean).coalesce(1).writeTo(tables.run_ledger).options(**UNSHUFFLED_WRITE).append()


def ledger_frame(spark: SparkSession, rows: list[LedgerRow]) -> DataFrame:
    """``rows`` as a DataFrame of the ledger's columns, through Arrow (``local_frame``).

    Not ``spark.createDataFrame`` of tuples: that pickles the rows across in a Python job, which
    starts a pool of Python workers of its own (a daemon, about a second of CPU) for every ledger
    append, so even a run with nothing new started Python workers.
    """
    return local_frame(spark, [values(r) for r in rows], COLUMNS["run_ledger"])


def values(row: LedgerRow) -> tuple[object, ...]:
    """The row's column values in ``COLUMNS["run_ledger"]`` order; the status goes as its plain ``str``
    value (Arrow and Spark take an exact ``str`` for a string column, not a :class:`LedgerStatus`)."""
    return tuple(v.value if isinstance(v, LedgerStatus) else v for v in astuple(row))


def redacted(rows: list[LedgerRow]) -> list[LedgerRow]:
    """``rows`` with secrets masked in their messages (registered secrets, ``key=value`` credentials)."""
    return [replace(r, message=redact(r.message)) if r.message else r for r in rows]
