"""Decode stage: landed raw batches → normalized change events (ARCHITECTURE 4.2).

Batches are decoded in landing order. A batch is decoded when it is new, and again while it holds
PENDING events (Simple DML whose schema version was unknown): re-decoding replaces the batch's
rows, so the stage is idempotent. Messages that cannot be decoded go to the quarantine table;
under the ``halt`` policy the stage then fails and nothing after them is applied.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake.config import DecodeErrorPolicy, LakeConfig, PipelineConfig
from ticdc_lake.errors import DecodeError, QuarantineHaltError
from ticdc_lake.events import EventKind
from ticdc_lake.identifiers import sql_string
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ledger
from ticdc_lake.spark.event_rows import EVENTS_SCHEMA, QUARANTINE_SCHEMA, event_row, quarantine_row
from ticdc_lake.spark.system_tables import COLUMNS, SystemTables

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FileTask:
    batch_id: str
    file: str


@dataclass(frozen=True, slots=True)
class DecodeSummary:
    batches: int
    events: int
    quarantined: int
    pending: int


def run_decode(spark: SparkSession, config: LakeConfig, pipeline: PipelineConfig, run_id: str) -> DecodeSummary:
    started_at, started = datetime.now(UTC), time.monotonic()
    tables = SystemTables.of(config, pipeline)
    tables.ensure(spark)

    def record(status: str, events: int | None, message: str) -> None:
        row = ledger.stage_row(
            pipeline.id, run_id, "decode", status, started_at, time.monotonic() - started, events, message
        )
        ledger.append(spark, tables, [row])

    try:
        _quarantine_gate(spark, tables, pipeline, run_id, config.source_path)
    except QuarantineHaltError as exc:
        record("HALTED", None, str(exc))
        raise

    manifests = LandingStore(pipeline.landing_uri, pipeline.id).manifests()
    done = {
        r["batch_id"]: r["pending"]
        for r in spark.sql(
            f"SELECT batch_id, sum(pending) AS pending FROM {tables.decoded_batches} "
            f"WHERE pipeline = {sql_string(pipeline.id)} GROUP BY batch_id"
        ).collect()
    }
    todo = [m for m in manifests if m.batch_id not in done or done[m.batch_id] > 0]
    if not todo:
        log.info("decode: nothing to do (%d batches landed, all decoded)", len(manifests))
        record("NOOP", 0, f"{len(manifests)} batch(es) landed, all decoded")
        return DecodeSummary(0, 0, 0, 0)
    tasks = [FileTask(m.batch_id, r.file) for m in todo for r in m.ranges if r.file is not None]
    log.info(
        "decode: %d batch(es) (sequence %d..%d), %d file(s), %d message(s), protocol %s",
        len(todo),
        todo[0].sequence,
        todo[-1].sequence,
        len(tasks),
        sum(r.count for m in todo for r in m.ranges),
        pipeline.protocol.value,
    )

    lookup = _known_schemas(spark, tables, pipeline)
    known_before = len(lookup)
    sc = spark.sparkContext
    slices = max(1, min(len(tasks), sc.defaultParallelism * 2))
    if tasks:
        found = sc.parallelize(tasks, slices).flatMap(_schemas_of(pipeline)).collect()
        for text in found:
            lookup.add(TableSchema.from_json(text))
    log.info(
        "decode: %d table schema version(s) known (%d new in these batches)", len(lookup), len(lookup) - known_before
    )

    memo = sc.broadcast(lookup)
    skip = pipeline.policies.on_decode_error is DecodeErrorPolicy.SKIP
    tagged = sc.parallelize(tasks, slices).flatMap(_decoded_rows(pipeline, run_id, memo, skip)).persist()
    events = spark.createDataFrame(tagged.filter(lambda t: t[0] == "E").map(lambda t: t[1]), EVENTS_SCHEMA)
    bad = spark.createDataFrame(tagged.filter(lambda t: t[0] == "Q").map(lambda t: t[1]), QUARANTINE_SCHEMA)

    events.writeTo(tables.change_events).overwritePartitions()
    bad_rows = bad.collect()
    if bad_rows:
        bad.createOrReplaceTempView("new_quarantine")
        spark.sql(
            f"MERGE INTO {tables.quarantine} q USING new_quarantine n ON q.pipeline = n.pipeline "
            "AND q.topic = n.topic AND q.`partition` = n.`partition` AND q.`offset` = n.`offset` AND q.idx = n.idx "
            "WHEN NOT MATCHED THEN INSERT *"
        )
    stats = _batch_stats(spark, events, bad, todo, pipeline.id, run_id)
    stats.createOrReplaceTempView("new_decoded_batches")
    spark.sql(
        f"MERGE INTO {tables.decoded_batches} d USING new_decoded_batches n ON d.pipeline = n.pipeline "
        "AND d.batch_id = n.batch_id AND d.topic = n.topic AND d.`partition` = n.`partition` "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    totals = stats.agg(F.sum("events"), F.sum("pending"), F.sum("dml"), F.sum("ddl"), F.sum("watermarks")).first()
    assert totals is not None
    tagged.unpersist()
    summary = DecodeSummary(len(todo), int(totals[0] or 0), len(bad_rows), int(totals[1] or 0))
    log.info(
        "decode: done in %.1fs: %d event(s) (DML %d, DDL %d, WATERMARK %d), %d pending, %d quarantined",
        time.monotonic() - started,
        summary.events,
        int(totals[2] or 0),
        int(totals[3] or 0),
        int(totals[4] or 0),
        summary.pending,
        summary.quarantined,
    )
    outcome = (
        f"batches {todo[0].batch_id}..{todo[-1].batch_id}: {summary.events} event(s), "
        f"{summary.pending} pending, {summary.quarantined} quarantined"
    )
    if bad_rows and not skip:
        message = _halt_message(pipeline, tables, [r.asDict() for r in bad_rows], config.source_path)
        record("HALTED", summary.events, outcome + "\n" + message)
        raise QuarantineHaltError(message)
    record("OK", summary.events, outcome)
    if bad_rows:
        log.warning("decode: %d message(s) quarantined and skipped (on_decode_error=skip)", len(bad_rows))
    return summary


def _quarantine_gate(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, run_id: str, config_file: str
) -> None:
    """Fail while quarantined messages wait under ``halt``; record them as skipped under ``skip``."""
    where = f"pipeline = {sql_string(pipeline.id)} AND status = 'QUARANTINED'"
    waiting = [r.asDict() for r in spark.sql(f"SELECT * FROM {tables.quarantine} WHERE {where}").collect()]
    if not waiting:
        return
    if pipeline.policies.on_decode_error is DecodeErrorPolicy.HALT:
        raise QuarantineHaltError(_halt_message(pipeline, tables, waiting, config_file))
    spark.sql(
        f"UPDATE {tables.quarantine} SET status = 'SKIPPED', policy = 'skip', "
        f"resolved_run_id = {sql_string(run_id)}, resolved_at = current_timestamp() WHERE {where}"
    )
    log.warning("decode: %d quarantined message(s) now recorded as skipped (on_decode_error=skip)", len(waiting))


def _halt_message(pipeline: PipelineConfig, tables: SystemTables, rows: list[dict[str, Any]], config_file: str) -> str:
    lines = [
        f"pipeline {pipeline.id!r}: {len(rows)} message(s) could not be decoded and are quarantined "
        "(policies.on_decode_error = halt); nothing after them is applied:"
    ]
    for row in sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"]))[:20]:
        lines.append(f"  topic {row['topic']!r} partition {row['partition']} offset {row['offset']}: {row['reason']}")
    if len(rows) > 20:
        lines.append(f"  ... and {len(rows) - 20} more")
    lines.append(
        f"Inspect them: SELECT * FROM {tables.quarantine} WHERE pipeline = '{pipeline.id}' AND status = 'QUARANTINED'. "
        f"Fix the producer's settings (codec options must match the changefeed), or set "
        f"policies.on_decode_error: skip for pipeline {pipeline.id!r} in {config_file} to record them as skipped "
        "and go on, then re-run."
    )
    return "\n".join(lines)


def _known_schemas(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig) -> MemorySchemaLookup:
    rows = spark.sql(
        f"SELECT table_schema FROM {tables.schema_history} WHERE pipeline = {sql_string(pipeline.id)}"
    ).collect()
    return MemorySchemaLookup(TableSchema.from_json(r["table_schema"]) for r in rows)


def _schemas_of(pipeline: PipelineConfig) -> Any:
    def schemas(task: FileTask) -> Iterator[str]:
        decoder = decoder_for(pipeline.protocol, pipeline.codec)
        empty = MemorySchemaLookup()
        for message in LandingStore(pipeline.landing_uri, pipeline.id).read_messages(task.file):
            if not decoder.may_carry_schema(message):
                continue
            try:
                events = decoder.decode(message, empty)
            except DecodeError:
                continue  # quarantined by the main pass
            for event in events:
                for schema in (event.table_schema, event.pre_table_schema):
                    if schema is not None and schema.version is not None:
                        yield schema.to_json()

    return schemas


def _decoded_rows(pipeline: PipelineConfig, run_id: str, memo: Any, skip: bool) -> Any:
    protocol = pipeline.protocol.value

    def rows(task: FileTask) -> Iterator[tuple[str, tuple[Any, ...]]]:
        decoder = decoder_for(pipeline.protocol, pipeline.codec)
        lookup = memo.value
        for message in LandingStore(pipeline.landing_uri, pipeline.id).read_messages(task.file):
            try:
                events = decoder.decode(message, lookup)
            except DecodeError as exc:
                yield "Q", quarantine_row(pipeline.id, task.batch_id, run_id, message, protocol, str(exc), skip)
                continue
            except Exception as exc:  # a decoder bug must not lose the message either
                reason = f"{protocol}: unexpected {type(exc).__name__} while decoding: {exc}"
                yield "Q", quarantine_row(pipeline.id, task.batch_id, run_id, message, protocol, reason, skip)
                continue
            for event in events:
                yield "E", event_row(pipeline.id, task.batch_id, run_id, event)

    return rows


def _batch_stats(
    spark: SparkSession, events: DataFrame, bad: DataFrame, manifests: list[Manifest], pipeline_id: str, run_id: str
) -> DataFrame:
    keys = ["batch_id", "topic", "partition"]
    counts = {
        (r["batch_id"], r["topic"], r["partition"]): r.asDict()
        for r in events.groupBy(*keys)
        .agg(
            F.count(F.lit(1)).alias("events"),
            F.sum(F.when(F.col("kind") == EventKind.DML.value, 1).otherwise(0)).alias("dml"),
            F.sum(F.when(F.col("kind") == EventKind.DDL.value, 1).otherwise(0)).alias("ddl"),
            F.sum(F.when(F.col("kind") == EventKind.WATERMARK.value, 1).otherwise(0)).alias("watermarks"),
            F.max(F.when(F.col("kind") == EventKind.WATERMARK.value, F.col("commit_ts"))).alias("max_watermark"),
            F.sum(F.when(F.col("status") == "PENDING", 1).otherwise(0)).alias("pending"),
        )
        .collect()
    }
    quarantined = {
        (r["batch_id"], r["topic"], r["partition"]): r["n"]
        for r in bad.groupBy(*keys).agg(F.count(F.lit(1)).alias("n")).collect()
    }
    now = datetime.now(UTC)
    rows = []
    for manifest in manifests:
        for rng in manifest.ranges:
            key = (manifest.batch_id, rng.topic, rng.partition)
            c = counts.get(key, {})
            rows.append(
                (
                    pipeline_id,
                    manifest.batch_id,
                    manifest.sequence,
                    rng.topic,
                    rng.partition,
                    rng.start,
                    rng.end,
                    rng.count,
                    int(c.get("events") or 0),
                    int(c.get("dml") or 0),
                    int(c.get("ddl") or 0),
                    int(c.get("watermarks") or 0),
                    c.get("max_watermark"),
                    int(quarantined.get(key, 0)),
                    int(c.get("pending") or 0),
                    run_id,
                    now,
                )
            )
    return spark.createDataFrame(rows, COLUMNS["decoded_batches"])
