"""Table properties of ``change_events`` by measurement: compression, Parquet statistics, metrics, pages.

Measurement only; it prints figures and asserts nothing. The decoded Debezium events of
``bench_decode_write`` (the real decoder's Arrow batches, cached in one warm local session,
``local[2]``) are written into ``change_events`` (created by ``SystemTables.ensure``, so with
today's ``EXTRA_PROPERTIES``; written with the decode stage's write options) again and again,
variants in turn, each round starting one further (A B C, B C A, ...), each into its own
``batch_id`` partition. Just before its write each variant's properties are set on top of today's
(Iceberg writes ``write.parquet.compression-codec=zstd`` into a new table's properties: unset, its
default would be gzip). Each written batch is then read back as apply's net-change job reads it:
the row images of every row, hashed. The first round warms the JVM and is not counted.

Per variant: CPU microseconds per event of the write and of the read, of driver + JVM and of the
JVM's executor task threads alone (what the table properties can change; the rest is planning,
commits and shipping the cached frame's tasks), median and minimum over the counted rounds, the
ratios of the medians to the first variant, wall seconds, bytes per event of the written files,
and whether the batch holds exactly the rows and values of the first variant's (a hash of every
column of every row, in the first counted round, outside the timing). The 1-minute load average
is printed per round.

    .venv/bin/python tests/bench/bench_change_events_codec.py --events 60000 --copies 3 --rounds 4
    .venv/bin/python tests/bench/bench_change_events_codec.py --variants "today,snappy,image stats off"
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped,unused-ignore]
import pyarrow as pa
from bench_apply_threads import kind_of, threads  # type: ignore[import-not-found,unused-ignore]  # beside this file
from bench_decode_write import decoded_batches, system_tables_and_copies  # type: ignore[import-not-found,unused-ignore]
from bench_local_spark import local_session  # type: ignore[import-not-found,unused-ignore]
from bench_support import PIPELINE  # type: ignore[import-not-found,unused-ignore]  # beside this file
from pyspark.sql.functions import col, lit
from pyspark.sql.types import MapType

from ticdc_lake.spark.decode_worker import BATCH_ROWS
from ticdc_lake.spark.event_commit import commit_event_files, event_file_layout
from ticdc_lake.spark.event_files import EventFileWriter
from ticdc_lake.spark.system_tables import UNSHUFFLED_WRITE
from ticdc_lake.spark.target_tables import load_iceberg_table

#: Leaves of the map columns: Iceberg's names (``<map>.key``, ``<map>.value``).
_IMAGE_LEAVES = [f"{m}.{part}" for m in ("before", "after", "column_types") for part in ("key", "value")]


def _metrics(mode: str) -> dict[str, str]:
    return {f"write.metadata.metrics.column.{leaf}": mode for leaf in _IMAGE_LEAVES}


def _stats_off(leaves: list[str]) -> dict[str, str]:
    """No Parquet statistics (chunk and page min/max, null counts; so no column index) for ``leaves``."""
    return {f"write.parquet.stats-enabled.column.{leaf}": "false" for leaf in leaves}


#: Parquet pages four times Iceberg's defaults (1 MiB, 20,000 rows): fewer page flushes and buffer resets.
_PAGES_4X = {"write.parquet.page-size-bytes": str(4 * 2**20), "write.parquet.page-row-limit": "80000"}

#: name -> table properties of ``change_events`` on top of today's during its writes (the first: none).
VARIANTS: dict[str, dict[str, str]] = {
    "today": {},
    "zstd level 1": {"write.parquet.compression-level": "1"},
    "snappy": {"write.parquet.compression-codec": "snappy"},
    "lz4": {"write.parquet.compression-codec": "lz4"},
    "uncompressed": {"write.parquet.compression-codec": "uncompressed"},
    "image metrics none": _metrics("none"),  # Iceberg keeps no bounds or null counts of map leaves anyway
    "image metrics counts": _metrics("counts"),
    "image stats off": _stats_off(_IMAGE_LEAVES),
    "image value stats off": _stats_off([f"{m}.value" for m in ("before", "after", "column_types")]),
    "image stats off + metrics none": {**_stats_off(_IMAGE_LEAVES), **_metrics("none")},
    "page v2": {"write.parquet.page-version": "v2"},
    "pages 4x": _PAGES_4X,
    "image stats off + pages 4x": {**_stats_off(_IMAGE_LEAVES), **_PAGES_4X},
    "snappy + image metrics none": {"write.parquet.compression-codec": "snappy", **_metrics("none")},
    "zstd 1 + image metrics none": {"write.parquet.compression-level": "1", **_metrics("none")},
    "snappy + image stats off": {"write.parquet.compression-codec": "snappy", **_stats_off(_IMAGE_LEAVES)},
}

_IMAGE_HASH = "xxhash64(map_keys(`before`), map_values(`before`), map_keys(`after`), map_values(`after`))"


def _checksum(spark: Any, table: str, batch: str) -> tuple[int, int]:
    """(rows, sum of the hashes of every column but ``batch_id`` of every row) of one batch: same rows, same sum."""
    parts = [
        f"map_keys(`{f.name}`), map_values(`{f.name}`)" if isinstance(f.dataType, MapType) else f"`{f.name}`"
        for f in spark.table(table).schema
        if f.name != "batch_id"
    ]
    found = spark.sql(
        f"SELECT count(*), sum(CAST(xxhash64({', '.join(parts)}) AS DECIMAL(38,0))) FROM {table} "
        f"WHERE batch_id = '{batch}'"
    ).collect()[0]
    return int(found[0]), int(found[1])


def _set(spark: Any, table: str, wanted: dict[str, str | None]) -> None:
    """Set the properties with a value, unset those without (back to Iceberg's default)."""
    pairs = ", ".join(f"'{k}'='{v}'" for k, v in wanted.items() if v is not None)
    if pairs:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({pairs})")
    unset = ", ".join(f"'{k}'" for k, v in wanted.items() if v is None)
    if unset:
        spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES IF EXISTS ({unset})")


class _Clock:
    """Wall seconds and CPU seconds: driver + JVM, the JVM's executor task threads, this process.

    A thread's CPU is kept at its last figure after it ends (Spark reuses its task threads)."""

    def __init__(self, now: Callable[[], tuple[float, float]]) -> None:
        self._now = now
        self._jvm = next(p.pid for p in psutil.Process().children(recursive=True) if p.name() == "java")
        self._tasks: dict[int, float] = {}

    def __call__(self) -> tuple[float, float, float, float]:
        """(wall, driver + JVM CPU, the JVM's task threads' CPU, this Python process's CPU)."""
        wall, cpu = self._now()
        for tid, (name, seconds) in threads(self._jvm).items():
            if kind_of(name) == "task":
                self._tasks[tid] = seconds
        own = psutil.Process().cpu_times()
        return wall, cpu, sum(self._tasks.values()), own.user + own.system


def _spark_write(spark: Any, table: str, frame: Any, batch: str) -> None:
    """Spark's Iceberg writer, as the decode stage uses it where the workers cannot write."""
    frame.withColumn("batch_id", lit(batch)).writeTo(table).options(**UNSHUFFLED_WRITE).overwritePartitions()


def _workers_write(spark: Any, table: str, events: pa.Table, batch: str, clock: _Clock) -> float:
    """The decode workers' writer (``event_files``, here in this process) and the driver's commit
    (``event_commit``); returns this process's CPU seconds in the writer alone."""
    iceberg = load_iceberg_table(spark, table)
    layout = event_file_layout(spark, iceberg, PIPELINE, [batch])
    assert layout is not None, "the workers cannot write this table's files (see the log)"
    events = events.set_column(1, "batch_id", pa.array([batch] * events.num_rows, pa.string()))
    before = clock()[3]
    writer = EventFileWriter(layout, 0, 0)
    for part in events.to_batches(max_chunksize=BATCH_ROWS):
        writer.write(part)
    files = writer.finish()
    spent = clock()[3] - before
    commit_event_files(spark, iceberg, PIPELINE, files)
    return spent


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):5.1f} ({min(values):4.1f})"


