"""The net-change rule, stated on plain Python events."""

from __future__ import annotations

import pytest

from ticdc_lake.apply.net_change import KeyedChange, NetChange, net_changes, row_key, split_key_changes
from ticdc_lake.events import Op

KEY = ("id",)


def change(
    ts: int,
    op: Op,
    offset: int,
    before: dict[str, str | None] | None,
    after: dict[str, str | None] | None,
    partition: int = 0,
) -> KeyedChange:
    return KeyedChange(ts, op, ("t", partition, offset, 0), before, after)


def test_last_event_per_key_wins_by_commit_ts_not_arrival() -> None:
    changes = [
        change(20, Op.UPDATE, 1, {"id": "1", "v": "a"}, {"id": "1", "v": "b"}),
        change(10, Op.INSERT, 2, None, {"id": "1", "v": "a"}),  # older, arrived later
    ]
    assert net_changes(changes, KEY) == {("1",): NetChange(("1",), False, {"id": "1", "v": "b"})}


def test_delete_then_insert_at_same_ts_keeps_the_insert_whatever_the_order() -> None:
    insert = change(30, Op.INSERT, 1, None, {"id": "7", "v": "new"}, partition=0)
    delete = change(30, Op.DELETE, 9, {"id": "7", "v": "old"}, None, partition=1)
    for order in ([insert, delete], [delete, insert]):
        assert net_changes(order, KEY)[("7",)] == NetChange(("7",), False, {"id": "7", "v": "new"})


def test_delete_is_final_when_newest() -> None:
    changes = [
        change(1, Op.INSERT, 0, None, {"id": "1", "v": "a"}),
        change(2, Op.DELETE, 1, {"id": "1", "v": "a"}, None),
    ]
    assert net_changes(changes, KEY) == {("1",): NetChange(("1",), True, {"id": "1", "v": "a"})}


def test_unsplit_key_change_becomes_delete_old_and_insert_new() -> None:
    update = change(5, Op.UPDATE, 3, {"id": "1", "v": "a"}, {"id": "2", "v": "a"})
    assert [c.op for c in split_key_changes([update], KEY)] == [Op.DELETE, Op.INSERT]
    assert net_changes([update], KEY) == {
        ("1",): NetChange(("1",), True, {"id": "1", "v": "a"}),
        ("2",): NetChange(("2",), False, {"id": "2", "v": "a"}),
    }


def test_swap_of_two_keys_in_one_transaction() -> None:
    # TiCDC splits both updates: DELETE 1, DELETE 2, INSERT 1, INSERT 2 at one commit ts.
    changes = [
        change(9, Op.DELETE, 1, {"id": "1", "v": "x"}, None),
        change(9, Op.DELETE, 2, {"id": "2", "v": "y"}, None),
        change(9, Op.INSERT, 3, None, {"id": "1", "v": "y"}),
        change(9, Op.INSERT, 4, None, {"id": "2", "v": "x"}),
    ]
    result = net_changes(changes, KEY)
    assert result[("1",)] == NetChange(("1",), False, {"id": "1", "v": "y"})
    assert result[("2",)] == NetChange(("2",), False, {"id": "2", "v": "x"})


def test_replayed_duplicates_collapse() -> None:
    first = change(4, Op.INSERT, 10, None, {"id": "3", "v": "z"})
    replay = change(4, Op.INSERT, 55, None, {"id": "3", "v": "z"})
    assert net_changes([first, replay], KEY) == {("3",): NetChange(("3",), False, {"id": "3", "v": "z"})}


def test_tables_without_key_use_the_whole_row() -> None:
    assert row_key({"b": "2", "a": None}, ()) == ("a=None", "b=2")
    update = change(1, Op.UPDATE, 0, {"a": "1"}, {"a": "2"})
    assert set(net_changes([update], ())) == {("a=1",), ("a=2",)}


def test_event_without_image_is_rejected() -> None:
    with pytest.raises(ValueError, match="D event at"):
        net_changes([change(1, Op.DELETE, 0, None, None)], KEY)
