"""Duplicates inside a window: the keyed rule and the multiset rule (``ticdc_lake.apply.duplicates``)."""

from __future__ import annotations

from ticdc_lake.apply.duplicates import in_window, keyed_duplicates, multiset_duplicates
from ticdc_lake.apply.net_change import KeyedChange
from ticdc_lake.events import Op

A: dict[str, str | None] = {"id": "1", "v": "a"}
B: dict[str, str | None] = {"id": "1", "v": "b"}


def change(
    ts: int,
    op: Op,
    partition: int,
    offset: int,
    after: dict[str, str | None] | None,
    before: dict[str, str | None] | None = None,
) -> KeyedChange:
    return KeyedChange(ts, op, ("t", partition, offset, 0), before, after)


def test_keyed_every_repeat_of_an_identity_is_a_duplicate_in_any_partition() -> None:
    changes = [
        change(10, Op.INSERT, 0, 0, A),
        change(10, Op.INSERT, 0, 1, A),  # redelivered right after: still a duplicate with a key
        change(10, Op.INSERT, 1, 5, A),  # in another partition too
        change(20, Op.UPDATE, 0, 2, B, A),
        change(20, Op.UPDATE, 0, 3, B, None),  # no before image: another identity
        change(30, Op.UPDATE, 0, 4, B, A),  # same images, another commit TSO: not a duplicate
        change(20, Op.UPDATE, 0, 9, B, {"v": "a", "id": "1"}),  # the same image in another column order
    ]
    assert keyed_duplicates(changes) == {10: 2, 20: 1}


def test_multiset_identical_rows_of_one_copy_are_real_a_later_copy_is_not() -> None:
    changes = [
        change(10, Op.INSERT, 0, 0, A),
        change(10, Op.INSERT, 0, 1, A),  # two identical rows in one transaction: both real
        change(11, Op.INSERT, 0, 2, B),  # another transaction in between
        change(10, Op.INSERT, 0, 3, A),  # the replayed copy of 10, cut short by a crash
        change(10, Op.INSERT, 1, 0, A),  # another partition: a row of its own
    ]
    assert multiset_duplicates(changes) == {10: 1}
    assert keyed_duplicates(changes) == {10: 3}


def test_a_replay_adjacent_to_its_original_counts_as_copies_without_a_key() -> None:
    """The multiset rule's documented limit: no offset gap, no second copy (``apply.multiset``)."""
    changes = [change(10, Op.INSERT, 0, 0, A), change(10, Op.INSERT, 0, 1, A)]
    assert multiset_duplicates(changes) == {}


def test_in_window_counts_only_the_applied_part() -> None:
    by_ts = {10: 2, 20: 1, 30: 4}
    assert (in_window(by_ts, 0, 20), in_window(by_ts, 10, 30), in_window(by_ts, 30, 99)) == (3, 5, 0)
