"""The multiset rule for tables without a key: counted copies, replays counted once."""

from __future__ import annotations

from collections import Counter

from ticdc_lake.apply.multiset import apply_deltas, copies, frozen, multiset_deltas
from ticdc_lake.apply.net_change import KeyedChange
from ticdc_lake.events import Op, RowImage

A: RowImage = {"msg": "a", "n": "1"}
B: RowImage = {"msg": "b", "n": "2"}
B3: RowImage = {"msg": "b", "n": "3"}


def change(
    ts: int, op: Op, offset: int, before: RowImage | None = None, after: RowImage | None = None, partition: int = 0
) -> KeyedChange:
    return KeyedChange(ts, op, ("t", partition, offset, 0), before, after)


def test_identical_rows_in_one_transaction_are_two_copies() -> None:
    deltas = multiset_deltas([change(10, Op.INSERT, 0, after=A), change(10, Op.INSERT, 1, after=A)])
    assert deltas == {frozen(A): 2}


def test_a_replayed_transaction_counts_once_and_a_cut_first_copy_does_not_add() -> None:
    original = [change(10, Op.INSERT, 0, after=A), change(10, Op.INSERT, 1, after=A), change(10, Op.INSERT, 2, after=B)]
    cut_short = [change(10, Op.INSERT, 0, after=A)]  # a crash after the first event
    replay = [change(10, Op.INSERT, 7, after=A), change(10, Op.INSERT, 8, after=A), change(10, Op.INSERT, 9, after=B)]
    assert multiset_deltas(original + replay) == {frozen(A): 2, frozen(B): 1}
    assert multiset_deltas(cut_short + replay) == {frozen(A): 2, frozen(B): 1}
    assert len(copies(original + replay)) == 2


def test_update_moves_one_copy_and_delete_removes_one() -> None:
    events = [
        change(10, Op.INSERT, 0, after=A),
        change(10, Op.INSERT, 1, after=A),
        change(10, Op.INSERT, 2, after=B),
        change(20, Op.DELETE, 3, before=A),
        change(20, Op.UPDATE, 4, before=B, after=B3),
    ]
    table = apply_deltas(Counter(), multiset_deltas(events))
    assert table == Counter({frozen(A): 1, frozen(B3): 1})


def test_partitions_hold_different_rows_and_add_up() -> None:
    events = [change(10, Op.INSERT, 0, after=A, partition=0), change(10, Op.INSERT, 0, after=A, partition=1)]
    assert multiset_deltas(events) == {frozen(A): 2}


def test_removing_a_copy_that_is_not_there_leaves_none() -> None:
    assert apply_deltas(Counter({frozen(A): 1}), {frozen(A): -3, frozen(B): 1}) == Counter({frozen(B): 1})
