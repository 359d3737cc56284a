"""The stream of `make bench-vs-kc`: TiCDC Debezium messages (schema included) of a seeded workload.

``changes`` row changes over ``tables`` sysbench-like tables (``id bigint`` key, ``k int``,
``c varchar(120)``, ``pad varchar(60)``), drawn 50/30/20 as INSERT/UPDATE/DELETE (an UPDATE or
DELETE hits a random live row of its table; a table without live rows gets an INSERT), one change
per transaction. Encoded by the simulator's Debezium encoder as TiCDC sends them with
``enable-tidb-extension`` and ``output-old-value``: each table's CREATE TABLE DDL first (to every
partition, as TiCDC sends DDL), rows dispatched by table (TiCDC's default), a watermark to every
partition every ``watermark_every`` changes and after the last one. Produced in chunks, never held
in memory whole; the final rows (the truth both systems must end with) are kept per table.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.column_types import Value
from ticdc_sim.debezium_encoder import DebeziumEncoder
from ticdc_sim.dispatch import table_partition
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import OutMessage

DATABASE = "bench_kc"
#: A row's values besides its key: (k, c, pad).
Values = tuple[int, str, str]
#: Final rows: (database, table) -> id -> values.
Truth = dict[tuple[str, str], dict[int, Values]]
SHARES = (("INSERT", 0.5), ("UPDATE", 0.3), ("DELETE", 0.2))


def table_name(index: int) -> str:
    return f"sbtest{index + 1}"


def schema(index: int, version: int) -> TableSchema:
    return TableSchema(
        database=DATABASE,
        table=table_name(index),
        columns=(
            ColumnSchema("id", "bigint", nullable=False),
            ColumnSchema("k", "int", nullable=False),
            ColumnSchema("c", "varchar", length=120, charset="utf8mb4", collation="utf8mb4_bin"),
            ColumnSchema("pad", "varchar", length=60, charset="utf8mb4", collation="utf8mb4_bin"),
        ),
        indexes=(IndexSchema("primary", ("id",), primary=True, unique=True),),
        table_id=100 + index,
        version=version,
        source="bench-vs-kc",
    )


def create_sql(index: int) -> str:
    return (
        f"CREATE TABLE `{DATABASE}`.`{table_name(index)}` (`id` bigint NOT NULL, `k` int NOT NULL, "
        "`c` varchar(120), `pad` varchar(60), PRIMARY KEY (`id`))"
    )


@dataclass
class Stream:
    """What was produced: counts per operation, messages, bytes, and the final rows."""

    topic: str
    partitions: int
    tables: int
    changes: int
    ops: dict[str, int] = field(default_factory=dict)
    messages: int = 0
    bytes: int = 0
    seconds: float = 0.0
    truth: Truth = field(default_factory=dict)

    def live_rows(self) -> int:
        return sum(len(rows) for rows in self.truth.values())


def _values(rng: random.Random, change: int) -> Values:
    digits = f"{change:011d}-{rng.getrandbits(64):020d}"
    return rng.randrange(1, 2**31 - 1), (digits + "-") * 3 + digits[:36], f"pad {change} " + "x" * 40


def row_changes(changes: int, tables: int, seed: int) -> Iterator[tuple[int, RowChange]]:
    """``(table index, change)`` in commit order; deterministic for a seed."""
    rng = random.Random(seed)
    live: list[list[int]] = [[] for _ in range(tables)]
    rows: list[dict[int, Values]] = [{} for _ in range(tables)]
    next_id = [1] * tables
    for n in range(changes):
        t = rng.randrange(tables)
        draw = rng.random()
        op = "INSERT" if draw < SHARES[0][1] or not live[t] else "UPDATE" if draw < 0.8 else "DELETE"
        name = table_name(t)
        if op == "INSERT":
            key = next_id[t]
            next_id[t] += 1
            live[t].append(key)
            rows[t][key] = _values(rng, n)
            yield t, RowChange(DmlOp.INSERT, DATABASE, name, None, _image(key, rows[t][key]))
            continue
        slot = rng.randrange(len(live[t]))
        key = live[t][slot]
        before = _image(key, rows[t][key])
        if op == "UPDATE":
            rows[t][key] = _values(rng, n)
            yield t, RowChange(DmlOp.UPDATE, DATABASE, name, before, _image(key, rows[t][key]))
        else:
            live[t][slot] = live[t][-1]
            live[t].pop()
            del rows[t][key]
            yield t, RowChange(DmlOp.DELETE, DATABASE, name, before, None)


def _image(key: int, values: Values) -> dict[str, Value]:
    return {"id": key, "k": values[0], "c": values[1], "pad": values[2]}


def produce_stream(
    bootstrap: str,
    topic: str,
    *,
    changes: int,
    tables: int,
    partitions: int,
    seed: int = 1,
    watermark_every: int = 5000,
    chunk: int = 20_000,
) -> Stream:
    """Create ``topic`` and produce the whole stream to it; returns what was produced."""
    started = time.perf_counter()
    create_topic(bootstrap, topic, partitions)
    first_ts = int(time.time() * 1000) << 18
    encoder = DebeziumEncoder("UTC")
    schemas = [schema(t, first_ts) for t in range(tables)]
    stream = Stream(topic, partitions, tables, changes, {op: 0 for op, _ in SHARES})
    pending: list[OutMessage] = []

    def send(force: bool = False) -> None:
        if pending and (force or len(pending) >= chunk):
            produce(bootstrap, pending)
            stream.messages += len(pending)
            stream.bytes += sum(len(m.value) + len(m.key or b"") for m in pending)
            pending.clear()

    def watermark(ts: int) -> None:
        mark = encoder.encode_watermark(ts, ts >> 18)
        pending.extend(OutMessage(topic, p, mark.key, mark.value or b"", "WATERMARK", ts) for p in range(partitions))

    for t in range(tables):
        ddl = DdlChange("CREATE", create_sql(t), DATABASE, table_name(t), schemas[t])
        message = encoder.encode_ddl(ddl, first_ts, first_ts >> 18)
        assert message is not None
        assert message.value is not None
        pending.extend(OutMessage(topic, p, message.key, message.value, "DDL", first_ts) for p in range(partitions))
    commit_ts = first_ts
    truth: Truth = {(DATABASE, table_name(t)): {} for t in range(tables)}
    for n, (t, change) in enumerate(row_changes(changes, tables, seed)):
        commit_ts = first_ts + 1 + n
        message = encoder.encode_row(change, schemas[t], commit_ts, commit_ts >> 18)
        assert message.value is not None
        partition = table_partition(DATABASE, table_name(t), partitions)
        pending.append(OutMessage(topic, partition, message.key, message.value, "DML", commit_ts))
        stream.ops[change.op.value] += 1
        rows = truth[(DATABASE, table_name(t))]
        image = change.after if change.after is not None else change.before
        assert image is not None
        if change.op is DmlOp.DELETE:
            del rows[int(str(image["id"]))]
        else:
            rows[int(str(image["id"]))] = (int(str(image["k"])), str(image["c"]), str(image["pad"]))
        if (n + 1) % watermark_every == 0:
            watermark(commit_ts)
        send()
    watermark(commit_ts)
    send(force=True)
    stream.truth = truth
    stream.seconds = time.perf_counter() - started
    return stream


def stamped_stream(
    state_root: Path, bootstrap: str, *, changes: int, tables: int, partitions: int
) -> tuple[Path, Stream, dict[str, dict[Any, Any]]]:
    """A new folder ``<state_root>/<UTC stamp>``, the stream produced to a new topic, and its final rows
    by ``database.table`` (what both sides of a benchmark must end with)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    state = state_root / stamp
    state.mkdir(parents=True)
    topic = f"bench-vs-kc-{stamp.lower()}-{uuid.uuid4().hex[:6]}"
    print(f"producing {changes} changes to {topic} ...", flush=True)
    stream = produce_stream(bootstrap, topic, changes=changes, tables=tables, partitions=partitions)
    truth = {f"{d}.{t}": dict(rows) for (d, t), rows in stream.truth.items()}
    return state, stream, truth
