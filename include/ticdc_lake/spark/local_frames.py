"""Small DataFrames of rows built on the driver, without starting Python workers.

``spark.createDataFrame(list_of_tuples, schema)`` runs a Python job to pickle the rows across,
which starts a pool of Python workers of its own (about a second and 100 MiB in a stage that
otherwise uses ``mapInArrow`` workers only). Through an Arrow table the rows go to the JVM
directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType


def local_frame(spark: SparkSession, rows: Sequence[tuple[Any, ...]], columns: str) -> DataFrame:
    """``rows`` (tuples in column order; timestamps timezone-aware) as a DataFrame of ``columns`` (Spark DDL)."""
    schema = StructType.fromDDL(columns)
    assert isinstance(schema, StructType)
    arrow = to_arrow_schema(schema)
    if rows:
        values = zip(*rows, strict=True)
        table = pa.table([pa.array(list(v), f.type) for v, f in zip(values, arrow, strict=True)], schema=arrow)
    else:
        table = arrow.empty_table()
    frame: DataFrame = spark.createDataFrame(table, schema)  # type: ignore[call-overload,unused-ignore]
    return frame
