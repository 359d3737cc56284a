"""Target Iceberg tables: naming, creation from a table schema, and the applied position."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from ticdc_lake import identifiers, table_markers
from ticdc_lake.apply.merge_sql import TargetColumn, spark_type
from ticdc_lake.apply.offset_plan import OFFSETS_PROP
from ticdc_lake.config import PipelineConfig
from ticdc_lake.identifiers import (
    UPSTREAM_DATABASE_PROPERTY,
    UPSTREAM_TABLE_PROPERTY,
    iceberg_table_name,
    qualified,
    quote,
    sql_string,
)
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.schema.type_mapping import iceberg_type

#: Merge-on-read: a MERGE writes delete files instead of rewriting data files (see docs).
TABLE_PROPERTIES = {
    "format-version": "2",
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "50",
}


@dataclass(frozen=True, slots=True)
class TargetTable:
    catalog: str
    namespace: str
    name: str

    @staticmethod
    def for_upstream(pipeline: PipelineConfig, database: str, table: str) -> TargetTable:
        """The one place that names the Iceberg table of an upstream table (``docs/identifiers.md``)."""
        return TargetTable(pipeline.catalog, pipeline.target.namespace_for(database), iceberg_table_name(table))

    @property
    def sql_name(self) -> str:
        return qualified(self.catalog, self.namespace, self.name)

    @property
    def display(self) -> str:
        return f"{self.catalog}.{self.namespace}.{self.name}"

    def metadata(self, kind: str) -> str:
        return qualified(self.catalog, self.namespace, self.name, kind)


def target_columns(schema: TableSchema) -> list[TargetColumn]:
    return [TargetColumn(c.name, iceberg_type(c)) for c in schema.columns]


def exists(spark: SparkSession, target: TargetTable) -> bool:
    return bool(spark.catalog.tableExists(target.sql_name))


def create(spark: SparkSession, target: TargetTable, schema: TableSchema, pipeline_id: str | None = None) -> None:
    """Create the table (and namespace); identifier fields = the upstream handle key. ``pipeline_id``:
    the pipeline creating it (table property ``ticdc.ddl-pipeline``, :func:`applied_by`).

    One catalog commit through the Iceberg catalog of the Spark catalog: the schema converted
    from Spark's as ``CREATE TABLE`` converts it, the key as identifier fields, the properties and
    comment (and owner) that ``CREATE TABLE ... COMMENT ... TBLPROPERTIES`` sets. The SQL way took a
    second commit (``ALTER TABLE ... SET IDENTIFIER FIELDS``) and a load of the table for it.
    """
    key = schema.handle_key()
    # A DDL may have dropped the namespace since (DROP DATABASE): checked each time, as before.
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {qualified(target.catalog, target.namespace)}")
    columns = ", ".join(
        f"{quote(c.name)} {spark_type(c.iceberg_type)}{' NOT NULL' if c.name in key else ''}"
        for c in target_columns(schema)
    )
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    iceberg = jvm.org.apache.iceberg
    converted = iceberg.spark.SparkSchemaUtil.convert(jvm.org.apache.spark.sql.types.StructType.fromDDL(columns))
    ids = jvm.java.util.HashSet()
    for k in key:
        ids.add(converted.findField(k).fieldId())
    properties = jvm.java.util.HashMap()
    for name, value in {
        **TABLE_PROPERTIES,
        **identifiers.upstream_properties(schema.database, schema.table),
        "comment": f"TiCDC {schema.database}.{schema.table}".replace("'", ""),
        "owner": spark.sparkContext.sparkUser(),
        **({table_markers.DDL_PIPELINE: pipeline_id} if pipeline_id is not None else {}),
    }.items():
        properties.put(name, value)
    catalog = spark._jsparkSession.sessionState().catalogManager().catalog(target.catalog).icebergCatalog()
    levels = spark.sparkContext._gateway.new_array(jvm.java.lang.String, 1)  # type: ignore[union-attr]
    levels[0] = target.namespace
    identifier = iceberg.catalog.TableIdentifier.of(iceberg.catalog.Namespace.of(levels), target.name)
    try:
        catalog.buildTable(identifier, iceberg.Schema(converted.columns(), ids)).withProperties(properties).create()
    except Exception as exc:  # py4j: the Java exception's class is in the message
        if "AlreadyExistsException" not in str(exc):
            raise
        if key:  # as CREATE TABLE IF NOT EXISTS then ALTER did: the key of the existing table is set
            spark.sql(f"ALTER TABLE {target.sql_name} SET IDENTIFIER FIELDS {', '.join(quote(k) for k in key)}")


def upstream_properties(schema: TableSchema) -> str:
    """TBLPROPERTIES items holding the exact upstream names (the Iceberg name may be escaped)."""
    return (
        f"'{UPSTREAM_DATABASE_PROPERTY}'={sql_string(schema.database)}, "
        f"'{UPSTREAM_TABLE_PROPERTY}'={sql_string(schema.table)}"
    )


def iceberg_table(spark: SparkSession, target: TargetTable) -> Any:
    """The Iceberg ``Table`` (Java, through py4j), refreshed; None when the table does not exist.

    Reading positions and snapshot summaries from the table object takes milliseconds; the same
    through the ``snapshots`` and ``history`` metadata tables is a Spark job per table.
    """
    if not exists(spark, target):
        return None
    return load_iceberg_table(spark, target.sql_name)


def load_iceberg_table(spark: SparkSession, sql_name: str) -> Any:
    """The Iceberg ``Table`` (Java, through py4j) of ``sql_name`` (``catalog.namespace.table``), refreshed."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, sql_name)
    table.refresh()
    return table


