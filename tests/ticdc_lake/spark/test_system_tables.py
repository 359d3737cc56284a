"""SystemTables.ensure, which every stage calls first: a stage sees what other processes committed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import CatalogConfig
from ticdc_lake.spark.system_tables import SystemTables

pytestmark = pytest.mark.spark


def _filler(field: pa.Field) -> Any:
    kind = field.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "x"
    if pa.types.is_integer(kind):
        return 1
    if pa.types.is_boolean(kind):
        return False
    if pa.types.is_timestamp(kind):
        return datetime(2026, 1, 1, tzinfo=UTC)
    return None


def test_a_stage_reads_what_another_process_committed_to_a_system_table(spark: Any, lake_home: Path) -> None:
    namespace = f"sys_{uuid.uuid4().hex[:8]}"
    tables = SystemTables("lake", namespace)
    tables.ensure(spark)
    assert spark.sql(f"SELECT count(*) FROM {tables.decoded_batches}").collect()[0][0] == 0  # cached now

    # Another process (pyiceberg, outside this session's catalog cache) commits a row.
    config = CatalogConfig(uri=f"jdbc:sqlite:{lake_home}/catalog/lake.db", warehouse=f"file://{lake_home}/warehouse")
    table = load_catalog("lake", config).load_table((namespace, "decoded_batches"))
    schema = table.schema().as_arrow()
    table.append(pa.Table.from_pylist([{f.name: _filler(f) for f in schema}], schema=schema))

    tables.ensure(spark)  # what the next stage does first
    assert spark.sql(f"SELECT count(*) FROM {tables.decoded_batches}").collect()[0][0] == 1


def test_a_system_table_dropped_behind_a_long_lived_application_is_made_again(spark: Any) -> None:
    # A Spark run service's application outlives whatever a person does to the catalog.
    namespace = f"sys_{uuid.uuid4().hex[:8]}"
    tables = SystemTables("lake", namespace)
    tables.ensure(spark)
    spark.sql(f"DROP TABLE {tables.quarantine}")

    tables.ensure(spark)  # the next run's first stage

    assert spark.sql(f"SELECT count(*) FROM {tables.quarantine}").collect()[0][0] == 0
    assert {f.name for f in spark.table(tables.run_ledger).schema} >= {"duplicates_skipped", "ambiguous_time_values"}
