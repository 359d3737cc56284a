"""Reads what quarantined messages hold back in an apply run (:mod:`ticdc_lake.apply.quarantine_holds`).

The QUARANTINED rows of the pipeline give the table (where the message told it) and the position;
the watermark before each is the highest WATERMARK commit TSO in ``change_events`` of the same
topic and partition at a lower offset (landed batches are offset ranges in order, so decoded
events' offsets order the partition). One aggregate query for all messages; nothing when none
waits or the policy is ``skip`` (the decode stage records them as skipped before apply runs).
"""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession

from ticdc_lake.apply.quarantine_holds import Holds, Quarantined, compute_holds
from ticdc_lake.config import DecodeErrorPolicy, PipelineConfig
from ticdc_lake.identifiers import sql_string
from ticdc_lake.spark.system_tables import SystemTables

log = logging.getLogger(__name__)


def quarantine_holds(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, config_file: str) -> Holds:
    """The holds of the pipeline's quarantined messages (empty under ``skip``)."""
    if pipeline.policies.on_decode_error is not DecodeErrorPolicy.HALT:
        return Holds()
    pid = sql_string(pipeline.id)
    rows = spark.sql(
        f"SELECT topic, `partition`, `offset`, `database`, `table`, reason FROM {tables.quarantine} "
        f"WHERE pipeline = {pid} AND status = 'QUARANTINED'"
    ).collect()
    if not rows:
        return Holds()
    positions = sorted({(r["topic"], r["partition"], r["offset"]) for r in rows})
    values = ", ".join(f"({sql_string(t)}, {p}, {o})" for t, p, o in positions)
    marks = {
        (m["topic"], m["partition"], m["offset"]): int(m["mark"]) if m["mark"] is not None else None
        for m in spark.sql(
            f"SELECT q.topic, q.`partition`, q.`offset`, max(e.commit_ts) AS mark "
            f"FROM VALUES {values} AS q(topic, `partition`, `offset`) "
            f"LEFT JOIN {tables.change_events} e ON e.pipeline = {pid} AND e.kind = 'WATERMARK' "
            "AND e.topic = q.topic AND e.`partition` = q.`partition` AND e.`offset` < q.`offset` "
            "GROUP BY q.topic, q.`partition`, q.`offset`"
        ).collect()
    }
    found = [
        Quarantined(
            r["topic"],
            r["partition"],
            r["offset"],
            r["database"],
            r["table"],
            r["reason"],
            marks.get((r["topic"], r["partition"], r["offset"])),
        )
        for r in rows
    ]
    holds = compute_holds(found, config_file)
    log.warning(
        "apply: %d quarantined message(s) (on_decode_error=halt) hold %d table(s) and every table of %d topic(s)",
        len(found),
        len(holds.tables),
        len(holds.topics),
    )
    return holds
