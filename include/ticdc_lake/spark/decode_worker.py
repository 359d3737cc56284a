"""What the decode stage runs in the Python workers: the schema scan and the decode of slices.

The decode pass is one ``mapInArrow`` whose output is written straight into ``change_events``:
events leave the worker as Arrow record batches. What the driver needs besides the events (the
quarantine rows and the per-partition counts of ``decoded_batches``) is small; each task returns
it as one :class:`TaskReport` through an accumulator keyed by task number. Spark applies a
task's accumulator update once per successful task of the write, and a task that runs again
reports the same value under the same key, so the reports are exact; the driver checks that
every task reported.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.accumulators import Accumulator, AccumulatorParam
from pyspark.broadcast import Broadcast

from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, RawMessage
from ticdc_lake.landing.message_batch import MessageBatch, batches
from ticdc_lake.landing.raw_batch import record_message
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.schema_scan import scanned_facts
from ticdc_lake.schema.avro_registry import WriterSchemaUse
from ticdc_lake.schema.ddl_facts import DdlFact
from ticdc_lake.spark.arrow_decode.image_records import ImageRecords
from ticdc_lake.spark.arrow_decode.row_batches import VectorDecode
from ticdc_lake.spark.arrow_decode.worker_events import first_start_rows, partition_counts, vector_decoder
from ticdc_lake.spark.decode_arrow import events_to_arrow, sorts_images
from ticdc_lake.spark.decode_plan import Slice
from ticdc_lake.spark.event_rows import quarantine_row
from ticdc_lake.spark.jvm_decode.events import decided_events

log = logging.getLogger(__name__)

#: Columns of the first pass's output (all strings; one of them set per row).
SCAN_COLUMNS = ("table_schema", "ddl", "writer")
#: Events per Arrow record batch handed to the JVM.
BATCH_ROWS = 4_096
#: Messages per batch of the vector decoder (``arrow_decode``). Larger batches spread its fixed cost
#: per batch and per table in it (about a hundred Arrow calls) over more rows (1M Debezium messages of
#: 10 tables in one process: 15.1 µs of CPU per message at 4,096, 12.1 at 16,384), but in the decode
#: stage of ``make bench-vs-kc`` 16,384 saved no measurable worker CPU (11.2 to 11.4 s against 11.5 s
#: per million) and raised the workers' peak from 752 to 1,226 MiB, so a batch is the Arrow batch size.
VECTOR_ROWS = BATCH_ROWS
#: Time categories of :attr:`TaskReport.seconds`: wall-clock seconds reading messages, decoding
#: them, converting events to Arrow, adding the typed record carrier (``arrow_decode.image_records``),
#: handing batches to the JVM (which may wait for it), and the task's CPU seconds.
PHASES = ("read", "decode", "to_arrow", "records", "handoff", "cpu")

#: Allocations between two young-generation garbage collections while a task runs (Python's
#: default is 700).
GC_THRESHOLD = 10_000

StatsKey = tuple[str, str, int]


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect garbage less often while decoding.

    Decoding allocates a few dozen short-lived objects per message, so with Python's default
    thresholds the young generation is collected every few messages and the older ones, which
    hold the buffered events, every few hundred: about 5% of a task's time. Collections still
    happen, only less often; the previous thresholds are restored afterwards (Spark reuses the
    worker process).
    """
    previous = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)


@dataclass(slots=True)
class PartitionStats:
    """What one batch's messages of one topic partition decoded to (a ``decoded_batches`` row)."""

    events: int = 0
    dml: int = 0
    ddl: int = 0
    watermarks: int = 0
    max_watermark: int | None = None
    quarantined: int = 0
    pending: int = 0

    def add(self, other: PartitionStats) -> None:
        self.events += other.events
        self.dml += other.dml
        self.ddl += other.ddl
        self.watermarks += other.watermarks
        if other.max_watermark is not None and (self.max_watermark is None or other.max_watermark > self.max_watermark):
            self.max_watermark = other.max_watermark
        self.quarantined += other.quarantined
        self.pending += other.pending


@dataclass(slots=True)
class TaskReport:
    """What a decode task found besides its events."""

    task: int
    #: Counts by (batch_id, topic, partition).
    stats: dict[StatsKey, PartitionStats] = field(default_factory=dict)
    #: Quarantine rows (``COLUMNS["quarantine"]`` order).
    quarantine: list[tuple[Any, ...]] = field(default_factory=list)
    messages: int = 0
    #: Of those messages, the row changes the vector decoder decoded (``arrow_decode``).
    vector_events: int = 0
    #: Events a JVM decoder decoded (``jvm_decode``), not among ``messages``.
    jvm_events: int = 0
    #: Tables whose rows were bound to a start schema (version 0: baseline or inferred from rows):
    #: (database, table) -> ((commit_ts, topic, partition, offset) of the first such row, schema JSON).
    start_schemas: dict[tuple[str, str], tuple[tuple[int, str, int, int], str]] = field(default_factory=dict)
    #: Worker seconds by :data:`PHASES`.
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))

    def partition(self, key: StatsKey) -> PartitionStats:
        stats = self.stats.get(key)
        if stats is None:
            stats = self.stats[key] = PartitionStats()
        return stats


