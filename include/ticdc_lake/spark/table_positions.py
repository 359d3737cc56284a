"""Where a table name stands: its Iceberg columns and the TSO up to which its events are applied.

The position of a name is the highest of: the ``ticdc.applied-ts`` of the newest snapshot that
carries one (MERGE, default fill, TRUNCATE), the ``ticdc.ddl-applied-ts`` table property (set after
each DDL), and a property of the system namespace for names that left (RENAME, DROP TABLE) or a
database's DDL, kept there because a target namespace can be dropped.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from ticdc_lake import table_markers
from ticdc_lake.apply.ddl_plan import IcebergColumn
from ticdc_lake.apply.merge_sql import iceberg_type_of
from ticdc_lake.config import PipelineConfig
from ticdc_lake.identifiers import qualified
from ticdc_lake.spark import target_tables
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.target_tables import TargetTable

SNAPSHOT_PROPERTY = "spark.sql.iceberg.snapshot-property."
DDL_POSITION = table_markers.DDL_APPLIED_TS
NAME_POSITION = "ticdc.position."
LOW_WATER = "ticdc.low-water."
HISTORY_READ = "ticdc.history-read."


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
    return name_positions(spark, system).get(_name_key(target), 0)


def name_positions(spark: SparkSession, system: SystemTables) -> dict[str, int]:
    """Every recorded name position by property key: read once per run instead of once per table."""
    return _namespace_numbers(spark, system, re.escape(NAME_POSITION) + "[0-9a-f]+")


def _namespace_numbers(spark: SparkSession, system: SystemTables, key_pattern: str) -> dict[str, int]:
    """Properties of the system namespace whose key matches ``key_pattern`` and whose value is a number."""
    return {key: int(value) for key, value in _namespace_values(spark, system, key_pattern, r"\d+").items()}


def _namespace_values(
    spark: SparkSession, system: SystemTables, key_pattern: str, value_pattern: str
) -> dict[str, str]:
    """Properties of the system namespace whose key matches ``key_pattern`` and value ``value_pattern``."""
    try:
        rows = spark.sql(f"DESCRIBE NAMESPACE EXTENDED {qualified(system.catalog, system.namespace)}").collect()
    except AnalysisException:
        return {}
    text = " ".join(str(r["info_value"]) for r in rows if r["info_name"] == "Properties")
    return dict(re.findall(r"(" + key_pattern + r"),(" + value_pattern + r")\)", text))


def mark_name(spark: SparkSession, system: SystemTables, target: TargetTable, commit_ts: int) -> None:
    """Record that the events of ``target``'s name up to ``commit_ts`` are applied."""
    spark.sql(
        f"ALTER NAMESPACE {qualified(system.catalog, system.namespace)} "
        f"SET PROPERTIES ('{_name_key(target)}'='{commit_ts}')"
    )


def _low_water_key(pipeline: PipelineConfig) -> str:
    """Per pipeline and the settings that decide which events are applied where: changing the
    topics or the table filter starts from nothing again (a newly included table needs its history)."""
    scope = json.dumps([pipeline.id, sorted(pipeline.kafka.topics), pipeline.target.model_dump(mode="json")])
    return LOW_WATER + hashlib.sha256(scope.encode()).hexdigest()[:32]


def low_water(spark: SparkSession, system: SystemTables, pipeline: PipelineConfig) -> int:
    """The pipeline's low-water TSO: every event at or below it is applied (or not wanted) for every
    table, so apply need not read it again (``docs/apply-performance.md``); 0 when none is recorded."""
    return _namespace_numbers(spark, system, re.escape(_low_water_key(pipeline))).get(_low_water_key(pipeline), 0)


def _history_key(pipeline: PipelineConfig) -> str:
    return HISTORY_READ + hashlib.sha256(pipeline.id.encode()).hexdigest()[:32]


def history_read(spark: SparkSession, system: SystemTables, pipeline: PipelineConfig) -> str | None:
    """The system tables' state the pipeline's last schema history run read completely
    (:func:`system_state`), None when none is recorded."""
    key = _history_key(pipeline)
    return _namespace_values(spark, system, re.escape(key), "[0-9a-z.]+").get(key)


def mark_history_read(spark: SparkSession, system: SystemTables, pipeline: PipelineConfig, state: str) -> None:
    spark.sql(
        f"ALTER NAMESPACE {qualified(system.catalog, system.namespace)} "
        f"SET PROPERTIES ('{_history_key(pipeline)}'='{state}')"
    )


def system_state(spark: SparkSession, system: SystemTables, *names: str) -> str:
    """The current snapshot ids of system tables ``names``, in one string (``none`` for a table
    without a snapshot): equal states mean the same rows. Iceberg metadata only, no Spark job."""
    ids = []
    for name in names:
        table = target_tables.iceberg_table(spark, TargetTable(system.catalog, system.namespace, name))
        snapshot = table.currentSnapshot() if table is not None else None
        ids.append(str(int(snapshot.snapshotId())) if snapshot is not None else "none")
    return ".".join(ids)


def mark_low_water(spark: SparkSession, system: SystemTables, pipeline: PipelineConfig, commit_ts: int) -> None:
    spark.sql(
        f"ALTER NAMESPACE {qualified(system.catalog, system.namespace)} "
        f"SET PROPERTIES ('{_low_water_key(pipeline)}'='{commit_ts}')"
    )


def position(
    spark: SparkSession, system: SystemTables, target: TargetTable, names: dict[str, int] | None = None
) -> int:
    """The TSO up to which the events of this table name are applied.

    ``names``: :func:`name_positions` read once for the run (else read here). The table's own
    position comes from its Iceberg metadata through the Java API, without a Spark job.
    """
    return position_and_owner(spark, system, target, names)[0]


def position_and_owner(
    spark: SparkSession, system: SystemTables, target: TargetTable, names: dict[str, int] | None = None
) -> tuple[int, target_tables.Owner | None]:
    """:func:`position`, and the pipeline that applied to the table last (``target_tables.applied_by``;
    None: no pipeline has, or there is no table), from one load of the table."""
    mark = (name_positions(spark, system) if names is None else names).get(_name_key(target), 0)
    table = target_tables.iceberg_table(spark, target)
    if table is None:
        return mark, None
    applied = target_tables.applied_of(table)[0]
    ddl = int(table.properties().get(DDL_POSITION) or 0)
    return max(mark, applied, ddl), target_tables.applied_by(table)


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
