"""The product's own Iceberg tables, in the catalog's system namespace.

- ``change_events``: normalized events, one row per event, partitioned by (pipeline, batch_id) so
  that re-decoding a batch replaces exactly its rows.
- ``quarantine``: messages that could not be decoded, with position, raw bytes and reason, and the
  table (and commit TSO) the message names where its bytes tell it (``Decoder.locate``): under
  ``halt`` apply holds that table, or every table of the topic when the table is unknown.
- ``decoded_batches``: per landed batch and partition, what decoding found (the decode stage's
  commit marker and the input of the watermark computation).
- ``schema_history``: one row per (pipeline, database, table, schema version).
- ``run_ledger``: per run and table, what apply did.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.identifiers import qualified, quote

TSO = "DECIMAL(20,0)"

#: Iceberg write options of an append whose tasks each write their own rows as they come: no
#: shuffle before the write (Iceberg's default hash distribution adds one, a Spark job of its own
#: under adaptive execution), and fanout keeps one open file per partition a task has.
UNSHUFFLED_WRITE = {"distribution-mode": "none", "fanout-enabled": "true"}

_TABLE_PROPERTIES = {
    "format-version": "2",
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}

#: The typed record carrier of ``change_events`` (``arrow_decode.image_records``): (column, Spark type),
#: the table's last columns, nullable; only the decode stage writes them.
CARRIER_SQL = (
    ("before_record", "BINARY"),
    ("after_record", "BINARY"),
    ("before_untyped", "MAP<STRING, STRING>"),
    ("after_untyped", "MAP<STRING, STRING>"),
    ("before_key", "ARRAY<STRING>"),
    ("after_key", "ARRAY<STRING>"),
    ("record_layout", "BIGINT"),
)

#: Column list of each system table, in Spark DDL: also the schema of the rows the jobs write.
COLUMNS = {
    "change_events": f"""
        pipeline STRING NOT NULL, batch_id STRING NOT NULL, topic STRING NOT NULL, `partition` INT NOT NULL,
        `offset` BIGINT NOT NULL, idx INT NOT NULL, kind STRING NOT NULL, commit_ts {TSO} NOT NULL,
        `database` STRING, `table` STRING, table_id BIGINT, op STRING, schema_version {TSO},
        `before` MAP<STRING, STRING>, `after` MAP<STRING, STRING>, column_types MAP<STRING, STRING>,
        ddl_type STRING, ddl_query STRING, table_schema STRING, pre_table_schema STRING,
        handle_key_only BOOLEAN, claim_check BOOLEAN, status STRING NOT NULL, run_id STRING NOT NULL,
        schema_error STRING, {", ".join(f"{name} {kind}" for name, kind in CARRIER_SQL)}
    """,
    "quarantine": f"""
        pipeline STRING NOT NULL, batch_id STRING NOT NULL, topic STRING NOT NULL, `partition` INT NOT NULL,
        `offset` BIGINT NOT NULL, idx INT NOT NULL, protocol STRING NOT NULL, reason STRING NOT NULL,
        raw_key BINARY, raw_value BINARY, status STRING NOT NULL, policy STRING NOT NULL,
        recorded_run_id STRING NOT NULL, recorded_at TIMESTAMP NOT NULL, resolved_run_id STRING,
        resolved_at TIMESTAMP, `database` STRING, `table` STRING, commit_ts {TSO}
    """,
    "decoded_batches": f"""
        pipeline STRING NOT NULL, batch_id STRING NOT NULL, sequence BIGINT NOT NULL, topic STRING NOT NULL,
        `partition` INT NOT NULL, start_offset BIGINT NOT NULL, end_offset BIGINT NOT NULL, messages BIGINT NOT NULL,
        events BIGINT NOT NULL, dml BIGINT NOT NULL, ddl BIGINT NOT NULL, watermarks BIGINT NOT NULL,
        max_watermark {TSO}, quarantined BIGINT NOT NULL, pending BIGINT NOT NULL, run_id STRING NOT NULL,
        decoded_at TIMESTAMP NOT NULL
    """,
    "schema_history": f"""
        pipeline STRING NOT NULL, `database` STRING NOT NULL, `table` STRING NOT NULL,
        schema_version {TSO} NOT NULL, table_id BIGINT, commit_ts {TSO} NOT NULL, topic STRING, `partition` INT,
        `offset` BIGINT, event STRING NOT NULL,
        ddl_query STRING, columns STRING NOT NULL, handle_key ARRAY<STRING> NOT NULL, indexes STRING NOT NULL,
        iceberg_schema STRING NOT NULL, table_schema STRING NOT NULL, source STRING NOT NULL,
        run_id STRING NOT NULL, recorded_at TIMESTAMP NOT NULL, dropped BOOLEAN
    """,
    "run_ledger": f"""
        pipeline STRING NOT NULL, run_id STRING NOT NULL, stage STRING NOT NULL, `database` STRING, `table` STRING,
        iceberg_table STRING, status STRING NOT NULL, window_start {TSO}, window_end {TSO}, watermark {TSO},
        events_in BIGINT, replays_skipped BIGINT, rows_inserted BIGINT, rows_updated BIGINT, rows_deleted BIGINT,
        unrepresentable_values BIGINT, snapshot_id BIGINT, message STRING, started_at TIMESTAMP NOT NULL,
        duration_ms BIGINT NOT NULL, duplicates_skipped BIGINT, ambiguous_time_values BIGINT
    """,
}

_PARTITIONING = {"change_events": "pipeline, batch_id"}

#: Table properties beyond ``_TABLE_PROPERTIES``, set at creation and by ``ensure`` on tables made
#: before them. The row images' values are mostly distinct (keys, free text), so a Parquet
#: dictionary for them is built and then dropped: without it the decode stage's JVM writes
#: ``change_events`` for 0.72x the CPU and smaller files (docs/design.md, "The JVM's write of `change_events`").
#: Iceberg names a map's values ``<column>.value``; Parquet's own path would not match.
EXTRA_PROPERTIES = {
    "change_events": {
        "write.parquet.dict-encoding-enabled.column.before.value": "false",
        "write.parquet.dict-encoding-enabled.column.after.value": "false",
        "write.parquet.dict-encoding-enabled.column.before_record": "false",
        "write.parquet.dict-encoding-enabled.column.after_record": "false",
    }
}

#: Columns added after a table's first release, (table, column, Spark type): ``ensure`` adds them
#: (nullable, at the end, as in ``COLUMNS``) to tables created before.
ADDED_COLUMNS = (
    ("change_events", "schema_error", "STRING"),
    *(("change_events", name, kind) for name, kind in CARRIER_SQL),
    ("schema_history", "dropped", "BOOLEAN"),
    ("quarantine", "database", "STRING"),
    ("quarantine", "table", "STRING"),
    ("quarantine", "commit_ts", TSO),
    ("run_ledger", "duplicates_skipped", "BIGINT"),
    ("run_ledger", "ambiguous_time_values", "BIGINT"),
)


#: (application, catalog, namespace, catalog location) whose system tables ``ensure`` created and checked:
#: the next stages of that application only refresh them. Nothing in the product drops a system table.
_ENSURED: set[tuple[str, ...]] = set()


@dataclass(frozen=True, slots=True)
class SystemTables:
    catalog: str
    namespace: str

    @staticmethod
    def of(config: LakeConfig, pipeline: PipelineConfig) -> SystemTables:
        return SystemTables(pipeline.catalog, config.catalog_for(pipeline).system_namespace)

    def name(self, table: str) -> str:
        return qualified(self.catalog, self.namespace, table)

    @property
    def change_events(self) -> str:
        return self.name("change_events")

    @property
    def quarantine(self) -> str:
        return self.name("quarantine")

    @property
    def decoded_batches(self) -> str:
        return self.name("decoded_batches")

    @property
    def schema_history(self) -> str:
        return self.name("schema_history")

    @property
    def run_ledger(self) -> str:
        return self.name("run_ledger")

    def ensure(self, spark: SparkSession) -> None:
        """Create the namespace and every system table that does not exist yet; add missing columns.

        Every stage calls this first. Other processes write these tables too (the other stages'
        JVMs, a killed run, rebuild), so each table's cached metadata is dropped here: the stage
        reads their newest snapshots and its commits validate against them, as in a fresh JVM,
        instead of failing on files added behind a long-lived session's back (Iceberg's catalog
        cache keeps a table for 30 s). The creation and column checks run once per application
        and catalog (the stages of a run share one); later calls only refresh.
        """
        key = self._session_key(spark)
        if key in _ENSURED:  # created and checked by an earlier stage of this application: refresh only
            try:
                for table in COLUMNS:
                    spark.sql(f"REFRESH TABLE {self.name(table)}")
                return
            except AnalysisException as exc:
                # Dropped behind a long-lived application's back (a Spark run service outlives
                # whatever a person does to the catalog): create and check again.
                if exc.getCondition() != "TABLE_OR_VIEW_NOT_FOUND":
                    raise
                _ENSURED.discard(key)
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {qualified(self.catalog, self.namespace)}")
        for table in COLUMNS:
            present = self._columns(spark, table)  # one catalog load per table that exists
            for name, column, kind in ADDED_COLUMNS:
                if name == table and column not in present:
                    spark.sql(f"ALTER TABLE {self.name(table)} ADD COLUMN {quote(column)} {kind}")
            self._set_properties(spark, table)
        _ENSURED.add(key)

    def _set_properties(self, spark: SparkSession, table: str) -> None:
        """``EXTRA_PROPERTIES`` of ``table`` that it lacks (made before them): one metadata commit."""
        wanted = EXTRA_PROPERTIES.get(table)
        if not wanted:
            return
        have = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {self.name(table)}").collect()}
        missing = {k: v for k, v in wanted.items() if have.get(k) != v}
        if missing:
            spark.sql(f"ALTER TABLE {self.name(table)} SET TBLPROPERTIES ({_properties(missing)})")

    def _columns(self, spark: SparkSession, table: str) -> set[str]:
        """The table's column names (lower case), refreshed; created first when it does not exist."""
        name = self.name(table)
        try:
            spark.sql(f"REFRESH TABLE {name}")
            return {f.lower() for f in spark.table(name).schema.fieldNames()}
        except AnalysisException as exc:
            if exc.getCondition() != "TABLE_OR_VIEW_NOT_FOUND":
                raise
        properties = _properties({**_TABLE_PROPERTIES, **EXTRA_PROPERTIES.get(table, {})})
        spark.sql(  # IF NOT EXISTS: another process may create it at the same time
            f"CREATE TABLE IF NOT EXISTS {name} ({COLUMNS[table]}) USING iceberg "
            f"PARTITIONED BY ({_PARTITIONING.get(table, 'pipeline')}) TBLPROPERTIES ({properties})"
        )
        spark.sql(f"REFRESH TABLE {name}")
        return {f.lower() for f in spark.table(name).schema.fieldNames()}

    def _session_key(self, spark: SparkSession) -> tuple[str, ...]:
        """This application and where its catalog of that name points (a test session may repoint it)."""
        prefix = f"spark.sql.catalog.{self.catalog}"
        where = [spark.conf.get(f"{prefix}.{k}", "") or "" for k in ("type", "uri", "warehouse")]
        return (spark.sparkContext.applicationId, self.catalog, self.namespace, *where)


def _properties(values: dict[str, str]) -> str:
    return ", ".join(f"'{k}'='{v}'" for k, v in values.items())
