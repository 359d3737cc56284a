"""Crash safety, proven by killing the real processes (SIGKILL) at chosen points (docs/crash-safety.md).

Each stage runs as its own process, as under Airflow: land through ``tests/e2e/pipeline_run.py``
(the library's ``land``), decode and schema history through the same script, apply through
``spark_jobs/apply.py`` run by plain ``python`` (it starts its own local Spark JVM, which dies with
it). A failpoint (``TICDC_LAKE_FAILPOINTS``) kills the process at one point; the next run, with the
same run id as an Airflow retry, crashes at the next point, and a last clean run must leave every
table equal to the reference model at the watermark: no row lost, none doubled. The stale lease of
each killed run is taken over at once (its pid is gone) with a zero lock wait.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from crash_support import ADDED, DB, RENAMED, Lake, ddl_lake, output, run

from tests.stage_runs import stage_config
from ticdc_lake.landing.lander import land
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.stage_lock import STALE_AFTER_S

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]

KILLED = -signal.SIGKILL


def _crash(lake: Lake, command: list[str], point: str) -> str:
    """Run ``command`` with ``point`` armed; it must die by SIGKILL at that point. Returns its stderr."""
    result = run(command, armed=point)
    assert result.returncode == KILLED, output(result)
    name = point.split("@")[0].split("#")[0]
    assert f"ticdc-lake failpoint {name}" in result.stderr, output(result)
    return result.stderr


def _visible_data(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in (root / "data").rglob("*.avro"))


def _manifests(root: Path) -> list[str]:
    folder = root / "manifests"
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.exists() else []


def test_land_killed_mid_write_publishes_nothing_and_the_rerun_lands_the_same_bytes(
    tmp_path: Path, lake_home: Path, kafka_bootstrap: str
) -> None:
    lake = ddl_lake(tmp_path / "home", lake_home, kafka_bootstrap, seed=11)
    root = tmp_path / "home" / "landing" / lake.pipeline.id
    command = lake.stages("scheduled__land", "land")

    # A data file of the batch written, the others not, no manifest.
    _crash(lake, command, "land.after_data_file")
    assert _manifests(root) == []
    assert len(_visible_data(root)) == 1
    # A data file complete under its temporary name, not moved into place.
    _crash(lake, command, "land.before_data_move")
    assert _manifests(root) == []
    assert len(_visible_data(root)) == 1
    assert len(list((root / "data").rglob(".*.tmp"))) == 1
    # Every data file written, the manifest not published.
    _crash(lake, command, "land.before_publish")
    assert _manifests(root) == []
    assert len(_visible_data(root)) == 3

    # The killed run's temporary file, made older than the lease's stale age: the re-run removes it.
    stale = time.time() - 2 * STALE_AFTER_S
    for leftover in (root / "data").rglob(".*.tmp"):
        os.utime(leftover, (stale, stale))
    result = run(command)
    assert result.returncode == 0, output(result)
    assert _manifests(root) == ["000000000001.json"]
    assert list(root.rglob(".*.tmp")) == []
    landed = LandingStore(lake.pipeline.landing_uri, lake.pipeline.id).manifests()

    # The same topic landed by a run that never crashed, into another landing folder.
    clean_home = tmp_path / "clean"
    clean_home.mkdir()
    clean_config = stage_config(
        clean_home,
        lake_home,
        {
            "id": lake.pipeline.id,
            "protocol": "simple-json",
            "kafka": {"topics": list(lake.pipeline.kafka.topics)},
            "landing_uri": f"file://{clean_home}/landing",
        },
    )
    clean = land(clean_config.pipeline(lake.pipeline.id), {"bootstrap.servers": kafka_bootstrap}, "clean", None)
    assert clean.manifest is not None
    assert [m.batch_id for m in landed] == [clean.manifest.batch_id]
    assert landed[0].ranges == clean.manifest.ranges  # offsets, counts, sizes, checksums, timestamps
    clean_root = clean_home / "landing" / lake.pipeline.id
    files = [r.file for r in landed[0].ranges if r.file is not None]
    assert sorted(files) == _visible_data(root)
    for file in files:
        assert (root / file).read_bytes() == (clean_root / file).read_bytes(), file


def _applied_only(lake: Lake, expected: dict[str, int | None]) -> None:
    assert lake.positions() == expected


def _events(lake: Lake, table: str) -> list[dict[str, Any]]:
    system = lake.config.catalog_for(lake.pipeline).system_namespace
    rows = lake.catalog().load_table((system, table)).scan().to_arrow().to_pylist()
    return [r for r in rows if r["pipeline"] == lake.pipeline.id]


def test_apply_killed_around_merges_between_tables_and_after_ddls_converges_to_the_model(
    tmp_path: Path, lake_home: Path, kafka_bootstrap: str
) -> None:
    lake = ddl_lake(tmp_path / "home", lake_home, kafka_bootstrap, seed=23)
    ddl_ts = {ddl.table: ts for ts, ddl in lake.sim.model.ddls() if ddl.ddl_type == "ALTER"}
    added_ts, renamed_ts = ddl_ts[ADDED[0]], ddl_ts[RENAMED[0]]
    assert added_ts < renamed_ts < lake.watermark
    run_id = "scheduled__crash"

    # Decode killed after writing the batch's events, before its commit marker.
    _crash(lake, lake.stages(run_id, "land,decode"), "decode.before_commit")
    assert _events(lake, "decoded_batches") == []
    assert _events(lake, "change_events") != []

    # The re-run decodes again (replacing the events), records schema history, then apply is
    # killed before its first MERGE: only the CREATE TABLE DDLs are applied.
    apply = lake.apply_job(run_id)
    _crash(lake, lake.stages(run_id, "decode,schema_history,apply"), "apply.before_merge")
    events = _events(lake, "change_events")
    keys = [(e["topic"], e["partition"], e["offset"], e["idx"]) for e in events]
    assert len(keys) == len(set(keys)), "re-decoding doubled events"
    assert {b["batch_id"] for b in _events(lake, "decoded_batches")} == {"000000000001"}
    created: dict[str, int | None] = {
        str(ddl.table): ts for ts, ddl in lake.sim.model.ddls() if ddl.ddl_type == "CREATE"
    }
    assert sorted(created) == lake.tables()
    _applied_only(lake, created)
    stderr = _crash(lake, apply, "apply.during_merge@active-job")
    assert "during Spark job(s)" in stderr
    _applied_only(lake, created)  # the MERGE did not commit
    # The first MERGE is the ADD COLUMN table's rows before its DDL.
    _crash(lake, apply, "apply.after_merge")
    _applied_only(lake, {**created, ADDED[0]: added_ts - 1})
    _crash(lake, apply, "apply.after_ddl")
    _applied_only(lake, {**created, ADDED[0]: added_ts})
    assert ADDED[1] in [f.name for f in lake.iceberg(ADDED[0]).schema().fields]
    # After the DDLs, the tables are applied to the watermark in name order: killed after the
    # first, whose RENAME COLUMN (not yet applied) comes first.
    assert lake.tables()[0] == RENAMED[0]
    _crash(lake, apply, "apply.between_tables")
    _applied_only(lake, {**created, ADDED[0]: added_ts, RENAMED[0]: lake.watermark})
    names = [f.name for f in lake.iceberg(RENAMED[0]).schema().fields]
    assert RENAMED[2] in names
    assert RENAMED[1] not in names

    result = run(apply)
    assert result.returncode == 0, output(result)
    assert lake.differences() == {}
    assert lake.positions() == dict.fromkeys(lake.tables(), lake.watermark)
    ledger = [r for r in lake.ledger() if r["run_id"] == run_id and r["stage"] == "apply"]
    by_table = {r["table"]: (r["status"], r["window_start"], r["window_end"]) for r in ledger}
    assert len(ledger) == len(by_table), "one ledger row per table: the killed runs wrote none"
    others = [t for t in lake.tables() if t not in (ADDED[0], RENAMED[0])]
    # The table already at the watermark: a NOOP row, or none when apply pruned its window away.
    done = by_table.pop(RENAMED[0], None)
    assert done in (None, ("NOOP", lake.watermark, lake.watermark))
    expected: dict[str | None, tuple[str, int | None, int | None]] = {
        None: ("OK", None, None),
        ADDED[0]: ("APPLIED", added_ts, lake.watermark),
        **{t: ("APPLIED", created[t], lake.watermark) for t in others},
    }
    assert by_table == expected
    assert {r["database"] for r in ledger if r["table"] is not None} == {DB}
