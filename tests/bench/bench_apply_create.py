"""CREATE TABLE of a target table: the former SQL statements against ``target_tables.create``.

Run: ``.venv/bin/python tests/bench/bench_apply_create.py [--tables N]``. One local Spark session
with a JDBC (SQLite) catalog in a temporary folder; after three warm-up tables of each way, N
tables of each, alternating, each in the same namespace. Prints the mean wall and CPU
milliseconds (driver + JVM) per table of each way and their ratio; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

from bench_local_spark import local_session  # type: ignore[import-not-found,unused-ignore]  # beside this file

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tests.* helpers

from tests.ticdc_lake.spark.create_by_sql import create_by_sql
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.spark import target_tables
from ticdc_lake.spark.target_tables import TargetTable

SCHEMA = TableSchema(
    "shop",
    "orders",
    (
        ColumnSchema("id", "bigint", nullable=False),
        ColumnSchema("k2", "varchar", length=20, nullable=False),
        ColumnSchema("price", "decimal", length=12, scale=2),
        ColumnSchema("at", "datetime", fsp=6),
        ColumnSchema("note", "text"),
    ),
    (IndexSchema("PRIMARY", ("id", "k2"), primary=True, unique=True),),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=20)
    args = parser.parse_args()
    spark, now = local_session("ticdc-lake-bench-create-")

    namespace = f"create_{uuid.uuid4().hex[:6]}"
    ways = {"CREATE TABLE + ALTER (before)": create_by_sql, "target_tables.create": target_tables.create}
    for i in range(3):
        for n, create in enumerate(ways.values()):
            create(spark, TargetTable("lake", namespace, f"warm_{n}_{i}"), SCHEMA)
    spent = {name: [0.0, 0.0] for name in ways}
    for i in range(args.tables):
        for n, (name, create) in enumerate(ways.items()):
            started = now()
            create(spark, TargetTable("lake", namespace, f"t_{n}_{i}"), SCHEMA)
            ended = now()
            spent[name][0] += ended[0] - started[0]
            spent[name][1] += ended[1] - started[1]
    for name, (wall, cpu) in spent.items():
        print(f"{name:<32} {wall / args.tables * 1000:7.0f} ms wall {cpu / args.tables * 1000:7.0f} ms CPU per table")
    (old_wall, old_cpu), (new_wall, new_cpu) = spent.values()
    print(f"{'ratio after / before':<32} {new_wall / old_wall:10.2f} wall {new_cpu / old_cpu:10.2f} CPU")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f}")
    spark.stop()


if __name__ == "__main__":
    main()
