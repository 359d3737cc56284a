"""A table without a key is applied as a multiset: identical rows are kept, replays are not doubled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ticdc_lake.spark.apply_lake import ApplyLake
from ticdc_lake.spark.apply_job import run_apply

pytestmark = [pytest.mark.spark]


def test_keyless_table_keeps_copies_and_counts_replays_and_duplicates_once(
    spark: Any, lake_home: Path, tmp_path: Path
) -> None:
    lake = ApplyLake(spark, lake_home, tmp_path, partitions=1)
    lake.ddl(100, "shop", "logs", "CREATE", "CREATE TABLE logs (msg VARCHAR(10), n INT)")
    lake.ddl(100, "shop", "other", "CREATE", "CREATE TABLE other (id INT PRIMARY KEY)")
    a, b, b3, c = {"msg": "a", "n": 1}, {"msg": "b", "n": 2}, {"msg": "b", "n": 3}, {"msg": "c", "n": None}

    def txn_110() -> None:
        lake.dml(110, "shop", "logs", "I", a)
        lake.dml(110, "shop", "logs", "I", a)
        lake.dml(110, "shop", "logs", "I", b)

    txn_110()
    lake.dml(115, "shop", "other", "I", {"id": 1})
    lake.dml(115, "shop", "other", "I", {"id": 1})  # redelivered: with a key, a duplicate
    txn_110()  # at-least-once: the transaction again, after other messages: its 3 events are duplicates
    lake.dml(120, "shop", "logs", "D", None, a)
    lake.dml(120, "shop", "logs", "U", b3, b)
    lake.dml(130, "shop", "logs", "I", c)
    lake.land(watermark=200)
    run_apply(spark, lake.config, lake.pipeline, "run-1")
    assert lake.content("shop", "logs") == [("a", 1), ("b", 3), ("c", None)]
    counted = {
        r["table"]: tuple(r)[1:]
        for r in spark.sql(
            f"SELECT `table`, events_in, duplicates_skipped, rows_inserted, rows_updated, rows_deleted "
            f"FROM {lake.tables.run_ledger} WHERE pipeline = '{lake.pipeline_id}' AND run_id = 'run-1' "
            "AND `table` IS NOT NULL"
        ).collect()
    }
    assert counted == {"logs": (9, 3, 3, 0, 0), "other": (2, 1, 1, 0, 0)}

    # Run 2: the old transactions again (replays below the applied position) and one more copy of a.
    lake.dml(120, "shop", "logs", "D", None, a)
    lake.dml(130, "shop", "logs", "I", c)
    lake.dml(240, "shop", "logs", "I", a)
    lake.dml(240, "shop", "logs", "D", None, c)
    lake.land(watermark=300, run_id="run-2")
    run_apply(spark, lake.config, lake.pipeline, "run-2")
    assert lake.content("shop", "logs") == [("a", 1), ("a", 1), ("b", 3)]
    row = spark.sql(
        f"SELECT events_in, replays_skipped, duplicates_skipped, rows_inserted, rows_deleted "
        f"FROM {lake.tables.run_ledger} WHERE pipeline = '{lake.pipeline_id}' AND run_id = 'run-2' AND `table` = 'logs'"
    ).first()
    assert tuple(row) == (2, 2, 0, 1, 1)
