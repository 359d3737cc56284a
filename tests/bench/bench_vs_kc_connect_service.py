"""``bench_vs_kc --connect-service``: one Kafka Connect worker kept running for every sink round.

The counterpart of ``--spark-service`` on side B: a long-running Connect standalone worker, started
once before the first round and outside the measurement, to which each round adds its sink
connector through Connect's REST API (``POST /connectors``) and from which it removes it once
every change is committed (``DELETE /connectors/<name>``). Each round still has its own connector
name (so its own consumer group), control topic and catalog; what it no longer pays is the JVM's
start and, after the first round, the JIT compiling the sink's code again. One worker per sink
configuration: ``offset.flush.interval.ms`` is a worker setting.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench_vs_kc_connect as connect  # type: ignore[import-not-found,unused-ignore]  # beside this file

#: How long the worker may take to answer its REST API after starting, and a connector to go away.
START_S = 180.0
REMOVE_S = 60.0


class _StartingError(Exception):
    """The worker's REST API answered a read with Not Found or a server error: until its resources
    are registered, a starting worker answers ``GET /connectors`` with 404."""


@dataclass
class ConnectService:
    folder: Path
    rest_port: int
    process: subprocess.Popen[bytes]

    @property
    def log(self) -> Path:
        return self.folder / "connect.log"

    @classmethod
    def start(
        cls, folder: Path, jars: Path, bootstrap: str, rest_port: int, overrides: tuple[tuple[str, str], ...] = ()
    ) -> ConnectService:
        """Start a worker with no connector and wait until its REST API answers."""
        folder.mkdir(parents=True)
        worker = connect.write_properties(
            folder / "worker.properties", connect.worker_settings(folder, bootstrap, rest_port, overrides)
        )
        connect.write_properties(folder / "log4j.properties", connect.log4j_settings(folder / "connect.log"))
        service = cls(folder, rest_port, connect.start_standalone(jars, folder, worker))
        try:
            service._wait_ready()
        except BaseException:
            service.stop()
            raise
        return service

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_S
        while True:
            try:
                self._call("GET", "/connectors")
                return
            except (urllib.error.URLError, ConnectionError, _StartingError):  # not listening yet, or still starting
                if self.process.poll() is not None:
                    raise SystemExit(
                        f"Kafka Connect exited ({self.process.returncode}) while starting; see {self.log}"
                    ) from None
                if time.monotonic() > deadline:
                    raise SystemExit(
                        f"Kafka Connect did not answer on port {self.rest_port} in {START_S:g} s"
                    ) from None
                time.sleep(0.5)

    def add(self, job: connect.ConnectRound) -> None:
        """Start the round's connector in this worker."""
        settings = job.connector_settings()
        self._call("POST", "/connectors", {"name": settings["name"], "config": settings})

    def remove(self, name: str) -> None:
        """Delete the connector and wait until the worker no longer lists it (its tasks stopped)."""
        self._call("DELETE", f"/connectors/{name}")
        deadline = time.monotonic() + REMOVE_S
        while name in self._call("GET", "/connectors"):
            if time.monotonic() > deadline:
                raise SystemExit(f"Kafka Connect still runs connector {name} {REMOVE_S:g} s after its deletion")
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.rest_port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            if method == "GET" and (exc.code == 404 or exc.code >= 500):
                raise _StartingError(exc.code) from exc
            raise SystemExit(f"Kafka Connect {method} {path}: HTTP {exc.code}: {exc.read()[:500]!r}") from exc
        return json.loads(text) if text else None
