"""Schema history stage: DDL/BOOTSTRAP events → the schema history table (ARCHITECTURE 4.3)."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from decimal import Decimal

from pyspark.sql import SparkSession

from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.identifiers import sql_string
from ticdc_lake.schema.history import SchemaFact, collapse
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import ledger
from ticdc_lake.spark.system_tables import COLUMNS, SystemTables

log = logging.getLogger(__name__)


def run_schema_history(spark: SparkSession, config: LakeConfig, pipeline: PipelineConfig, run_id: str) -> int:
    """Record every schema version not yet in the history; returns how many were added."""
    started_at, started = datetime.now(UTC), time.monotonic()
    tables = SystemTables.of(config, pipeline)
    tables.ensure(spark)
    pid = sql_string(pipeline.id)
    # Only versions the history lacks; DDL/BOOTSTRAP rows are few next to DML.
    candidates = spark.sql(
        f"""SELECT e.kind, e.ddl_type, e.ddl_query, e.commit_ts, e.topic, e.`partition`, e.`offset`,
                   e.table_schema, e.pre_table_schema
            FROM {tables.change_events} e
            WHERE e.pipeline = {pid} AND e.kind IN ('DDL', 'BOOTSTRAP')
              AND (e.table_schema IS NOT NULL OR e.pre_table_schema IS NOT NULL)"""
    ).collect()
    known = {
        (r["database"], r["table"], int(r["schema_version"]))
        for r in spark.sql(
            f"SELECT `database`, `table`, schema_version FROM {tables.schema_history} WHERE pipeline = {pid}"
        ).collect()
    }
    facts = []
    for row in candidates:
        event = "BOOTSTRAP" if row["kind"] == "BOOTSTRAP" else (row["ddl_type"] or "QUERY")
        position = (row["topic"], row["partition"], row["offset"])
        if row["table_schema"] is not None:
            facts.append(
                SchemaFact(
                    TableSchema.from_json(row["table_schema"]),
                    event,
                    int(row["commit_ts"]),
                    row["ddl_query"],
                    *position,
                )
            )
        if row["pre_table_schema"] is not None:
            facts.append(
                SchemaFact(
                    TableSchema.from_json(row["pre_table_schema"]), "inferred", int(row["commit_ts"]), None, *position
                )
            )
    entries = [e for e in collapse(facts) if e.key not in known]
    if not entries:
        log.info("schema history: no new table versions (%d known)", len(known))
        ledger.append(
            spark,
            tables,
            [
                ledger.stage_row(
                    pipeline.id,
                    run_id,
                    "schema_history",
                    "NOOP",
                    started_at,
                    time.monotonic() - started,
                    0,
                    f"{len(known)} version(s) known",
                )
            ],
        )
        return 0
    now = datetime.now(UTC)
    rows = []
    for entry in entries:
        fact, schema = entry.fact, entry.fact.schema
        rows.append(
            (
                pipeline.id,
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
            )
        )
        log.info(
            "schema history: %s.%s version %d from %s (%s), %d column(s), key %s",
            schema.database,
            schema.table,
            entry.key[2],
            fact.event,
            schema.source,
            len(schema.columns),
            list(schema.handle_key()) or "none (whole row)",
        )
    spark.createDataFrame(rows, COLUMNS["schema_history"]).createOrReplaceTempView("new_schema_history")
    spark.sql(
        f"MERGE INTO {tables.schema_history} h USING new_schema_history n ON h.pipeline = n.pipeline "
        "AND h.`database` = n.`database` AND h.`table` = n.`table` AND h.schema_version = n.schema_version "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    log.info("schema history: %d version(s) added in %.1fs", len(entries), time.monotonic() - started)
    added = ", ".join(f"{e.key[0]}.{e.key[1]}@{e.key[2]}" for e in entries[:20])
    ledger.append(
        spark,
        tables,
        [
            ledger.stage_row(
                pipeline.id,
                run_id,
                "schema_history",
                "OK",
                started_at,
                time.monotonic() - started,
                len(entries),
                f"added {added}",
            )
        ],
    )
    return len(entries)
