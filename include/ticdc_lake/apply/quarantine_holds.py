"""What quarantined messages hold back under ``policies.on_decode_error: halt`` (docs/design.md, Decode).

A message that could not be decoded stops only what it can affect. A watermark W in a partition
means every event with commit TSO <= W was sent before it, so a table whose message at offset o
was lost is exact up to the last watermark before o in that partition: the table is held there
while the rest of the pipeline advances. When the message does not tell its table (garbage
bytes, a database DDL, a batch of several tables), any table of its topic may have lost a change:
every table of the topic is held at that watermark. Several messages hold at the lowest position.

Pure: the Spark side (:mod:`ticdc_lake.spark.quarantine_holds`) reads the rows and the watermarks.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

Name = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Quarantined:
    """One quarantined message (status QUARANTINED) and the watermark before it in its partition."""

    topic: str
    partition: int
    offset: int
    database: str | None
    table: str | None
    reason: str
    #: The highest watermark commit TSO at a lower offset of the partition; None when there is none.
    watermark_before: int | None


@dataclass(frozen=True, slots=True)
class Hold:
    #: The table may be applied up to this commit TSO, not beyond.
    position: int
    #: The ledger message: which message, why, and what to do.
    reason: str
    #: The topic of the (first) message: where a held table's watermark comes from.
    topic: str


@dataclass(slots=True)
class Holds:
    tables: dict[Name, Hold] = field(default_factory=dict)
    #: Holds of every table of a topic (messages that do not tell their table).
    topics: dict[str, Hold] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.tables or self.topics)

    def for_table(self, database: str, table: str, topic: str | None) -> Hold | None:
        """The hold of a table of ``topic``: the lower of its own and its topic's."""
        found = [h for h in (self.tables.get((database, table)), self.topics.get(topic or "")) if h is not None]
        return min(found, key=lambda h: h.position) if found else None


def watermark_before(marks: Sequence[tuple[int, int]], offset: int) -> int | None:
    """The highest watermark TSO among ``marks`` ((offset, commit TSO), sorted by offset) below ``offset``."""
    below = marks[: bisect_left(marks, (offset, -1))]
    return max((ts for _, ts in below), default=None)


def compute_holds(rows: Iterable[Quarantined], config_file: str) -> Holds:
    """The holds of the quarantined messages ``rows``; ``config_file`` is named in the advice."""
    by_table: dict[Name, list[Quarantined]] = {}
    by_topic: dict[str, list[Quarantined]] = {}
    for row in rows:
        if row.database is not None and row.table is not None:
            by_table.setdefault((row.database, row.table), []).append(row)
        else:
            by_topic.setdefault(row.topic, []).append(row)
    holds = Holds()
    for name, found in by_table.items():
        holds.tables[name] = _hold(found, f"table {name[0]}.{name[1]}", config_file)
    for topic, found in by_topic.items():
        holds.topics[topic] = _hold(
            found, f"every table of topic {topic!r} (the message does not tell its table)", config_file
        )
    return holds


def _hold(rows: list[Quarantined], what: str, config_file: str) -> Hold:
    first = min(rows, key=lambda r: (r.watermark_before or 0, r.topic, r.partition, r.offset))
    position = first.watermark_before or 0
    at = (
        f"commit ts {position}, the last watermark before it in its partition"
        if first.watermark_before is not None
        else "its applied position (no watermark before the message in its partition)"
    )
    more = f" (and {len(rows) - 1} more quarantined message(s))" if len(rows) > 1 else ""
    reason = (
        f"held: the message at topic {first.topic!r} partition {first.partition} offset {first.offset} could not be "
        f"decoded ({first.reason}){more}; {what} is held at {at}. Fix the producer and re-decode, or set "
        f"policies.on_decode_error: skip for this pipeline in {config_file} to record it as skipped and go on"
    )
    return Hold(position, reason, first.topic)
