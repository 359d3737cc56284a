"""Upstream names that are keywords, hold dots, quotes, slashes, ``%``, ``#``, ``?``, control or
non-ASCII characters, through the mapping of ``ticdc_lake.identifiers``, on the real JDBC catalog.

Each table is created, MERGEd twice with ``merge_statement`` (insert, then update + delete), gets
a column added, renamed and dropped, and is read back with pyiceberg by its mapped name.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from ticdc_lake.apply.merge_sql import OP_COLUMN, TargetColumn, merge_statement, spark_type, typed_projection
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import CatalogConfig, TargetTables
from ticdc_lake.identifiers import (
    iceberg_column_name,
    iceberg_table_name,
    qualified,
    quote,
    sql_string,
    table_comment,
    upstream_name,
    upstream_properties,
)

pytestmark = [pytest.mark.spark]

#: Upstream columns: keywords, a dot, a backtick, a quote, a space, ``%``, ``/``, ``#``, non-ASCII.
KEY = ("select", "a.b")
COLUMNS = {"select": "int", "a.b": "string", "it's `x`": "string", "金额 %/#": "decimal(10,2)"}
ADDED, RENAMED = "order.by`", "group by.备注"

#: (upstream database, upstream table, Iceberg namespace suffix, Iceberg table) written out by hand.
NAMES = [
    ("shop.eu", "a.b", "shop%2Eeu", "a%2Eb"),
    ("订单库", "订单 明细", "订单库", "订单 明细"),
    ("a/b:c", "..", "a%2Fb%3Ac", "%2E%2E"),
    ("select", "50%#?\tx", "select", "50%25%23%3F%09x"),
]


def _merge(spark: Any, target: str, columns: list[TargetColumn], rows: list[tuple[dict[str, str], str]]) -> None:
    spark.createDataFrame(rows, "image map<string,string>, op string").createOrReplaceTempView("ids_source")
    items = ", ".join(typed_projection("image", columns))
    spark.sql(f"SELECT {items}, op AS {quote(OP_COLUMN)} FROM ids_source").createOrReplaceTempView("ids_typed")
    spark.sql(merge_statement(target, "ids_typed", columns, list(KEY)))


@pytest.mark.parametrize(("database", "table", "namespace_part", "iceberg_table"), NAMES)
def test_nasty_names_round_trip_through_the_catalog(
    spark: Any, lake_home: Path, database: str, table: str, namespace_part: str, iceberg_table: str
) -> None:
    prefix = f"ids_{uuid.uuid4().hex[:8]}_"
    namespace = TargetTables(namespace=prefix + "{database}").namespace_for(database)
    assert namespace == prefix + namespace_part
    assert iceberg_table_name(table) == iceberg_table
    target = qualified("lake", namespace, iceberg_table)
    columns = [TargetColumn(iceberg_column_name(c), t) for c, t in COLUMNS.items()]
    ddl_columns = ", ".join(
        f"{quote(c.name)} {spark_type(c.iceberg_type)}{' NOT NULL' if c.name in KEY else ''}" for c in columns
    )
    props = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in upstream_properties(database, table).items())
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {qualified('lake', namespace)}")
    spark.sql(
        f"CREATE TABLE {target} ({ddl_columns}) USING iceberg COMMENT {table_comment(database, table)} "
        f"TBLPROPERTIES ('format-version'='2', 'write.merge.mode'='merge-on-read', {props})"
    )
    spark.sql(f"ALTER TABLE {target} SET IDENTIFIER FIELDS {', '.join(quote(k) for k in KEY)}")

    first = {"select": "1", "a.b": "k.1", "it's `x`": "one", "金额 %/#": "1.50"}
    second = {"select": "2", "a.b": "k/2", "it's `x`": "two", "金额 %/#": "-2.25"}
    _merge(spark, target, columns, [(first, "I"), (second, "I")])
    spark.sql(f"ALTER TABLE {target} ADD COLUMN {quote(ADDED)} string")
    columns.append(TargetColumn(ADDED, "string"))
    _merge(spark, target, columns, [({**first, "it's `x`": "uno", ADDED: "new"}, "U"), (second, "D")])
    spark.sql(f"ALTER TABLE {target} RENAME COLUMN {quote(ADDED)} TO {quote(RENAMED)}")
    spark.sql(f"ALTER TABLE {target} DROP COLUMN {quote('金额 %/#')}")

    catalog = load_catalog("lake", CatalogConfig(uri=f"jdbc:sqlite:{lake_home}/catalog/lake.db", warehouse="unused"))
    assert (namespace,) in catalog.list_namespaces()
    assert catalog.list_tables(namespace) == [(namespace, iceberg_table)]
    assert upstream_name(catalog.list_tables(namespace)[0][1]) == table
    loaded = catalog.load_table((namespace, iceberg_table))
    assert [f.name for f in loaded.schema().fields] == ["select", "a.b", "it's `x`", RENAMED]
    assert loaded.schema().identifier_field_names() == set(KEY)
    assert loaded.properties["ticdc.upstream-database"] == database
    assert loaded.properties["ticdc.upstream-table"] == table
    assert loaded.properties["comment"] == "TiCDC " + qualified(database, table)
    location = loaded.metadata.location
    assert location.endswith(f"/{namespace}/{iceberg_table}")
    assert loaded.scan().to_arrow().to_pylist() == [{"select": 1, "a.b": "k.1", "it's `x`": "uno", RENAMED: "new"}]
    spark_rows = spark.sql(f"SELECT {quote(RENAMED)} FROM {target} WHERE {quote('a.b')} = 'k.1'").collect()
    assert [r[0] for r in spark_rows] == ["new"]
    # What the apply stage also does with a target name: existence, metadata tables, RENAME TABLE.
    assert spark.catalog.tableExists(target)
    assert spark.sql(f"SELECT count(*) FROM {qualified('lake', namespace, iceberg_table, 'snapshots')}").first()[0] == 2
    renamed = iceberg_table_name(table + ".v2")
    assert renamed == iceberg_table + "%2Ev2"
    spark.sql(f"ALTER TABLE {target} RENAME TO {qualified(namespace, renamed)}")
    assert catalog.list_tables(namespace) == [(namespace, renamed)]
    assert upstream_name(renamed) == table + ".v2"
    assert len(catalog.load_table((namespace, renamed)).scan().to_arrow()) == 1
