"""Creating a target table: one catalog commit that makes the table the SQL statements made."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.ticdc_lake.spark.create_by_sql import create_by_sql
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.spark import target_tables
from ticdc_lake.spark.target_tables import TargetTable

pytestmark = [pytest.mark.spark]

SCHEMA = TableSchema(
    "shop",
    "it's",
    (
        ColumnSchema("id", "bigint", nullable=False),
        ColumnSchema("k2", "varchar", length=20, nullable=False),
        ColumnSchema("price", "decimal", length=12, scale=2),
        ColumnSchema("at", "datetime", fsp=6),
        ColumnSchema("Note", "text"),
    ),
    (IndexSchema("PRIMARY", ("id", "k2"), primary=True, unique=True),),
)


def _described(spark: Any, target: TargetTable) -> tuple[str, str, str, dict[str, str], int, list[str]]:
    table = target_tables.iceberg_table(spark, target)
    properties = {str(k): str(v) for k, v in dict(table.properties()).items()}
    schema = table.schema()
    return (
        str(schema),
        str(table.spec()),
        str(table.sortOrder()),
        properties,
        int(table.operations().current().formatVersion()),
        sorted(str(n) for n in schema.identifierFieldNames()),
    )


def test_create_makes_the_table_the_sql_statements_made_in_one_commit(spark: Any) -> None:
    namespace = f"create_{uuid.uuid4().hex[:8]}"
    old, new = TargetTable("lake", namespace, "by_sql"), TargetTable("lake", namespace, "direct")
    create_by_sql(spark, old, SCHEMA)
    target_tables.create(spark, new, SCHEMA)
    assert _described(spark, new) == _described(spark, old)
    assert _described(spark, new)[5] == ["id", "k2"]
    assert _described(spark, new)[3]["comment"] == "TiCDC shop.its"
    history = target_tables.iceberg_table(spark, new).operations().current().previousFiles()
    assert history.size() == 0  # one metadata file: no second commit for the identifier fields
    assert [r["col_name"] for r in spark.sql(f"DESCRIBE TABLE {new.sql_name}").collect()][:5] == [
        "id",
        "k2",
        "price",
        "at",
        "Note",
    ]


def test_create_in_a_new_namespace_and_again_keeps_the_table(spark: Any) -> None:
    namespace = f"create_{uuid.uuid4().hex[:8]}"
    target = TargetTable("lake", namespace, "again")
    target_tables.create(spark, target, SCHEMA)
    spark.sql(f"INSERT INTO {target.sql_name} VALUES (1, 'a', 1.50, NULL, 'x')")
    target_tables.create(spark, target, SCHEMA)  # as CREATE TABLE IF NOT EXISTS: the rows stay
    assert [tuple(r) for r in spark.table(target.sql_name).select("id", "k2").collect()] == [(1, "a")]
