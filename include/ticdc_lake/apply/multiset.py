"""Tables without a key (TiCDC ``force-replicate``): rows are a multiset, changes are counted.

Such a table can hold identical rows, so the net-change rule (last event per key wins) does not
apply: an INSERT adds one copy of its image, a DELETE removes one copy of its before image, an
UPDATE does both. These commute, so a segment's effect is one signed count per distinct image.

At-least-once delivery makes the count ambiguous: a replayed transaction looks like the same rows
inserted again. The rule used here: within one topic partition, the events of one transaction
(commit TSO) sent together are one *copy*, and a copy ends where another message of the partition
sits between two of its events (a Kafka offset gap). A transaction sent twice (a replay) has two
copies; each distinct event counts as many times as in its largest copy (a crash can cut the first
copy short). Events in different partitions (index-value dispatch) are different rows and add up.

This is exact unless a replay of a transaction directly follows its original in the partition with
nothing in between, which then counts its rows twice: TiCDC itself documents that tables without a
valid index can get duplicate rows after a changefeed restart (``docs/apply.md``).

In offset order (protocol settings without commit TSO) there is no transaction identity, so
``dedupe_copies=False`` counts every event once: a replayed suffix is applied again in order,
which TiCDC's own consumers do too (``docs/offset-ordered-apply.md``).

The Spark apply job implements the same rule (``ticdc_lake.spark.multiset_frame``); this module is
the plain-Python statement of it, used by unit tests and as the specification.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from ticdc_lake.apply.net_change import KeyedChange
from ticdc_lake.events import Op

#: A row image as a hashable value: its (column, canonical text) pairs, sorted.
Image = tuple[tuple[str, str | None], ...]


def frozen(image: Mapping[str, str | None]) -> Image:
    return tuple(sorted(image.items()))


def copies(changes: list[KeyedChange]) -> list[list[KeyedChange]]:
    """Split one transaction's events of one partition (any order) into copies, by offset gaps."""
    ordered = sorted(changes, key=lambda c: (c.position[2], c.position[3]))
    result: list[list[KeyedChange]] = []
    previous: int | None = None
    for change in ordered:
        offset = change.position[2]
        if previous is None or offset > previous + 1:
            result.append([])
        result[-1].append(change)
        previous = offset
    return result


def _identity(change: KeyedChange) -> tuple[str, Image | None, Image | None]:
    return (
        change.op.value,
        frozen(change.before) if change.before is not None else None,
        frozen(change.after) if change.after is not None else None,
    )


def multiset_deltas(changes: Iterable[KeyedChange], dedupe_copies: bool = True) -> dict[Image, int]:
    """Signed number of copies each distinct row image gains (+) or loses (-) in the segment.

    ``dedupe_copies=False``: every event counts once (offset order: no transaction identity).
    """
    groups: dict[tuple[str, int, int], list[KeyedChange]] = {}
    for number, change in enumerate(changes):
        # Without deduplication each event is its own group, counted once.
        group = change.commit_ts if dedupe_copies else number
        groups.setdefault((change.position[0], change.position[1], group), []).append(change)
    deltas: Counter[Image] = Counter()
    for events in groups.values():
        times: Counter[tuple[str, Image | None, Image | None]] = Counter()
        for copy in copies(events):
            for identity, count in Counter(_identity(c) for c in copy).items():
                times[identity] = max(times[identity], count)
        for (op, before, after), count in times.items():
            if op in (Op.DELETE.value, Op.UPDATE.value) and before is not None:
                deltas[before] -= count
            if op in (Op.INSERT.value, Op.UPDATE.value) and after is not None:
                deltas[after] += count
    return {image: delta for image, delta in deltas.items() if delta != 0}


def apply_deltas(current: Counter[Image], deltas: dict[Image, int]) -> Counter[Image]:
    """The table after the segment: counts never go below zero (a copy that is not there stays gone)."""
    result = Counter(current)
    for image, delta in deltas.items():
        result[image] = max(result[image] + delta, 0)
    return +result
