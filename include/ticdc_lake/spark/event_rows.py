"""Rows of normalized events and quarantine records as plain (picklable) tuples, in table column order.

The decode stage hands events to Spark as Arrow (:mod:`ticdc_lake.spark.decode_arrow`, the same
values); quarantine rows travel as these tuples.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ticdc_lake.events import ChangeEvent, EventKind, RawMessage
from ticdc_lake.protocols.base import MessageLocation
from ticdc_lake.protocols.schema_facts import schema_note
from ticdc_lake.spark.system_tables import CARRIER_SQL, COLUMNS

EVENTS_SCHEMA = COLUMNS["change_events"]
#: The typed record carrier's columns (``system_tables.CARRIER_SQL``): only the decode workers write them.
CARRIER_NULLS = (None,) * len(CARRIER_SQL)
QUARANTINE_SCHEMA = COLUMNS["quarantine"]
#: Column names of :func:`quarantine_row` tuples, in order.
QUARANTINE_COLUMNS = (
    "pipeline",
    "batch_id",
    "topic",
    "partition",
    "offset",
    "idx",
    "protocol",
    "reason",
    "raw_key",
    "raw_value",
    "status",
    "policy",
    "recorded_run_id",
    "recorded_at",
    "resolved_run_id",
    "resolved_at",
    "database",
    "table",
    "commit_ts",
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
        stored_types(event),
        event.ddl_type,
        event.ddl_query,
        event.table_schema.to_json() if event.table_schema is not None else None,
        event.pre_table_schema.to_json() if event.pre_table_schema is not None else None,
        event.handle_key_only,
        event.claim_check,
        event.status.value,
        run_id,
        schema_note(event),
        *CARRIER_NULLS,
    )


def stored_types(event: ChangeEvent) -> dict[str, str] | None:
    """The ``column_types`` column of an event's row: NULL for DML.

    A DML event's column types (``ChangeEvent.column_types``) serve decode only (binding the row to
    a schema version, inferring a start schema); nothing after decode reads them, since a row's
    types are those of its schema version in ``schema_history``. Writing them cost the JVM about
    20 us per Debezium event (one map per row). Other events keep theirs (no decoder sets any today).
    """
    return None if event.kind is EventKind.DML else event.column_types


def quarantine_row(
    pipeline: str,
    batch_id: str,
    run_id: str,
    message: RawMessage,
    protocol: str,
    reason: str,
    skip: bool,
    location: MessageLocation | None = None,
) -> tuple[Any, ...]:
    """A quarantine record; ``location`` (``Decoder.locate``) names the table that apply holds under ``halt``."""
    now = datetime.now(UTC)
    where = location or MessageLocation(None, None)
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
        where.database,
        where.table,
        Decimal(where.commit_ts) if where.commit_ts is not None else None,
    )
