"""Topic dispatch of a simulated changefeed (TiCDC ``sink.dispatchers[].topic``).

``single``: every event goes to the one topic. ``table``: TiCDC's topic expression
``"<topic>_{schema}_{table}"`` with the simulator's ``topic`` as prefix and default topic. As
tiflow does (``cdc/sink/dmlsink/mq/dispatcher``):

* Names: ``Expression.Substitute`` replaces every character of the schema and table names outside
  ``[A-Za-z0-9._-]`` with ``_`` (the prefix must already be valid) and truncates to 249 bytes.
* Rows and BOOTSTRAPs go to their table's topic (``GetTopicForRowChange``).
* DDL (``EventRouter.GetTopicForDDL``): the topic of the table *before* the DDL when it has a
  pre-table (so RENAME TABLE goes to the OLD name's topic; the renamed table's rows then go to
  the new name's topic), else of the table after it (CREATE TABLE); schema-level DDL (CREATE /
  DROP DATABASE, no table name) to the default topic. Broadcast to every partition of that topic
  (or partition 0, per protocol), as ``mq_ddl_sink.WriteDDLEvent``.
* Watermarks (``WriteCheckpointTs`` + ``GetActiveTopics``): TiCDC sends each checkpoint to the
  topics of the tables currently replicated plus the default topic, so a dropped or renamed-away
  table's topic stops getting them. ``watermark_topics="used"`` (the default) instead keeps
  sending to every topic used so far, the default topic included; ``"active"`` is TiCDC's rule.
  Either way a table's topic joins before its first event (its CREATE TABLE, or the RENAME DDL
  that gives it the name), so no event arrives in a topic that does not get watermarks after it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ticdc_sim.model import DdlChange, TableRef

TOPIC_DISPATCH_MODES = ("single", "table")
WATERMARK_TOPIC_MODES = ("used", "active")
_KAFKA_FORBIDDEN = re.compile(r"[^a-zA-Z0-9._\-]")
_VALID_PREFIX = re.compile(r"^[A-Za-z0-9._\-]+$")
KAFKA_TOPIC_MAX_LENGTH = 249


def table_topic(prefix: str, database: str, table: str) -> str:
    """tiflow ``Expression("<prefix>_{schema}_{table}").Substitute(database, table)``."""
    name = f"{prefix}_{_KAFKA_FORBIDDEN.sub('_', database)}_{_KAFKA_FORBIDDEN.sub('_', table)}"
    return name[:KAFKA_TOPIC_MAX_LENGTH]


class TopicRouter:
    """Which topic each event goes to, and the topics used so far (see the module docstring)."""

    def __init__(self, default_topic: str, mode: str = "single", watermark_topics: str = "used") -> None:
        if mode not in TOPIC_DISPATCH_MODES:
            raise ValueError(f"topic_dispatch must be one of {TOPIC_DISPATCH_MODES}, not {mode!r}")
        if watermark_topics not in WATERMARK_TOPIC_MODES:
            raise ValueError(f"watermark_topics must be one of {WATERMARK_TOPIC_MODES}, not {watermark_topics!r}")
        if mode == "table" and not _VALID_PREFIX.match(default_topic):
            raise ValueError(
                f"topic {default_topic!r}: with topic_dispatch='table' the topic is the prefix of TiCDC's topic "
                "expression and may only hold [A-Za-z0-9._-]"
            )
        self.default_topic = default_topic
        self.mode = mode
        self.watermark_mode = watermark_topics
        self._used: dict[str, None] = {default_topic: None}

    @property
    def topics(self) -> list[str]:
        """Every topic used so far, sorted (the default topic always: it gets watermarks)."""
        return sorted(self._used)

    def topic_of(self, database: str, table: str) -> str:
        if self.mode == "single":
            return self.default_topic
        return table_topic(self.default_topic, database, table)

    def topic_for_ddl(self, ddl: DdlChange) -> str:
        for schema in (ddl.pre_table_schema, ddl.table_schema):
            if schema is not None:
                return self.topic_of(schema.database, schema.table) if schema.table else self.default_topic
        return self.topic_of(ddl.database, ddl.table) if ddl.table else self.default_topic

    def use(self, topic: str) -> None:
        self._used.setdefault(topic, None)

    def use_tables(self, tables: Iterable[TableRef]) -> None:
        for database, table in tables:
            self.use(self.topic_of(database, table))

    def watermark_targets(self, live_tables: Iterable[TableRef]) -> list[str]:
        """The topics a checkpoint goes to, sorted."""
        if self.watermark_mode == "used" or self.mode == "single":
            return self.topics
        return sorted({self.default_topic, *(self.topic_of(*ref) for ref in live_tables)})
