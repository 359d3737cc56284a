"""The Spark net-change implementation agrees with the plain-Python statement of the rule."""

from __future__ import annotations

import random
from typing import Any

import pytest

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
    from decimal import Decimal

    from ticdc_lake.spark.net_change_frame import net_changes as spark_net_changes

    changes = random_changes(seed, 200)
    rows = [
        (c.op.value, c.before, c.after, Decimal(c.commit_ts), c.position[0], c.position[1], c.position[2], 0)
        for c in changes
    ]
    frame = spark.createDataFrame(
        rows,
        "op STRING, before MAP<STRING,STRING>, after MAP<STRING,STRING>, commit_ts DECIMAL(20,0), "
        "topic STRING, `partition` INT, `offset` BIGINT, idx INT",
    )
    key = ("id", "k2")
    got = {
        (r["image"]["id"], r["image"]["k2"]): (r["op"] == "D", dict(r["image"]))
        for r in spark_net_changes(frame, key).collect()
    }
    want = {k: (n.delete, n.image) for k, n in net_changes(changes, key).items()}
    assert got == want
