"""Offset order (no commit TSO): the Spark net-change and multiset rules agree with the plain-Python ones."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.ticdc_lake.spark.carrier_rows import without_carrier
from tests.ticdc_lake.spark.test_multiset_frame import random_stream
from tests.ticdc_lake.spark.test_net_change_frame import random_changes
from ticdc_lake.apply.multiset import frozen, multiset_deltas
from ticdc_lake.apply.net_change import KeyedChange, net_changes

pytestmark = pytest.mark.spark

SCHEMA = (
    "op STRING, before MAP<STRING,STRING>, after MAP<STRING,STRING>, commit_ts DECIMAL(20,0), "
    "topic STRING, `partition` INT, `offset` BIGINT, idx INT"
)


def _frame(spark: Any, changes: list[KeyedChange]) -> Any:
    rows = [(c.op.value, c.before, c.after, Decimal(0), *c.position) for c in changes]
    return without_carrier(spark.createDataFrame(rows, SCHEMA))


def _without_ts(changes: list[KeyedChange]) -> list[KeyedChange]:
    return [KeyedChange(0, c.op, c.position, c.before, c.after) for c in changes]


@pytest.mark.parametrize("seed", [1, 2])
def test_net_changes_in_offset_order_match(spark: Any, seed: int) -> None:
    from ticdc_lake.spark.net_change_frame import net_changes as spark_net_changes

    changes = _without_ts(random_changes(seed, 200))
    key = ("id", "k2")
    got = {
        (r["image"]["id"], r["image"]["k2"]): (r["op"] == "D", dict(r["image"]))
        for r in spark_net_changes(_frame(spark, changes), key, offset_ordered=True).collect()
    }
    want = {k: (n.delete, n.image) for k, n in net_changes(changes, key, offset_ordered=True).items()}
    assert got == want
    assert want != {k: (n.delete, n.image) for k, n in net_changes(changes, key).items()}  # the order matters


@pytest.mark.parametrize("seed", [1, 2])
def test_multiset_without_copy_dedupe_matches(spark: Any, seed: int) -> None:
    from ticdc_lake.spark.multiset_frame import multiset_deltas as spark_deltas

    changes = _without_ts(random_stream(seed))
    got = {frozen(dict(r["image"])): r["delta"] for r in spark_deltas(_frame(spark, changes), False).collect()}
    assert got == multiset_deltas(changes, dedupe_copies=False)
    assert got
