"""Three start-up costs of a pipeline's Spark application, each measured A B A B in fresh processes.

``make bench-run-cost`` measures whole runs, where one or two CPU seconds drown in the noise of a
busy machine; this measures the two parts on their own. Each variant is a fresh Python process
with a fresh ``local[2]`` session of the pipeline settings (``settings.spark_conf``) on a
temporary SQLite catalog, and it prints the wall and CPU seconds of the process tree (the Python
driver, the JVM, the Python workers):

* ``ledger-rows``/``ledger-arrow``: three ledger appends of three rows through
  ``spark.createDataFrame`` of tuples (before) or through Arrow (``ledger.append``);
* ``daemon-pyspark``/``daemon-preload``: two ``mapInArrow`` jobs of two one-second tasks (so two
  workers run, as in a decode) whose function uses the decode path, with PySpark's own worker
  daemon (before) or ``ticdc_lake.spark.python_daemon``;
* ``start-plain``/``start-archive``: the JVM start of a local session (``local_session.local_driver``)
  and two trivial queries, without class-data sharing (``TICDC_LAKE_JVM_CACHE=off``) or mapping the
  archive (written first by a run that is not counted, when there is none yet).

``--rounds N`` repeats the A B A B pairs. It asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import bench_vs_kc_measure as measure  # type: ignore[import-not-found,unused-ignore]  # beside this file

VARIANTS = (("ledger-rows", "ledger-arrow"), ("daemon-pyspark", "daemon-preload"), ("start-plain", "start-archive"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_session_parts.py", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", choices=("ledger", "daemon", "start"), help="measure one of the parts")
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.variant:
        return _child(args.variant)
    measure.become_subreaper()  # CPU of workers orphaned by their parent's exit is waited for here
    results: dict[str, list[tuple[float, float]]] = {}
    pairs = [pair for pair in VARIANTS if args.only is None or pair[0].startswith(args.only)]
    if ("start-plain", "start-archive") in pairs:  # the archive exists before the first counted run
        subprocess.run([sys.executable, __file__, "--variant", "start-archive"], check=True, capture_output=True)
    for pair in pairs:
        for _ in range(args.rounds):
            for variant in pair:
                meter = measure.TreeMeter().start()
                started = time.monotonic()
                subprocess.run([sys.executable, __file__, "--variant", variant], check=True, capture_output=True)
                wall = time.monotonic() - started
                cpu = meter.total()
                results.setdefault(variant, []).append((wall, cpu))
                print(f"  {variant:<16} wall {wall:6.1f} s  CPU {cpu:6.1f} s", flush=True)
    print("\nmean wall s / CPU s (before → after):")
    for old, new in pairs:
        b, a = results[old], results[new]
        mean = [sum(x[i] for x in rows) / len(rows) for rows in (b, a) for i in (0, 1)]
        print(
            f"  {old} {mean[0]:.1f} / {mean[1]:.1f} → {new} {mean[2]:.1f} / {mean[3]:.1f}"
            f"  (CPU {mean[3] - mean[1]:+.1f} s)"
        )
    return 0


def _child(variant: str) -> int:
    import uuid
    from datetime import UTC, datetime

    from pyspark.sql import SparkSession

    from ticdc_lake.config import CatalogConfig
    from ticdc_lake.run_ledger import LedgerStatus
    from ticdc_lake.spark import ledger
    from ticdc_lake.spark.settings import spark_conf, spark_jars
    from ticdc_lake.spark.system_tables import COLUMNS, UNSHUFFLED_WRITE, SystemTables

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers import ticdc_lake
    home = Path(tempfile.mkdtemp(prefix="bench-session-parts-"))
    catalog = CatalogConfig(uri=f"jdbc:sqlite:{home}/lake.db", warehouse=f"file://{home}/warehouse")
    conf = spark_conf("lake", catalog)
    if variant == "daemon-pyspark":
        conf["spark.python.daemon.module"] = "pyspark.daemon"
    sharing = None
    if variant.startswith("start"):
        from ticdc_lake.spark.class_sharing import JVM_CACHE_ENV
        from ticdc_lake.spark.local_session import local_driver, publish_at_exit

        if variant == "start-plain":
            os.environ[JVM_CACHE_ENV] = "off"
        conf, sharing = local_driver(conf, "local[2]")
    builder = SparkSession.builder.master("local[2]").config("spark.jars", ",".join(spark_jars()))
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if variant.startswith("start"):
        publish_at_exit(sharing)  # only when this run writes the archive (the uncounted first)
        spark.sql("SELECT 1").collect()
        spark.range(100).selectExpr("sum(id)").collect()
        if sharing is not None and sharing.pending is not None:
            return 0
    elif variant.startswith("ledger"):
        tables = SystemTables("lake", f"sys_{uuid.uuid4().hex[:8]}")
        tables.ensure(spark)
        now = datetime.now(UTC)
        for stage in ("decode", "schema_history", "apply"):
            rows = [ledger.stage_row("p", "run", stage, LedgerStatus.OK, now, 1.0, n) for n in range(3)]
            if variant == "ledger-arrow":
                ledger.append(spark, tables, rows)
            else:
                frame = spark.createDataFrame([ledger.values(r) for r in rows], COLUMNS["run_ledger"]).coalesce(1)
                frame.writeTo(tables.run_ledger).options(**UNSHUFFLED_WRITE).append()
    else:
        import pyarrow as pa

        def decode_path(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from ticdc_lake.config import Protocol
            from ticdc_lake.protocols.registry import decoder_class
            from ticdc_lake.spark import decode_worker

            names = [decode_worker.__name__, *(decoder_class(p).__name__ for p in Protocol)]
            for _ in batches:
                time.sleep(1)  # both tasks in flight at once, as decode's are: two workers, as in a run
            yield pa.RecordBatch.from_pylist([{"n": len(names)}])

        for _ in range(2):
            spark.range(0, 2, numPartitions=2).mapInArrow(decode_path, "n bigint").collect()
    spark.stop()
    # Wait for the JVM (it exits when its stdin closes), so its CPU counts in this process tree.
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.stdin.close()
        process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
