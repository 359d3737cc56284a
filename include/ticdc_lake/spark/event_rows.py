"""Spark row layout of normalized events and quarantine records (plain tuples, picklable)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ticdc_lake.events import ChangeEvent, RawMessage

TSO_TYPE = DecimalType(20, 0)
_TEXT_MAP = MapType(StringType(), StringType(), valueContainsNull=True)

EVENTS_SCHEMA = StructType(
    [
        StructField("pipeline", StringType(), False),
        StructField("batch_id", StringType(), False),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("idx", IntegerType(), False),
        StructField("kind", StringType(), False),
        StructField("commit_ts", TSO_TYPE, False),
        StructField("database", StringType(), True),
        StructField("table", StringType(), True),
        StructField("table_id", LongType(), True),
        StructField("op", StringType(), True),
        StructField("schema_version", TSO_TYPE, True),
        StructField("before", _TEXT_MAP, True),
        StructField("after", _TEXT_MAP, True),
        StructField("column_types", _TEXT_MAP, True),
        StructField("ddl_type", StringType(), True),
        StructField("ddl_query", StringType(), True),
        StructField("table_schema", StringType(), True),
        StructField("pre_table_schema", StringType(), True),
        StructField("handle_key_only", BooleanType(), True),
        StructField("claim_check", BooleanType(), True),
        StructField("status", StringType(), False),
        StructField("run_id", StringType(), False),
    ]
)

QUARANTINE_SCHEMA = StructType(
    [
        StructField("pipeline", StringType(), False),
        StructField("batch_id", StringType(), False),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("idx", IntegerType(), False),
        StructField("protocol", StringType(), False),
        StructField("reason", StringType(), False),
        StructField("raw_key", BinaryType(), True),
        StructField("raw_value", BinaryType(), True),
        StructField("status", StringType(), False),
        StructField("policy", StringType(), False),
        StructField("recorded_run_id", StringType(), False),
        StructField("recorded_at", TimestampType(), False),
        StructField("resolved_run_id", StringType(), True),
        StructField("resolved_at", TimestampType(), True),
    ]
)


def event_row(pipeline: str, batch_id: str, run_id: str, event: ChangeEvent) -> tuple[Any, ...]:
    pos = event.position
    return (
        pipeline,
        batch_id,
        pos.topic,
        pos.partition,
        pos.offset,
        pos.index,
        event.kind.value,
        Decimal(event.commit_ts),
        event.database,
        event.table,
        event.table_id,
        event.op.value if event.op is not None else None,
        Decimal(event.schema_version) if event.schema_version is not None else None,
        event.before,
        event.after,
        event.column_types,
        event.ddl_type,
        event.ddl_query,
        event.table_schema.to_json() if event.table_schema is not None else None,
        event.pre_table_schema.to_json() if event.pre_table_schema is not None else None,
        event.handle_key_only,
        event.claim_check,
        event.status.value,
        run_id,
    )


def quarantine_row(
    pipeline: str, batch_id: str, run_id: str, message: RawMessage, protocol: str, reason: str, skip: bool
) -> tuple[Any, ...]:
    now = datetime.now(UTC)
    return (
        pipeline,
        batch_id,
        message.topic,
        message.partition,
        message.offset,
        0,
        protocol,
        reason,
        message.key,
        message.value,
        "SKIPPED" if skip else "QUARANTINED",
        "skip" if skip else "halt",
        run_id,
        now,
        run_id if skip else None,
        now if skip else None,
    )
