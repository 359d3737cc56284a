"""Helpers of the apply benchmark: the change workload, landing in rounds, seeding targets, phase timing.

The workload is Simple JSON (the fastest decoder; apply is what is measured). Messages are
encoded by the simulator once per template row and then copied with the key, commit TSO and table
replaced in the bytes: encoding a million messages one by one would take 80 s.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import import_module
from typing import Any

import bench_support as support  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake import table_markers
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.landing.raw_batch import ConsumedRecord
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.model import DmlOp, RowChange
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder

DATABASE = "bench"
PROTOCOL = "simple-json"
#: Placeholders encoded into the templates and replaced per message.
MARK_ID = 909090909090
MARK_TS = 455999999999999999
MARK_TABLE = "tpl_mark_table"
MARK_TABLE_ID = 77777777
#: Template rows per operation (the rest of the changes repeat their values with their own key).
TEMPLATES = 200
#: Multiplier spreading updates and deletes over the hot key range (a prime: a bijection modulo the range).
SPREAD = 1_000_003
OPS = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)


def table_name(index: int) -> str:
    return f"t{index:03d}"


def table_schema(index: int) -> TableSchema:
    schema: TableSchema = replace(support.SCHEMA, table=table_name(index), table_id=1000 + index)
    return schema


@dataclass(frozen=True, slots=True)
class Round:
    """One landing round: ``changes`` per table over ``tables`` tables, keys relative to ``existing``.

    Per table, change j is an INSERT, UPDATE or DELETE in turn. Inserts take new keys from
    ``existing`` up; updates and deletes hit distinct keys spread over the newest ``hot`` existing
    keys (recent rows are the hot ones in an OLTP table; the same batch shape whatever the table
    size). Commit TSOs increase by one per change from ``first_ts``, tables interleaved.
    """

    tables: int
    changes: int
    existing: int
    hot: int
    first_ts: int
    sequence: int = 1
    #: Offsets already landed per partition before this round.
    offsets: tuple[int, ...] = ()
    bootstrap: bool = True

    @property
    def total(self) -> int:
        return self.tables * self.changes

    @property
    def last_ts(self) -> int:
        return self.first_ts + self.total - 1

    def key(self, j: int) -> int:
        op, k = j % 3, j // 3
        if op == 0 or self.existing == 0:
            return self.existing + (k if op == 0 else self.changes + j)
        low = max(0, self.existing - self.hot)
        span = self.existing - low
        return low + ((2 * k + op - 1) * SPREAD) % span


class Templates:
    """Simple JSON messages of one template table, with placeholders to replace."""

    def __init__(self) -> None:
        self.encoder = SimpleJsonEncoder("UTC")
        schema = replace(support.SCHEMA, table=MARK_TABLE, table_id=MARK_TABLE_ID)
        self.by_op: list[list[bytes]] = [[self._encode(op, r, schema) for r in range(TEMPLATES)] for op in OPS]

    def _encode(self, op: DmlOp, r: int, schema: TableSchema) -> bytes:
        before = support.row(r) if op is not DmlOp.INSERT else None
        after = support.row(r + 1) if op is not DmlOp.DELETE else None
        for image in (before, after):
            if image is not None:
                image["id"] = MARK_ID
        change = RowChange(op, DATABASE, MARK_TABLE, before, after)
        value = self.encoder.encode_row(change, schema, MARK_TS, 1).value
        assert value is not None
        return value

    def message(self, op: int, j: int, table: int, key: int, commit_ts: int) -> bytes:
        value = self.by_op[op][(j // 3) % TEMPLATES]
        value = value.replace(b'"id":"%d"' % MARK_ID, b'"id":"%d"' % key)
        value = value.replace(b'"commitTs":%d' % MARK_TS, b'"commitTs":%d' % commit_ts)
        value = value.replace(b'"table":"%s"' % MARK_TABLE.encode(), b'"table":"%s"' % table_name(table).encode())
        return value.replace(b'"tableID":%d' % MARK_TABLE_ID, b'"tableID":%d' % (1000 + table))


def build_round(templates: Templates, spec: Round, partitions: int, batches: int) -> list[list[list[bytes]]]:
    """Per partition and batch, the message values of one round (tables dispatched to partitions).

    Batches cut the round in commit-TSO order; every partition's batch ends with a watermark equal
    to the highest commit TSO of the round so far (what TiCDC's resolved ts promises).
    """
    out: list[list[list[bytes]]] = [[[] for _ in range(batches)] for _ in range(partitions)]
    if spec.bootstrap:
        for t in range(spec.tables):
            out[t % partitions][0].append(templates.encoder.encode_bootstrap(table_schema(t), 1).value or b"")
    per_batch = -(-spec.total // batches)
    for b in range(batches):
        for g in range(b * per_batch, min(spec.total, (b + 1) * per_batch)):
            j, t = divmod(g, spec.tables)
            op = j % 3
            out[t % partitions][b].append(templates.message(op, j, t, spec.key(j), spec.first_ts + g))
        mark = spec.first_ts + min(spec.total, (b + 1) * per_batch) - 1
        watermark = templates.encoder.encode_watermark(mark, 1).value or b""
        for p in range(partitions):
            out[p][b].append(watermark)
    return out


def land_round(store: LandingStore, spec: Round, values: list[list[list[bytes]]]) -> tuple[int, tuple[int, ...]]:
    """Land one round with the real landing store (a manifest per batch); returns (bytes, offsets after)."""
    size = 0
    ends = list(spec.offsets or (0,) * len(values))
    for b in range(len(values[0])):
        ranges = []
        for p, per_batch in enumerate(values):
            items, start = per_batch[b], ends[p]
            records = (
                ConsumedRecord(RawMessage(support.TOPIC, p, start + o, 1_700_000_000_000, None, v))
                for o, v in enumerate(items)
            )
            landed = store.write_batch(records, topic=support.TOPIC, partition=p, start=start, end=start + len(items))
            ranges.append(landed)
            ends[p] = start + len(items)
            size += landed.size_bytes or 0
        sequence = spec.sequence + b
        store.publish(
            Manifest(
                pipeline=support.PIPELINE,
                sequence=sequence,
                batch_id=f"{sequence:012d}",
                run_id=f"bench-{sequence}",
                interval_start=None,
                interval_end=None,
                created_at=datetime.now(UTC),
                ranges=tuple(ranges),
            )
        )
    return size, tuple(ends)


#: Seed values per column of the benchmark table (Spark SQL over ``id``), cast to the target's types.
SEED_VALUES = {
    "id": "id",
    "customer": "concat('customer ', id % 977, ' seeded')",
    "amount": "(id % 100000) + 0.25",
    "quantity": "id % 1000",
    "status": "element_at(array('new', 'paid', 'shipped'), CAST(id % 3 AS INT) + 1)",
    "created_at": "timestamp_seconds(1793000000 + id)",
    "updated_at": "timestamp_seconds(1794000000 + id)",
    "note": "repeat('lorem ipsum ', CAST(1 + id % 4 AS INT))",
    "payload": "CAST(concat('p', id % 256) AS BINARY)",
    "lifetime": "18446744073709551615 - id",
}


def seed_target(spark: Any, pipeline: Any, index: int, rows: int, rows_per_file: int) -> float:
    """Create table ``index`` as apply would and bulk-load keys 0..rows-1 with applied position VERSION.

    One Spark `range` written with `writeTo().append()`: each task writes one contiguous key range
    (tight per-file key bounds, as an append-mostly table has). The snapshot carries
    ``ticdc.applied-ts`` = the schema version, below every change's commit TSO.
    """
    from ticdc_lake.spark import table_positions, target_tables
    from ticdc_lake.spark.target_tables import TargetTable

    started = time.perf_counter()
    schema = table_schema(index)
    target = TargetTable.for_upstream(pipeline, DATABASE, schema.table)
    target_tables.create(spark, target, schema)
    fields = spark.table(target.sql_name).schema.fields
    exprs = [f"CAST({SEED_VALUES.get(f.name, 'NULL')} AS {f.dataType.simpleString()}) AS `{f.name}`" for f in fields]
    parts = max(1, -(-rows // rows_per_file))
    with table_positions.committing(spark, {table_markers.APPLIED_TS: str(support.VERSION)}):
        spark.range(0, rows, 1, parts).selectExpr(*exprs).writeTo(target.sql_name).append()
    return time.perf_counter() - started


@dataclass
class PhaseClock:
    """Wall clock per apply phase, by wrapping the product's functions (no product edits).

    Inclusive seconds and call counts per wrapped function; inside ``_merge`` the time up to the
    MERGE statement's creation (net change, typed projection, bad-value count) and the MERGE itself
    are split at ``merge_statement``. Functions that do not exist (renamed) are skipped.
    """

    seconds: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    first: dict[str, float] = field(default_factory=dict)
    #: CPU seconds of the driver and the JVM per phase (the wall clock follows the machine's load).
    cpu: dict[str, float] = field(default_factory=dict)
    processes: list[Any] = field(default_factory=list)
    _merge_started: tuple[float, float] | None = None
    _sql_started: tuple[float, float] | None = None

    PATCHES = (
        ("ticdc_lake.spark.apply_job", "_events_in_scope", "events_frame"),
        ("ticdc_lake.spark.apply_job", "_ddls_in_scope", "ddl_scan"),
        ("ticdc_lake.spark.apply_job", "collect_ddls", "ddl_scan"),
        ("ticdc_lake.spark.apply_job", "_schemas", "schema_history_read"),
        ("ticdc_lake.spark.apply_job", "quarantine_holds", "holds"),
        ("ticdc_lake.spark.apply_job", "run_tables", "tables"),
        ("ticdc_lake.spark.ddl_sequence", "prepare", "prepare"),
        ("ticdc_lake.spark.ddl_sequence", "read_position", "read_position"),
        ("ticdc_lake.spark.ddl_sequence", "prepare_windows", "stats"),
        ("ticdc_lake.spark.table_positions", "position", "position"),
        ("ticdc_lake.spark.ddl_sequence", "apply_segment", "segment"),
        ("ticdc_lake.spark.table_apply", "_merge", "merge_all"),
        ("ticdc_lake.spark.target_tables", "latest_snapshot", "snapshot_read"),
        ("ticdc_lake.spark.ledger", "append", "ledger"),
    )

    def now(self) -> tuple[float, float]:
        """(wall clock, CPU seconds of the driver and JVM processes so far)."""
        cpu = 0.0
        for process in self.processes:
            try:
                times = process.cpu_times()
                cpu += times.user + times.system
            except Exception:  # a process that ended counts nothing more
                continue
        return time.perf_counter(), cpu

    def add(self, phase: str, since: tuple[float, float], until: tuple[float, float] | None = None) -> None:
        end = until or self.now()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + end[0] - since[0]
        self.cpu[phase] = self.cpu.get(phase, 0.0) + end[1] - since[1]
        self.calls[phase] = self.calls.get(phase, 0) + 1

    def _wrap(self, function: Callable[..., Any], phase: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = self.now()
            self.first.setdefault(phase, started[0])
            if phase == "merge_all":
                self._merge_started = started
            if phase == "snapshot_read" and self._sql_started is not None:
                self.add("merge_sql", self._sql_started, started)
                self._sql_started = None
            try:
                return function(*args, **kwargs)
            finally:
                self.add(phase, started)
                if phase == "merge_all":
                    self._merge_started = None

        return timed

    def _statement(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def marked(*args: Any, **kwargs: Any) -> Any:
            now = self.now()
            if self._merge_started is not None:
                self.add("net_change", self._merge_started, now)
                self._sql_started = now
            return function(*args, **kwargs)

        return marked

    @contextmanager
    def installed(self) -> Iterator[PhaseClock]:
        undo: list[tuple[Any, str, Any]] = []
        for module_name, attr, phase in self.PATCHES:
            module = import_module(module_name)
            if hasattr(module, attr):
                original = getattr(module, attr)
                undo.append((module, attr, original))
                setattr(module, attr, self._wrap(original, phase))
        for name in ("ticdc_lake.spark.table_apply", "ticdc_lake.spark.segment_merge"):
            module = import_module(name)
            if hasattr(module, "merge_statement"):
                undo.append((module, "merge_statement", module.merge_statement))
                setattr(module, "merge_statement", self._statement(module.merge_statement))  # noqa: B010
        try:
            yield self
        finally:
            for module, attr, original in reversed(undo):
                setattr(module, attr, original)

    def phases(self, started: float, total: float, table: dict[str, float] | None = None) -> dict[str, float]:
        """Exclusive seconds per phase, in run order, summing to ``total`` (of ``table``: wall clock or CPU)."""
        s = (self.seconds if table is None else table).get
        first = min([v for k, v in self.first.items() if k != "ledger"] or [started + total])
        out = {
            "read system tables + watermarks": max(0.0, first - started) if table is None else 0.0,
            "events frame (lazy)": s("events_frame", 0.0),
            "DDL scan (collect)": s("ddl_scan", 0.0),
            "schema history read": s("schema_history_read", 0.0),
            "quarantine holds": s("holds", 0.0),
            "table list": s("tables", 0.0)
            - s("prepare", 0.0)
            - s("read_position", 0.0)
            - s("stats", 0.0)
            - s("segment", 0.0),
            "positions": s("position", 0.0),
            "per-table counts (replays, pending)": s("prepare", 0.0) + s("read_position", 0.0) - s("position", 0.0),
            "grouped counts, all tables": s("stats", 0.0),
            "segment: versions, count, exists, columns": s("segment", 0.0) - s("merge_all", 0.0),
            "net change + typed + bad values": s("net_change", 0.0),
            "MERGE (incl. commit)": s("merge_sql", 0.0),
            "snapshot read": s("snapshot_read", 0.0),
            "merge other": s("merge_all", 0.0) - s("net_change", 0.0) - s("merge_sql", 0.0) - s("snapshot_read", 0.0),
            "ledger": s("ledger", 0.0),
        }
        out["other"] = total - sum(out.values())
        return out


_REPORT = re.compile(r"Received metrics report: (CommitReport|ScanReport)\{tableName=([^,]+),(.*)$")
_COUNTER = re.compile(r"(\w+)=CounterResult\{unit=\w+, value=(\d+)\}")
_DURATION = re.compile(r"totalDuration=PT([\d.]+)S")


def iceberg_reports(text: str) -> list[dict[str, Any]]:
    """Iceberg's LoggingMetricsReporter lines: kind, table, counters and the duration (seconds)."""
    reports = []
    for line in text.splitlines():
        found = _REPORT.search(line)
        if not found:
            continue
        report: dict[str, Any] = {"kind": found[1], "table": found[2]}
        report.update({k: int(v) for k, v in _COUNTER.findall(found[3])})
        duration = _DURATION.search(found[3])
        report["seconds"] = float(duration[1]) if duration else 0.0
        reports.append(report)
    return reports


def enable_iceberg_reports(spark: Any) -> None:
    """Let Iceberg's default metrics reporter log commit and scan reports (INFO) to stderr."""
    jvm = spark.sparkContext._jvm
    level = jvm.org.apache.logging.log4j.Level.INFO
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel("org.apache.iceberg.metrics", level)


def spark_jobs(spark: Any) -> int:
    """Spark jobs this application started so far (job ids are sequential; -1 + 1 when none yet)."""
    ids = spark.sparkContext.statusTracker().getJobIdsForGroup()
    return int(max(ids, default=-1)) + 1


def typed_step_cost(
    spark: Any, events_table: str, pipeline: Any, tables: int, now: Callable[[], tuple[float, float]]
) -> dict[str, Any]:
    """CPU (driver + JVM) of apply's text -> typed step against the rest, measured after the run on
    its own READY row events, table by table, as apply computes them (issue 14 item 3's evidence):

    - ``net``: the net changes per key, persisted and counted (what the MERGE source starts from);
    - ``typed``: ``typed_projection`` (``try_cast`` of each map value to its column's type and the
      unrepresentable-value count) over the persisted net changes, persisted and summed, as apply's
      bad-values job does;
    - ``text``: the same job with each column's canonical text instead (no cast, no count):
      ``typed - text`` is what the typed projection adds to building the MERGE source.

    Returns CPU and wall seconds per part and the changes measured.
    """
    from pyspark.sql import functions as F

    from ticdc_lake.apply.merge_sql import BAD_VALUES_COLUMN, TargetColumn, typed_projection
    from ticdc_lake.identifiers import quote, sql_string
    from ticdc_lake.spark import table_positions
    from ticdc_lake.spark.net_change_frame import net_changes
    from ticdc_lake.spark.target_tables import TargetTable

    rows = spark.table(events_table).where(
        (F.col("pipeline") == pipeline.id) & (F.col("kind") == "DML") & (F.col("status") == "READY")
    )
    parts = {"net": [0.0, 0.0], "typed": [0.0, 0.0], "text": [0.0, 0.0]}
    changes = 0

    def timed(part: str, action: Callable[[], Any]) -> Any:
        started = now()
        result = action()
        ended = now()
        parts[part][0] += ended[0] - started[0]
        parts[part][1] += ended[1] - started[1]
        return result

    for t in range(tables):
        target = TargetTable.for_upstream(pipeline, DATABASE, table_name(t))
        columns = [TargetColumn(c.name, c.type) for c in table_positions.iceberg_columns(spark, target) or []]
        dml = rows.where((F.col("database") == DATABASE) & (F.col("table") == table_name(t)))
        changes += dml.count()
        net = net_changes(dml, ["id"]).persist()
        timed("net", net.count)
        typed = net.selectExpr(*typed_projection("image", columns)).persist()
        timed("typed", typed.agg(F.sum(BAD_VALUES_COLUMN), F.min("id"), F.max("id")).first)
        text = net.selectExpr(
            *[f"image[{sql_string(c.name)}] AS {quote(c.name)}" for c in columns], f"0 AS {BAD_VALUES_COLUMN}"
        ).persist()
        timed("text", text.agg(F.sum(BAD_VALUES_COLUMN), F.min("id"), F.max("id")).first)
        for frame in (typed, text, net):
            frame.unpersist()
    return {
        "changes": changes,
        **{f"{k}_s": v[0] for k, v in parts.items()},
        **{f"{k}_cpu": v[1] for k, v in parts.items()},
    }
