"""The net-change rule: which event per row key survives inside one apply segment.

Order events of one key by commit TSO, then deletes before inserts and updates at the same TSO
(TiCDC splits a key-changing update into DELETE + INSERT with one commit TSO), then source
position (topic, partition, offset, index). In offset order (protocol settings without commit
TSO, ``docs/offset-ordered-apply.md``) only the source position counts: with every commit TSO 0
a "deletes first" rank would move a DELETE before an earlier INSERT of the key. The last event
wins: a delete removes the row, anything else upserts the full new image. An UPDATE whose key
changed and was not split is handled as a delete of the old key plus an insert of the new key.

The Spark apply job implements the same order with a window function (see
``ticdc_lake.spark.apply_job``); this module is the plain-Python statement of the rule, used by
unit tests and as the specification.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ticdc_lake.events import Op, RowImage

#: Rank of an operation at equal commit TSO: deletes first, so a same-TSO insert of the key wins.
OP_RANK: dict[Op, int] = {Op.DELETE: 0, Op.INSERT: 1, Op.UPDATE: 1}


@dataclass(frozen=True, slots=True)
class KeyedChange:
    """One event reduced to what the rule needs."""

    commit_ts: int
    op: Op
    #: (topic, partition, offset, index)
    position: tuple[str, int, int, int]
    before: RowImage | None
    after: RowImage | None


@dataclass(frozen=True, slots=True)
class NetChange:
    key: tuple[str | None, ...]
    #: True: the row must not exist after the segment. False: upsert ``image``.
    delete: bool
    image: RowImage


def row_key(image: RowImage, key_columns: Sequence[str]) -> tuple[str | None, ...]:
    """The key of a row image; with no key columns the whole row is the key (multiset tables)."""
    if key_columns:
        return tuple(image.get(c) for c in key_columns)
    return tuple(f"{c}={v}" for c, v in sorted(image.items()))


def split_key_changes(changes: Iterable[KeyedChange], key_columns: Sequence[str]) -> list[KeyedChange]:
    """Turn every UPDATE whose key changed into DELETE(old) + INSERT(new) at the same TSO."""
    out: list[KeyedChange] = []
    for change in changes:
        if (
            change.op is Op.UPDATE
            and change.before is not None
            and change.after is not None
            and row_key(change.before, key_columns) != row_key(change.after, key_columns)
        ):
            out.append(KeyedChange(change.commit_ts, Op.DELETE, change.position, change.before, None))
            out.append(KeyedChange(change.commit_ts, Op.INSERT, change.position, None, change.after))
        else:
            out.append(change)
    return out


def net_changes(
    changes: Iterable[KeyedChange], key_columns: Sequence[str], offset_ordered: bool = False
) -> dict[tuple[str | None, ...], NetChange]:
    """The surviving change per key, by the rule in the module docstring (``offset_ordered``: by
    source position only)."""
    latest: dict[tuple[str | None, ...], tuple[tuple[int, int, tuple[str, int, int, int]], KeyedChange]] = {}
    for change in split_key_changes(changes, key_columns):
        image = change.before if change.op is Op.DELETE else change.after
        if image is None:
            raise ValueError(f"{change.op.value} event at {change.position} has no row image")
        key = row_key(image, key_columns)
        order = (0, 0, change.position) if offset_ordered else (change.commit_ts, OP_RANK[change.op], change.position)
        if key not in latest or order > latest[key][0]:
            latest[key] = (order, change)
    result: dict[tuple[str | None, ...], NetChange] = {}
    for key, (_, change) in latest.items():
        if change.op is Op.DELETE:
            assert change.before is not None
            result[key] = NetChange(key, True, change.before)
        else:
            assert change.after is not None
            result[key] = NetChange(key, False, change.after)
    return result