class ReportsParam(AccumulatorParam[dict[int, TaskReport]]):
    """Task number -> report; a repeated task replaces its report with an identical one."""

    def zero(self, value: dict[int, TaskReport]) -> dict[int, TaskReport]:
        return {}

    def addInPlace(self, value1: dict[int, TaskReport], value2: dict[int, TaskReport]) -> dict[int, TaskReport]:  # noqa: N802
        value1.update(value2)
        return value1


def _slice_messages(
    store: LandingStore, piece: Slice, keep_block: Callable[[bytes], bool] | None = None
) -> Iterator[RawMessage]:
    """The messages of ``piece``: those of its file with an offset in ``[first, stop)``; with
    ``keep_block``, only those of the file's blocks it keeps, and of those the land stage found it
    keeps where it recorded them (``FileRange.schema_blocks``; ``LandingStore.read_messages``)."""
    only = piece.source.schema_blocks if keep_block is not None else None
    messages = store.read_messages(piece.source.file, keep_block, only)
    try:
        for message in messages:
            if message.offset >= piece.stop:
                break
            if message.offset >= piece.first:
                yield message
    finally:
        messages.close()  # type: ignore[attr-defined]


def schema_scan(
    pipeline: PipelineConfig, tasks: list[list[Slice]], resources: Broadcast[DecodeResources]
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of the first pass: task numbers in, out the JSON of every
    versioned table schema (BOOTSTRAP) the messages announce (column ``table_schema``), of every
    DDL they hold (column ``ddl``, a :class:`~ticdc_lake.schema.ddl_fold.DdlFact`) and of the
    first rows per avro writer schema (column ``writer``), one per row (:data:`SCAN_COLUMNS`).

    A ``mapInArrow`` like the decode pass, so both passes share one pool of Python workers. The
    first pass reads whole files (``plan_tasks(split=False)``), so DDL are numbered per partition.
    Where the decoder has a block test (``Decoder.schema_block_test``), the records of a landed
    block it rejects are never read: none of them may carry a schema, so ``scanned_facts`` would
    skip each of them anyway.
    """

    def scan(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decoder = decoder_for(pipeline.protocol, pipeline.codec, resources.value)
        store = LandingStore(pipeline.landing_uri, pipeline.id)
        keep_block = decoder.schema_block_test()
        for batch in batches:
            for index in batch.column(0).to_pylist():
                found: dict[tuple[str, str], None] = {}
                with fewer_collections():
                    for piece in tasks[index]:
                        for fact in scanned_facts(decoder, _slice_messages(store, piece, keep_block)):
                            kind = "ddl" if isinstance(fact, DdlFact) else "table_schema"
                            if isinstance(fact, WriterSchemaUse):
                                kind = "writer"
                            found[(kind, fact.to_json())] = None
                columns = [
                    pa.array([text if kind == name else None for kind, text in found], pa.string())
                    for name in SCAN_COLUMNS
                ]
                yield pa.RecordBatch.from_arrays(columns, names=list(SCAN_COLUMNS))

    return scan


def decode_tasks(
    pipeline: PipelineConfig,
    run_id: str,
    tasks: list[list[Slice]],
    resources: Broadcast[DecodeResources],
    schemas: Broadcast[MemorySchemaLookup],
    skip: bool,
    reports: Accumulator[dict[int, TaskReport]],
    vector: bool = True,
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of the decode pass: task numbers in, events out. ``vector``: the
    protocol's whole-batch decoder (``arrow_decode``, where it has one) takes the rows it can vouch for."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decoder = decoder_for(pipeline.protocol, pipeline.codec, resources.value)
        task = _SliceDecoder(pipeline, run_id, decoder, schemas.value, skip, vector)
        for batch in batches:
            for index in batch.column(0).to_pylist():
                report = TaskReport(index)
                cpu = time.process_time()
                with fewer_collections():
                    for piece in tasks[index]:
                        yield from task.run(piece, report)
                report.seconds["cpu"] = time.process_time() - cpu
                reports.add({index: report})

    return run


def decode_jvm_rows(
    pipeline: PipelineConfig,
    run_id: str,
    resources: Broadcast[DecodeResources],
    schemas: Broadcast[MemorySchemaLookup],
    skip: bool,
    reports: Accumulator[dict[int, TaskReport]],
    vector: bool = True,
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of the JVM path (``jvm_decode.frames.jvm_decoded``): landed messages
    with the JVM decoder's ``events`` column in, events out. The decided messages' rows are made from
    what the JVM returned (``jvm_decode.events``); the others are decoded here as in :func:`decode_tasks`
    (the vector decoder first, where the run uses it, then the Python decoder). Each Spark task reports
    under its partition id."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decoder = decoder_for(pipeline.protocol, pipeline.codec, resources.value)
        task = _SliceDecoder(pipeline, run_id, decoder, schemas.value, skip, vector)
        index = TaskContext.get().partitionId()  # type: ignore[union-attr]
        report = TaskReport(index)
        cpu = time.process_time()
        with fewer_collections():
            for batch in batches:
                yield from task.decode_jvm_rows(batch, report)
        report.seconds["cpu"] = time.process_time() - cpu
        reports.add({index: report})

    return run


class _SliceDecoder:
    def __init__(
        self,
        pipeline: PipelineConfig,
        run_id: str,
        decoder: Decoder,
        lookup: MemorySchemaLookup,
        skip: bool,
        vector: bool = False,
    ) -> None:
        self.pipeline_id = pipeline.id
        self.protocol = pipeline.protocol.value
        self.store = LandingStore(pipeline.landing_uri, pipeline.id)
        self.run_id = run_id
        self.decoder = decoder
        self.lookup = lookup
        self.skip = skip
        self.sort_images = sorts_images(pipeline.protocol)
        self.records = ImageRecords(lookup)
        #: The protocol's whole-batch decoder (``arrow_decode``), where it has one and the run uses it.
        self.vector = vector_decoder(pipeline, run_id, decoder.resources) if vector else None

    def run(self, piece: Slice, report: TaskReport) -> Iterator[pa.RecordBatch]:
        if self.vector is not None:
            blocks = self.store.read_blocks(piece.source.file)
            try:
                chunks = batches(blocks, piece.first, piece.stop, VECTOR_ROWS)
                yield from self.decode_chunks(piece.source.batch_id, chunks, report)
            finally:
                blocks.close()  # type: ignore[attr-defined]  # a generator: closes the file at once
        else:
            yield from self.decode(piece.source.batch_id, _slice_messages(self.store, piece), report)

    def decode_chunks(
        self, batch_id: str, chunks: Iterator[MessageBatch], report: TaskReport
    ) -> Iterator[pa.RecordBatch]:
        """Decode each chunk (of :data:`VECTOR_ROWS` messages): the vector decoder takes the rows it can
        vouch for, :meth:`decode` the others, each in their order."""
        assert self.vector is not None
        clock = time.perf_counter
        seconds = report.seconds
        while True:
            started = clock()
            chunk = next(chunks, None)
            decoding = clock()
            seconds["read"] += decoding - started
            if chunk is None:
                return
            try:
                result = self.vector.decode(batch_id, chunk, self.lookup)
            except Exception:  # a bug in the vector path costs speed, never a message or the task
                log.exception("decode: the vector decoder failed on %d message(s); decoding them in Python", len(chunk))
                result = VectorDecode(None, [False] * len(chunk))
            seconds["decode"] += clock() - decoding
            rest: Sequence[RawMessage] = chunk
            if result.events is not None:
                rest = chunk.pick(i for i, taken in enumerate(result.taken) if not taken)
                report.messages += len(chunk) - len(rest)
                report.vector_events += len(chunk) - len(rest)
                yield from self._hand_over(result.events, batch_id, report)
            if rest:
                yield from self.decode(batch_id, iter(rest), report)

    def decode_jvm_rows(self, batch: pa.RecordBatch, report: TaskReport) -> Iterator[pa.RecordBatch]:
        """One Arrow batch of the JVM path: its decided rows as events, the others decoded here."""
        batch_ids = batch.column("batch_id")
        found = pc.unique(batch_ids).to_pylist()
        for batch_id in found:
            part = batch if len(found) == 1 else batch.filter(pc.equal(batch_ids, batch_id))
            started = time.perf_counter()
            decided = decided_events(part, self.pipeline_id, self.run_id)
            report.seconds["decode"] += time.perf_counter() - started
            if decided.events is not None:
                report.jvm_events += decided.events.num_rows
                yield from self._hand_over(decided.events, batch_id, report)
            if len(decided.rest):
                messages = [record_message(row) for row in part.take(pa.array(decided.rest)).to_pylist()]
                chunk = MessageBatch([(messages, 0, len(messages))])
                if self.vector is not None:
                    yield from self.decode_chunks(batch_id, iter([chunk]), report)
                else:
                    yield from self.decode(batch_id, iter(chunk), report)

    def _hand_over(self, batch: pa.RecordBatch, batch_id: str, report: TaskReport) -> Iterator[pa.RecordBatch]:
        started = time.perf_counter()
        for topic, partition, rows in partition_counts(batch):
            stats = report.partition((batch_id, topic, partition))
            stats.events += rows
            stats.dml += rows
        for database, table, rank in first_start_rows(batch):
            _start_schema(database, table, rank, self.lookup, report)
        counted = time.perf_counter()
        report.seconds["to_arrow"] += counted - started
        yield from self._with_records(batch, report)

    def decode(self, batch_id: str, messages: Iterator[RawMessage], report: TaskReport) -> Iterator[pa.RecordBatch]:
        """Decode ``messages`` of batch ``batch_id`` in Python; their events leave in Arrow batches."""
        clock = time.perf_counter
        decode = self.decoder.read
        lookup = self.lookup
        seconds = report.seconds
        buffer: list[ChangeEvent] = []
        read = decoding = 0.0
        count = 0
        while True:
            started = clock()
            message = next(messages, None)
            fetched = clock()
            read += fetched - started
            if message is None:
                break
            count += 1
            try:
                buffer.extend(decode(message, lookup))
            except DecodeError as exc:
                self._quarantine(report, batch_id, message, str(exc))
            except Exception as exc:  # a decoder bug must not lose the message either
                reason = f"{self.protocol}: unexpected {type(exc).__name__} while decoding: {exc}"
                self._quarantine(report, batch_id, message, reason)
            decoding += clock() - fetched
            if len(buffer) >= BATCH_ROWS:
                yield from self._flush(buffer, batch_id, report)
                buffer = []
        if buffer:
            yield from self._flush(buffer, batch_id, report)
        report.messages += count
        seconds["read"] += read
        seconds["decode"] += decoding

    def _flush(self, events: list[ChangeEvent], batch_id: str, report: TaskReport) -> Iterator[pa.RecordBatch]:
        started = time.perf_counter()
        _count(events, batch_id, report)
        _start_schemas(events, self.lookup, report)
        batch = events_to_arrow(self.pipeline_id, batch_id, self.run_id, events, sort_images=self.sort_images)
        report.seconds["to_arrow"] += time.perf_counter() - started
        yield from self._with_records(batch, report)

    def _with_records(self, batch: pa.RecordBatch, report: TaskReport) -> Iterator[pa.RecordBatch]:
        started = time.perf_counter()
        try:
            batch = self.records.add(batch)
        except Exception:  # a bug here costs apply the carrier's making from the maps, never a row or the task
            log.exception(
                "decode: the typed record carrier of %d event(s) failed; they keep only their maps", len(batch)
            )
        added = time.perf_counter()
        report.seconds["records"] += added - started
        yield batch
        report.seconds["handoff"] += time.perf_counter() - added

    def _quarantine(self, report: TaskReport, batch_id: str, message: RawMessage, reason: str) -> None:
        where = self.decoder.locate(message)
        report.quarantine.append(
            quarantine_row(self.pipeline_id, batch_id, self.run_id, message, self.protocol, reason, self.skip, where)
        )
        report.partition((batch_id, message.topic, message.partition)).quarantined += 1


def _start_schemas(events: list[ChangeEvent], lookup: MemorySchemaLookup, report: TaskReport) -> None:
    """Record the first row of each table bound to version 0 (the driver writes those schemas to history)."""
    for event in events:
        if event.schema_version != 0 or event.kind != EventKind.DML or event.database is None or event.table is None:
            continue
        position = event.position
        rank = (event.commit_ts, position.topic, position.partition, position.offset)
        _start_schema(event.database, event.table, rank, lookup, report)


def _start_schema(
    database: str, table: str, rank: tuple[int, str, int, int], lookup: MemorySchemaLookup, report: TaskReport
) -> None:
    """Record ``rank`` as the table's first row bound to its start schema, unless an earlier one is known."""
    known = report.start_schemas.get((database, table))
    if known is not None and known[0] <= rank:
        return
    schema = lookup.get(database, table, 0)
    if schema is not None:
        report.start_schemas[(database, table)] = (rank, schema.to_json())


def _count(events: list[ChangeEvent], batch_id: str, report: TaskReport) -> None:
    key: StatsKey | None = None
    stats = PartitionStats()
    for event in events:
        position = event.position
        if key is None or position.topic != key[1] or position.partition != key[2]:
            key = (batch_id, position.topic, position.partition)
            stats = report.partition(key)
        stats.events += 1
        kind = event.kind
        if kind == EventKind.DML:
            stats.dml += 1
        elif kind == EventKind.DDL:
            stats.ddl += 1
        elif kind == EventKind.WATERMARK:
            stats.watermarks += 1
            if stats.max_watermark is None or event.commit_ts > stats.max_watermark:
                stats.max_watermark = event.commit_ts
        if event.status == EventStatus.PENDING:
            stats.pending += 1
