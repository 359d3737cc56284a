"""The maintenance DAG through Airflow, concurrent with an apply: it waits for the apply lock, never commits meanwhile.

The test plays the apply: it holds the pipeline's ``apply`` lock (as a running apply step does)
while ``airflow dags test ticdc_maintenance_<catalog>`` runs compaction of a table that took many
small merges. Maintenance must wait for the lock, and the table must not change while the lock is
held; once released, compaction commits (files merged, delete files gone, rows and applied
position unchanged). The logical date is a tick of the compaction schedule only: expire and
orphans are skipped as not due.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ticdc_lake.spark.maintenance_tables import many_small_merges
from ticdc_lake import table_markers
from ticdc_lake.cli.airflow_runner import AirflowRunner
from ticdc_lake.config import load_config
from ticdc_lake.spark import maintenance, target_tables
from ticdc_lake.spark.settings import catalog_conf
from ticdc_lake.spark.target_tables import TargetTable
from ticdc_lake.stage_lock import stage_lock

pytestmark = [pytest.mark.e2e, pytest.mark.spark, pytest.mark.airflow]

MERGES = 6
#: The longest the test holds the lock when the waiting line never shows (then the test fails).
HOLD_AT_MOST_S = 150.0


def _write_config(tmp_path: Path, catalog: str, pipeline_id: str) -> Path:
    document = {
        "catalogs": {
            catalog: {
                "uri": f"jdbc:sqlite:{tmp_path}/catalog.db",
                "warehouse": f"file://{tmp_path}/warehouse",
                "maintenance": {
                    "schedules": {"compact": "0 2 * * *", "expire": "0 3 * * *", "orphans": "0 4 * * 0"},
                    "min_input_files": 2,
                },
            }
        },
        "pipelines": [
            {
                "id": pipeline_id,
                "protocol": "simple-json",
                "kafka": {"topics": [f"{pipeline_id}-topic"]},
                "landing_uri": f"file://{tmp_path}/landing",
                "catalog": catalog,
                "target": {"namespace": "{database}"},
                "lock_wait_s": 300,
            }
        ],
    }
    path = tmp_path / "pipelines.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_maintenance_waits_for_the_apply_lock_and_never_commits_meanwhile(spark: Any, tmp_path: Path) -> None:
    began = time.monotonic()
    suffix = uuid.uuid4().hex[:8]
    catalog, pipeline_id = f"mnt_{suffix}", f"orders_{suffix}"
    config = load_config(_write_config(tmp_path, catalog, pipeline_id))
    pipeline = config.pipeline(pipeline_id)
    runner = AirflowRunner(tmp_path / "airflow", Path(config.source_path), "127.0.0.1:1")
    migrating = threading.Thread(target=runner.migrate)  # the Airflow database, while Spark builds the table
    migrating.start()
    for key, value in catalog_conf(catalog, config.catalogs[catalog]).items():
        spark.conf.set(key, value)  # the test session writes the table the way apply would
    target = TargetTable(catalog, "shop", "orders")
    many_small_merges(spark, target, pipeline_id, MERGES)
    table = target_tables.iceberg_table(spark, target)
    before = maintenance.figures(table)
    rows = sorted(tuple(r) for r in spark.table(target.sql_name).collect())
    snapshot_before = int(table.currentSnapshot().snapshotId())
    assert before.delete_files > 0

    print(f"table ready: {time.monotonic() - began:.1f} s")
    migrating.join()
    assert (runner.home / ".migrated").exists()
    print(f"migrated: {time.monotonic() - began:.1f} s")
    lock = stage_lock(pipeline, "apply", "apply-held-by-the-test")
    lock.acquire()
    lines: list[str] = []
    seen_waiting = threading.Event()
    changed_while_held: list[int] = []
    command = [str(Path(sys.executable).parent / "airflow"), "dags", "test", f"ticdc_maintenance_{catalog}"]
    process = subprocess.Popen(
        [*command, datetime(2026, 11, 20, 2, 0, tzinfo=UTC).isoformat()],
        env=runner.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "holds" in line and "maintenance-compact__" in line and "waits" in line:
                seen_waiting.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started = time.monotonic()
    try:
        # Hold the lock as a running apply would, checking the table never changes meanwhile.
        while not seen_waiting.is_set() and time.monotonic() - started < HOLD_AT_MOST_S and process.poll() is None:
            table.refresh()
            if int(table.currentSnapshot().snapshotId()) != snapshot_before:
                changed_while_held.append(int(table.currentSnapshot().snapshotId()))
            time.sleep(0.5)
        time.sleep(3)  # maintenance keeps waiting: nothing commits
        table.refresh()
        assert int(table.currentSnapshot().snapshotId()) == snapshot_before
    finally:
        released_ms = int(time.time() * 1000)
        lock.release()
    print(f"released: {time.monotonic() - began:.1f} s")
    returncode = process.wait(timeout=600)
    print(f"dag run done: {time.monotonic() - began:.1f} s")
    reader.join(timeout=10)
    output = "".join(lines)
    (tmp_path / "dags-test.log").write_text(output)
    assert seen_waiting.is_set(), output[-6000:]
    assert changed_while_held == []
    assert returncode == 0, output[-6000:]

    table.refresh()
    after = maintenance.figures(table)
    assert (after.data_files, after.delete_files) == (1, 0), (before, after)
    assert sorted(tuple(r) for r in spark.table(target.sql_name).collect()) == rows
    new = []
    snapshot = table.currentSnapshot()
    while snapshot is not None and int(snapshot.snapshotId()) != snapshot_before:
        new.append(snapshot)
        snapshot = table.snapshot(snapshot.parentId())
    assert new, "compaction committed nothing"
    # Every maintenance commit came after the lock was released, and carries the applied position.
    assert all(int(s.timestampMillis()) >= released_ms for s in new)
    assert {dict(s.summary())[table_markers.APPLIED_TS] for s in new} == {str(1000 + MERGES)}
    assert f"maintenance compact of catalog '{catalog}': 1 table(s): 1 ok, 0 unchanged, 0 busy, 0 failed" in output
    assert "s for the pipeline lock)" in output  # the per-table line says how long it waited
    for job in ("expire", "orphans"):
        assert f"maintenance job '{job}' is not due at 2026-11-20 02:00:00+00:00 (this run: ['compact'])" in output
