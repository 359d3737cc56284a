"""A real Airflow with a scheduler, for what ``airflow dags test`` cannot do (backfills).

``airflow backfill create`` only records the backfill's runs; the scheduler executes them, and in
Airflow 3 its LocalExecutor's task processes talk to the API server's execution API. So this
starts ``airflow api-server`` and ``airflow scheduler`` on loopback, sharing one SQLite database
and one JWT secret, with parallelism 1 (SQLite allows one writer; one task at a time is also what
the pipeline's ``max_active_runs=1`` gives). The DAGs are serialized with ``airflow dags
reserialize`` instead of running a DAG processor, and backfills are created before the scheduler
starts, since SQLite refuses a second writer while the scheduler holds it (dry runs only read).
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from ticdc_lake.cli.airflow_runner import AirflowRunner


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class AirflowServices:
    def __init__(self, runner: AirflowRunner) -> None:
        self.runner = runner
        self.port = _free_port()
        self.secret = secrets.token_hex(32)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.api: subprocess.Popen[bytes] | None = None
        self.scheduler: subprocess.Popen[bytes] | None = None
        self.logs = runner.home / "service-logs"

    def env(self) -> dict[str, str]:
        env = self.runner.env()
        env.update(
            {
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__PARALLELISM": "1",
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{self.port}/execution/",
                "AIRFLOW__API__PORT": str(self.port),
                "AIRFLOW__API_AUTH__JWT_SECRET": self.secret,
                "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
                # Only the backfills run: no run of the current interval besides them.
                "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(_free_port()),
            }
        )
        return env

    def airflow(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        airflow = str(Path(sys.executable).parent / "airflow")
        done = subprocess.run(
            [airflow, *args], env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
        )
        assert done.returncode == 0, f"airflow {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    def prepare(self) -> None:
        """Database and serialized DAGs, before any backfill is created."""
        self.runner.migrate()
        self.airflow("dags", "reserialize")

    def start(self) -> None:
        """The API server (task processes report to it), then the scheduler."""
        self.logs.mkdir(parents=True, exist_ok=True)
        self.api = self._spawn("api-server", "api-server", "--host", "127.0.0.1", "-p", str(self.port))
        self._await_api()
        self.start_scheduler()

    def start_scheduler(self) -> None:
        self.scheduler = self._spawn("scheduler", "scheduler")

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        airflow = str(Path(sys.executable).parent / "airflow")
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen([airflow, *args], env=self.env(), stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def _await_api(self) -> None:
        deadline = time.monotonic() + 180
        url = f"http://127.0.0.1:{self.port}/api/v2/monitor/health"
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            assert self.api is not None
            assert self.api.poll() is None, (self.logs / "api-server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the API server did not answer within 180 s"
            time.sleep(1)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes.clear()
        self.api = self.scheduler = None

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        """The DAG's runs, read from the metadata database (polling the ``airflow`` CLI would cost
        seconds of CPU per look, taken from the runs it waits for)."""
        with contextlib.closing(sqlite3.connect(self.runner.home / "airflow.db", timeout=30)) as db:
            rows = db.execute("SELECT run_id, state, end_date FROM dag_run WHERE dag_id = ?", (dag_id,)).fetchall()
        return [{"run_id": run_id, "state": state, "end_date": end} for run_id, state, end in rows]

    def await_runs(self, dag_id: str, count: int, timeout_s: float = 600) -> list[dict[str, Any]]:
        """Wait until ``count`` runs of the DAG are finished; fails on a failed run, with its logs."""
        deadline = time.monotonic() + timeout_s
        while True:
            runs = self.runs(dag_id)
            failed = [r for r in runs if r["state"] == "failed"]
            assert not failed, f"failed runs {failed}:\n{self.task_logs(dag_id)}"
            if len([r for r in runs if r["state"] == "success"]) >= count:
                return runs
            assert time.monotonic() < deadline, f"runs after {timeout_s} s: {runs}\n{self.scheduler_log()}"
            time.sleep(3)

    def scheduler_log(self) -> str:
        return (self.logs / "scheduler.log").read_text(errors="replace")[-5000:]

    def task_logs(self, dag_id: str) -> str:
        logs = sorted((self.runner.home / "logs" / f"dag_id={dag_id}").rglob("*.log"))
        return "\n".join(f"== {p}\n{p.read_text(errors='replace')[-3000:]}" for p in logs)[-20000:]
