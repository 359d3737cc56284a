"""Python workers fork from ``ticdc_lake.spark.python_daemon``, with the decode path imported before the fork."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from ticdc_lake.spark import python_daemon
from ticdc_lake.spark.settings import PYTHON_DAEMON_MODULE, spark_conf

pytestmark = pytest.mark.spark


def test_the_pipeline_settings_name_this_daemon() -> None:
    from ticdc_lake.config import CatalogConfig

    assert PYTHON_DAEMON_MODULE == python_daemon.__name__ == "ticdc_lake.spark.python_daemon"
    conf = spark_conf("lake", CatalogConfig(uri="jdbc:sqlite:/tmp/x.db", warehouse="file:///tmp/w"))
    assert conf["spark.python.daemon.module"] == "ticdc_lake.spark.python_daemon"


def test_a_worker_is_forked_from_the_daemon_with_the_decoders_loaded(spark: Any) -> None:
    def modules(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import sys

        main = sys.modules["__main__"]
        names = [getattr(getattr(main, "__spec__", None), "name", None)]
        wanted = ("ticdc_lake.spark.decode_worker", "ticdc_lake.protocols.debezium", "pandas", "pyarrow.pandas_compat")
        names += [m for m in wanted if m in sys.modules]
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pylist([{"name": n} for n in names])

    got = [r.name for r in spark.range(1, numPartitions=1).mapInArrow(modules, "name string").collect()]
    # pandas too: PySpark's worker imports it after its first Arrow task (about a second of CPU each)
    assert got == [
        "ticdc_lake.spark.python_daemon",
        "ticdc_lake.spark.decode_worker",
        "ticdc_lake.protocols.debezium",
        "pandas",
        "pyarrow.pandas_compat",
    ]
