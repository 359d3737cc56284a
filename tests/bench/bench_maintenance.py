"""Maintenance benchmark: a table that took many small merges, before and after maintenance.

`make bench-maintenance` runs it (BENCH_MERGES=200). Everything runs on this machine: local Spark,
a JDBC (SQLite) Iceberg catalog in a temporary folder. The table is seeded with `--rows` rows in
4 data files (one snapshot carrying an applied position), then takes `--merges` small MERGEs as
apply writes them (merge-on-read: each update leaves a position delete file and a new data file),
each committing an applied position. Then the maintenance jobs run as the DAG runs them
(`run_maintenance`: compact, then expire with a zero window and 1 snapshot kept, then orphans).

Printed before and after: data files, delete files, manifests, snapshots, metadata bytes; the
planning time of a filtered scan by pyiceberg (`plan_files`, the reader's planning cost) and by
Spark (`EXPLAIN`, which plans the Iceberg scan); and the time of a filtered and of a full query
(median of `--repeat` runs). It asserts nothing but the rows being equal before and after.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tests.* helpers

from tests.ticdc_lake.spark.maintenance_tables import create_target, merge
from ticdc_lake import table_markers
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import LakeConfig, load_config
from ticdc_lake.maintenance_config import MaintenanceConfig
from ticdc_lake.spark import maintenance, target_tables
from ticdc_lake.spark.maintenance_job import maintenance_session, run_maintenance
from ticdc_lake.spark.table_positions import committing
from ticdc_lake.spark.target_tables import TargetTable

PIPELINE = "bench"
CATALOG = "bench"


def _config(folder: Path) -> LakeConfig:
    document = {
        "catalogs": {
            CATALOG: {
                "uri": f"jdbc:sqlite:{folder}/catalog.db",
                "warehouse": f"file://{folder}/warehouse",
                "maintenance": {"retry_backoff_s": 1, "spark_conf": {"spark.ui.showConsoleProgress": "false"}},
            }
        },
        "pipelines": [
            {
                "id": PIPELINE,
                "protocol": "simple-json",
                "kafka": {"topics": ["bench"]},
                "landing_uri": f"file://{folder}/landing",
                "catalog": CATALOG,
            }
        ],
    }
    path = folder / "pipelines.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_config(path)


def _median(function: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(spark: Any, config: LakeConfig, target: TargetTable, repeat: int, span: tuple[int, int]) -> dict[str, Any]:
    table = target_tables.iceberg_table(spark, target)
    figures = maintenance.figures(table)
    manifests = len(list(table.currentSnapshot().allManifests(table.io())))
    catalog = load_catalog(CATALOG, config.catalogs[CATALOG])
    low, high = span
    where = f"id >= {low} AND id <= {high}"
    filtered = f"SELECT count(*), sum(n) FROM {target.sql_name} WHERE {where}"
    full = f"SELECT count(*), sum(n), max(v) FROM {target.sql_name}"

    def plan_pyiceberg() -> None:
        iceberg = catalog.load_table((target.namespace, target.name))
        list(iceberg.scan(row_filter=where).plan_files())

    return {
        "data files": figures.data_files,
        "delete files": figures.delete_files,
        "manifests": manifests,
        "snapshots": figures.snapshots,
        "data + delete bytes": figures.bytes,
        "plan filtered scan, pyiceberg (s)": _median(plan_pyiceberg, repeat),
        "plan filtered SELECT, Spark EXPLAIN (s)": _median(lambda: spark.sql(f"EXPLAIN {filtered}").collect(), repeat),
        "filtered SELECT (s)": _median(lambda: spark.sql(filtered).collect(), repeat),
        "full aggregate SELECT (s)": _median(lambda: spark.sql(full).collect(), repeat),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--merges", type=int, default=200)
    parser.add_argument("--rows", type=int, default=200_000, help="seeded rows (4 data files)")
    parser.add_argument("--width", type=int, default=5, help="keys inserted and updated per MERGE")
    parser.add_argument("--repeat", type=int, default=5, help="timings are the median of this many runs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-maintenance-") as tmp:
        folder = Path(tmp)
        config = _config(folder)
        spark = maintenance_session(config, CATALOG, "bench")
        spark.sparkContext.setLogLevel("ERROR")
        target = TargetTable(CATALOG, "shop", "orders")
        started = time.monotonic()
        create_target(spark, target)
        seed = spark.range(0, args.rows, numPartitions=4).selectExpr(
            "CAST(id AS INT) AS id", "concat('seed', id) AS v", "0 AS n"
        )
        with committing(spark, {table_markers.APPLIED_TS: "1000", table_markers.PIPELINE: PIPELINE}):
            seed.writeTo(target.sql_name).append()
        for n in range(1, args.merges + 1):
            merge(spark, target, PIPELINE, n, args.width)
            if n % 50 == 0:
                print(f"  {n} merges, {time.monotonic() - started:.0f} s", flush=True)
        span = (args.width * args.merges // 3, args.width * args.merges // 3 + 100)
        rows = sorted(tuple(r) for r in spark.table(target.sql_name).collect())
        before = measure(spark, config, target, args.repeat, span)
        name = f"{target.namespace}.{target.name}"
        seconds = {}
        settings = config.catalogs[CATALOG].maintenance.model_dump()
        expiring = MaintenanceConfig.model_validate({**settings, "retention": "0s", "min_snapshots": 1})
        catalog = config.catalogs[CATALOG].model_copy(update={"maintenance": expiring})
        expire_config = config.model_copy(update={"catalogs": {CATALOG: catalog}})
        for job, job_config in (("compact", config), ("expire", expire_config), ("orphans", config)):
            began = time.monotonic()
            run_maintenance(spark, job_config, CATALOG, job, "bench", name)
            seconds[job] = time.monotonic() - began
        after = measure(spark, config, target, args.repeat, span)
        assert sorted(tuple(r) for r in spark.table(target.sql_name).collect()) == rows, "rows changed"
        applied = target_tables.applied_of(target_tables.iceberg_table(spark, target))[0]
        spark.stop()
    print(
        f"\nTable: {args.rows} seeded rows in 4 files, then {args.merges} MERGEs of {args.width} inserts, "
        f"{args.width} updates and 1 delete each; filtered query: ids {span[0]}..{span[1]}\n"
    )
    print("| figure | before | after |\n|---|---|---|")
    for key in before:
        fmt = "{:.3f}" if isinstance(before[key], float) else "{:,}"
        print(f"| {key} | {fmt.format(before[key])} | {fmt.format(after[key])} |")
    print(
        f"\nmaintenance: compact {seconds['compact']:.1f} s, expire {seconds['expire']:.1f} s, orphans "
        f"{seconds['orphans']:.1f} s; applied position after: {applied} (expected {1000 + args.merges})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
