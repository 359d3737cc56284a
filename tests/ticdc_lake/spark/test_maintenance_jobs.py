"""The maintenance jobs on real Iceberg tables: compaction, expiry, orphans, and positions surviving them."""

from __future__ import annotations

import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ticdc_lake.spark.apply_lake import ApplyLake
from tests.ticdc_lake.spark.maintenance_tables import many_small_merges
from ticdc_lake import table_markers
from ticdc_lake.config import LakeConfig, load_config
from ticdc_lake.consistent_reads import tables_as_of
from ticdc_lake.maintenance_config import MaintenanceConfig
from ticdc_lake.maintenance_policy import MAINTENANCE_KEY
from ticdc_lake.spark import maintenance, table_positions, target_tables
from ticdc_lake.spark.apply_job import run_apply
from ticdc_lake.spark.maintenance_job import run_maintenance
from ticdc_lake.spark.target_tables import TargetTable

pytestmark = [pytest.mark.spark]

MERGES = 12


def _config(tmp_path: Path, lake_home: Path, pipeline_id: str, **maintenance_settings: Any) -> LakeConfig:
    document = {
        "catalogs": {
            "lake": {
                "uri": f"jdbc:sqlite:{lake_home}/catalog/lake.db",
                "warehouse": f"file://{lake_home}/warehouse",
                "maintenance": {"retry_backoff_s": 0.1, **maintenance_settings},
            }
        },
        "pipelines": [
            {
                "id": pipeline_id,
                "protocol": "simple-json",
                "kafka": {"topics": ["events"]},
                "landing_uri": f"file://{tmp_path}/landing",
                "catalog": "lake",
                "target": {"namespace": f"{pipeline_id}_{{database}}"},
            }
        ],
    }
    path = tmp_path / "pipelines.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_config(path)


def _with_maintenance(config: LakeConfig, **settings: Any) -> LakeConfig:
    catalog = config.catalogs["lake"]
    merged = {**catalog.maintenance.model_dump(), **settings}
    changed = catalog.model_copy(update={"maintenance": MaintenanceConfig.model_validate(merged)})
    return config.model_copy(update={"catalogs": {"lake": changed}})


def _rows(spark: Any, target: TargetTable) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.table(target.sql_name).collect())


def test_each_job_on_a_table_of_many_small_merges(spark: Any, lake_home: Path, tmp_path: Path) -> None:
    pipeline_id = f"mt_{uuid.uuid4().hex[:8]}"
    config = _config(tmp_path, lake_home, pipeline_id)
    target = TargetTable("lake", f"{pipeline_id}_shop", "orders")
    many_small_merges(spark, target, pipeline_id, MERGES)
    table = target_tables.iceberg_table(spark, target)
    rows, before = _rows(spark, target), maintenance.figures(table)
    assert before.snapshots == MERGES
    assert before.data_files >= MERGES
    assert before.delete_files >= MERGES - 1

    name = f"{target.namespace}.{target.name}"
    [report] = run_maintenance(spark, config, "lake", "compact", "test", name).reports
    after = maintenance.figures(table)
    assert (report.status, report.data_files, report.delete_files) == (
        "OK",
        (before.data_files, 1),
        (before.delete_files, 0),
    )
    assert (after.data_files, after.delete_files) == (1, 0)
    assert _rows(spark, target) == rows
    summary = dict(table.currentSnapshot().summary())
    assert summary[table_markers.APPLIED_TS] == str(1000 + MERGES)
    assert summary[table_markers.PIPELINE] == pipeline_id
    assert summary[MAINTENANCE_KEY] == "compact"

    # Everything older than the window goes, down to min_snapshots = 1: the newest snapshot
    # carries the position, so nothing else must stay.
    expiring = _with_maintenance(config, retention="1s", min_snapshots=1)
    time.sleep(1.1)
    [report] = run_maintenance(spark, expiring, "lake", "expire", "test", name).reports
    assert report.status == "OK"
    assert report.snapshots[1] == 1
    assert report.removed_files >= before.data_files + before.delete_files
    assert target_tables.applied_of(table)[0] == 1000 + MERGES
    assert _rows(spark, target) == rows

    # Orphans: an unreferenced file older than orphan_min_age goes, a young one stays.
    folder = Path(str(table.location()).removeprefix("file:").removeprefix("//")) / "data"
    old, young = folder / "left-by-a-crash.parquet", folder / "being-written.parquet"
    for path in (old, young):
        path.write_bytes(b"not referenced")
    ten_days_ago = time.time() - 10 * 86400
    os.utime(old, (ten_days_ago, ten_days_ago))
    [report] = run_maintenance(spark, config, "lake", "orphans", "test", name).reports
    assert (report.status, report.removed_files) == ("OK", 1)
    assert (old.exists(), young.exists()) == (False, True)
    assert _rows(spark, target) == rows


