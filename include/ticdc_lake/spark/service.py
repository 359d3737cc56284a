"""The Spark run service: one long-lived Spark driver that runs pipelines' Spark stages on request.

A ``spark-submit`` per run pays a launcher and a driver JVM, the Python driver's imports, the
Python workers' start and the JIT warm-up of the first Iceberg and Spark SQL code paths, every
run (``docs/apply-performance.md``, "Fixed cost of a run"). The service pays them once. A run
sent to it (``ticdc_lake.spark_service_client``) executes the same stage function a
``spark-submit`` of ``spark_jobs/<stage>.py`` would (:func:`ticdc_lake.spark.entrypoint.execute_stage`),
with the same stage locks, ledger rows and exit codes, in a session of the service's application
(``service_sessions``). What differs is said in ``docs/spark-service.md``:

- runs execute one at a time, in the order they arrive (a second request waits and says so);
- the run's log lines (the stage's own log) stream back to the caller, which is the Airflow task;
  Spark's own log stays in the service's log;
- when the caller goes away (the task was killed or timed out), the run's Spark jobs are cancelled
  until the stage gives up, as if its ``spark-submit`` had been killed;
- a request from another version of ticdc-lake is refused: restart the service after an upgrade.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.errors import ConfigError
from ticdc_lake.redaction import redact
from ticdc_lake.spark.entrypoint import StageCall, execute_stage
from ticdc_lake.spark.service_sessions import ServiceSessions
from ticdc_lake.spark.stage_jobs import STAGE_JOBS
from ticdc_lake.spark_service_client import EXIT_CRASHED, HEARTBEAT_S, SERVICE_NAME, RunRequest, code_version

log = logging.getLogger(__name__)

#: Format of the run's log lines sent to the caller (an Airflow task log stamps each line itself).
LINE_FORMAT = "%(levelname)s [%(name)s] %(message)s"


class RunService:
    """Runs stage requests one at a time in the sessions of one Spark application."""

    def __init__(self, spark: SparkSession, token: str, *, version: str | None = None) -> None:
        self.spark = spark
        self.token = token
        self.version = version or code_version()
        self.sessions = ServiceSessions(spark)
        self.runs = 0
        self.busy: str | None = None
        self._lock = threading.Lock()

    def health(self) -> dict[str, Any]:
        context = self.spark.sparkContext
        return {
            "service": SERVICE_NAME,
            "version": self.version,
            "busy": self.busy,
            "master": context.master,
            "application": context.applicationId,
            "runs": self.runs,
        }

    @contextlib.contextmanager
    def idle(self) -> Iterator[None]:
        """Hold the service between runs (the current run, if any, ends first)."""
        with self._lock:
            yield

    def refusal(self, request: RunRequest) -> str | None:
        """Why this service cannot take ``request`` (another code version, an unknown stage), or None."""
        if request.stage not in STAGE_JOBS:
            return f"run request: unknown stage {request.stage!r}; known: {', '.join(STAGE_JOBS)}"
        if request.version != self.version:
            return (
                f"this Spark run service runs ticdc-lake {self.version}, the run of pipeline {request.pipeline!r} "
                f"comes from {request.version or 'an unnamed version'}: restart the service after an upgrade "
                "(include/scripts/spark_service.sh restart) so both run the same code"
            )
        return None

    def run(self, request: RunRequest, emit: Callable[[dict[str, Any]], None], gone: threading.Event) -> int:
        """Run ``request`` (one :meth:`refusal` accepted); its log lines go to ``emit``; ``gone`` set: the
        caller left, cancel. The exit code a ``spark-submit`` of the stage would end with."""
        job = STAGE_JOBS[request.stage]
        what = f"pipeline {request.pipeline!r}, run {request.run_id!r}"
        waited = time.monotonic()
        while not self._lock.acquire(timeout=HEARTBEAT_S):
            emit({"log": f"INFO [{__name__}] waiting: the service is running {self.busy}"})
            if gone.is_set():
                return EXIT_CRASHED
        try:
            self.busy = f"{request.pipeline}/{request.run_id}"
            self.runs += 1
            if time.monotonic() - waited > 1:
                emit({"log": f"INFO [{__name__}] waited {time.monotonic() - waited:.1f} s for the service"})
            log.info("service: run %d: %s %s", self.runs, request.stage, what)
            group = f"ticdc-run-{self.runs}"
            with _relayed_log(emit, threading.get_ident()), _cancelled_when(gone, self.spark, group):
                self.spark.sparkContext.setJobGroup(group, f"{request.stage} of {what}", interruptOnCancel=True)
                started = time.monotonic()
                try:
                    code = execute_stage(
                        request.stage,
                        job,
                        StageCall(request.config, request.pipeline, request.run_id, request.rebuild),
                        self._open,
                        self._release,
                    )
                except Exception:
                    logging.getLogger(f"ticdc_lake.{request.stage}").error(
                        "%s failed:\n%s", request.stage, redact(traceback.format_exc())
                    )
                    code = EXIT_CRASHED
                log.info(
                    "service: run %d ended with exit code %d after %.1f s", self.runs, code, time.monotonic() - started
                )
            return code
        finally:
            self.busy = None
            self._lock.release()

    def _open(self, config: LakeConfig, pipeline: PipelineConfig) -> SparkSession:
        return self.sessions.session_for(config, pipeline)

    def _release(self, session: SparkSession) -> None:
        session.catalog.clearCache()  # what the run persisted; a spark-submit would have dropped it at exit


@contextlib.contextmanager
def _relayed_log(emit: Callable[[dict[str, Any]], None], thread: int) -> Iterator[None]:
    """Every log record of the run's thread also goes to ``emit``, as a line (not other requests' records)."""
    handler = _EmitHandler(emit)
    handler.addFilter(lambda record: record.thread == thread)
    handler.setFormatter(logging.Formatter(LINE_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


class _EmitHandler(logging.Handler):
    def __init__(self, emit: Callable[[dict[str, Any]], None]) -> None:
        super().__init__(logging.INFO)
        self._emit = emit

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # the caller left: the service's own log still has the line
            self._emit({"log": self.format(record)})


@contextlib.contextmanager
def _cancelled_when(gone: threading.Event, spark: SparkSession, group: str) -> Iterator[None]:
    """While the run lasts, cancel its Spark jobs each second once ``gone`` is set (later jobs too)."""
    done = threading.Event()

    def watch() -> None:
        while not done.wait(1.0):
            if gone.is_set():
                spark.sparkContext.cancelJobGroup(group)

    watcher = threading.Thread(target=watch, name=f"{group}-cancel", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        if gone.is_set():
            log.warning("service: the caller of %s left; its Spark jobs were cancelled", group)


class _Handler(BaseHTTPRequestHandler):
    server: ServiceHTTPServer
    protocol_version = "HTTP/1.0"  # a run's stream ends when the connection closes

    def log_message(self, format: str, *args: Any) -> None:
        log.info("service: %s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        if not self._authorized():
            return
        if self.path != "/health":
            self._reply(HTTPStatus.NOT_FOUND, {"error": f"no such path {self.path!r}: GET /health, POST /runs"})
            return
        self._reply(HTTPStatus.OK, self.server.service.health())

    def do_POST(self) -> None:
        if not self._authorized():
            return
        if self.path != "/runs":
            self._reply(HTTPStatus.NOT_FOUND, {"error": f"no such path {self.path!r}: GET /health, POST /runs"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = RunRequest.from_json(self.rfile.read(length))
        except ConfigError as exc:
            self._reply(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            return
        refused = self.server.service.refusal(request)
        if refused is not None:
            self._reply(HTTPStatus.CONFLICT, {"error": refused})
            return
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        self._stream(request)

    def _stream(self, request: RunRequest) -> None:
        gone = threading.Event()
        writing = threading.Lock()

        def emit(message: dict[str, Any]) -> None:
            if gone.is_set():
                return
            line = (json.dumps(message) + "\n").encode()
            with writing:
                try:
                    self.wfile.write(line)
                    self.wfile.flush()
                except OSError:
                    gone.set()

        beating = threading.Event()

        def heartbeat() -> None:
            started = time.monotonic()
            while not beating.wait(HEARTBEAT_S):
                emit({"heartbeat": round(time.monotonic() - started, 1)})

        beat = threading.Thread(target=heartbeat, name="service-heartbeat", daemon=True)
        beat.start()
        try:
            code = self.server.service.run(request, emit, gone)
        finally:
            beating.set()
        emit({"exit": code, "error": None})

    def _authorized(self) -> bool:
        given = self.headers.get("Authorization", "")
        if secrets.compare_digest(given.encode(), f"Bearer {self.server.service.token}".encode()):
            return True
        self._reply(HTTPStatus.UNAUTHORIZED, {"error": "missing or wrong bearer token"})
        return False

    def _reply(self, status: HTTPStatus, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class ServiceHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], service: RunService) -> None:
        super().__init__(address, _Handler)
        self.service = service


def read_or_create_token(path: Path) -> str:
    """The token in ``path``; a new random one written there (mode 0600) when the file does not exist."""
    if path.exists():
        token = path.read_text().strip()
        if not token:
            raise ConfigError(f"{path}: the Spark run service's token file is empty; delete it to get a new token")
        return token
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    path.touch(mode=0o600)
    path.write_text(token + "\n")
    return token
