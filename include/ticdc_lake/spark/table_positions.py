"""Where a table name stands: its Iceberg columns and the TSO up to which its events are applied.

The position of a name is the highest of: the ``ticdc.applied-ts`` of the newest snapshot that
carries one (MERGE, default fill, TRUNCATE), the ``ticdc.ddl-applied-ts`` table property (set after
each DDL), and a property of the system namespace for names that left (RENAME, DROP TABLE) or a
database's DDL, kept there because a target namespace can be dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from ticdc_lake.apply.ddl_plan import IcebergColumn
from ticdc_lake.apply.merge_sql import iceberg_type_of
from ticdc_lake.identifiers import qualified
from ticdc_lake.spark import target_tables
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.target_tables import TargetTable

SNAPSHOT_PROPERTY = "spark.sql.iceberg.snapshot-property."
DDL_POSITION = "ticdc.ddl-applied-ts"
NAME_POSITION = "ticdc.position."


def iceberg_columns(spark: SparkSession, target: TargetTable) -> list[IcebergColumn] | None:
    """The target's columns with Iceberg type names; None when the table does not exist."""
    if not target_tables.exists(spark, target):
        return None
    columns = []
    for f in spark.table(target.sql_name).schema.fields:
        simple = f.dataType.simpleString()
        columns.append(IcebergColumn(f.name, iceberg_type_of(simple), not f.nullable))
    return columns


def table_properties(spark: SparkSession, target: TargetTable) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {target.sql_name}").collect()}


def _name_key(target: TargetTable) -> str:
    """Property key for an Iceberg table name; hex keeps any name unambiguous in SQL and output."""
    return NAME_POSITION + f"{target.namespace}\x00{target.name}".encode().hex()


def name_position(spark: SparkSession, system: SystemTables, target: TargetTable) -> int:
    """Position recorded for a table name that left (renamed away or dropped), or a database's DDL.

    Kept as properties of the system namespace, which is never dropped (a target namespace can be).
    """
    try:
        rows = spark.sql(f"DESCRIBE NAMESPACE EXTENDED {qualified(system.catalog, system.namespace)}").collect()
    except AnalysisException:
        return 0
    text = " ".join(str(r["info_value"]) for r in rows if r["info_name"] == "Properties")
    found = re.search(re.escape(_name_key(target)) + r",(\d+)\)", text)
    return int(found[1]) if found else 0


def mark_name(spark: SparkSession, system: SystemTables, target: TargetTable, commit_ts: int) -> None:
    """Record that the events of ``target``'s name up to ``commit_ts`` are applied."""
    spark.sql(
        f"ALTER NAMESPACE {qualified(system.catalog, system.namespace)} "
        f"SET PROPERTIES ('{_name_key(target)}'='{commit_ts}')"
    )


def position(spark: SparkSession, system: SystemTables, target: TargetTable) -> int:
    """The TSO up to which the events of this table name are applied."""
    mark = name_position(spark, system, target)
    if not target_tables.exists(spark, target):
        return mark
    applied = target_tables.applied_position(spark, target)[0]
    ddl = int(table_properties(spark, target).get(DDL_POSITION, "0"))
    return max(mark, applied, ddl)


@contextmanager
def committing(spark: SparkSession, properties: dict[str, str]) -> Iterator[None]:
    """Snapshots written inside carry ``properties`` in their summary (``ticdc.applied-ts``, ...)."""
    for key, value in properties.items():
        spark.conf.set(SNAPSHOT_PROPERTY + key, value)
    try:
        yield
    finally:
        for key in properties:
            spark.conf.unset(SNAPSHOT_PROPERTY + key)
