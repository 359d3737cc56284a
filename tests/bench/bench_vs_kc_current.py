"""The job a user of the Iceberg Kafka Connect sink runs to get what ticdc-lake delivers: current rows.

The Apache sink (1.12.0) appends a changelog (``_cdc.op``, ``_cdc.offset``); tables with the current
row per key take a job of the user's own. This is that job as a user would write it: one
``spark-submit`` (``local[2]``, Spark's defaults, the same Iceberg runtime and JDBC catalog), per
table a ``<table>_current`` made like ticdc-lake's tables (format 2, merge-on-read), then one
``MERGE`` per table of the changelog's last change per key (highest Kafka offset: a table's changes
come from one partition, ``bench_vs_kc_changelog``), deleting keys whose last change is a ``D``.
It is the job's recurring form (a later run would add ``WHERE _cdc.offset > <last offset merged>``
and read only the new changes); a first load could use a cheaper ``CREATE TABLE AS SELECT``.

Run as a script, it is the Spark application; :func:`run` starts and measures it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import bench_vs_kc_measure as measure  # type: ignore[import-not-found,unused-ignore]  # beside this file

#: The sink's catalog name (``bench_vs_kc_connect.CATALOG_NAME``): its JDBC rows carry it, so Spark must use it too.
CATALOG = "iceberg"
COLUMNS = ("id", "k", "c", "pad")


def current_name(database: str, table: str) -> str:
    return f"{CATALOG}.{database}.{table}_current"


def statements(database: str, table: str) -> list[str]:
    """The job's SQL for one table: make the current table if needed, MERGE the changelog's last changes."""
    changelog, current = f"{CATALOG}.{database}.{table}", current_name(database, table)
    columns = ", ".join(COLUMNS)
    last = (
        f"SELECT {columns}, op FROM (SELECT {columns}, _cdc.op AS op, row_number() OVER "
        f"(PARTITION BY id ORDER BY _cdc.offset DESC) AS n FROM {changelog}) WHERE n = 1"
    )
    return [
        f"CREATE TABLE IF NOT EXISTS {current} USING iceberg TBLPROPERTIES ('format-version'='2', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
        f"'write.merge.mode'='merge-on-read') AS SELECT {columns} FROM {changelog} WHERE false",
        f"MERGE INTO {current} t USING ({last}) s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'D' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET t.k = s.k, t.c = s.c, t.pad = s.pad "
        "WHEN NOT MATCHED AND s.op <> 'D' THEN INSERT (id, k, c, pad) VALUES (s.id, s.k, s.c, s.pad)",
    ]


def run(
    folder: Path, catalog: Any, tables: list[tuple[str, str]], spared: frozenset[int] = frozenset()
) -> tuple[float, float, int]:
    """Start the job on the sink's ``catalog`` (a ``CatalogConfig``) and wait; (wall s, CPU s, peak RSS bytes).
    ``spared``: processes of the bench (its Spark run service) the job's figures and clean-up leave alone."""
    from ticdc_lake.spark.settings import catalog_conf, spark_jars

    command = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]", "--driver-memory", "2g"]
    command += ["--jars", ",".join(spark_jars())]
    for key, value in catalog_conf(CATALOG, catalog).items():
        command += ["--conf", f"{key}={value}"]
    command += ["--conf", "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"]
    command += ["--conf", f"spark.pyspark.python={sys.executable}", __file__, *[f"{d}.{t}" for d, t in tables]]
    import pyspark

    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent), "PYSPARK_PYTHON": sys.executable}
    meter = measure.TreeMeter(spared=spared).start()
    with open(folder / "current-job.log", "wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        code = process.wait()
    wall = meter.wall()
    measure.finish(process, spared=spared)
    cpu = meter.cpu()
    meter.stop()
    if code != 0:
        raise SystemExit(f"the sink's current-state job failed ({code}); see {folder / 'current-job.log'}")
    return wall, cpu, meter.peak_rss


def current_rows(catalog: Any, database: str, table: str) -> dict[Hashable, tuple[Any, ...]]:
    """id -> (k, c, pad) of ``<table>_current``."""
    from ticdc_lake.catalog import load_catalog

    data = load_catalog(CATALOG, catalog).load_table((database, f"{table}_current")).scan().to_arrow()
    ids, ks, cs, pads = (data.column(n).to_pylist() for n in COLUMNS)
    return {i: (k, c, p) for i, k, c, p in zip(ids, ks, cs, pads, strict=True)}


def main(names: list[str]) -> int:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("kc-sink-current-state").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    for name in names:
        database, table = name.split(".", 1)
        started = time.monotonic()
        for sql in statements(database, table):
            spark.sql(sql)
        print(f"{name}: merged in {time.monotonic() - started:.1f} s", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
