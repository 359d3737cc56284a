"""The Spark net-change implementation agrees with the plain-Python statement of the rule."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import pytest

from tests.ticdc_lake.spark.carrier_rows import without_carrier
from ticdc_lake.apply.net_change import KeyedChange, net_changes
from ticdc_lake.events import Op

pytestmark = pytest.mark.spark


def random_changes(seed: int, count: int) -> list[KeyedChange]:
    rng = random.Random(seed)
    changes = []
    for offset in range(count):
        ts = rng.randint(1, 12)
        op = rng.choice([Op.INSERT, Op.UPDATE, Op.DELETE])
        a: dict[str, str | None] = {
            "id": str(rng.randint(1, 6)),
            "k2": rng.choice(["x", "y"]),
            "v": str(rng.randint(0, 99)),
        }
        b: dict[str, str | None] = {
            "id": str(rng.randint(1, 6)),
            "k2": rng.choice(["x", "y"]),
            "v": str(rng.randint(0, 99)),
        }
        before = None if op is Op.INSERT else a
        after = None if op is Op.DELETE else (b if rng.random() < 0.3 else {**a, "v": b["v"]})
        changes.append(KeyedChange(ts, op, ("t", rng.randint(0, 2), offset, 0), before, after))
    return changes


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_spark_matches_python(spark: Any, seed: int) -> None:
    from ticdc_lake.spark.net_change_frame import net_changes as spark_net_changes

    changes = random_changes(seed, 200)
    rows = [
        (c.op.value, c.before, c.after, Decimal(c.commit_ts), c.position[0], c.position[1], c.position[2], 0)
        for c in changes
    ]
    frame = without_carrier(
        spark.createDataFrame(
            rows,
            "op STRING, before MAP<STRING,STRING>, after MAP<STRING,STRING>, commit_ts DECIMAL(20,0), "
            "topic STRING, `partition` INT, `offset` BIGINT, idx INT",
        )
    )
    key = ("id", "k2")
    got = {
        (r["image"]["id"], r["image"]["k2"]): (r["op"] == "D", dict(r["image"]))
        for r in spark_net_changes(frame, key).collect()
    }
    want = {k: (n.delete, n.image) for k, n in net_changes(changes, key).items()}
    assert got == want


def test_grouped_by_table_matches_python_per_table(spark: Any) -> None:
    """Two tables with different keys (the same column names, so only the grouping keeps them
    apart) in one grouped job give, per table, what the rule gives for that table alone."""

    from ticdc_lake.spark.net_change_frame import net_changes_by_table

    keys = {("shop", "a"): ("id", "k2"), ("shop", "b"): ("id",)}
    changes = {("shop", "a"): random_changes(4, 200), ("shop", "b"): random_changes(5, 200)}
    frame = _events_of(spark, changes)
    got: dict[tuple[str, str], dict[tuple[str | None, ...], tuple[bool, dict[str, str | None]]]] = {}
    for r in net_changes_by_table(frame, keys).collect():
        key = tuple(r["image"][k] for k in keys[(r["database"], r["table"])])
        got.setdefault((r["database"], r["table"]), {})[key] = (r["op"] == "D", dict(r["image"]))
    want = {
        name: {k: (n.delete, n.image) for k, n in net_changes(changes[name], key).items()} for name, key in keys.items()
    }
    assert got == want
    assert len(got[("shop", "b")]) == 6  # keyed by id alone: the six ids


def test_duplicates_come_with_the_grouped_net_changes_as_the_keyed_rule_counts_them(spark: Any) -> None:
    """``net_changes_and_duplicates``: the winners are :func:`net_changes_by_table`'s rows, and per
    table and commit TSO the ``duplicate`` rows are what ``apply.duplicates.keyed_duplicates``
    counts: redelivered copies (same commit TSO, op and images at a later offset or in another
    partition, key-changing updates among them) and a copy at the very same position."""
    from dataclasses import replace

    from ticdc_lake.apply.duplicates import keyed_duplicates
    from ticdc_lake.spark.net_change_frame import net_changes_and_duplicates, net_changes_by_table

    keys = {("shop", "a"): ("id", "k2"), ("shop", "b"): ("id",)}
    changes = {}
    for seed, name in ((6, ("shop", "a")), (7, ("shop", "b"))):
        first = random_changes(seed, 150)
        again = [replace(c, position=("t", c.position[1], c.position[2] + 1000, 0)) for c in first[::7]]
        moved = [replace(c, position=("t", 3, c.position[2], 0)) for c in first[3::11]]
        changes[name] = [*first, *again, *moved, first[5]]  # first[5] twice at one position
    frame = _events_of(spark, changes)
    found = net_changes_and_duplicates(frame, keys).collect()
    got: dict[tuple[str, str], dict[int, int]] = {}
    for r in found:
        if r["duplicate"]:
            per_ts = got.setdefault((r["database"], r["table"]), {})
            per_ts[int(r["commit_ts"])] = per_ts.get(int(r["commit_ts"]), 0) + 1
    want = {name: keyed_duplicates(table_changes) for name, table_changes in changes.items()}
    assert got == want
    # 22 + 14 + 1 injected copies each, and one repeat that chance put into seed 6's changes
    assert [sum(want[name].values()) for name in keys] == [38, 37]
    winners = sorted(
        (r["database"], r["table"], r["op"], sorted(r["image"].items()), int(r["commit_ts"]))
        for r in found
        if r["winner"]
    )
    assert [r["image"] for r in found if not r["winner"]] == [None] * (len(found) - len(winners))
    grouped = sorted(
        (r["database"], r["table"], r["op"], sorted(r["image"].items()), int(r["commit_ts"]))
        for r in net_changes_by_table(frame, keys).collect()
    )
    assert winners == grouped


def _events_of(spark: Any, changes: Mapping[tuple[str, str], Sequence[KeyedChange]]) -> Any:
    """The changes of tables of database ``shop`` as ``change_events`` rows (database, table, op,
    images, commit TSO, source position)."""
    rows = [
        ("shop", t, c.op.value, c.before, c.after, Decimal(c.commit_ts), c.position[0], c.position[1], c.position[2], 0)
        for (_, t), table_changes in changes.items()
        for c in table_changes
    ]
    return without_carrier(
        spark.createDataFrame(
            rows,
            "database STRING, table STRING, op STRING, before MAP<STRING,STRING>, after MAP<STRING,STRING>, "
            "commit_ts DECIMAL(20,0), topic STRING, `partition` INT, `offset` BIGINT, idx INT",
        )
    )
