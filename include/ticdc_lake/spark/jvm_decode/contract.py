"""What a JVM decoder takes and returns (``registry.JvmDecoder``)."""

from __future__ import annotations

#: One event a JVM decoder returns (an element of its ``events`` column); the other columns of
#: ``change_events`` are the message's position and the run's constants.
EVENT_STRUCT = (
    "STRUCT<idx: INT, kind: STRING, commit_ts: DECIMAL(20,0), database: STRING, table: STRING, table_id: BIGINT, "
    "op: STRING, schema_version: DECIMAL(20,0), before: MAP<STRING, STRING>, after: MAP<STRING, STRING>>"
)
#: Columns of a landed message frame (``frames.landed_messages``), the input of a JVM decoder.
MESSAGE_COLUMNS = ("batch_id", "topic", "partition", "offset", "timestamp", "key", "value", "headers")
