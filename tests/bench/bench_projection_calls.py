"""What building apply's queries costs the driver: py4j calls, wall and CPU seconds.

Apply builds, per table and run, the typed projection of its net changes
(``record_projection.carried_projection``) and Spark analyzes it (``DataFrame.select``); once per
run it builds the grouped net changes of its tables (``net_change_frame.net_changes_and_duplicates``).
This bench builds and analyzes the projection over an empty frame of the net changes' columns, for
a table of ``--columns`` columns of mixed types read from ``--layouts`` schema versions, and builds
the grouped net changes of ``--tables`` tables over an empty ``change_events`` frame, each
``--repeat`` times in one warm local Spark application. It prints per query: the py4j calls, the
wall seconds, and the CPU seconds of the Python driver and of the JVM (read from /proc).
``--conf KEY=VALUE`` (repeatable) sets a Spark setting of the application, e.g.
``spark.python.sql.dataFrameDebugging.enabled=true`` (PySpark reads that one once per process).

``make bench-driver-calls`` runs it (``BENCH_TABLES``, default 10). To compare two trees of the code, run it
with each one's ``include`` first on ``PYTHONPATH``::

    PYTHONPATH=<tree>/include .venv/bin/python tests/bench/bench_projection_calls.py

It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_apply_threads import process_cpu  # type: ignore[import-not-found,unused-ignore]  # beside this file

TYPES = ("long", "int", "string", "string", "date", "timestamp", "decimal(10,2)", "double", "binary", "float")
#: A target type per carried type of ``TYPES``: the same type, a wider one, or string.
TARGETS = ("long", "long", "string", "string", "date", "timestamp", "decimal(12,2)", "string", "binary", "double")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_projection_calls.py", description=__doc__.splitlines()[0])
    parser.add_argument("--columns", type=int, default=10, help="columns of the table (default 10)")
    parser.add_argument("--layouts", type=int, default=2, help="schema versions with records (default 2)")
    parser.add_argument("--tables", type=int, default=10, help="tables of the grouped net changes (default 10)")
    parser.add_argument("--repeat", type=int, default=20, help="queries built of each kind (default 20)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    args = parser.parse_args(argv)

    from py4j.clientserver import ClientServerConnection
    from pyspark.sql import SparkSession

    from ticdc_lake import spark as spark_package
    from ticdc_lake.apply.merge_sql import TargetColumn
    from ticdc_lake.config import CatalogConfig
    from ticdc_lake.spark.local_session import local_driver
    from ticdc_lake.spark.net_change_frame import net_changes_and_duplicates
    from ticdc_lake.spark.record_images import VersionLayout
    from ticdc_lake.spark.record_projection import carried_projection
    from ticdc_lake.spark.settings import spark_conf
    from ticdc_lake.spark.system_tables import CARRIER_SQL

    home = Path(tempfile.mkdtemp(prefix="bench-projection-"))
    catalog = CatalogConfig(uri=f"jdbc:sqlite:{home}/lake.db", warehouse=f"file://{home}/warehouse")
    builder = SparkSession.builder.appName("bench-projection-calls")
    for key, value in local_driver(spark_conf("lake", catalog), "local[2]", write_archive=False)[0].items():
        builder = builder.config(key, value)
    for setting in args.conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm_pid = int(spark.sparkContext._jvm.ProcessHandle.current().pid())  # type: ignore[union-attr]
    print(f"code: {Path(spark_package.__file__).parent}; settings: {' '.join(args.conf) or 'the defaults'}")

    calls = [0]
    send = ClientServerConnection.send_command

    def counted(self: Any, command: str) -> Any:
        calls[0] += 1
        return send(self, command)

    ClientServerConnection.send_command = counted

    names = tuple(f"col_{i}" for i in range(args.columns))
    carried = tuple(TYPES[i % len(TYPES)] for i in range(args.columns))
    columns = [TargetColumn(name, TARGETS[i % len(TARGETS)]) for i, name in enumerate(names)]
    layouts = [VersionLayout(7 + v, names, carried, (names[0],)) for v in range(args.layouts)]
    frame = spark.createDataFrame(
        [], "image MAP<STRING, STRING>, record BINARY, untyped MAP<STRING, STRING>, schema_version DECIMAL(20,0)"
    )

    def measured(step: Callable[[], Any]) -> tuple[Any, int, float, float, float]:
        calls[0] = 0
        wall, python, jvm = time.perf_counter(), time.process_time(), process_cpu(jvm_pid)
        result = step()
        return (
            result,
            calls[0],
            time.perf_counter() - wall,
            time.process_time() - python,
            process_cpu(jvm_pid) - jvm,
        )

    events = spark.createDataFrame(
        [],
        "database STRING, table STRING, op STRING, before MAP<STRING, STRING>, after MAP<STRING, STRING>, "
        "commit_ts DECIMAL(20,0), topic STRING, `partition` INT, `offset` BIGINT, idx INT, "
        "schema_version DECIMAL(20,0), " + ", ".join(f"{name} {kind}" for name, kind in CARRIER_SQL),
    )
    keys = {("shop", f"t{i}"): (names[0],) for i in range(args.tables)}

    def projection() -> Any:
        items = carried_projection(columns, layouts)
        return (items, lambda: frame.select(*items).schema)

    def grouped() -> Any:
        net = net_changes_and_duplicates(events, keys, list(keys))
        return (net, lambda: net.schema)

    print(f"{args.repeat} queries of each kind (means per query, after two not counted):")
    for label, build in (
        (f"typed projection, {args.columns} columns, {args.layouts} layout(s)", projection),
        (f"grouped net changes, {args.tables} tables", grouped),
    ):
        rows = []
        for _ in range(args.repeat + 2):
            (_, analyze), *built = measured(build)
            _, *analyzed = measured(analyze)
            rows.append((*built, *analyzed))
        rows = rows[2:]  # the first two warm the JVM's code paths
        mean = [sum(r[i] for r in rows) / len(rows) for i in range(8)]
        print(f"{label}:")
        for step, at in (("build", 0), ("analyze", 4)):
            calls_, wall, python, jvm = mean[at : at + 4]
            print(
                f"  {step + ':':9}{calls_:7.0f} py4j calls, wall {wall * 1000:7.1f} ms, "
                f"CPU Python {python * 1000:6.1f} ms + JVM {jvm * 1000:6.1f} ms"
            )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