def test_applied_positions_survive_compaction_and_expiry(spark: Any, lake_home: Path, tmp_path: Path) -> None:
    lake = ApplyLake(spark, lake_home, tmp_path, partitions=1)
    lake.ddl(100, "shop", "a", "CREATE", "CREATE TABLE a (id INT PRIMARY KEY, v INT)")
    for n in range(1, 4):
        base = 100 * n
        lake.dml(base + 10, "shop", "a", "I", {"id": 10 * n, "v": n})
        if n > 1:
            old = {"id": 10 * (n - 1), "v": n - 1}
            lake.dml(base + 20, "shop", "a", "U", {"id": 10 * (n - 1), "v": -n}, old)
        lake.land(base + 50, f"run-{n}")
        run_apply(spark, lake.config, lake.pipeline, f"run-{n}")
    target = TargetTable.for_upstream(lake.pipeline, "shop", "a")
    table = target_tables.iceberg_table(spark, target)
    position = table_positions.position(spark, lake.tables, target)
    assert position == 350
    rows = lake.content("shop", "a")
    assert maintenance.figures(table).delete_files > 0
    _, first_cut = tables_as_of(lake.config, lake.pipeline, 150)
    [first] = first_cut

    name = f"{target.namespace}.{target.name}"
    config = _with_maintenance(lake.config, retry_backoff_s=0.1, min_input_files=2)
    [report] = run_maintenance(spark, config, "lake", "compact", "test", name).reports
    assert (report.status, report.delete_files[1]) == ("OK", 0)
    # Within the window, consistent reads still find each cut's snapshot: the old one for an old
    # cut, a compaction snapshot (same rows, same position) for the newest.
    _, cut = tables_as_of(lake.config, lake.pipeline, 150)
    assert [(t.state, t.snapshot_id, t.applied_ts) for t in cut] == [("ok", first.snapshot_id, 150)]
    _, cut = tables_as_of(lake.config, lake.pipeline)
    assert [(t.state, t.applied_ts) for t in cut] == [("ok", 350)]
    assert dict(table.snapshot(cut[0].snapshot_id).summary())[MAINTENANCE_KEY] == "compact"

    time.sleep(1.1)
    expiring = _with_maintenance(config, retention="1s", min_snapshots=1)
    [report] = run_maintenance(spark, expiring, "lake", "expire", "test", name).reports
    assert report.snapshots[1] == 1
    assert table_positions.position(spark, lake.tables, target) == position
    assert lake.content("shop", "a") == rows
    snapshot_id = int(table.currentSnapshot().snapshotId())

    # Apply again with nothing new: nothing to do, no commit.
    lake.land(400, "run-4")
    run_apply(spark, lake.config, lake.pipeline, "run-4")
    table.refresh()
    assert lake.ledger("run-4")["shop.a"][0] == "NOOP"
    assert int(table.currentSnapshot().snapshotId()) == snapshot_id
    assert lake.content("shop", "a") == rows


def test_commit_conflicts_are_retried_and_other_errors_are_not(spark: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Real Java exceptions through py4j: Iceberg's ValidationException (what a concurrent writer
    causes) is retried with backoff; any other exception propagates at once."""
    from py4j.protocol import Py4JJavaError

    from ticdc_lake.maintenance_policy import TableReport

    jvm = spark.sparkContext._jvm
    no_args = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, 0)
    settings = MaintenanceConfig(commit_attempts=3, retry_backoff_s=0.01)
    calls: list[int] = []

    def conflicting() -> str:
        calls.append(1)
        if len(calls) < 3:
            jvm.org.apache.iceberg.exceptions.ValidationException.check(False, "files changed meanwhile", no_args)
        return "committed"

    report = TableReport("lake.shop.t", "compact")
    with caplog.at_level(logging.WARNING, logger=maintenance.__name__):
        assert maintenance.with_retries("compact lake.shop.t", settings, report, conflicting) == "committed"
    assert report.attempts == 3
    assert [r.getMessage() for r in caplog.records if r.name == maintenance.__name__] == [
        "compact lake.shop.t: commit conflict with another writer "
        f"(org.apache.iceberg.exceptions.ValidationException), attempt {n} of 3; retrying in {w} s"
        for n, w in ((1, "0.0"), (2, "0.0"))
    ]

    calls.clear()
    report = TableReport("lake.shop.t", "compact")
    with pytest.raises(Exception) as failed:  # noqa: PT011 - PySpark converts this one (CapturedException)
        maintenance.with_retries("compact lake.shop.t", settings, report, lambda: jvm.java.lang.Integer.parseInt("x"))
    assert report.attempts == 1
    assert maintenance.describe(failed.value) == 'java.lang.NumberFormatException: For input string: "x"'

    calls.clear()
    report = TableReport("lake.shop.t", "compact")
    with pytest.raises(Py4JJavaError) as exhausted:
        maintenance.with_retries(
            "compact lake.shop.t",
            settings,
            report,
            lambda: jvm.org.apache.iceberg.exceptions.ValidationException.check(False, "still changing", no_args),
        )
    assert report.attempts == 3
    assert maintenance.describe(exhausted.value) == "org.apache.iceberg.exceptions.ValidationException: still changing"
