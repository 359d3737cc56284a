"""A real Spark run service for tests and benchmarks: ``spark_jobs/service.py`` as a subprocess.

Each one listens on a free loopback port with its own token file and log under ``home``, runs
Spark on ``local[2]``, and is stopped with SIGTERM (SIGKILL after a minute).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ticdc_lake.errors import ServiceError
from ticdc_lake.failpoints import ENV as FAILPOINTS_ENV
from ticdc_lake.spark_service_client import SparkServiceClient

PROJECT_ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 240


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def end_on_sigterm() -> None:
    """Make SIGTERM end this process by ``SystemExit``, so that ``finally`` blocks run: a bench
    stopped with ``kill`` then stops the service it started (in a session of its own, the service
    does not get the signal), where Python's default would exit and leave it running."""

    def end(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, end)


class SparkServiceProcess:
    """``spark_jobs/service.py --config config``; ``failpoints`` armed in its process when given."""

    def __init__(self, config: Path, home: Path, *, failpoints: str = "") -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.port = free_port()
        self.token_file = home / "spark-service.token"
        self.log_file = home / f"spark-service-{self.port}.log"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT / "include"), str(PROJECT_ROOT / "plugins")]),
            "TICDC_LAKE_HOME": str(home),
        }
        env.pop(FAILPOINTS_ENV, None)
        if failpoints:
            env[FAILPOINTS_ENV] = failpoints
        command = [sys.executable, "spark_jobs/service.py", "--config", str(config), "--port", str(self.port)]
        command += ["--token-file", str(self.token_file), "--master", "local[2]"]
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                command, cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"the service exited with {self.process.returncode}: {self.log_tail()}")
            try:
                self.health()
                return
            except ServiceError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"no /health after {START_TIMEOUT_S} s: {self.log_tail()}") from None
                time.sleep(0.5)

    def client(self) -> SparkServiceClient:
        token = self.token_file.read_text().strip() if self.token_file.exists() else ""
        return SparkServiceClient("127.0.0.1", self.port, token, connect_timeout_s=2)

    def health(self) -> dict[str, object]:
        return self.client().health()

    def connection(self) -> str:
        """The Airflow connection (``AIRFLOW_CONN_<ID>`` JSON) of this service."""
        token = self.token_file.read_text().strip()
        return json.dumps({"conn_type": "generic", "host": "127.0.0.1", "port": self.port, "password": token})

    def log_tail(self) -> str:
        return self.log_file.read_text(errors="replace")[-4000:] if self.log_file.exists() else "(no log)"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