def delete_all(spark: SparkSession, target: TargetTable, summary: dict[str, str]) -> None:
    """Every row of the table deleted, in one snapshot whose summary carries ``summary``.

    What ``DELETE FROM ... WHERE true`` does (a delete of every file, no data read), through the
    Iceberg API: Spark's metadata-only delete takes no snapshot property from the session
    (``table_positions.committing``), so a TRUNCATE's snapshot would not say its position or whose."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    delete = load_iceberg_table(spark, target.sql_name).newDelete()
    delete = delete.deleteFromRowFilter(jvm.org.apache.iceberg.expressions.Expressions.alwaysTrue())
    for key, value in summary.items():
        delete = delete.set(key, value)
    delete.commit()
    spark.sql(f"REFRESH TABLE {target.sql_name}")


def applied_position(spark: SparkSession, target: TargetTable) -> tuple[int, int | None]:
    """(applied TSO, snapshot id) from the newest ancestor snapshot that carries one; (0, None) if none."""
    table = iceberg_table(spark, target)
    return applied_of(table) if table is not None else (0, None)


def ancestors(table: Any) -> Iterator[Any]:
    """The snapshots of a loaded Iceberg table (Java), current first, back through its parents."""
    snapshot = table.currentSnapshot()
    while snapshot is not None:
        yield snapshot
        parent = snapshot.parentId()
        snapshot = table.snapshot(parent) if parent is not None else None


def applied_of(table: Any) -> tuple[int, int | None]:
    """:func:`applied_position` of a loaded Iceberg table: walks the current snapshot's ancestors."""
    for snapshot in ancestors(table):
        value = snapshot.summary().get(table_markers.APPLIED_TS)
        if value is not None:
            return int(value), int(snapshot.snapshotId())
    return 0, None


#: Whose a table is, and what says so (:func:`applied_by`).
Owner = tuple[str, str]


def applied_by(table: Any) -> Owner | None:
    """The pipeline (``ticdc.pipeline``) that committed the newest ancestor snapshot carrying an
    applied position (a commit TSO or offsets); where none does, the pipeline that created the table
    or applied a DDL to it last (table property ``ticdc.ddl-pipeline``); with what says so. None when
    neither says (a table no pipeline made or applied to)."""
    for snapshot in ancestors(table):
        summary = snapshot.summary()
        if summary.get(table_markers.APPLIED_TS) is not None or summary.get(OFFSETS_PROP) is not None:
            owner = summary.get(table_markers.PIPELINE)
            return (str(owner), "its newest applied snapshot says so") if owner is not None else None
    maker = table.properties().get(table_markers.DDL_PIPELINE)
    if maker is None:
        return None
    return str(maker), f"no row is applied to it yet; its table property {table_markers.DDL_PIPELINE} says so"


def foreign_note(target: TargetTable, owner: Owner | None, pipeline_id: str) -> str | None:
    """Why a table another pipeline applies to (``owner``, :func:`applied_by`) is held: its position
    is not this pipeline's. None when no pipeline or this one applied to it last."""
    if owner is None or owner[0] == pipeline_id:
        return None
    other, evidence = owner
    return (
        f"{target.display} is applied by pipeline {other!r} ({evidence}), not by "
        f"{pipeline_id!r}: two pipelines must not write one table, whose applied position is one pipeline's. "
        f"Give pipeline {pipeline_id!r} a target.namespace (or target.table) of its own; if {pipeline_id!r} "
        f"replaces {other!r}, drop the table and run again to build it from {pipeline_id!r}'s events"
    )


def latest_snapshot(spark: SparkSession, target: TargetTable) -> tuple[int | None, dict[str, str]]:
    table = iceberg_table(spark, target)
    snapshot = table.currentSnapshot() if table is not None else None
    if snapshot is None:
        return None, {}
    return int(snapshot.snapshotId()), {str(k): str(v) for k, v in dict(snapshot.summary()).items()}


@dataclass(frozen=True, slots=True)
class NoRows:
    """A target table that holds no row: at ``snapshot_id`` (None: the table has no snapshot yet).
    ``write_shuffles``: its partition spec or sort order makes a write shuffle the rows first (a
    user may have given the table either); the rows then reach the writing tasks through an exchange."""

    snapshot_id: int | None
    write_shuffles: bool = False


def no_rows(spark: SparkSession, target: TargetTable) -> NoRows | None:
    """:class:`NoRows` when the table's current snapshot is none or counts no record in its data files
    (``total-records`` 0, Iceberg metadata, no Spark job); None when it may hold rows."""
    table = iceberg_table(spark, target)
    if table is None:
        return None
    shuffles = not (table.spec().isUnpartitioned() and table.sortOrder().isUnsorted())
    snapshot = table.currentSnapshot()
    if snapshot is None:
        return NoRows(None, shuffles)
    if str(snapshot.summary().get("total-records")) == "0":
        return NoRows(int(snapshot.snapshotId()), shuffles)
    return None
