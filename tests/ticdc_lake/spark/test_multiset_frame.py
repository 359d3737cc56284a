"""The Spark multiset rule agrees with the plain-Python statement, replays and duplicates included."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import functions as F

from tests.ticdc_lake.spark.carrier_rows import without_carrier
from ticdc_lake.apply.duplicates import multiset_duplicates
from ticdc_lake.apply.multiset import frozen, multiset_deltas
from ticdc_lake.apply.net_change import KeyedChange
from ticdc_lake.events import Op

pytestmark = pytest.mark.spark


def random_stream(seed: int) -> list[KeyedChange]:
    """Transactions over a few identical-prone images in 2 partitions, some sent twice (replays)."""
    rng = random.Random(seed)
    images = [{"msg": m, "n": n} for m in ("a", "b") for n in ("1", None)]
    offsets = [0, 0]
    sent: list[list[KeyedChange]] = []
    out: list[KeyedChange] = []
    for ts in range(1, 40):
        partition = rng.randint(0, 1)
        txn = []
        for _ in range(rng.randint(1, 4)):
            op = rng.choice([Op.INSERT, Op.INSERT, Op.DELETE, Op.UPDATE])
            before = rng.choice(images) if op is not Op.INSERT else None
            after = rng.choice(images) if op is not Op.DELETE else None
            txn.append(KeyedChange(ts, op, ("t", partition, offsets[partition], 0), before, after))
            offsets[partition] += 1
        out += txn
        sent.append(txn)
        offsets[partition] += rng.randint(0, 1)  # sometimes a watermark or another table in between
        if rng.random() < 0.3:  # a replay of an earlier transaction, sometimes cut short
            old = rng.choice(sent)
            keep = old if rng.random() < 0.7 else old[: rng.randint(1, len(old))]
            p = old[0].position[1]
            offsets[p] += 1
            for c in keep:
                out.append(KeyedChange(c.commit_ts, c.op, ("t", p, offsets[p], 0), c.before, c.after))
                offsets[p] += 1
    return out


def _frame(spark: Any, changes: list[KeyedChange]) -> Any:
    """The changes as ``change_events`` rows decoded before the typed record carrier."""
    rows = [
        (c.op.value, c.before, c.after, Decimal(c.commit_ts), c.position[0], c.position[1], c.position[2], 0)
        for c in changes
    ]
    return without_carrier(
        spark.createDataFrame(
            rows,
            "op STRING, before MAP<STRING,STRING>, after MAP<STRING,STRING>, commit_ts DECIMAL(20,0), "
            "topic STRING, `partition` INT, `offset` BIGINT, idx INT",
        )
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_spark_matches_python(spark: Any, seed: int) -> None:
    from ticdc_lake.spark.multiset_frame import copy_duplicates
    from ticdc_lake.spark.multiset_frame import multiset_deltas as spark_deltas

    changes = random_stream(seed)
    frame = _frame(spark, changes)
    got = {frozen(dict(r["image"])): r["delta"] for r in spark_deltas(frame).collect()}
    assert got == multiset_deltas(changes)
    assert got  # the stream changes something
    named = frame.withColumn("database", F.lit("d")).withColumn("table", F.lit("t"))
    duplicates = {int(r["commit_ts"]): r["duplicates"] for r in copy_duplicates(named).collect()}
    assert duplicates == multiset_duplicates(changes)
    assert duplicates  # the stream has replayed copies


@pytest.mark.parametrize("seed", [4, 5])
def test_events_carrying_records_are_grouped_by_them(spark: Any, seed: int) -> None:
    """Every event carries its typed records (as decode writes them), and its maps also name its
    offset, so no two maps are alike: the deltas and the duplicates are still the rule's, because
    images are grouped by their records; each delta keeps one of its events' maps, or none where
    the MERGE source reads the records."""
    from ticdc_lake.spark.multiset_frame import copy_duplicates
    from ticdc_lake.spark.multiset_frame import multiset_deltas as spark_deltas
    from ticdc_lake.spark.record_images import VersionLayout, records_from_maps, untyped_from_maps

    layout = VersionLayout(1, ("msg", "n"), ("string", "string"), ())
    changes = random_stream(seed)
    frame = _frame(spark, changes).withColumn("schema_version", F.lit(1).cast("decimal(20,0)"))
    carried = frame.withColumns(
        {
            f"{side}_{part}": make(side, [layout])
            for side in ("before", "after")
            for part, make in (("record", records_from_maps), ("untyped", untyped_from_maps))
        }
    )
    marked = carried.withColumns(
        {
            side: F.when(
                F.col(side).isNotNull(), F.map_concat(side, F.create_map(F.lit("at"), F.col("offset").cast("string")))
            )
            for side in ("before", "after")
        }
    )
    got = {
        frozen({k: v for k, v in r["image"].items() if k != "at"}): r["delta"] for r in spark_deltas(marked).collect()
    }
    assert got == multiset_deltas(changes)
    # Where the MERGE source reads version 1's records, the deltas leave the maps behind: the same
    # deltas, each with the same record.
    typed = spark_deltas(marked, typed_versions=[1]).collect()
    assert [r["image"] for r in typed] == [None] * len(typed)

    def by_record(rows: Any) -> list[tuple[bytes, int]]:
        return sorted((bytes(r["record"]), r["delta"]) for r in rows)

    assert by_record(typed) == by_record(spark_deltas(marked).collect())
    named = marked.withColumn("database", F.lit("d")).withColumn("table", F.lit("t"))
    duplicates = {int(r["commit_ts"]): r["duplicates"] for r in copy_duplicates(named).collect()}
    assert duplicates == multiset_duplicates(changes)
    assert duplicates
