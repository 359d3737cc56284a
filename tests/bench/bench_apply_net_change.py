"""The grouped net-change job alone, two versions of its code in one warm JVM, A B A B.

Run: ``.venv/bin/python tests/bench/bench_apply_net_change.py --base FILE [--new FILE] [--events N]``.
``--base`` and ``--new`` are copies of ``ticdc_lake/spark/net_change_frame.py`` (default ``--new``:
this tree's), loaded side by side. The events are made once and written as Parquet (columns of the
READY rows apply reads: database, table, op, before, after as ``MAP<STRING,STRING>``, commit_ts,
topic, partition, offset, idx): N changes over 10 tables shaped like the side-by-side stream
(sysbench columns id, k, c, pad; 50/30/20 inserts/updates/deletes, 4 partitions), ``--copies`` of
them delivered twice. Each round runs what ``table_apply.group_net_changes`` runs, once per side:
``net_changes_and_duplicates`` over a fresh read, persisted, the duplicates counted per table and
commit TSO (the job that fills the cache), then one pass over each table's winners (what the
MERGE sources read), then unpersist. Prints per side the wall and CPU seconds (driver + JVM) of
each round, the ratio of means, and whether both sides gave the same winners and duplicates.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from bench_local_spark import local_session  # type: ignore[import-not-found,unused-ignore]  # beside this file

TABLES = 10
HERE = Path(__file__).resolve().parents[2] / "include" / "ticdc_lake" / "spark" / "net_change_frame.py"


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peak_rss_mib() -> int:
    """The peak resident memory (VmHWM) of this process's JVM."""
    import psutil  # type: ignore[import-untyped,unused-ignore]

    for child in psutil.Process().children(recursive=True):
        if child.name() == "java":
            for line in Path(f"/proc/{child.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    return 0


def make_events(spark: Any, folder: str, events: int, copies: float) -> None:
    """``events`` changes, event j of table j % 10; a table's i-th event inserts key i (50%),
    or updates (30%) or deletes (20%) a key inserted before it; ``copies`` of them twice."""
    from pyspark.sql import functions as F

    i = F.col("id")
    j = (i / TABLES).cast("long")  # the event's number inside its table
    kind = j % 10
    earlier = F.pmod(F.xxhash64(i), F.greatest(j, F.lit(1)))
    key = F.when(kind < 5, j).otherwise(earlier)

    def image(version: Any) -> Any:
        text = F.concat(F.sha2(F.concat(key.cast("string"), version), 512))
        return F.create_map(
            F.lit("id"),
            key.cast("string"),
            F.lit("k"),
            (F.xxhash64(key, version) % 100000).cast("string"),
            F.lit("c"),
            F.substring(text, 1, 119),
            F.lit("pad"),
            F.substring(F.md5(F.concat(key.cast("string"), version)), 1, 59),
        )

    op = F.when(kind < 5, "I").when(kind < 8, "U").otherwise("D")
    frame = spark.range(events).select(
        F.lit("bench").alias("database"),
        F.concat(F.lit("sbtest"), (i % TABLES + 1).cast("string")).alias("table"),
        op.alias("op"),
        F.when(op != "I", image(F.lit("old"))).alias("before"),
        F.when(op != "D", image(j.cast("string"))).alias("after"),
        (F.lit(440000000000000000) + i * 1000).cast("decimal(20,0)").alias("commit_ts"),
        F.lit("bench-topic").alias("topic"),
        (i % 4).cast("int").alias("partition"),
        (i / 4).cast("long").alias("offset"),
        F.lit(0).alias("idx"),
    )
    again = frame.where(F.pmod(F.xxhash64(F.col("offset")), F.lit(1000)) < int(copies * 1000)).withColumn(
        "offset", F.col("offset") + events
    )
    frame.unionByName(again).repartition(8).write.mode("overwrite").parquet(folder)


def one_round(
    spark: Any, now: Any, module: ModuleType, folder: str, keys: Mapping[tuple[str, str], tuple[str, ...]]
) -> tuple[Any, tuple[float, float]]:
    """The job that fills the cache, then a pass over each table's winners: the result (per table
    the winners' count and a checksum; the duplicates per table and commit TSO) and ``now()``
    after the first job."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    events = spark.read.parquet(folder)
    net = module.net_changes_and_duplicates(events, keys).persist(StorageLevel.MEMORY_AND_DISK)
    found = net.where(F.col("duplicate")).groupBy("database", "table", "commit_ts").count().collect()
    filled = now()
    digest = []
    for database, table in keys:
        winners = net.where((F.col("database") == database) & (F.col("table") == table) & F.col("winner"))
        row = winners.select(
            F.count("*"),
            F.sum(F.pmod(F.xxhash64(F.map_keys("image"), F.map_values("image"), "op", "commit_ts"), F.lit(1000000007))),
        ).first()
        digest.append((table, row[0], row[1]))
    net.unpersist()
    result = tuple(sorted(digest)), tuple(sorted((r["table"], int(r["commit_ts"]), r["count"]) for r in found))
    return result, filled


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", type=Path, required=True, help="net_change_frame.py of side A")
    parser.add_argument("--new", type=Path, default=HERE, help="net_change_frame.py of side B")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--copies", type=float, default=0.0, help="share of the events delivered twice")
    parser.add_argument("--rounds", type=int, default=3, help="A B pairs after one warm-up pair")
    parser.add_argument("--explain", action="store_true", help="print side B's physical plan")
    args = parser.parse_args()
    spark, now = local_session("ticdc-lake-bench-net-", **{"spark.ui.showConsoleProgress": "false"})
    sides = {"A": load(args.base, "net_change_frame_a"), "B": load(args.new, "net_change_frame_b")}
    folder = tempfile.mkdtemp(prefix="ticdc-lake-bench-net-events-")
    started = now()
    make_events(spark, folder, args.events, args.copies)
    print(f"events written in {now()[0] - started[0]:.1f} s", flush=True)
    keys = {("bench", f"sbtest{t + 1}"): ("id",) for t in range(TABLES)}
    if args.explain:
        sides["B"].net_changes_and_duplicates(spark.read.parquet(folder), keys).explain()
    figures: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
    results: dict[str, set[Any]] = {"A": set(), "B": set()}
    for n in range(args.rounds + 1):
        for side, module in sides.items():
            load_avg = os.getloadavg()[0]
            before = now()
            result, filled = one_round(spark, now, module, folder, keys)
            after = now()
            wall, cpu = after[0] - before[0], after[1] - before[1]
            fill = filled[1] - before[1]
            results[side].add(result)
            label = "warm-up" if n == 0 else f"round {n}"
            duplicates = sum(c for *_, c in result[1])
            print(
                f"{label} {side}: {wall:6.1f} s wall {cpu:6.1f} s CPU (filling the cache {fill:5.1f})  "
                f"load {load_avg:4.1f}  duplicates {duplicates}"
            )
            if n:
                figures[side].append((wall, cpu))
    for i, what in enumerate(("wall", "CPU")):
        a = [f[i] for f in figures["A"]]
        b = [f[i] for f in figures["B"]]
        print(
            f"{what}: A {[round(x, 1) for x in a]}  B {[round(x, 1) for x in b]}  B/A of means "
            f"{statistics.mean(b) / statistics.mean(a):.2f}"
        )
    print(f"same winners and duplicates on both sides: {results['A'] == results['B'] and len(results['A']) == 1}")
    print(f"peak RSS of the JVM: {peak_rss_mib()} MiB")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
