"""Helpers of the decode benchmark: the table, the messages, landing, the pipeline file, memory and CPU sampling."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped,unused-ignore]
import yaml

from ticdc_lake.config import LakeConfig, load_config
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.landing.raw_batch import ConsumedRecord
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.encoding import EncodedMessage, ProtocolEncoder
from ticdc_sim.model import DdlChange, DmlOp, RowChange

PIPELINE = "bench"
TOPIC = "bench"
VERSION = 455000000000000000
FIRST_TS = VERSION + 1
#: Placeholder in the ``customer`` of every encoded row, replaced by the message number (same length,
#: so every encoding stays valid): no two messages carry the same row images.
MARK = b"~~MARK~~~~"
#: The benchmark table: 10 columns of the common kinds.
SCHEMA = TableSchema(
    database="bench",
    table="orders",
    columns=(
        ColumnSchema("id", "bigint", nullable=False),
        ColumnSchema("customer", "varchar", length=64, charset="utf8mb4", collation="utf8mb4_bin"),
        ColumnSchema("amount", "decimal", length=12, scale=2),
        ColumnSchema("quantity", "int"),
        ColumnSchema("status", "enum", elements=("new", "paid", "shipped"), charset="utf8mb4"),
        ColumnSchema("created_at", "datetime", fsp=6),
        ColumnSchema("updated_at", "timestamp", fsp=3),
        ColumnSchema("note", "text", charset="utf8mb4", collation="utf8mb4_bin"),
        ColumnSchema("payload", "varbinary", length=64),
        ColumnSchema("lifetime", "bigint", unsigned=True),
    ),
    indexes=(IndexSchema("primary", ("id",), primary=True, unique=True),),
    table_id=100,
    version=VERSION,
    source="bench",
)
CREATE_SQL = (
    "CREATE TABLE `bench`.`orders` (`id` bigint NOT NULL, `customer` varchar(64), `amount` decimal(12,2), "
    "`quantity` int, `status` enum('new','paid','shipped'), `created_at` datetime(6), `updated_at` timestamp(3), "
    "`note` text, `payload` varbinary(64), `lifetime` bigint unsigned, PRIMARY KEY (`id`))"
)


def row(i: int) -> dict[str, Any]:
    """Row ``i`` as the simulator's model values."""
    return {
        "id": i,
        "customer": f"customer {i % 977} {MARK.decode()} Zürich",
        "amount": Decimal(f"{i % 100000}.{i % 100:02d}"),
        "quantity": i % 1000,
        "status": ("new", "paid", "shipped")[i % 3],
        "created_at": datetime(2026, 11, 1 + i % 28, 10, i % 60, (i * 7) % 60, i % 1000000),
        "updated_at": datetime(2026, 11, 21, 8, i % 60, 0, (i % 1000) * 1000, tzinfo=UTC),
        "note": "lorem ipsum " * (1 + i % 4),
        "payload": bytes([i % 256, 0xAD, 0xBE, 0xEF]),
        "lifetime": 2**64 - 1 - i,
    }


def encoder_for_protocol(protocol: str, **extra: Any) -> tuple[ProtocolEncoder, dict[int, str]] | None:
    """The simulator's encoder of ``protocol`` and the writer schemas it registers (Avro), None if it has none;
    ``extra``: the encoder's own options (``enable_tidb_extension``, ...)."""
    registry: dict[int, str] = {}

    def register(subject: str, text: str) -> int:  # a schema registry in memory, landed by the caller
        for schema_id, known in registry.items():
            if known == text:
                return schema_id
        registry[len(registry) + 1] = text
        return len(registry)

    options: dict[str, Any] = {"register": register, "topic": TOPIC} if protocol == "avro" else {}
    options.update(extra)
    try:
        from ticdc_sim import encoders
    except ImportError:  # before the encoder registry existed: the Simple encoders only
        from ticdc_sim.simple_avro_encoder import SimpleAvroEncoder
        from ticdc_sim.simple_json_encoder import SimpleJsonEncoder

        known = {"simple-json": SimpleJsonEncoder, "simple-avro": SimpleAvroEncoder}
        return (known[protocol]("UTC"), registry) if protocol in known else None
    try:
        return encoders.encoder_for(protocol, "UTC", **options), registry
    except (ValueError, ImportError):
        return None


