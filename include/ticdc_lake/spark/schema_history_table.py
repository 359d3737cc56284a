"""The schema history table's reads and writes shared by the stages that record versions: the
schema history stage (``spark.schema_history_job``: DDL and BOOTSTRAP versions), the decode stage
(``spark.decode_schemas``: version-0 schemas met mid-stream and registry versions) and rebuild
(``spark.rebuild_reset``). One row per (pipeline, database, table, version); a version is never
rewritten (docs/schema-history.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pyspark.sql import Row, SparkSession

from ticdc_lake.carried_types import VersionEvent
from ticdc_lake.config import PipelineConfig
from ticdc_lake.identifiers import sql_string
from ticdc_lake.schema.history import HistoryEntry
from ticdc_lake.spark import table_positions
from ticdc_lake.spark.local_frames import local_frame
from ticdc_lake.spark.system_tables import COLUMNS, SystemTables

log = logging.getLogger(__name__)


def known_versions(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig) -> set[tuple[str, str, int]]:
    """(database, table, version) of every version the history holds for the pipeline."""
    return {(r["database"], r["table"], int(r["schema_version"])) for r in history_of(spark, tables, pipeline)}


#: Per (application, schema history table, pipeline): the table's snapshot id and the rows read at it.
_READ: dict[tuple[str, str, str], tuple[str, list[Row]]] = {}


def history_of(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig) -> list[Row]:
    """Every history row of the pipeline: ``database``, ``table``, ``schema_version``, ``commit_ts``,
    ``table_schema``, ``event``, ``ddl_query``, ``dropped``. The three stages of a run each need
    them; they are read again only when the table's current snapshot (Iceberg metadata, no Spark
    job) is not the one they were read at, so a long-lived session still sees what other processes
    commit."""
    state = table_positions.system_state(spark, tables, "schema_history")
    key = (spark.sparkContext.applicationId, tables.schema_history, pipeline.id)
    read = _READ.get(key)
    if read is not None and read[0] == state and state != "none":
        return read[1]
    rows = spark.sql(
        "SELECT `database`, `table`, schema_version, commit_ts, table_schema, event, ddl_query, dropped "
        f"FROM {tables.schema_history} "
        f"WHERE pipeline = {sql_string(pipeline.id)}"
    ).collect()
    _READ[key] = (state, rows)  # the snapshot read before the query: a later commit only makes it read again
    return rows


def version_events(history: Iterable[Row]) -> dict[tuple[str, str, int], VersionEvent]:
    """(event, DDL text, dropped) of each :func:`history_of` row, by (database, table, version)."""
    return {
        (r["database"], r["table"], int(r["schema_version"])): (r["event"], r["ddl_query"], bool(r["dropped"]))
        for r in history
    }


def history_rows(pipeline_id: str, run_id: str, entries: Iterable[HistoryEntry]) -> list[tuple[Any, ...]]:
    """``schema_history`` rows (``COLUMNS["schema_history"]`` order) of ``entries``."""
    now = datetime.now(UTC)
    rows = []
    for entry in entries:
        fact, schema = entry.fact, entry.fact.schema
        rows.append(
            (
                pipeline_id,
                schema.database,
                schema.table,
                Decimal(entry.key[2]),
                schema.table_id,
                Decimal(fact.commit_ts),
                fact.topic,
                fact.partition,
                fact.offset,
                fact.event,
                fact.ddl_query,
                entry.columns_json(),
                list(schema.handle_key()),
                entry.indexes_json(),
                entry.iceberg_schema_json(),
                schema.to_json(),
                schema.source,
                run_id,
                now,
                fact.dropped,
            )
        )
        log.info(
            "schema history: %s.%s version %d from %s (%s), %d column(s), key %s%s",
            schema.database,
            schema.table,
            entry.key[2],
            fact.event,
            schema.source,
            len(schema.columns),
            list(schema.handle_key()) or "none (whole row)",
            ", dropped" if fact.dropped else "",
        )
    return rows


def merge_history(spark: SparkSession, tables: SystemTables, rows: list[tuple[Any, ...]]) -> None:
    """Insert ``rows`` whose (pipeline, database, table, version) the history lacks."""
    # Through Arrow: a createDataFrame of tuples would start a pool of Python workers for this alone.
    local_frame(spark, rows, COLUMNS["schema_history"]).createOrReplaceTempView("new_schema_history")
    spark.sql(
        f"MERGE INTO {tables.schema_history} h USING new_schema_history n ON h.pipeline = n.pipeline "
        "AND h.`database` = n.`database` AND h.`table` = n.`table` AND h.schema_version = n.schema_version "
        "WHEN NOT MATCHED THEN INSERT *"
    )
