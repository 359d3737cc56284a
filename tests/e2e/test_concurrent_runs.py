"""Two runs of one pipeline at the same moment (a scheduled run and a backfill) as separate processes.

Each run is one process running land, decode, schema history and apply
(``tests/e2e/pipeline_run.py``). Both start their Spark session, say they are ready, and then
start their stages at the same instant (a barrier file), so they meet at the stage locks
(docs/crash-safety.md, "Concurrent runs"). With a wait, both succeed: the one that came second
waited, found the batch landed and decoded, and its apply found nothing new. With a zero wait,
the second fails at once with the lock's message and the retryable exit code, and the first
run's result is whole.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path

import pytest
from crash_support import DB, Lake, ddl_lake, start

from ticdc_lake.landing.store import LandingStore
from ticdc_lake.spark.exit_codes import EXIT_RETRYABLE

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]

RUNS = ("scheduled__2026-11-21T10", "backfill__2026-11-21T10")


def _run_at_once(
    lake: Lake, folder: Path, wait_s: float
) -> tuple[dict[str, subprocess.CompletedProcess[str]], dict[str, int]]:
    """Start both runs, let their stages begin at the same moment, wait for both; results and pids."""
    barrier = folder / "go"
    processes: dict[str, subprocess.Popen[bytes]] = {}
    for run_id in RUNS:
        ready = folder / f"{run_id}.ready"
        command = [*lake.stages(run_id), "--ready", str(ready), "--barrier", str(barrier)]
        processes[run_id] = start(command, folder / run_id, wait_s=wait_s)
    deadline = time.monotonic() + 600
    while not all((folder / f"{r}.ready").exists() for r in RUNS):
        assert all(p.poll() is None for p in processes.values()), "a run ended before it was ready"
        assert time.monotonic() < deadline, "the runs' Spark sessions did not start within 600 s"
        time.sleep(0.05)
    barrier.touch()
    results = {}
    for run_id, process in processes.items():
        code = process.wait(timeout=900)
        stdout = (folder / f"{run_id}.out").read_text(errors="replace")
        stderr = (folder / f"{run_id}.err").read_text(errors="replace")
        results[run_id] = subprocess.CompletedProcess(process.args, code, stdout, stderr)
    return results, {run_id: process.pid for run_id, process in processes.items()}


def _show(results: dict[str, subprocess.CompletedProcess[str]]) -> str:
    return "\n".join(
        f"=== {r}: exit {p.returncode}\n{p.stdout[-3000:]}\n--- stderr\n{p.stderr[-3000:]}" for r, p in results.items()
    )


def test_two_runs_at_once_both_succeed_and_apply_each_change_once(
    tmp_path: Path, lake_home: Path, kafka_bootstrap: str
) -> None:
    lake = ddl_lake(tmp_path / "home", lake_home, kafka_bootstrap, seed=31)
    results, _ = _run_at_once(lake, tmp_path, wait_s=600)
    assert [p.returncode for p in results.values()] == [0, 0], _show(results)
    waited = [r for r, p in results.items() if re.search(rf"run '{r}' waits \(up to 600 s\)", p.stdout)]
    assert waited, "neither run waited for the other: " + _show(results)

    assert lake.differences() == {}
    assert lake.positions() == dict.fromkeys(lake.tables(), lake.watermark)
    manifests = LandingStore(lake.pipeline.landing_uri, lake.pipeline.id).manifests()
    assert [m.sequence for m in manifests] == [1]
    apply_rows = [r for r in lake.ledger() if r["stage"] == "apply"]
    assert sorted((r["run_id"], r["status"]) for r in apply_rows if r["table"] is None) == [
        (run_id, "OK") for run_id in sorted(RUNS)
    ]
    # Every table applied by exactly one run; the other run found nothing new (a NOOP row at the
    # watermark, or no row when its window had no events at all).
    tables = [r for r in apply_rows if r["table"] is not None]
    assert {r["database"] for r in tables} == {DB}
    applied = sorted((r["table"], r["window_end"]) for r in tables if r["status"] == "APPLIED")
    assert applied == [(t, lake.watermark) for t in lake.tables()]
    assert len({r["run_id"] for r in tables if r["status"] == "APPLIED"}) == 1
    others = [(r["status"], r["window_start"], r["window_end"]) for r in tables if r["status"] != "APPLIED"]
    assert set(others) <= {("NOOP", lake.watermark, lake.watermark)}


def test_with_zero_wait_the_second_run_fails_cleanly_naming_the_first(
    tmp_path: Path, lake_home: Path, kafka_bootstrap: str
) -> None:
    lake = ddl_lake(tmp_path / "home", lake_home, kafka_bootstrap, seed=37)
    results, pids = _run_at_once(lake, tmp_path, wait_s=0)
    codes = sorted(p.returncode for p in results.values())
    assert codes == [0, EXIT_RETRYABLE], _show(results)
    winner = next(r for r, p in results.items() if p.returncode == 0)
    loser = next(r for r in RUNS if r != winner)
    pid = pids[winner]
    where = f"{lake.pipeline.landing_uri}/{lake.pipeline.id}/locks/land"
    host = socket.gethostname()
    message = (
        f"ERROR: land failed: pipeline '{lake.pipeline.id}' stage 'land': run '{winner}' on host {host} "
        f"(pid {pid}) since SINCE (last heartbeat AGE s ago) holds the pipeline lock {where}; run '{loser}' "
        "waited 0 s for it and stopped without changing anything. Run it again once the other run has finished "
        f"(a retry does); if that run is gone from host {host}, its lease is taken over once its heartbeat is "
        f"120 s old, or delete {where} after making sure pid {pid} is not running"
    )
    pattern = re.escape(message).replace("SINCE", r"\d{4}-\d\d-\d\dT[\d:.]+\+00:00").replace("AGE", r"\d+")
    lines = [line for line in results[loser].stderr.splitlines() if line.startswith("ERROR: ")]
    assert len(lines) == 1, _show(results)
    assert re.fullmatch(pattern, lines[0]), lines[0]

    # Nothing of the failed run, and the first run's result is whole.
    manifests = LandingStore(lake.pipeline.landing_uri, lake.pipeline.id).manifests()
    assert [(m.sequence, m.run_id) for m in manifests] == [(1, winner)]
    assert {r["run_id"] for r in lake.ledger()} == {winner}
    assert lake.differences() == {}
    assert lake.positions() == dict.fromkeys(lake.tables(), lake.watermark)
    assert not (tmp_path / "home" / "landing" / lake.pipeline.id / "locks" / "land").exists()
