"""Apply stage: normalized events → one Iceberg table per upstream table (ARCHITECTURE 4.4).

Per topic the watermark is the minimum over its partitions of the highest watermark in the
contiguous decoded prefix of landed batches. Per table, exactly the events with
``applied_ts < commit_ts <= watermark`` are applied with one MERGE, and the new applied position
is committed in the same Iceberg snapshot (summary ``ticdc.applied-ts``): a crash leaves the old
or the new state, and a re-run is a no-op.
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
from ticdc_lake.errors import ApplyError, TicdcLakeError
from ticdc_lake.identifiers import sql_string
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ledger
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.table_apply import TableWindow, apply_table

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ApplySummary:
    watermarks: dict[str, int | None]
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
    live = {t: m for t, m in watermarks.items() if m is not None}
    if live and prefix_ids:
        events = _events_in_scope(spark, tables, pipeline, prefix_ids, live)
        schemas = _schemas(spark, tables, pipeline)
        table_list = [
            (r["database"], r["table"], r["topic"])
            for r in events.select("database", "table", "topic").distinct().orderBy("database", "table").collect()
        ]
        log.info("apply: %d table(s) with events up to the watermark", len(table_list))
        for database, table, topic in table_list:
            if not pipeline.target.wants(database, table):
                continue
            window = TableWindow(pipeline, run_id, database, table, live[topic])
            try:
                row = apply_table(spark, tables, window, events, schemas.get((database, table), {}))
            except Exception as exc:  # one table's failure must not stop the others
                reason = str(exc) if isinstance(exc, TicdcLakeError) else f"{type(exc).__name__}: {exc}"
                log.exception("apply: %s.%s failed; the other tables go on", database, table)
                summary.failed[f"{database}.{table}"] = reason.splitlines()[0][:500]
                row = window.ledger_row("FAILED", reason[:4000])
            rows.append(row)
            if row.status == "APPLIED":
                summary.applied.append(f"{database}.{table}")
            elif row.status == "HELD":
                summary.held[f"{database}.{table}"] = row.message or ""
    low = min(live.values()) if live else None
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


def _events_in_scope(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, batch_ids: set[str], marks: dict[str, int]
) -> DataFrame:
    limit = F.lit(None).cast("decimal(20,0)")
    for topic, mark in marks.items():
        limit = F.when(F.col("topic") == topic, F.lit(mark).cast("decimal(20,0)")).otherwise(limit)
    return (
        spark.table(tables.change_events)
        .where((F.col("pipeline") == pipeline.id) & F.col("batch_id").isin(sorted(batch_ids)))
        .where(F.col("kind").isin("DML", "DDL") & F.col("table").isNotNull())
        .where(F.col("commit_ts") <= limit)
    )


def _schemas(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig
) -> dict[tuple[str, str], dict[int, TableSchema]]:
    result: dict[tuple[str, str], dict[int, TableSchema]] = {}
    for r in spark.sql(
        f"SELECT `database`, `table`, schema_version, table_schema FROM {tables.schema_history} "
        f"WHERE pipeline = {sql_string(pipeline.id)}"
    ).collect():
        result.setdefault((r["database"], r["table"]), {})[int(r["schema_version"])] = TableSchema.from_json(
            r["table_schema"]
        )
    return result


def _log_summary(rows: list[ledger.LedgerRow]) -> None:
    log.info("apply summary:")
    log.info("  %-40s %-8s %10s %8s %8s %8s %8s", "table", "status", "events", "replays", "ins", "upd", "del")
    for r in rows:
        name = f"{r.database}.{r.table}" if r.table else "(pipeline)"
        log.info(
            "  %-40s %-8s %10s %8s %8s %8s %8s",
            name,
            r.status,
            r.events_in if r.events_in is not None else "-",
            r.replays_skipped if r.replays_skipped is not None else "-",
            r.rows_inserted or 0,
            r.rows_updated or 0,
            r.rows_deleted or 0,
        )
