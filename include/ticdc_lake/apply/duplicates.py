"""Which row events inside a run's window are duplicates: the plain-Python statement of the rule.

A replay is an event at or below the table's applied position (``replays_skipped``). A duplicate is
a READY row event *above* the position that repeats an earlier-offset one (at-least-once
redelivery): the net change absorbs it, and the ledger counts it (``duplicates_skipped``).

- Tables with a key: an event's identity is (commit TSO, op, before image, after image); every
  event beyond the first of an identity is a duplicate, whatever its partition. One transaction
  never holds two identical changes of one keyed row, so this is exact.
- Tables without a key (multisets): identical rows of one transaction are real copies, so the
  multiset rule decides (``ticdc_lake.apply.multiset``): per partition and transaction, an event
  counts as many times as in its largest copy, the rest are duplicates.

Both are counted per commit TSO, so a run counts only the duplicates of the part of its window it
applied (a held table counts the rest when it applies them). The Spark apply computes the same
numbers (``ticdc_lake.spark.table_apply.prepare_windows``, ``ticdc_lake.spark.multiset_frame``);
the offset-ordered apply has no transaction identity and counts none. The Spark job hashes the
images in the decoder's column order rather than sorted (docs/exactly-once.md, "Replays and
duplicates"): every copy of a message decodes to the same order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from ticdc_lake.apply.multiset import Image, copies, frozen
from ticdc_lake.apply.net_change import KeyedChange

Identity = tuple[int, str, Image | None, Image | None]


def identity(change: KeyedChange) -> Identity:
    return (
        change.commit_ts,
        change.op.value,
        frozen(change.before) if change.before is not None else None,
        frozen(change.after) if change.after is not None else None,
    )


def keyed_duplicates(changes: Iterable[KeyedChange]) -> dict[int, int]:
    """Per commit TSO, the events of a keyed table that repeat an earlier one (only TSOs with some)."""
    seen = Counter(identity(c) for c in changes)
    result: Counter[int] = Counter()
    for (commit_ts, *_), n in seen.items():
        if n > 1:
            result[commit_ts] += n - 1
    return dict(result)


def multiset_duplicates(changes: Iterable[KeyedChange]) -> dict[int, int]:
    """Per commit TSO, the events of a keyless table the multiset rule does not count."""
    groups: dict[tuple[str, int, int], list[KeyedChange]] = {}
    for change in changes:
        groups.setdefault((change.position[0], change.position[1], change.commit_ts), []).append(change)
    result: Counter[int] = Counter()
    for (_, _, commit_ts), events in groups.items():
        largest: Counter[Identity] = Counter()
        for copy in copies(events):
            for key, n in Counter(identity(c) for c in copy).items():
                largest[key] = max(largest[key], n)
        extra = len(events) - sum(largest.values())
        if extra:
            result[commit_ts] += extra
    return dict(result)


def in_window(by_ts: Mapping[int, int], start: int, end: int) -> int:
    """The duplicates with ``start < commit_ts <= end``."""
    return sum(n for ts, n in by_ts.items() if start < ts <= end)
