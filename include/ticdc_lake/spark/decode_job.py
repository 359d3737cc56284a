"""Decode stage: landed raw batches → normalized change events (docs/design.md, Decode).

Batches are decoded in landing order. A batch is decoded when it is new, and again while it holds
PENDING events (Simple DML whose schema version was unknown): re-decoding replaces the batch's
rows, so the stage is idempotent. Messages that cannot be decoded go to the quarantine table with
the table they name where their bytes tell it (``Decoder.locate``). Under the ``halt`` policy the
stage still succeeds: apply holds each such table (or every table of the topic when the table is
unknown) at the last watermark before the message, and the other tables go on
(:mod:`ticdc_lake.apply.quarantine_holds`).

Two ``mapInArrow`` passes over the landed files (cut into tasks by :mod:`.decode_plan`): the first
collects the table schemas and the DDL the messages announce; the driver folds the DDL in commit
order onto the schema history's versions (:mod:`.decode_schemas`) and broadcasts the lookup; the
second decodes every message (:mod:`.decode_worker`), each DDL getting its folded schemas and each
row the version in effect at its commit TSO; each task writes its Arrow batches into
``change_events`` Parquet files itself (``event_files``) and the driver commits them in one
partition overwrite (``event_commit``; Spark's writer where the workers cannot). Each task
reports its quarantine rows and per-partition counts through an accumulator, so the events are
decoded once; the driver then MERGEs ``quarantine`` and ``decoded_batches`` (the commit marker).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyspark.broadcast import Broadcast
from pyspark.sql import DataFrame, Row, SparkSession

from ticdc_lake import failpoints
from ticdc_lake.carried_types import VersionEvent
from ticdc_lake.config import DecodeErrorPolicy, LakeConfig, PipelineConfig
from ticdc_lake.errors import ServiceError
from ticdc_lake.identifiers import sql_string
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.schema.history import HistoryEntry
from ticdc_lake.spark import ledger
from ticdc_lake.spark.decode_batches import batch_stats, stats_row
from ticdc_lake.spark.decode_plan import FileRange, plan_tasks, schema_scan_files
from ticdc_lake.spark.decode_quarantine import halt_message, quarantine_gate
from ticdc_lake.spark.decode_schemas import (
    SCAN_SCHEMA,
    add_scanned,
    carry_types,
    known_schemas,
    record_start_schemas,
)
from ticdc_lake.spark.decode_worker import (
    PHASES,
    PartitionStats,
    ReportsParam,
    TaskReport,
    decode_jvm_rows,
    decode_tasks,
    schema_scan,
)
from ticdc_lake.spark.event_commit import commit_event_files, event_file_layout, workers_write
from ticdc_lake.spark.event_files import WrittenFile
from ticdc_lake.spark.event_rows import EVENTS_SCHEMA, QUARANTINE_COLUMNS, QUARANTINE_SCHEMA
from ticdc_lake.spark.jvm_decode.frames import jvm_decoded, whole_stage_codegen_off
from ticdc_lake.spark.jvm_decode.registry import jvm_by_default
from ticdc_lake.spark.local_frames import local_frame
from ticdc_lake.spark.pending_expiry import expire_pending
from ticdc_lake.spark.system_tables import COLUMNS, UNSHUFFLED_WRITE, SystemTables
from ticdc_lake.spark.target_tables import load_iceberg_table
from ticdc_lake.stage_lock import locked

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DecodeSummary:
    batches: int
    events: int
    quarantined: int
    pending: int
    #: Seconds: wall clock of the driver's phases; ``worker_*`` summed over the decode tasks (wall
    #: clock by step, and ``worker_cpu``).
    timings: dict[str, float] = field(default_factory=dict)
    #: Events the JVM decoder decoded; messages the Python decoder read (all of them without a JVM path).
    jvm_events: int = 0
    python_messages: int = 0
    #: Of the messages the Python workers read, the row changes their vector decoder decoded (``arrow_decode``).
    vector_events: int = 0


@locked("decode")
def run_decode(
    spark: SparkSession,
    config: LakeConfig,
    pipeline: PipelineConfig,
    run_id: str,
    *,
    redecode: bool = False,
    jvm: bool | None = None,
    vector: bool = True,
) -> DecodeSummary:
    """``redecode``: decode every landed batch again (a rebuild, ``docs/rebuild.md``), not only new ones.
    ``jvm``: let the protocol's JVM decoder (``jvm_decode``) take the messages it can verify, the
    rest through the workers' decoders; None: where it measured cheaper (``registry.jvm_by_default``:
    a Debezium run whose every known table version the JVM decoder takes, docs/jvm-decoder.md).
    ``vector``: the protocol's whole-batch decoder (``arrow_decode``: Debezium) takes the row changes it can
    vouch for in the workers, the rest through the Python decoder (docs/design.md, "Vectorized Debezium
    decode"); off only to measure against the Python decoder alone."""
    run = _Run(spark, config, pipeline, run_id)
    quarantine_gate(spark, run.tables, pipeline, run_id)
    todo = _batches_to_decode(run, redecode)
    if not todo:
        return DecodeSummary(0, 0, 0, 0)
    files = landed_files(pipeline, todo)
    lookup, registry, resources = _schema_pass(run, files)
    skip = pipeline.policies.on_decode_error is DecodeErrorPolicy.SKIP
    if jvm is None:
        jvm = jvm_by_default(pipeline.protocol, lookup, pipeline.codec)
    found, tasks = _decode_pass(run, files, lookup, resources, skip, jvm, vector)
    recorded = record_start_schemas(spark, run.tables, pipeline, run_id, found.values(), registry)
    if recorded:
        log.info("decode: %d start schema(s) (baseline, inferred) or registry version(s) recorded", recorded)
    run.timer.lap("start_schemas")
    bad_rows = _merge_quarantine(run, found.values())
    failpoints.hit("decode.before_commit")
    totals = _commit_batches(run, found.values(), todo)
    expired = expire_pending(spark, run.tables, pipeline, run_id, skip) if totals.pending else []
    run.timer.lap("pending_expiry")
    return _finish(run, todo, found, tasks, totals, bad_rows, expired, skip)


class _Run:
    """What every phase of one decode run shares."""

    def __init__(self, spark: SparkSession, config: LakeConfig, pipeline: PipelineConfig, run_id: str) -> None:
        self.started_at, self.started = datetime.now(UTC), time.monotonic()
        self.spark, self.config, self.pipeline, self.run_id = spark, config, pipeline, run_id
        self.timer = _PhaseTimer()
        self.tables = SystemTables.of(config, pipeline)
        self.tables.ensure(spark)
        self.store = LandingStore(pipeline.landing_uri, pipeline.id)

    def record(self, status: LedgerStatus, events: int | None, message: str) -> None:
        row = ledger.stage_row(
            self.pipeline.id,
            self.run_id,
            "decode",
            status,
            self.started_at,
            time.monotonic() - self.started,
            events,
            message,
        )
        ledger.append(self.spark, self.tables, [row])


def _batches_to_decode(run: _Run, redecode: bool) -> list[Manifest]:
    """The landed batches that are new or still hold PENDING events (every batch when ``redecode``)."""
    manifests = run.store.manifests()
    done: dict[str, int] = {}
    for r in run.spark.sql(
        f"SELECT batch_id, pending FROM {run.tables.decoded_batches} WHERE pipeline = {sql_string(run.pipeline.id)}"
    ).collect():  # a few rows per batch: summed here, without a shuffle
        done[r["batch_id"]] = done.get(r["batch_id"], 0) + r["pending"]
    todo = [m for m in manifests if redecode or m.batch_id not in done or done[m.batch_id] > 0]
    if not todo:
        log.info("decode: nothing to do (%d batches landed, all decoded)", len(manifests))
        run.record(LedgerStatus.NOOP, 0, f"{len(manifests)} batch(es) landed, all decoded")
    return todo


def landed_files(pipeline: PipelineConfig, todo: list[Manifest]) -> list[FileRange]:
    """The files of the batches ``todo``, each with the schema blocks its land run listed where
    they were listed by the test this decoder runs."""
    test = decoder_for(pipeline.protocol, pipeline.codec).schema_block_test_id()
    files = [
        FileRange(
            m.batch_id,
            r.file,
            r.start,
            r.end,
            r.count,
            r.topic,
            r.partition,
            # Listed by another test (another protocol or codec, an older test): not trusted.
            r.schema_blocks.blocks if r.schema_blocks is not None and r.schema_blocks.test == test else None,
        )
        for m in todo
        for r in m.ranges
        if r.file is not None
    ]
    log.info(
        "decode: %d batch(es) (sequence %d..%d), %d file(s), %d message(s), protocol %s",
        len(todo),
        todo[0].sequence,
        todo[-1].sequence,
        len(files),
        sum(r.count for m in todo for r in m.ranges),
        pipeline.protocol.value,
    )
    if pipeline.offset_ordered:
        log.warning(
            "decode: pipeline %r is offset-ordered (%s without codec.enable_tidb_extension): events carry no commit "
            "TSO and there are no watermarks; this is a weaker guarantee than TSO order (docs/protocols.md, Ordering)",
            pipeline.id,
            pipeline.protocol.value,
        )
    return files


def _schema_pass(
    run: _Run, files: list[FileRange]
) -> tuple[MemorySchemaLookup, list[HistoryEntry], Broadcast[DecodeResources]]:
    """The known schemas, then the first pass: schemas and DDL the messages announce, folded."""
    spark, pipeline = run.spark, run.pipeline
    sc = spark.sparkContext
    decode_resources = DecodeResources(writer_schemas=run.store.writer_schemas())
    resources = sc.broadcast(decode_resources)
    lookup = known_schemas(spark, run.tables, pipeline)
    known_before = len(lookup)
    run.timer.lap("prepare")
    scanned_files = schema_scan_files(files)
    if len(scanned_files) < len(files):
        log.info(
            "decode: the schema pass reads %d of %d file(s); the land stage found no block that may carry a "
            "schema in the others",
            len(scanned_files),
            len(files),
        )
    scan_tasks = plan_tasks(scanned_files, sc.defaultParallelism, split=False)
    ddls, registry = 0, list[HistoryEntry]()
    ddl_events: dict[tuple[str, str, int], VersionEvent] = {}
    if files:
        # Files none of whose blocks may carry a schema give no rows: they are not read, and the
        # folding below still runs (an offset-ordered pipeline's version lookup is made there).
        rows: list[Row] = []
        if scan_tasks:
            scan = schema_scan(pipeline, scan_tasks, resources)
            rows = _task_numbers(spark, len(scan_tasks)).mapInArrow(scan, SCAN_SCHEMA).collect()
        ddls, registry, ddl_events = add_scanned(lookup, rows, pipeline, decode_resources)
    carry_types(spark, run.tables, pipeline, lookup, ddl_events)
    log.info(
        "decode: %d table schema version(s) known (%d new in these batches, %d DDL folded)",
        len(lookup),
        len(lookup) - known_before,
        ddls,
    )
    run.timer.lap("schema_scan")
    return lookup, registry, resources


def _decode_pass(
    run: _Run,
    files: list[FileRange],
    lookup: MemorySchemaLookup,
    resources: Broadcast[DecodeResources],
    skip: bool,
    jvm: bool,
    vector: bool,
) -> tuple[dict[int, TaskReport], int]:
    """Decode and write the events; returns the task reports (key -1: the JVM's counts) and the
    number of Python tasks."""
    spark, pipeline, run_id = run.spark, run.pipeline, run.run_id
    sc = spark.sparkContext
    reports = sc.accumulator({}, ReportsParam())
    decoded = jvm_decoded(spark, pipeline, files, lookup) if jvm else None
    if decoded is None:
        tasks = plan_tasks(files, sc.defaultParallelism)
        count = len(tasks)
        source = _task_numbers(spark, count)
        decode = decode_tasks(pipeline, run_id, tasks, resources, sc.broadcast(lookup), skip, reports, vector)
    else:  # one Spark task per split of the landed files, each reporting under its partition id
        source = decoded
        count = decoded.rdd.getNumPartitions()
        decode = decode_jvm_rows(pipeline, run_id, resources, sc.broadcast(lookup), skip, reports, vector)
        run.timer.lap("jvm_plan")
    table = load_iceberg_table(spark, run.tables.change_events)
    properties = run.config.catalog_for(pipeline).properties
    layout = event_file_layout(spark, table, pipeline.id, (f.batch_id for f in files), properties)
    written: list[WrittenFile] | None = None
    with whole_stage_codegen_off(spark) if decoded is not None else nullcontext():
        if layout is None:
            events = source.mapInArrow(decode, EVENTS_SCHEMA)
            events.writeTo(run.tables.change_events).options(**UNSHUFFLED_WRITE).overwritePartitions()
        else:
            written = workers_write(source, decode, layout)
    found: dict[int, TaskReport] = reports.value
    if set(found) != set(range(count)):
        raise ServiceError(
            f"decode: {count - len(found)} of {count} Spark task(s) wrote events but reported no "
            "counts; the batches stay undecoded: re-run the stage"
        )
    if written is not None:
        _commit_written(run, table, written, found)
    run.timer.lap("decode_write")
    return found, count


def _commit_written(run: _Run, table: Any, written: list[WrittenFile], reports: dict[int, TaskReport]) -> None:
    """Commit the files the workers wrote, once their counts agree with the tasks' reports."""
    events = sum(stats.events for report in reports.values() for stats in report.stats.values())
    records = sum(f.records for f in written)
    if records != events:
        raise ServiceError(
            f"decode: the Spark tasks wrote {records} event(s) into {len(written)} file(s) but reported {events}; "
            "nothing was committed and the batches stay undecoded: re-run the stage"
        )
    snapshot = commit_event_files(run.spark, table, run.pipeline.id, written)
    log.info("decode: workers wrote %d event(s) in %d file(s), snapshot %s", records, len(written), snapshot)


def _merge_quarantine(run: _Run, reports: Iterable[TaskReport]) -> list[tuple[Any, ...]]:
    bad_rows = sorted((row for r in reports for row in r.quarantine), key=lambda row: (row[2], row[3], row[4]))
    if bad_rows:
        local_frame(run.spark, bad_rows, QUARANTINE_SCHEMA).createOrReplaceTempView("new_quarantine")
        run.spark.sql(
            f"MERGE INTO {run.tables.quarantine} q USING new_quarantine n ON q.pipeline = n.pipeline "
            "AND q.topic = n.topic AND q.`partition` = n.`partition` AND q.`offset` = n.`offset` AND q.idx = n.idx "
            "WHEN NOT MATCHED THEN INSERT *"
        )
    run.timer.lap("quarantine_merge")
    return bad_rows


def _commit_batches(run: _Run, reports: Iterable[TaskReport], todo: list[Manifest]) -> PartitionStats:
    """MERGE the ``decoded_batches`` rows (the commit marker); returns the run's totals."""
    stats = batch_stats(reports, todo)
    stats_rows = [stats_row(run.pipeline.id, run.run_id, m, r, s) for m, r, s in stats]
    local_frame(run.spark, stats_rows, COLUMNS["decoded_batches"]).createOrReplaceTempView("new_decoded_batches")
    run.spark.sql(
        f"MERGE INTO {run.tables.decoded_batches} d USING new_decoded_batches n ON d.pipeline = n.pipeline "
        "AND d.batch_id = n.batch_id AND d.topic = n.topic AND d.`partition` = n.`partition` "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    run.timer.lap("batches_merge")
    totals = PartitionStats()
    for _, _, s in stats:
        totals.add(s)
    return totals


def _finish(
    run: _Run,
    todo: list[Manifest],
    found: dict[int, TaskReport],
    tasks: int,
    totals: PartitionStats,
    bad_rows: list[tuple[Any, ...]],
    expired: list[dict[str, Any]],
    skip: bool,
) -> DecodeSummary:
    """Log, record the ledger row and return the summary."""
    pipeline = run.pipeline
    summary = DecodeSummary(
        len(todo),
        totals.events - len(expired),
        len(bad_rows) + len(expired),
        totals.pending - len(expired),
        run.timer.seconds,
        jvm_events=sum(r.jvm_events for r in found.values()),
        python_messages=sum(r.messages for r in found.values()),
        vector_events=sum(r.vector_events for r in found.values()),
    )
    for phase in PHASES:
        run.timer.seconds[f"worker_{phase}"] = sum(r.seconds[phase] for r in found.values())
    log.info(
        "decode: done in %.1fs: %d event(s) (DML %d, DDL %d, WATERMARK %d), %d pending, %d quarantined; "
        "%d in the JVM, %d message(s) through Python in %d task(s) (%d row change(s) of them by the vector "
        "decoder); %s",
        time.monotonic() - run.started,
        summary.events,
        totals.dml,
        totals.ddl,
        totals.watermarks,
        summary.pending,
        summary.quarantined,
        summary.jvm_events,
        summary.python_messages,
        tasks,
        summary.vector_events,
        ", ".join(f"{k} {v:.1f}s" for k, v in summary.timings.items()),
    )
    outcome = (
        f"batches {todo[0].batch_id}..{todo[-1].batch_id}: {summary.events} event(s), "
        f"{summary.pending} pending, {summary.quarantined} quarantined"
    )
    if (bad_rows or expired) and not skip:
        rows = [dict(zip(QUARANTINE_COLUMNS, r, strict=True)) for r in bad_rows] + expired
        message = halt_message(pipeline, run.tables, rows, run.config.source_path)
        log.warning("decode: %s", message)
        outcome = outcome + "\n" + message
    run.record(LedgerStatus.OK, summary.events, outcome)
    run.timer.lap("ledger")
    if bad_rows:
        log.warning("decode: %d message(s) quarantined and skipped (on_decode_error=skip)", len(bad_rows))
    return summary


def _task_numbers(spark: SparkSession, count: int) -> DataFrame:
    """Rows 0 .. count-1, one per Spark partition: Spark task i runs planned task i."""
    return spark.range(0, count, 1, max(1, count))


class _PhaseTimer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, phase: str) -> None:
        now = time.monotonic()
        self.seconds[phase] = now - self._last
        self._last = now
