"""A local Spark session for the apply micro-benchmarks, and a clock of its wall and CPU seconds.

``local[2]``, the pipeline's Spark settings and jars, a JDBC (SQLite) catalog named ``lake`` in a
new temporary folder. The clock sums the user and system CPU of this process and its JVM.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import psutil  # type: ignore[import-untyped,unused-ignore]


def local_session(prefix: str, **settings: str) -> tuple[Any, Callable[[], tuple[float, float]]]:
    """The session (extra ``settings`` on top) and ``now()``: (perf_counter, CPU seconds of driver + JVM)."""
    from pyspark.sql import SparkSession

    from ticdc_lake.config import CatalogConfig
    from ticdc_lake.spark.settings import spark_conf, spark_jars

    home = tempfile.mkdtemp(prefix=prefix)
    os.makedirs(f"{home}/catalog")
    catalog = CatalogConfig(uri=f"jdbc:sqlite:{home}/catalog/lake.db", warehouse=f"file://{home}/warehouse")
    builder = SparkSession.builder.master("local[2]").config("spark.jars", ",".join(spark_jars()))
    for key, value in {**spark_conf("lake", catalog), **settings}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    processes = [psutil.Process()] + [p for p in psutil.Process().children(recursive=True) if p.name() == "java"]

    def now() -> tuple[float, float]:
        return time.perf_counter(), sum(p.cpu_times().user + p.cpu_times().system for p in processes)

    return spark, now