def _report(
    figures: dict[str, dict[str, list[float]]], sizes: dict[str, int], same: dict[str, bool], rows: int
) -> None:
    """The table: per variant and figure, median (min) and the ratio of the medians to the first variant."""
    base = next(iter(figures))
    ratio = {k: statistics.median(v) for k, v in figures[base].items()}
    print(
        "CPU us/event: driver + JVM, of it the writing threads (the workers' pyarrow writer in this process, or "
        "Spark's executor tasks) and the reading executor tasks; median (min), ratio to the first variant"
    )
    print(
        f"{'variant':30} {'write':>12} {'ratio':>5} {'read':>12} {'ratio':>5} {'w+r':>5} | {'task write':>12} "
        f"{'ratio':>5} {'task read':>12} {'ratio':>5} | {'wall w/r s':>10} {'B/event':>7} same rows"
    )
    for name, f in figures.items():
        m = {k: statistics.median(v) for k, v in f.items()}
        print(
            f"{name:30} {_median(f['write'])} {m['write'] / ratio['write']:5.2f} {_median(f['read'])} "
            f"{m['read'] / ratio['read']:5.2f} {(m['write'] + m['read']) / (ratio['write'] + ratio['read']):5.2f} | "
            f"{_median(f['task write'])} {m['task write'] / ratio['task write']:5.2f} {_median(f['task read'])} "
            f"{m['task read'] / ratio['task read']:5.2f} | {m['wall write']:5.2f}/{m['wall read']:4.2f} "
            f"{sizes[name] / rows:7.1f} {'yes' if same[name] else 'NO'}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=60_000, help="DML messages decoded")
    parser.add_argument("--copies", type=int, default=3, help="each write holds the events this many times")
    parser.add_argument("--rounds", type=int, default=4, help="counted rounds (one more warms the JVM)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated names; the first is the base")
    parser.add_argument(
        "--writer",
        choices=("workers", "spark"),
        default="workers",
        help="the decode workers' pyarrow files and the driver's commit (the stage's default) or Spark's writer",
    )
    args = parser.parse_args()
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    variants = {n: VARIANTS[n] for n in names}

    workdir = Path(tempfile.mkdtemp(prefix="bench-change-events-codec-"))
    table = decoded_batches(workdir, args.events)
    spark, now = local_session("bench-change-events-codec-", **{"spark.ui.showConsoleProgress": "false"})
    clock = _Clock(now)
    tables, frame, rows = system_tables_and_copies(spark, table, args.copies)
    events = pa.concat_tables([table] * args.copies)
    every = sorted({key for properties in variants.values() for key in properties})
    today = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {tables.change_events}").collect()}
    print("change_events properties today:", {k: v for k, v in today.items() if k.startswith("write.")})
    figures: dict[str, dict[str, list[float]]] = {
        n: {k: [] for k in ("write", "read", "task write", "task read", "wall write", "wall read")} for n in variants
    }
    sizes: dict[str, int] = {}
    checks: dict[str, tuple[int, int]] = {}
    print(f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    for round_ in range(args.rounds + 1):
        order = list(variants.items())
        shift = round_ % len(order)  # each round starts with another variant: none always follows the same one
        for name, properties in order[shift:] + order[:shift]:
            _set(spark, tables.change_events, {k: properties.get(k, today.get(k)) for k in every})
            batch = f"{round_:04d}-{names.index(name)}"
            start = clock()
            if args.writer == "spark":
                _spark_write(spark, tables.change_events, frame, batch)
                written = clock()
                writer_cpu = written[2] - start[2]
            else:
                writer_cpu = _workers_write(spark, tables.change_events, events, batch, clock)
                written = clock()
            spark.table(tables.change_events).where(col("batch_id") == batch).selectExpr(
                f"max({_IMAGE_HASH})"
            ).collect()
            read = clock()
            sizes[name] = spark.sql(
                f"SELECT sum(file_size_in_bytes) FROM {tables.change_events}.files WHERE partition.batch_id = '{batch}'"
            ).collect()[0][0]
            measured = {
                "write": (written[1] - start[1]) / rows * 1e6,
                "read": (read[1] - written[1]) / rows * 1e6,
                "task write": writer_cpu / rows * 1e6,
                "task read": (read[2] - written[2]) / rows * 1e6,
                "wall write": written[0] - start[0],
                "wall read": read[0] - written[0],
            }
            if round_:
                for key, value in measured.items():
                    figures[name][key].append(value)
            if round_ == 1:
                checks[name] = _checksum(spark, tables.change_events, batch)
            print(
                f"round {round_} {name}: write {measured['write']:.1f} (tasks {measured['task write']:.1f}), "
                f"read {measured['read']:.1f} (tasks {measured['task read']:.1f}) CPU us/event; "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    print(f"\n{rows:,} events per write ({args.events:,} decoded x {args.copies}), {args.rounds} counted rounds")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    _report(figures, sizes, {n: checks[n] == checks[names[0]] for n in variants}, rows)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
