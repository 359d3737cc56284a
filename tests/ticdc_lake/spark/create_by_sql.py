"""The statements ``target_tables.create`` ran before it created tables through the Iceberg catalog
directly (CREATE TABLE, then ALTER TABLE ... SET IDENTIFIER FIELDS): the reference that
test_target_tables compares the new way with, and that bench_apply_create times it against."""

from __future__ import annotations

from typing import Any

from ticdc_lake.apply.merge_sql import spark_type
from ticdc_lake.identifiers import quote
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import target_tables
from ticdc_lake.spark.target_tables import TABLE_PROPERTIES, TargetTable, upstream_properties


def create_by_sql(spark: Any, target: TargetTable, schema: TableSchema) -> None:
    """The statements ``target_tables.create`` ran before it used the Iceberg catalog directly."""
    key = schema.handle_key()
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {target.catalog}.{quote(target.namespace)}")
    columns = ", ".join(
        f"{quote(c.name)} {spark_type(c.iceberg_type)}{' NOT NULL' if c.name in key else ''}"
        for c in target_tables.target_columns(schema)
    )
    props = ", ".join(f"'{k}'='{v}'" for k, v in TABLE_PROPERTIES.items()) + ", " + upstream_properties(schema)
    comment = f"TiCDC {schema.database}.{schema.table}".replace("'", "")
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {target.sql_name} ({columns}) USING iceberg "
        f"COMMENT '{comment}' TBLPROPERTIES ({props})"
    )
    spark.sql(f"ALTER TABLE {target.sql_name} SET IDENTIFIER FIELDS {', '.join(quote(k) for k in key)}")
