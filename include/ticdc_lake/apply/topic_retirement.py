"""Topics TiCDC has stopped writing to no longer hold the pipeline's watermark back.

TiCDC sends each checkpoint (WATERMARK) only to its *active* topics: the default topic and the
topics of tables that exist now (tiflow ``GetActiveTopics``). With one topic per table (the topic
dispatcher), a dropped or renamed-away table's topic therefore never gets another watermark, and a
pipeline watermark taken as the lowest over all topics would stop for good.

A topic is *retired* when every table name seen in it has left it: a DROP TABLE of that name, a
RENAME away from it (TiCDC routes a RENAME to the old name's topic), or a DROP DATABASE of its
database, with no event of the name after that. TiCDC sends a DDL only after every row before it,
so once the leaving DDL is landed the topic holds nothing more up to it, and apply leaves the
topic out of the minimum. A name that comes back (CREATE again) sends events again and the topic
is active again. A topic with no table name in it is never retired (no evidence).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Name = tuple[str, str]


@dataclass(frozen=True, slots=True)
class NameActivity:
    """The newest commit TSO of any event of a table name in a topic (its rows and DDL)."""

    topic: str
    name: Name
    last_ts: int


@dataclass(frozen=True, slots=True)
class Departure:
    """A table name left a topic at a commit TSO (DROP TABLE, or RENAME away)."""

    topic: str
    name: Name
    commit_ts: int


def retired_topics(
    candidates: Iterable[str],
    activity: Iterable[NameActivity],
    departures: Iterable[Departure],
    database_drops: Mapping[str, int],
) -> dict[str, int]:
    """For each candidate topic that is retired, the TSO of the last departure."""
    seen: dict[str, dict[Name, int]] = {}
    for a in activity:
        names = seen.setdefault(a.topic, {})
        names[a.name] = max(a.last_ts, names.get(a.name, 0))
    left: dict[str, dict[Name, int]] = {}
    for d in departures:
        names = left.setdefault(d.topic, {})
        names[d.name] = max(d.commit_ts, names.get(d.name, 0))
        seen.setdefault(d.topic, {}).setdefault(d.name, d.commit_ts)
    result: dict[str, int] = {}
    for topic in candidates:
        names = seen.get(topic, {})
        if not names:
            continue
        leaves = []
        for name, last in names.items():
            leave = max(left.get(topic, {}).get(name, 0), database_drops.get(name[0], 0))
            if leave == 0 or last > leave:
                break
            leaves.append(leave)
        else:
            result[topic] = max(leaves)
    return result
