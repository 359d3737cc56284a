"""When a row that waits for its table schema stops waiting and is quarantined instead.

A PENDING row is decoded again in every run until its schema arrives. TiCDC announces a table's
schema before its first row and again on a timer (Simple BOOTSTRAP, every 120 s by default), so
once the row's partition has a watermark ``pending_schema_timeout_s`` of TSO time past the row's
commit, the schema is not coming: the row is quarantined with a reason instead of holding its
table forever without a record.
"""

from __future__ import annotations

from ticdc_lake.events import ChangeEvent, EventStatus
from ticdc_lake.tso import physical_ms


def expired_reason(event: ChangeEvent, partition_watermark: int | None, timeout_s: int, protocol: str) -> str | None:
    """The quarantine reason if ``event`` waited too long for its schema, else None."""
    if event.status is not EventStatus.PENDING or partition_watermark is None:
        return None
    waited_ms = physical_ms(partition_watermark) - physical_ms(event.commit_ts)
    if waited_ms < timeout_s * 1000:
        return None
    unknown = event.unknown_columns
    if event.schema_version is not None:
        what = f"schema version {event.schema_version}"
    elif unknown:  # the row has columns the version it binds to lacks
        what = f"a table schema version with column(s) {', '.join(unknown)}"
    else:
        what = "a table schema to name its ENUM/SET values"
    detail = event.pending_reason
    return (
        f"{protocol}: {event.op.value if event.op else 'row'} event for {event.table_ref()} at commit ts "
        f"{event.commit_ts} (item {event.position.index}) still waits for {what} after the partition's "
        f"watermark {partition_watermark} passed it by {waited_ms / 1000:.0f} s "
        f"(policies.pending_schema_timeout_s = {timeout_s})"
        + (f"; {detail}" if detail else "")
        + ". TiCDC announces schemas with BOOTSTRAP (send-bootstrap-interval-in-sec) and DDL messages: check the "
        "changefeed's settings"
    )
