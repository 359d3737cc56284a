"""What a JVM decoder takes and returns (``registry.JvmDecoder``)."""

from __future__ import annotations

#: Columns of a landed message frame (``frames.landed_messages``), the input of a JVM decoder.
MESSAGE_COLUMNS = ("batch_id", "topic", "partition", "offset", "timestamp", "key", "value", "headers")
#: The event columns a JVM decoder adds to the messages, as ``change_events`` has them: one event per
#: message, ``kind`` NULL where the message is left to the Python decoders. A decoder adds these ...
EVENT_COLUMNS = (
    ("idx", "INT"),
    ("kind", "STRING"),
    ("commit_ts", "DECIMAL(20,0)"),
    ("database", "STRING"),
    ("table", "STRING"),
    ("table_id", "BIGINT"),
    ("op", "STRING"),
    ("schema_version", "DECIMAL(20,0)"),
)
#: ... and either the row images as maps of canonical text (the workers then add the typed record
#: carrier, as for the Python decoders' events) ...
IMAGE_COLUMNS = (("before", "MAP<STRING, STRING>"), ("after", "MAP<STRING, STRING>"))
#: ... or the typed record carrier itself (``system_tables.CARRIER_SQL``), its untyped entries as the
#: text of a JSON object (``{"column": text or null, ...}`` in column order): a ``MAP`` column costs the
#: hand-over to the workers about 2 CPU µs a message even where it is NULL (docs/jvm-decoder.md).
CARRIER_COLUMNS = (
    ("before_record", "BINARY"),
    ("after_record", "BINARY"),
    ("before_untyped_json", "STRING"),
    ("after_untyped_json", "STRING"),
    ("before_key", "ARRAY<STRING>"),
    ("after_key", "ARRAY<STRING>"),
    ("record_layout", "BIGINT"),
)
#: Suffix of a carrier column sent as JSON text.
JSON_SUFFIX = "_json"