@dataclass
class Messages:
    """Per partition, the messages of each landed batch."""

    batches: list[list[list[EncodedMessage]]]
    distinct: int
    encode_seconds: int | float

    @property
    def count(self) -> int:
        return sum(len(b) for p in self.batches for b in p)


def build_messages(encoder: ProtocolEncoder, events: int, partitions: int, batches: int, distinct: int) -> Messages:
    """``events`` DML (INSERT, UPDATE, DELETE in turn) spread over partitions and batches.

    Each partition starts with the table's schema message (BOOTSTRAP for Simple, else the CREATE
    TABLE DDL) and each batch of a partition ends with a watermark where the protocol has one.
    Encoding runs through the simulator's encoder for ``distinct`` rows; the rest repeat them
    with a unique ``customer`` (the decoders keep no per-message cache, so a repeat costs what a new
    message costs, and the written files hold as many distinct values as real data would).
    """
    started = time.perf_counter()
    templates = [_dml(encoder, i) for i in range(min(events, distinct))]
    encode_seconds = time.perf_counter() - started
    if encoder.has_bootstrap:
        head = encoder.encode_bootstrap(SCHEMA, 1)
    else:
        created = encoder.encode_ddl(DdlChange("CREATE", CREATE_SQL, "bench", "orders", SCHEMA), VERSION, 1)
        assert created is not None, f"{encoder.protocol} sends no CREATE TABLE event"
        head = created
    out: list[list[list[EncodedMessage]]] = [[[] for _ in range(batches)] for _ in range(partitions)]
    per_batch = -(-events // (partitions * batches))
    for p in range(partitions):
        out[p][0].append(head)
    for i in range(events):
        slot = i % partitions, min(batches - 1, i // partitions // per_batch)
        message = templates[i % len(templates)]
        if message.value is not None:  # None: an Avro DELETE is a tombstone
            message = EncodedMessage(message.key, message.value.replace(MARK, b"%010d" % i))
        out[slot[0]][slot[1]].append(message)
    if encoder.has_watermark:
        for p in range(partitions):
            for b in range(batches):
                out[p][b].append(encoder.encode_watermark(FIRST_TS + events + b, 1))
    return Messages(out, len(templates), encode_seconds)


def _dml(encoder: ProtocolEncoder, i: int) -> EncodedMessage:
    op = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)[i % 3]
    before = row(i) if op is not DmlOp.INSERT else None
    after = row(i + 1) if op is DmlOp.UPDATE else row(i) if op is DmlOp.INSERT else None
    if after is not None and before is not None:
        after["id"] = before["id"]
    return encoder.encode_row(RowChange(op, "bench", "orders", before, after), SCHEMA, FIRST_TS + i, 1)


def land(store: LandingStore, messages: Messages) -> int:
    """Land every batch with the real landing store and publish one manifest per batch; returns bytes."""
    size = 0
    ends = [0] * len(messages.batches)
    for b in range(len(messages.batches[0])):
        ranges = []
        for p, per_batch in enumerate(messages.batches):
            items = per_batch[b]
            start = ends[p]
            records = (
                ConsumedRecord(RawMessage(TOPIC, p, start + o, 1_700_000_000_000, m.key, m.value))
                for o, m in enumerate(items)
            )
            ranges.append(store.write_batch(records, topic=TOPIC, partition=p, start=start, end=start + len(items)))
            ends[p] = start + len(items)
            size += ranges[-1].size_bytes or 0
        manifest = Manifest(
            pipeline=PIPELINE,
            sequence=b + 1,
            batch_id=f"{b + 1:012d}",
            run_id=f"bench-{b + 1}",
            interval_start=None,
            interval_end=None,
            created_at=datetime.now(UTC),
            ranges=tuple(ranges),
        )
        store.publish(manifest)
    return size


def compressed(messages: Messages, protocol: str, compression: str) -> Messages:
    """``messages`` as a changefeed with ``large-message-handle-compression`` sends them: the whole value
    (and Debezium's key) compressed, Open Protocol's value items each on its own, Avro never."""
    import cramjam

    from ticdc_lake.protocols.open_framing import frame_batch, split_batch

    if compression == "none" or protocol == "avro":
        return messages

    def pack(data: bytes) -> bytes:
        return bytes(cramjam.snappy.compress_raw(data) if compression == "snappy" else cramjam.lz4.compress(data))

    def one(message: EncodedMessage) -> EncodedMessage:
        if protocol == "open":
            items = split_batch(message.key, message.value)
            return EncodedMessage(*frame_batch([k.data for k, _ in items], [pack(v.data) for _, v in items]))
        key = pack(message.key) if protocol == "debezium" and message.key else message.key
        return EncodedMessage(key, pack(message.value))

    started = time.perf_counter()
    batches = [[[one(m) for m in batch] for batch in partition] for partition in messages.batches]
    print(f"compressed {messages.count:,} messages with {compression} in {time.perf_counter() - started:.1f} s")
    return Messages(batches, messages.distinct, messages.encode_seconds)


def write_config(workdir: Path, protocol: str, compression: str = "none", *, tidb_extension: bool = True) -> LakeConfig:
    path = workdir / "pipelines.yaml"
    catalog = {"uri": f"jdbc:sqlite:{workdir}/lake.db", "warehouse": f"file://{workdir}/warehouse"}
    pipeline: dict[str, Any] = {
        "id": PIPELINE,
        "protocol": protocol,
        "kafka": {"topics": [TOPIC]},
        "landing_uri": f"file://{workdir}/landing",
        "catalog": "lake",
    }
    codec: dict[str, Any] = {}
    if compression != "none":
        codec["compression"] = compression
    if not tidb_extension:
        codec["enable_tidb_extension"] = False
    if codec:
        pipeline["codec"] = codec
    path.write_text(yaml.safe_dump({"catalogs": {"lake": catalog}, "pipelines": [pipeline]}))
    return load_config(path)


def process_kind(process: psutil.Process, root: int) -> str:
    if process.pid == root:
        return "driver"
    name = process.name()
    if name == "java":
        return "jvm"
    return "workers" if name.startswith("python") else "launcher"  # spark-submit's shell scripts


@dataclass
class TreeSampler:
    """Samples the memory (PSS: shared pages split between processes) and CPU time of this process tree."""

    interval: float = 0.5
    peak_total: int = 0
    peak_by_kind: dict[str, int] = field(default_factory=dict)
    most_processes: dict[str, int] = field(default_factory=dict)
    cpu_by_pid: dict[int, tuple[str, float]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> TreeSampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def reset(self) -> None:
        self.peak_total, self.peak_by_kind, self.most_processes = 0, {}, {}

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    def cpu(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for kind, seconds in self.cpu_by_pid.values():
            totals[kind] = totals.get(kind, 0.0) + seconds
        return totals

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        root = psutil.Process()
        by_kind: dict[str, int] = {}
        processes: dict[str, int] = {}
        for process in [root, *root.children(recursive=True)]:
            try:
                kind = process_kind(process, root.pid)
                memory = _pss(process)
                times = process.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            by_kind[kind] = by_kind.get(kind, 0) + memory
            processes[kind] = processes.get(kind, 0) + 1
            self.cpu_by_pid[process.pid] = (kind, times.user + times.system)
        self.peak_total = max(self.peak_total, sum(by_kind.values()))
        for kind, memory in by_kind.items():
            self.peak_by_kind[kind] = max(self.peak_by_kind.get(kind, 0), memory)
            self.most_processes[kind] = max(self.most_processes.get(kind, 0), processes[kind])


def _pss(process: psutil.Process) -> int:
    try:
        return int(process.memory_full_info().pss)
    except (AttributeError, psutil.AccessDenied):
        return int(process.memory_info().rss)


def timed(function: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started
