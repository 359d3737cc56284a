"""Client of the Spark run service (``docs/spark-service.md``): plain Python, no pyspark.

The service is one long-lived Spark driver that runs a pipeline's Spark work (``transform``:
decode, schema history, apply) for whoever asks, so a run pays no JVM start, no Python-driver
imports and no JIT warm-up. Its protocol, spoken over HTTP on one TCP port:

``GET /health``
    ``{"service": "ticdc-lake-spark", "version": V, "busy": "pipeline/run" | null, "master": M,
    "application": APP, "runs": N}``.
``POST /runs`` with the JSON of :class:`RunRequest`
    A stream of JSON lines (``application/x-ndjson``): ``{"log": LINE}`` for each line of the run's
    log, ``{"heartbeat": SECONDS}`` while nothing is logged (so either side notices the other
    gone), and last ``{"exit": CODE, "error": TEXT | null}``; ``CODE`` means what a ``spark-submit``
    exit code of the stage means (``ticdc_lake.spark.exit_codes``).

Every request carries ``Authorization: Bearer <token>``. ``version`` is :func:`code_version` of
both sides: the service refuses (409) a run sent by a different ticdc-lake, whose decoders or
apply rules might differ from what the task expects.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ticdc_lake.errors import ConfigError, ServiceError

DEFAULT_PORT = 18090
SERVICE_NAME = "ticdc-lake-spark"
#: Seconds between heartbeat lines of a run's stream; a client hears nothing for 4 of them: gone.
HEARTBEAT_S = 5.0
#: Exit code the service reports for a run that failed in an unexpected way (as a crashed driver would).
EXIT_CRASHED = 1
#: The library whose source :func:`code_version` digests.
_PACKAGE = Path(__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One stage run: what ``spark_jobs/<stage>.py --config --pipeline --run-id [--rebuild]`` gets."""

    config: str
    pipeline: str
    run_id: str
    stage: str = "transform"
    #: ``--rebuild``: a JSON list of table names or ``"*"`` (docs/rebuild.md); empty: a normal run.
    rebuild: str = ""
    version: str = ""

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @staticmethod
    def from_json(body: bytes) -> RunRequest:
        expected = "a JSON object with the strings config, pipeline, run_id and optionally stage, rebuild, version"
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise ConfigError(f"run request: not JSON ({exc}); expected {expected}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"run request: got a JSON {type(data).__name__}; expected {expected}")
        known = set(RunRequest.__dataclass_fields__)
        missing = sorted({"config", "pipeline", "run_id"} - set(data))
        unknown = sorted(set(data) - known)
        wrong = sorted(k for k, v in data.items() if k in known and not isinstance(v, str))
        if missing or unknown or wrong:
            problems = [
                f"{what} {', '.join(keys)}"
                for what, keys in (("missing", missing), ("unknown", unknown), ("not a string:", wrong))
                if keys
            ]
            raise ConfigError(f"run request: {'; '.join(problems)}; expected {expected}")
        return RunRequest(**data)


@dataclass(frozen=True, slots=True)
class RunOutcome:
    exit_code: int
    error: str | None


def code_version() -> str:
    """A digest of this ticdc-lake's library source (``ticdc_lake/**/*.py``), 16 hex digits."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


class SparkServiceClient:
    """Talks to one Spark run service; every failure to reach it is a retryable :class:`ServiceError`."""

    def __init__(self, host: str, port: int, token: str, *, connect_timeout_s: float = 10.0) -> None:
        self.host = host
        self.port = port
        self.token = token
        self.connect_timeout_s = connect_timeout_s

    @property
    def where(self) -> str:
        return f"the Spark run service at {self.host}:{self.port}"

    def health(self) -> dict[str, Any]:
        connection = self._connect(self.connect_timeout_s)
        try:
            connection.request("GET", "/health", headers=self._headers())
            response = connection.getresponse()
            body = response.read()
        except OSError as exc:
            raise self._unreachable(exc) from exc
        finally:
            connection.close()
        self._check_status(response.status, body)
        value = json.loads(body)
        if not isinstance(value, dict) or value.get("service") != SERVICE_NAME:
            raise ServiceError(f"{self.where} answered, but it is not a ticdc-lake Spark run service: {body[:200]!r}")
        return value

    def run(self, request: RunRequest, on_log: Callable[[str], None]) -> RunOutcome:
        """Send the run, hand each log line to ``on_log`` as it comes, and return how it ended.

        The service cancels the run's Spark jobs when this connection closes (the task was killed
        or timed out); the stage is then left as a killed ``spark-submit`` would leave it.
        """
        connection = self._connect(self.connect_timeout_s)
        if connection.sock is not None:  # silence longer than 4 heartbeats: the service is gone
            connection.sock.settimeout(4 * HEARTBEAT_S)
        try:
            connection.request(
                "POST", "/runs", body=request.to_json(), headers={**self._headers(), "Content-Type": "application/json"}
            )
            response = connection.getresponse()
            if response.status != 200:
                self._check_status(response.status, response.read())
            for message in _json_lines(response):
                if "log" in message:
                    on_log(str(message["log"]))
                elif "exit" in message:
                    error = message.get("error")
                    return RunOutcome(int(message["exit"]), str(error) if error else None)
        except (OSError, http.client.HTTPException) as exc:
            raise ServiceError(
                f"{self.where} stopped answering during run {request.run_id!r} of pipeline {request.pipeline!r} "
                f"({exc}); the run's stages recover on the next run (docs/crash-safety.md). Check the service's "
                "log and that it is running, then retry"
            ) from exc
        finally:
            connection.close()
        raise ServiceError(
            f"{self.where} closed the stream of run {request.run_id!r} of pipeline {request.pipeline!r} "
            "without an exit status (did the service stop?); check its log, then retry"
        )

    def _connect(self, timeout_s: float) -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        try:
            connection.connect()
        except OSError as exc:
            raise self._unreachable(exc) from exc
        if connection.sock is not None:
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def _unreachable(self, exc: OSError) -> ServiceError:
        return ServiceError(
            f"cannot reach {self.where} ({exc}). Start it (include/scripts/spark_service.sh start, or the "
            "spark-service service of docker-compose.yml), or remove the pipeline's spark_service setting "
            "to run spark-submit per run (docs/spark-service.md)"
        )

    def _check_status(self, status: int, body: bytes) -> None:
        if status == 200:
            return
        try:
            reason = str(json.loads(body).get("error"))
        except (ValueError, AttributeError):
            reason = body[:300].decode(errors="replace")
        if status == 401:
            raise ConfigError(
                f"{self.where} refused the token ({reason}): set the connection's password to the service's "
                "token (the file its --token-file names)"
            )
        error = ServiceError(f"{self.where} answered {status}: {reason}")
        error.retryable = status >= 500
        raise error


def _json_lines(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    for line in response:
        text = line.strip()
        if not text:
            continue
        value = json.loads(text)
        if isinstance(value, dict):
            yield value
