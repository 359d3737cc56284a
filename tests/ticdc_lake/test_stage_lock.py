"""The pipeline stage lock on a real local landing folder: exclusive, waited for, heartbeat, stale takeover."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import ConcurrentRunError
from ticdc_lake.stage_lease import Lease, process_alive, process_start
from ticdc_lake.stage_lock import WAIT_ENV, PipelineLock, locked, stage_lock, wait_seconds

PIPELINE = "orders"


def _lock(tmp_path: Path, run_id: str, **options: float) -> PipelineLock:
    return PipelineLock(f"file://{tmp_path}", PIPELINE, "apply", run_id, **options)  # type: ignore[arg-type]


def _lease_file(tmp_path: Path) -> Path:
    return tmp_path / PIPELINE / "locks" / "apply"


def _write_lease(tmp_path: Path, lease: Lease) -> None:
    path = _lease_file(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lease.to_json())


def _other(run_id: str, *, host: str = "elsewhere", pid: int = 4242, age_s: float = 0.0) -> Lease:
    at = datetime.now(UTC) - timedelta(seconds=age_s)
    return Lease(PIPELINE, "apply", run_id, host, pid, None, "other-token", at, at)


def test_acquire_writes_the_lease_and_release_removes_it(tmp_path: Path) -> None:
    lock = _lock(tmp_path, "run-1")
    with lock as lease:
        document = json.loads(_lease_file(tmp_path).read_bytes())
        assert document["run_id"] == "run-1"
        assert document["pid"] == lease.pid
        assert document["host"] == socket.gethostname()
        assert document["pipeline"] == PIPELINE
        assert document["stage"] == "apply"
        assert document["started_at"] == lease.started_at.isoformat()
    assert not _lease_file(tmp_path).exists()
    assert [p.name for p in _lease_file(tmp_path).parent.iterdir()] == []  # no temporary left


def test_a_second_run_with_zero_wait_fails_naming_the_holder(tmp_path: Path) -> None:
    with _lock(tmp_path, "run-1") as held, pytest.raises(ConcurrentRunError) as caught:
        _lock(tmp_path, "run-2", wait_s=0).acquire()
    where = f"file://{tmp_path}/{PIPELINE}/locks/apply"
    assert str(caught.value) == (
        f"pipeline 'orders' stage 'apply': run 'run-1' on host {held.host} (pid {held.pid}) since "
        f"{held.started_at.isoformat()} (last heartbeat 0 s ago) holds the pipeline lock {where}; run 'run-2' "
        "waited 0 s for it and stopped without changing anything. Run it again once the other run has finished "
        f"(a retry does); if that run is gone from host {held.host}, its lease is taken over once its heartbeat "
        f"is 120 s old, or delete {where} after making sure pid {held.pid} is not running"
    )
    assert caught.value.retryable
    assert not _lease_file(tmp_path).exists()


def test_a_second_run_waits_until_the_first_releases(tmp_path: Path) -> None:
    first = _lock(tmp_path, "run-1")
    first.acquire()
    releaser = threading.Timer(0.6, first.release)
    releaser.start()
    began = time.monotonic()
    with _lock(tmp_path, "run-2", wait_s=10, poll_s=0.05):
        waited = time.monotonic() - began
        assert json.loads(_lease_file(tmp_path).read_bytes())["run_id"] == "run-2"
    releaser.join()
    assert 0.5 <= waited < 5


def test_waiting_gives_up_after_the_wait(tmp_path: Path) -> None:
    with _lock(tmp_path, "run-1"):
        began = time.monotonic()
        with pytest.raises(ConcurrentRunError, match="run 'run-2' waited 1 s"):
            _lock(tmp_path, "run-2", wait_s=0.8, poll_s=0.1).acquire()
        assert 0.8 <= time.monotonic() - began < 3


def test_the_heartbeat_refreshes_the_lease(tmp_path: Path) -> None:
    with _lock(tmp_path, "run-1", heartbeat_s=0.1) as lease:
        time.sleep(0.5)
        document = json.loads(_lease_file(tmp_path).read_bytes())
        beat = datetime.fromisoformat(document["heartbeat_at"])
        assert beat > lease.heartbeat_at
        assert document["started_at"] == lease.started_at.isoformat()
        assert document["token"] == lease.token


def test_a_lease_with_an_old_heartbeat_is_taken_over(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _write_lease(tmp_path, _other("crashed-run", age_s=200))
    with caplog.at_level(logging.WARNING), _lock(tmp_path, "run-2", wait_s=0) as lease:
        assert json.loads(_lease_file(tmp_path).read_bytes())["token"] == lease.token
    assert "taking over the lease of run 'crashed-run' on host elsewhere (pid 4242)" in caplog.text
    assert "its last heartbeat is 200 s old (stale after 120 s)" in caplog.text


def test_a_fresh_lease_of_another_host_is_respected(tmp_path: Path) -> None:
    _write_lease(tmp_path, _other("live-run", age_s=100))
    with pytest.raises(ConcurrentRunError, match="run 'live-run' on host elsewhere"):
        _lock(tmp_path, "run-2", wait_s=0).acquire()
    assert json.loads(_lease_file(tmp_path).read_bytes())["run_id"] == "live-run"


def test_a_lease_whose_process_is_gone_from_this_host_is_taken_over_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    _write_lease(tmp_path, _other("killed-run", host=socket.gethostname(), pid=child.pid))
    with caplog.at_level(logging.WARNING), _lock(tmp_path, "run-2", wait_s=0):
        pass
    assert f"its process {child.pid} on this host ({socket.gethostname()}) is gone" in caplog.text


def test_a_live_process_of_this_host_keeps_its_lease(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lease = _other("live-run", host=socket.gethostname(), pid=child.pid)
        _write_lease(tmp_path, replace(lease, pid_started=process_start(child.pid)))
        with pytest.raises(ConcurrentRunError, match=f"pid {child.pid}"):
            _lock(tmp_path, "run-2", wait_s=0).acquire()
    finally:
        child.kill()
        child.wait()


def test_a_reused_pid_is_told_apart_by_its_start_time() -> None:
    me = process_start(os.getpid())
    assert me is not None
    assert process_alive(os.getpid(), me)
    assert not process_alive(os.getpid(), str(int(me) + 1))


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while process_alive(child.pid, None) and time.monotonic() < deadline:
        time.sleep(0.05)  # exited but not reaped: a zombie until wait()
    assert not process_alive(child.pid, None)
    child.wait()


def test_an_unreadable_lease_counts_from_its_file_time(tmp_path: Path) -> None:
    _lease_file(tmp_path).parent.mkdir(parents=True)
    _lease_file(tmp_path).write_bytes(b"{not json")
    with pytest.raises(ConcurrentRunError, match="run '\\(unreadable lease\\)'"):
        _lock(tmp_path, "run-2", wait_s=0).acquire()
    with _lock(tmp_path, "run-3", wait_s=0, stale_after_s=0):
        assert json.loads(_lease_file(tmp_path).read_bytes())["run_id"] == "run-3"


def test_a_run_whose_lease_was_taken_over_sees_it_lost_and_leaves_the_new_one(tmp_path: Path) -> None:
    slow = _lock(tmp_path, "slow-run", heartbeat_s=0.1)
    slow.acquire()
    _write_lease(tmp_path, _other("new-run"))  # as a takeover would leave it
    assert slow.lost.wait(5)
    slow.release()
    assert json.loads(_lease_file(tmp_path).read_bytes())["run_id"] == "new-run"


def test_removing_a_lease_that_was_replaced_meanwhile_puts_it_back(tmp_path: Path) -> None:
    _write_lease(tmp_path, _other("fresh-run"))
    contender = _lock(tmp_path, "run-2")
    assert not contender._remove_if("token-of-the-stale-lease-it-saw")
    assert json.loads(_lease_file(tmp_path).read_bytes())["run_id"] == "fresh-run"
    assert sorted(p.name for p in _lease_file(tmp_path).parent.iterdir()) == ["apply"]


def test_contenders_never_overlap(tmp_path: Path) -> None:
    inside: list[str] = []
    overlaps: list[tuple[str, ...]] = []

    def work(name: str) -> None:
        for _ in range(5):
            with _lock(tmp_path, name, wait_s=30, poll_s=0.01):
                inside.append(name)
                if len(inside) > 1:
                    overlaps.append(tuple(inside))
                time.sleep(0.01)
                inside.remove(name)

    threads = [threading.Thread(target=work, args=(f"run-{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []
    assert not _lease_file(tmp_path).exists()


def _pipeline(tmp_path: Path) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "id": PIPELINE,
            "protocol": "simple-json",
            "kafka": {"topics": ["t"]},
            "landing_uri": f"file://{tmp_path}",
            "catalog": "lake",
        }
    )


def test_the_decorator_holds_the_stage_lease_while_the_function_runs(tmp_path: Path) -> None:
    seen: list[str] = []

    @locked("apply")
    def run(spark: object, config: object, pipeline: PipelineConfig, run_id: str) -> int:
        seen.append(json.loads(_lease_file(tmp_path).read_bytes())["run_id"])
        if run_id == "bad":
            raise RuntimeError("boom")
        return 7

    assert run(None, None, _pipeline(tmp_path), "run-1") == 7
    assert run(None, None, pipeline=_pipeline(tmp_path), run_id="run-2") == 7
    with pytest.raises(RuntimeError):
        run(None, None, _pipeline(tmp_path), "bad")
    assert seen == ["run-1", "run-2", "bad"]
    assert not _lease_file(tmp_path).exists()


def test_the_wait_comes_from_the_environment_else_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WAIT_ENV, raising=False)
    assert wait_seconds(_pipeline(tmp_path)) == 900.0
    monkeypatch.setenv(WAIT_ENV, "0")
    assert wait_seconds(_pipeline(tmp_path)) == 0.0
    assert stage_lock(_pipeline(tmp_path), "land", "r").wait_s == 0.0
    assert stage_lock(_pipeline(tmp_path), "land", "r").where == f"file://{tmp_path}/{PIPELINE}/locks/land"
