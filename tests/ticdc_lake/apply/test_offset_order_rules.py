"""Offset order in the plain-Python rules: position alone orders a key's events; keyless events count once."""

from __future__ import annotations

from ticdc_lake.apply.multiset import frozen, multiset_deltas
from ticdc_lake.apply.net_change import KeyedChange, net_changes
from ticdc_lake.events import Op, RowImage


def test_insert_then_delete_of_one_key_deletes_it() -> None:
    row: RowImage = {"id": "1", "v": "a"}
    changes = [
        KeyedChange(0, Op.INSERT, ("t", 0, 5, 0), None, row),
        KeyedChange(0, Op.DELETE, ("t", 0, 6, 0), row, None),
    ]
    assert net_changes(changes, ["id"], offset_ordered=True)[("1",)].delete is True
    # The TSO rule with every commit TSO 0 puts the delete first: the row would survive.
    assert net_changes(changes, ["id"])[("1",)].delete is False


def test_delete_then_insert_keeps_the_insert() -> None:
    old: RowImage = {"id": "1", "v": "a"}
    new: RowImage = {"id": "1", "v": "b"}
    changes = [
        KeyedChange(0, Op.DELETE, ("t", 0, 1, 0), old, None),
        KeyedChange(0, Op.INSERT, ("t", 0, 2, 0), None, new),
    ]
    result = net_changes(changes, ["id"], offset_ordered=True)[("1",)]
    assert (result.delete, result.image) == (False, new)


def test_keyless_events_count_once_each() -> None:
    row: RowImage = {"msg": "x"}
    changes = [KeyedChange(0, Op.INSERT, ("t", 0, o, 0), None, row) for o in (1, 2, 4)]
    assert multiset_deltas(changes, dedupe_copies=False) == {frozen(row): 3}
    assert multiset_deltas(changes) == {frozen(row): 2}  # copies by offset gap: (1, 2) and (4)
