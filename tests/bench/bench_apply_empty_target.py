"""Into a target table that holds no row: apply's MERGE against an append of the rows it would insert.

Run: ``.venv/bin/python tests/bench/bench_apply_empty_target.py [--tables N] [--rows R] [--rounds K]``.
Each side runs in a fresh local Spark (``local[2]``, the pipeline's settings, a JDBC catalog in a
temporary folder), as a run's apply does after decode: one warm-up append first (decode's
``change_events`` write), then N tables created by ``target_tables.create`` (key ``id``), each given a
persisted source of R net changes (a fifth of them deletes) and either the MERGE apply runs
(``merge_sql.merge_statement``) or an append of the source's non-delete rows. Sides alternate
(merge, append, merge, ...); per side it prints the wall and CPU seconds (driver + JVM) of the N
writes and the rows the tables hold. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import uuid
from pathlib import Path

from bench_local_spark import local_session  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake.apply.merge_sql import OP_COLUMN, TargetColumn, merge_statement
from ticdc_lake.identifiers import quote
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.spark import target_tables
from ticdc_lake.spark.target_tables import TargetTable

COLUMNS = [
    TargetColumn("id", "long"),
    TargetColumn("k", "int"),
    TargetColumn("c", "string"),
    TargetColumn("pad", "string"),
]


def schema(table: str) -> TableSchema:
    return TableSchema(
        "bench",
        table,
        (
            ColumnSchema("id", "bigint", nullable=False),
            ColumnSchema("k", "int"),
            ColumnSchema("c", "char", length=120),
            ColumnSchema("pad", "char", length=60),
        ),
        (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
    )


def side(way: str, tables: int, rows: int) -> None:
    from pyspark.sql import functions as F

    spark, now = local_session("ticdc-lake-bench-empty-", **{"spark.ui.showConsoleProgress": "false"})

    namespace = f"empty_{uuid.uuid4().hex[:6]}"
    names = [quote(c.name) for c in COLUMNS]

    def source(seed: int) -> object:
        frame = spark.range(rows).select(
            (F.col("id") + seed * rows).alias("id"),
            (F.col("id") % 1000).cast("int").alias("k"),
            F.sha2(F.col("id").cast("string"), 256).alias("c"),
            F.md5(F.col("id").cast("string")).alias("pad"),
            F.when(F.col("id") % 5 == 0, F.lit("D")).otherwise(F.lit("U")).alias(OP_COLUMN),
        )
        return frame.persist()

    warm = TargetTable("lake", namespace, "warm")
    target_tables.create(spark, warm, schema("warm"))
    source(99).select(*names).writeTo(warm.sql_name).append()  # type: ignore[attr-defined]
    targets = [TargetTable("lake", namespace, f"t{i}") for i in range(tables)]
    sources = []
    for i, target in enumerate(targets):
        target_tables.create(spark, target, schema(target.name))
        frame = source(i)
        frame.count()  # type: ignore[attr-defined]
        sources.append(frame)
    started = now()
    for target, frame in zip(targets, sources, strict=True):
        if way == "merge":
            view = f"src_{target.name}"
            frame.createOrReplaceTempView(view)  # type: ignore[attr-defined]
            spark.sql(merge_statement(target.sql_name, view, COLUMNS, ["id"]))
        else:
            frame.where(F.col(OP_COLUMN) != "D").select(*names).writeTo(target.sql_name).append()  # type: ignore[attr-defined]
    ended = now()
    held = sum(spark.table(t.sql_name).count() for t in targets)
    print(f"{way:<7} {ended[0] - started[0]:7.1f} s wall {ended[1] - started[1]:7.1f} s CPU  rows {held}", flush=True)
    spark.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--side", choices=("merge", "append"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        side(args.side, args.tables, args.rows)
        return 0
    for _ in range(args.rounds):
        for way in ("merge", "append"):
            command = [sys.executable, str(Path(__file__).resolve()), "--side", way]
            subprocess.run([*command, "--tables", str(args.tables), "--rows", str(args.rows)], check=True)
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
