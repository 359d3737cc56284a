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
from ticdc_lake.spark.system_tables import _ENSURED, SystemTables

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


def _properties(spark: Any, table: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def test_change_events_writes_image_values_without_a_parquet_dictionary_also_when_made_before(spark: Any) -> None:
    wanted = {
        "write.parquet.dict-encoding-enabled.column.before.value": "false",
        "write.parquet.dict-encoding-enabled.column.after.value": "false",
    }
    made = SystemTables("lake", f"sys_{uuid.uuid4().hex[:8]}")
    made.ensure(spark)
    assert _properties(spark, made.change_events).items() >= wanted.items()
    assert not _properties(spark, made.run_ledger).keys() & wanted.keys()

    # A lake whose change_events was made before the property: the next application's first stage sets it.
    old = SystemTables("lake", f"sys_{uuid.uuid4().hex[:8]}")
    old.ensure(spark)
    spark.sql(f"ALTER TABLE {old.change_events} UNSET TBLPROPERTIES ({', '.join(repr(k) for k in wanted)})")
    assert not _properties(spark, old.change_events).keys() & wanted.keys()
    _ENSURED.clear()  # a new application

    old.ensure(spark)

    assert _properties(spark, old.change_events).items() >= wanted.items()
