"""A deterministic stand-in for a TiCDC changefeed writing to Kafka (MQ sink): one topic, or a
topic per table (``topic_dispatch="table"``, routing in :mod:`~ticdc_sim.topics`).

It drives a simulated clock, commits workload transactions to the reference model and produces
the messages TiCDC would, in TiCDC's order (tiflow ``cdc/sink/ddlsink/mq/mq_ddl_sink.go``, ``cdc/owner/ddl_sink.go``):

* DDL: broadcast to every partition (or partition 0, per encoder) of its topic, then a forced
  WATERMARK.
* BOOTSTRAP (Simple): before the first row of a table, to every partition; then again, on a 5 s
  check, when 120 s passed or 10 000 rows were seen since the last one; a 30 s check forgets
  tables without rows for 30 minutes until their next row.
* DML: to the dispatch partition, transaction by transaction in commit order.
* WATERMARK: on a 1 s ticker, to every partition of every watermark topic, when the checkpoint (commit TSO of the latest
  fully emitted transaction or DDL) advanced.

Nothing reads the real clock; one ``random.Random(seed)`` drives everything, so the same
arguments give the same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from ticdc_lake.config import Policies
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.clock import SimClock
from ticdc_sim.ddl_changes import create_database_change
from ticdc_sim.ddl_specs import AlterSpec
from ticdc_sim.ddl_sql import create_table_sql
from ticdc_sim.dispatch import DispatchRule, row_partition
from ticdc_sim.encoding import EncodedMessage, ProtocolEncoder
from ticdc_sim.expected import (
    IcebergValue,
    expected_iceberg_columns,
    expected_iceberg_key,
    expected_iceberg_rows,
)
from ticdc_sim.model import DdlChange, RowChange, TableRef, Transaction, UpstreamModel
from ticdc_sim.net_mutations import net_mutations
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder
from ticdc_sim.simulator_ddl import DdlApi
from ticdc_sim.topics import TopicRouter
from ticdc_sim.workload import Workload, WorkloadConfig

DEFAULT_START = datetime(2025, 1, 6, 9, 0, 0, tzinfo=UTC)
#: TiCDC's bootstrap worker checks its tables every 5 s, and every 30 s forgets tables that had
#: no row for 30 minutes (``bootstraper.go``).
BOOTSTRAP_CHECK_INTERVAL = timedelta(seconds=5)
BOOTSTRAP_GC_INTERVAL = timedelta(seconds=30)
BOOTSTRAP_MAX_INACTIVE = timedelta(minutes=30)
FIRST_TABLE_ID = 100


class MessageKind(StrEnum):
    DDL = "DDL"
    BOOTSTRAP = "BOOTSTRAP"
    DML = "DML"
    WATERMARK = "WATERMARK"
    #: Bytes that are not a valid message (appended on purpose by a test).
    MALFORMED = "MALFORMED"


@dataclass(frozen=True, slots=True)
class OutMessage:
    """One Kafka record to produce, in send order."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes
    kind: str
    #: The event's commit TSO (the checkpoint for WATERMARK; 0 for BOOTSTRAP and MALFORMED).
    commit_ts: int
    #: True for an at-least-once copy of a message that was already sent.
    replay: bool = False


@dataclass(slots=True)
class _BootstrapStat:
    last_sent: datetime
    rows_since: int
    last_row: datetime
    version: int | None = None
    #: The topic of the table when its stat was made; tiflow's ``tableStatistic.topic`` "will not
    #: change", so after a RENAME the BOOTSTRAPs keep going to the old name's topic.
    topic: str | None = None


