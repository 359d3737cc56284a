"""An isolated Airflow installation driven through subprocesses (used by the fixtures in conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class AirflowSandbox:
    home: Path
    dags: Path
    env: dict[str, str]

    def airflow(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(VENV_BIN / "airflow"), *args],
            env={**self.env, **(env or {})},
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def dags_test(self, dag_id: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``airflow dags test``: one run in-process, tasks through the real task runner."""
        started = time.monotonic()
        result = self.airflow("dags", "test", dag_id, env=env)
        print(f"airflow dags test {dag_id}: {time.monotonic() - started:.1f} s, exit {result.returncode}")
        return result

    def task_states(self, dag_id: str) -> dict[str, str]:
        """Task states of the DAG's latest run, read back through the CLI."""
        runs = _json_output(self.airflow("dags", "list-runs", dag_id, "-o", "json"))
        run_id = max(runs, key=lambda r: r["start_date"])["run_id"]
        states = _json_output(self.airflow("tasks", "states-for-dag-run", dag_id, run_id, "-o", "json"))
        return {row["task_id"]: row["state"] for row in states}


def _json_output(result: subprocess.CompletedProcess[str]) -> list[dict[str, str]]:
    assert result.returncode == 0, result.stderr[-3000:]
    for line in result.stdout.splitlines():
        if line.startswith("["):
            rows: list[dict[str, str]] = json.loads(line)
            return rows
    raise AssertionError(f"no JSON rows in: {result.stdout[-3000:]}")
