"""What TiCDC emits for a transaction that changed one key several times: its net mutation.

TiKV keeps one mutation per key per transaction, so TiCDC emits at most one row event per key
and commit TSO: a burst (insert, update, update, delete of one key in one transaction) reaches
Kafka as its net effect. :func:`net_mutations` turns the statements of a transaction into those
events, per key: the row before the transaction and the row after it give an INSERT (none
before), a DELETE (none after), an UPDATE (both) or nothing (neither). A key that moves (a
key-changing UPDATE) is a DELETE of the old key and an INSERT of the new one. DELETEs come first,
as in TiCDC's split of key-changing updates.

Transactions that touch each key once are returned unchanged, so streams without bursts keep
their exact bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ticdc_sim.column_types import Value
from ticdc_sim.model import DmlOp, RowChange

Image = Mapping[str, Value]
KeyColumns = Callable[[str, str], Sequence[str]]


def _key(change: RowChange, image: Image, key_columns: KeyColumns) -> tuple[object, ...] | None:
    columns = key_columns(change.database, change.table)
    if not columns:
        return None  # no key (multiset rows): never collapsed
    return (change.database, change.table, *(image.get(c) for c in columns))


def net_mutations(changes: Sequence[RowChange], key_columns: KeyColumns) -> list[RowChange]:
    """The row events TiCDC emits for ``changes`` (one transaction, statement order)."""
    keys: list[tuple[object, ...]] = []
    for change in changes:
        images = [change.before, change.after] if change.op is DmlOp.UPDATE else [change.before or change.after]
        touched = {_key(change, image, key_columns) for image in images if image is not None}
        keys.extend(k for k in touched if k is not None)
    if len(keys) == len(set(keys)):
        return list(changes)
    first: dict[tuple[object, ...], tuple[RowChange, Image | None]] = {}
    last: dict[tuple[object, ...], Image | None] = {}
    for change in changes:
        old = _key(change, change.before, key_columns) if change.before is not None else None
        new = _key(change, change.after, key_columns) if change.after is not None else None
        if old is None and new is None:
            return list(changes)  # a table without a key: leave the transaction as it is
        if old is not None:
            first.setdefault(old, (change, change.before))
            last[old] = None
        if new is not None:
            first.setdefault(new, (change, None))
            last[new] = change.after
    deletes, others = [], []
    for key, (change, before) in first.items():
        after = last[key]
        if before is None and after is None:
            continue
        if after is None:
            deletes.append(RowChange(DmlOp.DELETE, change.database, change.table, before=before))
        elif before is None:
            others.append(RowChange(DmlOp.INSERT, change.database, change.table, after=after))
        else:
            others.append(RowChange(DmlOp.UPDATE, change.database, change.table, before=before, after=after))
    return deletes + others