class TicdcSimulator(DdlApi):
    """Upstream workload + TiCDC MQ sink behaviour, producing an outbox of Kafka messages."""

    def __init__(
        self,
        *,
        seed: int = 0,
        topic: str = "ticdc-simple",
        partitions: int = 3,
        dispatch: str = "table",
        server_time_zone: str = "UTC",
        start: datetime = DEFAULT_START,
        bootstrap_interval_s: float = 120.0,
        bootstrap_row_count: int = 10_000,
        bootstrap_to_all_partitions: bool = True,
        watermark_interval_s: float = 1.0,
        transaction_gap_ms: tuple[int, int] = (5, 400),
        workload: WorkloadConfig | None = None,
        encoder: ProtocolEncoder | None = None,
        topic_dispatch: str = "single",
        watermark_topics: str = "used",
    ) -> None:
        """``topic_dispatch``: ``single`` (every event to ``topic``) or ``table`` (TiCDC's topic
        dispatcher ``"<topic>_{schema}_{table}"``, ``topic`` being the default topic);
        ``watermark_topics``: ``used`` or ``active`` (see :mod:`~ticdc_sim.topics`)."""
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        if not 0 <= transaction_gap_ms[0] <= transaction_gap_ms[1]:
            raise ValueError(f"transaction_gap_ms must be (low, high) with 0 <= low <= high, got {transaction_gap_ms}")
        if watermark_interval_s <= 0:
            raise ValueError(f"watermark_interval_s must be > 0, got {watermark_interval_s}")
        self.topic = topic
        self._router = TopicRouter(topic, topic_dispatch, watermark_topics)
        self.partitions = partitions
        self.dispatch = DispatchRule(dispatch)
        self.encoder: ProtocolEncoder = encoder or SimpleJsonEncoder(server_time_zone)
        self._rng = random.Random(seed)
        self._clock = SimClock(start)
        # Keyless tables (force-replicate) and bursts are part of what the simulator can emit.
        self._model = UpstreamModel(allow_keyless=True, repeated_keys=True)
        self.workload = Workload(self._rng, workload, server_time_zone)
        self._gap_ms = transaction_gap_ms
        self._bootstrap_interval = timedelta(seconds=bootstrap_interval_s)
        self._bootstrap_rows = bootstrap_row_count
        self._bootstrap_enabled = self.encoder.has_bootstrap and bootstrap_interval_s > 0 and bootstrap_row_count > 0
        self._bootstrap_all = bootstrap_to_all_partitions
        self._watermark_interval = timedelta(seconds=watermark_interval_s)
        self._next_watermark_tick = start + self._watermark_interval
        self._next_bootstrap_tick = start + BOOTSTRAP_CHECK_INTERVAL
        self._next_gc_tick = start + BOOTSTRAP_GC_INTERVAL
        self._bootstrap: dict[TableRef, _BootstrapStat] = {}
        self._outbox: list[OutMessage] = []
        self._taken = 0
        self._logs: dict[str, dict[int, list[OutMessage]]] = {}
        self._checkpoint = 0
        self._last_broadcast = 0
        self._last_watermark: dict[tuple[str, int], int] = {}
        self._route_avro(encoder)
        self._next_table_id = FIRST_TABLE_ID
        self._workload_ready = False

    # ------------------------------------------------------------------ accessors
    @property
    def model(self) -> UpstreamModel:
        return self._model

    @property
    def now(self) -> datetime:
        """The simulated wall clock (UTC)."""
        return self._clock.now

    @property
    def checkpoint_ts(self) -> int:
        """Commit TSO of the latest fully emitted transaction or DDL (0 before any)."""
        return self._checkpoint

    @property
    def topic_dispatch(self) -> str:
        return self._router.mode

    @property
    def topics(self) -> list[str]:
        """Every topic used so far, sorted (with ``topic_dispatch="table"`` the default topic too:
        it gets the watermarks and the schema-level DDLs)."""
        return self._router.topics

    def topic_of(self, database: str, table: str) -> str:
        """The topic of the rows of ``database.table``."""
        return self._router.topic_of(database, table)

    def last_watermark(self, partition: int, topic: str | None = None) -> int | None:
        """The latest WATERMARK value sent to ``partition`` of ``topic`` (default: the default
        topic; replays not counted)."""
        return self._last_watermark.get((topic or self.topic, partition))

    def last_watermarks(self, topic: str | None = None) -> dict[int, int]:
        wanted = topic or self.topic
        return {p: ts for (t, p), ts in self._last_watermark.items() if t == wanted}

    def messages(self) -> list[OutMessage]:
        """Every message produced so far, in send order."""
        return list(self._outbox)

    def partition_log(self, partition: int, topic: str | None = None) -> list[OutMessage]:
        """Messages sent to ``partition`` of ``topic`` (default: the default topic) in order:
        index i is offset i of a fresh topic."""
        return list(self._log(partition, topic))

    def expected_iceberg_rows(
        self, database: str, table: str, tso: int | None = None, policies: Policies | None = None
    ) -> list[dict[str, IcebergValue]]:
        """The oracle: the table as pyiceberg should return it at ``tso`` (default: the checkpoint).

        Empty when the Iceberg table should not exist (see ``expected.expected_iceberg_rows``).
        """
        at = self._checkpoint if tso is None else tso
        return expected_iceberg_rows(self._model, database, table, at, policies or Policies()) or []

    def expected_iceberg_columns(
        self, database: str, table: str, tso: int | None = None, policies: Policies | None = None
    ) -> list[tuple[str, str]]:
        """The Iceberg table's columns ``(name, iceberg type)`` at ``tso`` (default: the checkpoint)."""
        at = self._checkpoint if tso is None else tso
        return expected_iceberg_columns(self._model, database, table, at, policies or Policies())

    def expected_iceberg_key(
        self, database: str, table: str, tso: int | None = None, policies: Policies | None = None
    ) -> tuple[str, ...]:
        """The Iceberg table's identifier fields at ``tso`` (a dropped-but-kept table: its last key)."""
        at = self._checkpoint if tso is None else tso
        return expected_iceberg_key(self._model, database, table, at, policies or Policies())

    def take(self) -> list[OutMessage]:
        """The messages produced since the previous ``take`` (to hand to the producer)."""
        taken = self._outbox[self._taken :]
        self._taken = len(self._outbox)
        return taken

    # ------------------------------------------------------------------ DDL
    def setup(self, create_databases: bool = False) -> list[TableSchema]:
        """Create the workload's tables (CREATE TABLE DDLs); later calls do nothing.

        ``create_databases`` first emits a ``CREATE DATABASE`` (QUERY DDL) per workload database.
        """
        if self._workload_ready:
            return []
        if create_databases:
            for database in self.workload.databases():
                self.create_database(database)
        created = []
        for schema in self.workload.table_schemas():
            committed = self.create_table(schema)
            self.workload.attach(committed)
            created.append(committed)
        self._workload_ready = True
        return created

    def create_table(self, schema: TableSchema) -> TableSchema:
        """Commit ``CREATE TABLE`` for ``schema``; returns it with its table id and version."""
        self._pass_time(self._gap())
        version = self._clock.next_tso()
        self._pass_time(timedelta(milliseconds=self._rng.randint(1, 20)))
        committed = replace(schema, table_id=self._allocate_id(), version=version, source="simulator")
        ddl = DdlChange("CREATE", create_table_sql(committed), committed.database, committed.table, committed)
        self._commit_ddls([(ddl, ())])
        return committed

    def create_database(self, database: str) -> int:
        """Commit ``CREATE DATABASE`` (a QUERY DDL without table schema); returns its commit TSO."""
        self._pass_time(self._gap())
        self._allocate_id()
        return self._commit_ddls([(create_database_change(database), ())])

    def _commit_ddls(self, ddls: Sequence[tuple[DdlChange, tuple[AlterSpec, ...]]]) -> int:
        """Commit the DDL events of one statement at one commit TSO and emit them in order.

        An encoder may return None for a DDL its protocol does not send: nothing is emitted for
        it, but the model commits it and the watermark moves as for any DDL.
        """
        commit_ts = self._clock.next_tso()
        self._model.apply_ddls(commit_ts, ddls)
        renames = {}
        for ddl, _ in ddls:
            self._bootstrap_after_ddl(ddl)
            if ddl.ddl_type == "RENAME" and ddl.pre_table_schema is not None and ddl.table_schema is not None:
                old, new = ddl.pre_table_schema, ddl.table_schema
                renames[(old.database, old.table)] = (new.database, new.table)
        self.workload.follow_ddl(self._model, renames)
        build_ts = self._clock.now_ms()
        targets = range(self.partitions) if self.encoder.ddl_to_all_partitions else range(1)
        for ddl, _ in ddls:
            encoded = self.encoder.encode_ddl(ddl, commit_ts, build_ts)
            if encoded is None:
                continue
            topic = self._router.topic_for_ddl(ddl)
            for partition in targets:
                self._emit(partition, encoded, MessageKind.DDL, commit_ts, topic)
        # A created or renamed table's topic gets watermarks from now on, before its first row.
        self._router.use_tables(self._model.tables())
        self._checkpoint = commit_ts
        self._broadcast_watermark(self._clock.now_ms(), force=True)
        return commit_ts

    def _bootstrap_after_ddl(self, ddl: DdlChange) -> None:
        """TiCDC tracks bootstrap state per table id: a rename keeps it, TRUNCATE (new id) and
        DROP forget it (the next row sends a BOOTSTRAP first)."""
        if ddl.ddl_type == "RENAME" and ddl.pre_table_schema is not None and ddl.table_schema is not None:
            stat = self._bootstrap.pop((ddl.pre_table_schema.database, ddl.pre_table_schema.table), None)
            if stat is not None:
                self._bootstrap[(ddl.table_schema.database, ddl.table_schema.table)] = stat
        elif ddl.ddl_type in ("ERASE", "TRUNCATE") and ddl.table is not None:
            self._bootstrap.pop((ddl.database, ddl.table), None)
        elif ddl.ddl_type == "QUERY" and ddl.table is None:
            for ref in [r for r in self._bootstrap if r not in set(self._model.tables())]:
                del self._bootstrap[ref]

    # ------------------------------------------------------------------ DML
    def run_transactions(self, count: int) -> list[Transaction]:
        """Create the workload tables if needed, then commit ``count`` workload transactions."""
        self.setup()
        committed = []
        for _ in range(count):
            committed.append(self.commit(self.workload.next_changes(self._model)))
        return committed

    def commit(self, changes: Sequence[RowChange]) -> Transaction:
        """Commit one transaction of row changes (TiCDC order) and emit its messages."""
        if not changes:
            raise ValueError("a transaction needs at least one row change")
        self._pass_time(self._gap())
        commit_ts = self._clock.next_tso()
        transaction = self._model.apply(Transaction(commit_ts, tuple(changes)))
        self.workload.observe(transaction)
        build_ts = self._clock.now_ms()
        emitted = net_mutations(transaction.changes, lambda db, table: self._model.schema(db, table).handle_key())
        for change in emitted:
            schema = self._model.schema(change.database, change.table)
            self._before_row(schema, build_ts)
            row = change.after if change.after is not None else change.before
            assert row is not None
            partition = row_partition(self.dispatch, schema, row, self.partitions)
            encoded = self.encoder.encode_row(change, schema, commit_ts, build_ts)
            self._emit(partition, encoded, MessageKind.DML, commit_ts, self.topic_of(schema.database, schema.table))
        self._checkpoint = commit_ts
        return transaction

    def _before_row(self, schema: TableSchema, build_ts: int) -> None:
        """TiCDC's bootstrap worker ``addEvent``: BOOTSTRAP before a table's first row."""
        if not self._bootstrap_enabled:
            return
        ref = (schema.database, schema.table)
        stat = self._bootstrap.get(ref)
        if stat is None:
            topic = self.topic_of(*ref)
            self._bootstrap[ref] = _BootstrapStat(self._clock.now, 0, self._clock.now, schema.version, topic)
            self._send_bootstrap(schema, build_ts, topic)
        else:
            stat.rows_since += 1
            stat.last_row = self._clock.now
            if schema.version is not None and (stat.version is None or schema.version > stat.version):
                # ``tableStatistic.update``: a new schema version resets the counters, so the
                # next 5 s check sends a BOOTSTRAP with the new schema.
                stat.version = schema.version
                stat.rows_since = 0
                stat.last_sent = datetime(1970, 1, 1, tzinfo=UTC)

    def _send_bootstrap(self, schema: TableSchema, build_ts: int, topic: str | None) -> None:
        encoded = self.encoder.encode_bootstrap(schema, build_ts)
        for partition in range(self.partitions if self._bootstrap_all else 1):
            self._emit(partition, encoded, MessageKind.BOOTSTRAP, 0, topic)

    # ------------------------------------------------------------------ time
    def advance(self, seconds: float) -> None:
        """Let simulated time pass without transactions (watermark and bootstrap ticks run)."""
        self._pass_time(timedelta(seconds=seconds))

    def idle_until(self, moment: datetime) -> None:
        """Jump the clock forward to ``moment`` sending nothing meanwhile, as when the upstream and
        its changefeed were stopped (``advance`` would send a watermark per second of the gap);
        the watermark, bootstrap and GC ticks continue from there. No-op when ``moment`` is not later."""
        gap = moment - self._clock.now
        if gap <= timedelta(0):
            return
        self._clock.advance(gap)
        self._next_watermark_tick += gap
        self._next_bootstrap_tick += gap
        self._next_gc_tick += gap

    def flush_watermark(self) -> int:
        """Send a WATERMARK with the current checkpoint to every partition of every watermark
        topic now; returns it."""
        self._broadcast_watermark(self._clock.now_ms(), force=True)
        return self._checkpoint

    def _pass_time(self, delta: timedelta) -> None:
        target = self._clock.now + delta
        while True:
            tick = min(self._next_watermark_tick, self._next_bootstrap_tick, self._next_gc_tick)
            if tick > target:
                break
            if tick > self._clock.now:
                self._clock.advance(tick - self._clock.now)
            if tick == self._next_watermark_tick:
                self._next_watermark_tick += self._watermark_interval
                self._broadcast_watermark(self._clock.now_ms())
            elif tick == self._next_bootstrap_tick:
                self._next_bootstrap_tick += BOOTSTRAP_CHECK_INTERVAL
                self._bootstrap_tick()
            else:
                self._next_gc_tick += BOOTSTRAP_GC_INTERVAL
                self._bootstrap_gc()
        self._clock.advance(target - self._clock.now)

    def _bootstrap_tick(self) -> None:
        if not self._bootstrap_enabled:
            return
        now = self._clock.now
        for ref in sorted(self._bootstrap):
            stat = self._bootstrap[ref]
            if now - stat.last_sent >= self._bootstrap_interval or stat.rows_since >= self._bootstrap_rows:
                stat.last_sent, stat.rows_since = now, 0
                self._send_bootstrap(self._model.schema(*ref), self._clock.now_ms(), stat.topic)

    def _bootstrap_gc(self) -> None:
        now = self._clock.now
        for ref in sorted(self._bootstrap):
            if now - self._bootstrap[ref].last_row > BOOTSTRAP_MAX_INACTIVE:
                del self._bootstrap[ref]

    def _broadcast_watermark(self, build_ts: int, force: bool = False) -> None:
        if not self.encoder.has_watermark:
            return
        if not force and self._checkpoint <= self._last_broadcast:
            return
        encoded = self.encoder.encode_watermark(self._checkpoint, build_ts)
        for topic in self._router.watermark_targets(self._model.tables()):
            for partition in range(self.partitions):
                self._emit(partition, encoded, MessageKind.WATERMARK, self._checkpoint, topic)
                self._last_watermark[(topic, partition)] = self._checkpoint
        self._last_broadcast = self._checkpoint

    # ------------------------------------------------------------------ faults
    def replay(
        self,
        partitions: Iterable[int] | None = None,
        start: int = 0,
        count: int | None = None,
        topic: str | None = None,
    ) -> list[OutMessage]:
        """Send again (at-least-once) a contiguous slice ``[start, start+count)`` of each partition's
        log in ``topic`` (default: the default topic).

        The copies are byte-identical, marked ``replay=True``, appended to the outbox partition by
        partition, and returned.
        """
        copies: list[OutMessage] = []
        for partition in sorted(set(range(self.partitions) if partitions is None else partitions)):
            log = self._log(partition, topic)
            end = len(log) if count is None else start + count
            if start < 0 or end > len(log) or start >= end:
                raise ValueError(
                    f"topic {topic or self.topic!r} partition {partition}: cannot replay [{start}, {end}), "
                    f"only offsets [0, {len(log)}) were sent"
                )
            copies.extend(replace(m, replay=True) for m in log[start:end])
        for message in copies:
            self._append(message)
        return copies

    def append_malformed(
        self, partition: int, value: bytes, key: bytes | None = None, topic: str | None = None
    ) -> OutMessage:
        """Append raw bytes that are not a valid message to ``partition`` of ``topic`` (default: the
        default topic; decode-error tests)."""
        self._log(partition, topic)
        message = OutMessage(topic or self.topic, partition, key, value, MessageKind.MALFORMED, 0)
        self._append(message)
        return message

    # ------------------------------------------------------------------ internals
    def _emit(
        self, partition: int, encoded: EncodedMessage, kind: MessageKind, commit_ts: int, topic: str | None = None
    ) -> None:
        target = topic or self.topic
        self._router.use(target)
        self._append(OutMessage(target, partition, encoded.key, encoded.value, kind, commit_ts))

    def _append(self, message: OutMessage) -> None:
        self._outbox.append(message)
        self._logs.setdefault(message.topic, {}).setdefault(message.partition, []).append(message)

    def _log(self, partition: int, topic: str | None = None) -> list[OutMessage]:
        name = topic or self.topic
        if name not in self._router.topics:
            raise ValueError(f"topic {name!r} was not used by this changefeed; used topics: {self._router.topics}")
        if not 0 <= partition < self.partitions:
            raise ValueError(f"topic {name!r} has partitions 0..{self.partitions - 1}, not {partition}")
        return self._logs.setdefault(name, {}).setdefault(partition, [])

    def _route_avro(self, encoder: ProtocolEncoder | None) -> None:
        """The avro protocol registers schemas under subjects of the message's topic."""
        route = getattr(encoder, "route_topics", None)
        if route is not None and self._router.mode == "table":
            route(self.topic_of)

    def _gap(self) -> timedelta:
        return timedelta(milliseconds=self._rng.randint(*self._gap_ms))

    def _allocate_id(self) -> int:
        allocated = self._next_table_id
        self._next_table_id += 1
        return allocated
