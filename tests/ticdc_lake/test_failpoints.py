"""Failpoints kill the real process (and its children) with SIGKILL, only when armed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ticdc_lake import failpoints


def _run(code: str, armed: str | None, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != failpoints.ENV}
    if armed is not None:
        env[failpoints.ENV] = armed
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )


HITS = """
    from ticdc_lake import failpoints
    for number in range(1, 4):
        print("before", number, flush=True)
        failpoints.hit("apply.after_merge")
        failpoints.hit("apply.other")
    print("done", flush=True)
"""


def test_parse_reads_names_hit_numbers_and_the_active_job_form() -> None:
    assert failpoints.parse(" a.b , c.d#3,e.f@active-job,,g#2@active-job ") == {
        "a.b": (1, ""),
        "c.d": (3, ""),
        "e.f": (1, "active-job"),
        "g": (2, "active-job"),
    }
    assert failpoints.parse("") == {}


@pytest.mark.parametrize("bad", ["a@later", "a#0", "a#x", "#2", "@active-job"])
def test_parse_rejects_malformed_entries(bad: str) -> None:
    with pytest.raises(ValueError, match=f"TICDC_LAKE_FAILPOINTS: entry '{bad}' is not"):
        failpoints.parse(bad)


def test_an_unarmed_failpoint_does_nothing(tmp_path: Path) -> None:
    result = _run(HITS, None, tmp_path)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "done"
    assert result.stderr == ""


def test_an_armed_failpoint_kills_the_process_at_its_first_hit(tmp_path: Path) -> None:
    result = _run(HITS, "apply.after_merge", tmp_path)
    assert result.returncode == -signal.SIGKILL
    assert result.stdout.splitlines() == ["before 1"]
    assert result.stderr.startswith("ticdc-lake failpoint apply.after_merge: killing process ")
    assert result.stderr.endswith(" with SIGKILL\n")
    assert len(result.stderr.splitlines()) == 1


def test_the_hit_number_form_crashes_at_that_hit(tmp_path: Path) -> None:
    result = _run(HITS, "apply.other#2", tmp_path)
    assert result.returncode == -signal.SIGKILL
    assert result.stdout.splitlines() == ["before 1", "before 2"]


def test_no_finally_block_runs(tmp_path: Path) -> None:
    marker = tmp_path / "finally-ran"
    code = f"""
        from ticdc_lake import failpoints
        try:
            failpoints.hit("land.before_publish")
        finally:
            open({str(marker)!r}, "w").close()
    """
    assert _run(code, "land.before_publish", tmp_path).returncode == -signal.SIGKILL
    assert not marker.exists()


def test_children_die_with_the_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = f"""
        import subprocess, sys
        from ticdc_lake import failpoints
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        failpoints.hit("land.after_data_file")
    """
    result = _run(code, "land.after_data_file", tmp_path)
    assert result.returncode == -signal.SIGKILL
    child = int(pid_file.read_text())
    assert f" and [{child}] with SIGKILL" in result.stderr
    deadline = time.monotonic() + 10
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child)


def _running(pid: int) -> bool:
    """Alive and not a zombie (the child was re-parented to init, which reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
