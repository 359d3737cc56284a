"""The Spark net-change implementation agrees with the plain-Python statement of the rule."""

from __future__ import annotations

import json
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


KEY = ("id", "k2")


def _carrying_key_texts(spark: Any, changes: Mapping[tuple[str, str], Sequence[KeyedChange]]) -> Any:
    """``change_events`` rows whose key texts (``*_key``) are each image's, as decode writes them,
    but whose maps, in rows of schema version 1 (odd offsets), hold a wrong key: only a row keyed
    by its key texts is keyed right. Each record is the true image as JSON (opaque bytes to the
    rule), so the winners can be told apart, also those that leave their maps behind."""
    from pyspark.sql import functions as F

    def side(image: Mapping[str, str | None] | None, version: int) -> tuple[Any, ...]:
        if image is None:
            return None, None, None
        true = [image[k] for k in KEY]
        shown = {**image, **dict.fromkeys(KEY, "?")} if version == 1 else dict(image)
        return shown, json.dumps(image, sort_keys=True).encode(), true

    rows: list[tuple[Any, ...]] = []
    for (_, t), table_changes in changes.items():
        for c in table_changes:
            version = 1 if c.position[2] % 2 else 2
            (before, before_record, before_key), (after, after_record, after_key) = (
                side(c.before, version),
                side(c.after, version),
            )
            event = ("shop", t, c.op.value, before, after, Decimal(c.commit_ts), *c.position[:3], 0, Decimal(version))
            rows.append((*event, before_record, after_record, before_key, after_key))
    return spark.createDataFrame(
        rows,
        "database STRING, table STRING, op STRING, before MAP<STRING,STRING>, after MAP<STRING,STRING>, "
        "commit_ts DECIMAL(20,0), topic STRING, `partition` INT, `offset` BIGINT, idx INT, "
        "schema_version DECIMAL(20,0), before_record BINARY, after_record BINARY, "
        "before_key ARRAY<STRING>, after_key ARRAY<STRING>",
    ).withColumns({side: F.lit(None).cast("map<string,string>") for side in ("before_untyped", "after_untyped")})


def _keyed_by_record(rows: Sequence[Any]) -> dict[tuple[str, ...], tuple[bool, dict[str, str | None]]]:
    """Winners by the true key their record holds, each with the true image its record holds."""
    found = {}
    for r in rows:
        true = json.loads(bytes(r["record"]).decode())
        found[tuple(true[k] for k in KEY)] = (r["op"] == "D", true)
    return found


def _wrong_keys(rows: Sequence[Any]) -> int:
    """Winners that kept a map holding the wrong key (``_carrying_key_texts``)."""
    return sum(r["image"] is not None and r["image"]["id"] == "?" for r in rows)


def test_rows_of_versions_with_the_key_are_keyed_by_the_key_texts_they_carry(spark: Any) -> None:
    """A row whose version has the segment's key is keyed by the key texts decode wrote beside its
    record, not by its map; a version not named keeps the map lookup (here: the wrong key)."""
    from ticdc_lake.spark.net_change_frame import net_changes as spark_net_changes

    changes = random_changes(8, 200)
    frame = _carrying_key_texts(spark, {("shop", "a"): changes})
    want = {k: (n.delete, n.image) for k, n in net_changes(changes, KEY).items()}
    by_texts = spark_net_changes(frame, KEY, key_versions=[1, 2]).collect()
    assert _keyed_by_record(by_texts) == want
    # Keyed by their texts, the winners carry their records, not their maps.
    assert [r["image"] for r in by_texts] == [None] * len(want)
    # Version 1 left to its maps: its rows all have the key ('?', '?'), and keep their maps.
    by_map = spark_net_changes(frame, KEY, key_versions=[2]).collect()
    assert _wrong_keys(by_map) == 1
    assert _keyed_by_record(by_map) != want


def test_grouped_tables_named_are_keyed_by_the_key_texts_they_carry(spark: Any) -> None:
    """``net_changes_and_duplicates``: the tables in ``texts_of`` are keyed by their rows' key texts,
    the others by their maps, in one job."""
    from ticdc_lake.spark.net_change_frame import net_changes_by_table

    changes = {("shop", "a"): random_changes(9, 200), ("shop", "b"): random_changes(10, 200)}
    frame = _carrying_key_texts(spark, changes)
    found = net_changes_by_table(frame, dict.fromkeys(changes, KEY), texts_of=[("shop", "a")]).collect()
    want = {k: (n.delete, n.image) for k, n in net_changes(changes[("shop", "a")], KEY).items()}
    by_texts = [r for r in found if r["table"] == "a"]
    assert _keyed_by_record(by_texts) == want
    assert [r["image"] for r in by_texts] == [None] * len(want)
    by_maps = [r for r in found if r["table"] == "b"]
    assert _wrong_keys(by_maps) == 1
    assert _keyed_by_record(by_maps) != {
        k: (n.delete, n.image) for k, n in net_changes(changes[("shop", "b")], KEY).items()
    }
