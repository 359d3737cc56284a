"""Apply stage: normalized events → one Iceberg table per upstream table (ARCHITECTURE 4.4).

Per topic the watermark is the minimum over its partitions of the highest watermark in the
contiguous decoded prefix of landed batches. Per table, exactly the events with
``applied_ts < commit_ts <= watermark`` are applied: DDL events cut the window into segments,
each applied with one MERGE that commits the new applied position in the same Iceberg snapshot
(summary ``ticdc.applied-ts``), and the DDLs are applied in commit-TSO order in between
(``ticdc_lake.spark.ddl_sequence``, ``docs/schema-evolution.md``). A crash leaves a state the
next run converges from, and a re-run is a no-op.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake import tso
from ticdc_lake.apply.watermark import PartitionProgress, partition_watermarks, topic_watermarks
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.errors import ApplyError
from ticdc_lake.identifiers import sql_string
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ledger
from ticdc_lake.spark.ddl_sequence import collect_ddls, run_tables
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.table_apply import SchemaVersions

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


def run_apply(spark: SparkSession, config: LakeConfig, pipeline: PipelineConfig, run_id: str) -> ApplySummary:
    started_at, started = datetime.now(UTC), time.monotonic()
    tables = SystemTables.of(config, pipeline)
    tables.ensure(spark)
    pid = sql_string(pipeline.id)

    manifests = LandingStore(pipeline.landing_uri, pipeline.id).manifests()
    decoded = spark.sql(
        f"SELECT batch_id, topic, `partition`, max_watermark FROM {tables.decoded_batches} WHERE pipeline = {pid}"
    ).collect()
    decoded_ids = {r["batch_id"] for r in decoded}
    prefix = []
    for manifest in manifests:
        if manifest.batch_id not in decoded_ids:
            break
        prefix.append(manifest)
    if len(prefix) < len(manifests):
        log.warning("apply: batches from sequence %d on are not decoded yet; they wait", len(prefix) + 1)
    prefix_ids = {m.batch_id for m in prefix}
    expected: dict[str, set[int]] = {t: set() for t in pipeline.kafka.topics}
    for manifest in prefix:
        for rng in manifest.ranges:
            expected.setdefault(rng.topic, set()).add(rng.partition)
    marks = partition_watermarks(
        PartitionProgress(
            r["topic"], r["partition"], int(r["max_watermark"]) if r["max_watermark"] is not None else None
        )
        for r in decoded
        if r["batch_id"] in prefix_ids
    )
    watermarks = topic_watermarks(marks, {t: sorted(p) for t, p in expected.items()})
    summary = ApplySummary(watermarks)
    for topic, mark in sorted(watermarks.items()):
        if mark is None:
            waiting = sorted(p for p in expected[topic] if marks.get((topic, p)) is None)
            log.warning(
                "apply: topic %r has no watermark yet (partitions without one: %s); its tables wait",
                topic,
                waiting or "no data landed",
            )
            if pipeline.offset_ordered:
                log.warning(
                    "apply: pipeline %r is offset-ordered: %s without codec.enable_tidb_extension sends no commit "
                    "TSO and no watermark, so nothing can be applied in commit order (docs/protocols.md, Ordering)",
                    pipeline.id,
                    pipeline.protocol.value,
                )
        else:
            log.info("apply: topic %r watermark %d (%s)", topic, mark, tso.to_datetime(mark).isoformat())

    rows: list[ledger.LedgerRow] = []
    # One watermark for the whole pipeline: every table is applied to the same TSO, so the tables
    # of a run form a consistent cut (docs/consistent-reads.md). Topics without one wait.
    summary.watermark = min((m for m in watermarks.values() if m is not None), default=None)
    live = {t: summary.watermark for t, m in watermarks.items() if m is not None and summary.watermark is not None}
    if summary.watermark is not None and len(watermarks) > 1:
        log.info(
            "apply: pipeline watermark %d (%s): the lowest of %d topic(s)",
            summary.watermark,
            tso.to_datetime(summary.watermark).isoformat(),
            len(live),
        )
    if live and prefix_ids:
        events = _events_in_scope(spark, tables, pipeline, prefix_ids, live)
        ddls = collect_ddls(_ddls_in_scope(spark, tables, pipeline, prefix_ids, live))
        histories = _schemas(spark, tables, pipeline)
        rows = run_tables(spark, tables, pipeline, run_id, events, ddls, histories, live)
        for row in rows:
            name = f"{row.database}.{row.table}" if row.table is not None else f"database {row.database}"
            if row.status == "APPLIED":
                summary.applied.append(name)
            elif row.status == "HELD":
                summary.held[name] = row.message or ""
            elif row.status == "FAILED":
                summary.failed[name] = (row.message or "").splitlines()[0][:500]
    low = summary.watermark
    rows.append(
        ledger.LedgerRow(
            pipeline.id,
            run_id,
            "apply",
            None,
            None,
            None,
            "FAILED" if summary.failed else "OK",
            None,
            None,
            ledger.tso(low),
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
    )
    ledger.append(spark, tables, rows)
    _log_summary(rows)
    if summary.failed:
        raise ApplyError(
            "apply failed for "
            + ", ".join(sorted(summary.failed))
            + "; other tables were applied. "
            + " | ".join(f"{t}: {m}" for t, m in sorted(summary.failed.items()))
        )
    return summary


def _up_to_watermark(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, batch_ids: set[str], marks: dict[str, int]
) -> DataFrame:
    limit = F.lit(None).cast("decimal(20,0)")
    for topic, mark in marks.items():
        limit = F.when(F.col("topic") == topic, F.lit(mark).cast("decimal(20,0)")).otherwise(limit)
    return (
        spark.table(tables.change_events)
        .where((F.col("pipeline") == pipeline.id) & F.col("batch_id").isin(sorted(batch_ids)))
        .where(F.col("commit_ts") <= limit)
    )


def _events_in_scope(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, batch_ids: set[str], marks: dict[str, int]
) -> DataFrame:
    frame = _up_to_watermark(spark, tables, pipeline, batch_ids, marks)
    return frame.where(F.col("kind").isin("DML", "DDL") & F.col("table").isNotNull())


def _ddls_in_scope(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, batch_ids: set[str], marks: dict[str, int]
) -> DataFrame:
    """Table and database DDL with a commit TSO (DDL without one cannot be ordered)."""
    frame = _up_to_watermark(spark, tables, pipeline, batch_ids, marks)
    return frame.where((F.col("kind") == "DDL") & (F.col("commit_ts") > 0) & F.col("database").isNotNull())


def _schemas(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig
) -> dict[tuple[str, str], SchemaVersions]:
    result: dict[tuple[str, str], SchemaVersions] = {}
    for r in spark.sql(
        f"SELECT `database`, `table`, schema_version, commit_ts, table_schema FROM {tables.schema_history} "
        f"WHERE pipeline = {sql_string(pipeline.id)}"
    ).collect():
        result.setdefault((r["database"], r["table"]), SchemaVersions()).add(
            int(r["schema_version"]), int(r["commit_ts"]), TableSchema.from_json(r["table_schema"])
        )
    return result


def _log_summary(rows: list[ledger.LedgerRow]) -> None:
    """One line per table: counts, then what the DDLs did or why the table is held (the ledger message)."""
    log.info("apply summary:")
    header = ("table", "status", "events", "replays", "ins", "upd", "del", "ddl / reason")
    log.info("  %-40s %-8s %10s %8s %8s %8s %8s  %s", *header)
    for r in rows:
        where = f"database {r.database}" if r.database else "(pipeline)"
        name = f"{r.database}.{r.table}" if r.table else where
        log.info(
            "  %-40s %-8s %10s %8s %8s %8s %8s  %s",
            name,
            r.status,
            r.events_in if r.events_in is not None else "-",
            r.replays_skipped if r.replays_skipped is not None else "-",
            r.rows_inserted or 0,
            r.rows_updated or 0,
            r.rows_deleted or 0,
            (r.message or "")[:200] if r.database else "",
        )
