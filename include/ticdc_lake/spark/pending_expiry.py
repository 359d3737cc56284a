"""Rows that waited too long for their table schema leave ``change_events`` for the quarantine.

A PENDING row (a Simple schema version nobody announced, ENUM/SET numbers without members) holds
its table and is decoded again in every run. Once its partition's watermark is
``policies.pending_schema_timeout_s`` of TSO time past the row (:mod:`ticdc_lake.protocols.pending`),
the schema is not coming: the row becomes a quarantine record with its raw message and a reason,
under the pipeline's ``on_decode_error`` policy, so that nothing waits forever without a record.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pyspark.sql import Row, SparkSession

from ticdc_lake.config import PipelineConfig
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, RawMessage, SourcePosition
from ticdc_lake.identifiers import sql_string
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.pending import expired_reason
from ticdc_lake.spark.system_tables import COLUMNS, SystemTables

log = logging.getLogger(__name__)


def expire_pending(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, run_id: str, skip: bool
) -> list[dict[str, Any]]:
    """Move expired PENDING rows to the quarantine; returns topic, partition, offset and reason of each."""
    pid = sql_string(pipeline.id)
    marks = {
        (r["topic"], r["partition"]): int(r["mark"])
        for r in spark.sql(
            f"SELECT topic, `partition`, max(max_watermark) AS mark FROM {tables.decoded_batches} "
            f"WHERE pipeline = {pid} GROUP BY topic, `partition`"
        ).collect()
        if r["mark"] is not None
    }
    pending = spark.sql(
        f"SELECT batch_id, topic, `partition`, `offset`, idx, commit_ts, `database`, `table`, op, schema_version "
        f"FROM {tables.change_events} WHERE pipeline = {pid} AND status = 'PENDING'"
    ).collect()
    timeout = pipeline.policies.pending_schema_timeout_s
    expired = []
    for row in pending:
        reason = expired_reason(_event(row), marks.get((row["topic"], row["partition"])), timeout, pipeline.protocol)
        if reason is not None:
            expired.append((row, reason))
    if not expired:
        return []
    raw = _raw_messages(pipeline, {(r["batch_id"], r["topic"], r["partition"], r["offset"]) for r, _ in expired})
    now = datetime.now(UTC)
    records = []
    for row, reason in expired:
        message = raw.get((row["batch_id"], row["topic"], row["partition"], row["offset"]))
        records.append(
            (
                pipeline.id,
                row["batch_id"],
                row["topic"],
                row["partition"],
                row["offset"],
                row["idx"],
                pipeline.protocol.value,
                reason,
                message.key if message else None,
                message.value if message else None,
                "SKIPPED" if skip else "QUARANTINED",
                "skip" if skip else "halt",
                run_id,
                now,
                run_id if skip else None,
                now if skip else None,
                row["database"],
                row["table"],
                row["commit_ts"],
            )
        )
    spark.createDataFrame(records, COLUMNS["quarantine"]).createOrReplaceTempView("expired_pending")
    spark.sql(
        f"MERGE INTO {tables.quarantine} q USING expired_pending n ON q.pipeline = n.pipeline AND q.topic = n.topic "
        "AND q.`partition` = n.`partition` AND q.`offset` = n.`offset` AND q.idx = n.idx "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql(
        f"DELETE FROM {tables.change_events} e WHERE e.pipeline = {pid} AND e.status = 'PENDING' AND EXISTS ("
        "SELECT 1 FROM expired_pending n WHERE n.batch_id = e.batch_id AND n.topic = e.topic "
        "AND n.`partition` = e.`partition` AND n.`offset` = e.`offset` AND n.idx = e.idx)"
    )
    spark.sql(
        f"MERGE INTO {tables.decoded_batches} d USING (SELECT batch_id, topic, `partition`, count(*) AS n "
        "FROM expired_pending GROUP BY batch_id, topic, `partition`) x ON d.pipeline = "
        f"{pid} AND d.batch_id = x.batch_id AND d.topic = x.topic AND d.`partition` = x.`partition` "
        "WHEN MATCHED THEN UPDATE SET pending = greatest(d.pending - x.n, 0), quarantined = d.quarantined + x.n"
    )
    log.warning(
        "decode: %d row(s) waited more than %d s of TSO time for their table schema and are %s",
        len(records),
        timeout,
        "recorded as skipped (on_decode_error=skip)" if skip else "quarantined",
    )
    return [{"topic": r[2], "partition": r[3], "offset": r[4], "reason": r[7]} for r in records]


def _event(row: Row) -> ChangeEvent:
    return ChangeEvent(
        EventKind.DML,
        SourcePosition(row["topic"], row["partition"], row["offset"], row["idx"]),
        int(row["commit_ts"]),
        row["database"],
        row["table"],
        op=Op(row["op"]) if row["op"] else None,
        schema_version=int(row["schema_version"]) if isinstance(row["schema_version"], Decimal) else None,
        status=EventStatus.PENDING,
    )


def _raw_messages(
    pipeline: PipelineConfig, wanted: set[tuple[str, str, int, int]]
) -> dict[tuple[str, str, int, int], RawMessage]:
    """The landed messages at the wanted (batch, topic, partition, offset) positions."""
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    batches = {batch for batch, _, _, _ in wanted}
    found: dict[tuple[str, str, int, int], RawMessage] = {}
    for manifest in store.manifests():
        if manifest.batch_id not in batches:
            continue
        for landed in manifest.ranges:
            offsets = {o for b, t, p, o in wanted if (b, t, p) == (manifest.batch_id, landed.topic, landed.partition)}
            if not offsets or landed.file is None:
                continue
            for message in store.read_messages(landed.file):
                if message.offset in offsets:
                    found[(manifest.batch_id, message.topic, message.partition, message.offset)] = message
    return found
