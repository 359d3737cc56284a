"""Reading every table as of one apply run's watermark: snapshots, held tables, the CLI, the ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ticdc_lake.spark.apply_lake import ApplyLake
from ticdc_lake.catalog import load_catalog
from ticdc_lake.cli.main import main
from ticdc_lake.consistent_reads import tables_as_of
from ticdc_lake.spark.apply_job import run_apply

pytestmark = [pytest.mark.spark]


def test_tables_as_of_each_cut(spark: Any, lake_home: Path, tmp_path: Path, capsys: Any) -> None:
    lake = ApplyLake(spark, lake_home, tmp_path, policies={"on_incompatible_type_change": "fail"})
    lake.ddl(100, "shop", "a", "CREATE", "CREATE TABLE a (id INT PRIMARY KEY, v INT)")
    lake.ddl(100, "shop", "b", "CREATE", "CREATE TABLE b (id INT PRIMARY KEY, n INT)")
    lake.dml(110, "shop", "a", "I", {"id": 1, "v": 1})
    lake.dml(110, "shop", "b", "I", {"id": 1, "n": 1})
    lake.land(200, "run-1")
    run_apply(spark, lake.config, lake.pipeline, "run-1")
    lake.dml(210, "shop", "a", "U", {"id": 1, "v": 2}, {"id": 1, "v": 1})
    lake.dml(210, "shop", "b", "I", {"id": 2, "n": 2})
    lake.ddl(220, "shop", "b", "ALTER", "ALTER TABLE b MODIFY n VARCHAR(20)")  # refused: b is held at 219
    lake.land(300, "run-2")
    run_apply(spark, lake.config, lake.pipeline, "run-2")

    catalog = load_catalog("lake", lake.config.catalog_for(lake.pipeline))

    def rows(namespace: str, table: str, snapshot_id: int | None) -> list[tuple[Any, ...]]:
        frame = catalog.load_table((namespace, table)).scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
        return sorted(tuple(r.values()) for r in frame)

    ns = lake.namespace("shop")
    cut, tables = tables_as_of(lake.config, lake.pipeline, 250)
    assert cut is not None
    assert (cut.run_id, cut.watermark) == ("run-1", 200)
    by_name = {t.table: t for t in tables}
    assert {t: (v.state, v.applied_ts) for t, v in by_name.items()} == {"a": ("ok", 200), "b": ("ok", 200)}
    assert rows(ns, "a", by_name["a"].snapshot_id) == [(1, 1)]
    assert rows(ns, "b", by_name["b"].snapshot_id) == [(1, 1)]

    cut, tables = tables_as_of(lake.config, lake.pipeline)
    assert cut is not None
    assert (cut.run_id, cut.watermark) == ("run-2", 300)
    by_name = {t.table: t for t in tables}
    assert (by_name["a"].state, by_name["a"].applied_ts) == ("ok", 300)
    assert rows(ns, "a", by_name["a"].snapshot_id) == [(1, 2)]
    assert (by_name["b"].state, by_name["b"].applied_ts) == ("behind", 219)
    assert by_name["b"].reason.startswith("HELD at commit ts 219 in run run-2: DDL ALTER at commit ts 220 on shop.b")
    assert rows(ns, "b", by_name["b"].snapshot_id) == [(1, 1), (2, 2)]

    config = str(lake.config.source_path)
    assert main(["--config", config, "snapshots", "--as-of", "250", "--sql"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"CREATE OR REPLACE TEMPORARY VIEW `{ns}__{t.table}` AS {t.spark_sql()};"
        for t in tables_as_of(lake.config, lake.pipeline, 250)[1]
    ]
    assert main(["--config", config, "snapshots"]) == 0
    out = capsys.readouterr().out
    assert f"pipeline {lake.pipeline_id}: as of watermark 300" in out
    assert "reached by run run-2" in out
    assert "behind" in out
    assert "HELD at commit ts 219" in out
    assert main(["--config", config, "ledger", "--run", "run-2"]) == 0
    out = capsys.readouterr().out
    assert f"pipeline {lake.pipeline_id}: 3 ledger row(s)" in out
    assert " replays dups  ins " in out
    assert " bad  dst  ms " in out
    assert "shop.a" in out
    assert "(200, 300]" in out
    assert "HELD" in out
    assert main(["--config", config, "status"]) == 0
    out = capsys.readouterr().out
    assert "newest apply run run-2: watermark 300" in out
    assert f"{ns}.b" in out
    assert "applied_ts 219" in out
    assert "HELD: DDL ALTER at commit ts 220" in out


def test_a_read_after_a_truncate_reads_the_truncated_table(spark: Any, lake_home: Path, tmp_path: Path) -> None:
    """TRUNCATE commits its own snapshot (a delete of every row) with its commit TSO and the
    pipeline: a read as of a cut after it takes that snapshot, not the rows before it."""
    lake = ApplyLake(spark, lake_home, tmp_path)
    lake.ddl(100, "shop", "c", "CREATE", "CREATE TABLE c (id INT PRIMARY KEY, v INT)")
    lake.dml(110, "shop", "c", "I", {"id": 1, "v": 1})
    lake.land(200, "run-1")
    run_apply(spark, lake.config, lake.pipeline, "run-1")
    lake.ddl(250, "shop", "c", "TRUNCATE", "TRUNCATE TABLE c")
    lake.land(300, "run-2")
    run_apply(spark, lake.config, lake.pipeline, "run-2")

    catalog = load_catalog("lake", lake.config.catalog_for(lake.pipeline))
    table = catalog.load_table((lake.namespace("shop"), "c"))
    before, after = (tables_as_of(lake.config, lake.pipeline, ts)[1] for ts in (299, 300))
    assert [(t.table, t.state, t.applied_ts) for t in before] == [("c", "ok", 200)]
    assert [(t.table, t.state, t.applied_ts) for t in after] == [("c", "ok", 250)]
    assert table.scan(snapshot_id=before[0].snapshot_id).to_arrow().num_rows == 1
    assert table.scan(snapshot_id=after[0].snapshot_id).to_arrow().num_rows == 0
