"""The decode stage's quarantine: what waits from earlier runs, and the halt message of a run.

Messages that cannot be decoded are quarantined with their topic, partition, offset and reason;
under ``halt`` apply holds their tables, under ``skip`` they are recorded as skipped and the tables
go on (docs/design.md, Decode).
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import SparkSession

from ticdc_lake.config import DecodeErrorPolicy, PipelineConfig
from ticdc_lake.identifiers import sql_string
from ticdc_lake.spark.system_tables import SystemTables

log = logging.getLogger(__name__)


def quarantine_gate(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, run_id: str) -> None:
    """Quarantined messages that wait: under ``halt`` they keep holding their tables (apply reports them),
    under ``skip`` they are recorded as skipped now and their tables go on."""
    where = f"pipeline = {sql_string(pipeline.id)} AND status = 'QUARANTINED'"
    waiting = spark.sql(f"SELECT count(*) FROM {tables.quarantine} WHERE {where}").first()[0]  # type: ignore[index]
    if not waiting:
        return
    if pipeline.policies.on_decode_error is DecodeErrorPolicy.HALT:
        log.warning(
            "decode: %d quarantined message(s) still hold their tables (on_decode_error=halt); apply reports each "
            "held table in the run ledger. Inspect them: SELECT * FROM %s WHERE %s",
            waiting,
            tables.quarantine,
            where,
        )
        return
    spark.sql(
        f"UPDATE {tables.quarantine} SET status = 'SKIPPED', policy = 'skip', "
        f"resolved_run_id = {sql_string(run_id)}, resolved_at = current_timestamp() WHERE {where}"
    )
    log.warning("decode: %d quarantined message(s) now recorded as skipped (on_decode_error=skip)", waiting)


def halt_message(pipeline: PipelineConfig, tables: SystemTables, rows: list[dict[str, Any]], config_file: str) -> str:
    lines = [
        f"pipeline {pipeline.id!r}: {len(rows)} message(s) could not be decoded and are quarantined "
        "(policies.on_decode_error = halt); apply holds the table(s) they belong to (every table of the topic "
        "when the message does not tell its table) at the last watermark before them, the other tables go on:"
    ]
    for row in sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"]))[:20]:
        lines.append(f"  topic {row['topic']!r} partition {row['partition']} offset {row['offset']}: {row['reason']}")
    if len(rows) > 20:
        lines.append(f"  ... and {len(rows) - 20} more")
    lines.append(
        f"Inspect them: SELECT * FROM {tables.quarantine} WHERE pipeline = '{pipeline.id}' AND status = 'QUARANTINED'. "
        f"Fix the producer's settings (codec options must match the changefeed) and re-decode, or set "
        f"policies.on_decode_error: skip for pipeline {pipeline.id!r} in {config_file} to record them as skipped "
        "and go on, then re-run."
    )
    return "\n".join(lines)
