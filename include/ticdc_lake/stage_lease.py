"""The lease file of a pipeline stage lock: who holds it, since when, and whether it is still alive.

A lease is a small JSON document at ``<landing>/<pipeline>/locks/<stage>``
(:mod:`ticdc_lake.stage_lock`). It is stale when its heartbeat is older than the
timeout, or at once when its process is gone from this host (same host name, and the pid is not
running or is running a different process: the pid's start time differs).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime


@dataclass(frozen=True, slots=True)
class Lease:
    pipeline: str
    stage: str
    run_id: str
    host: str
    pid: int
    #: Start time of the process (``/proc/<pid>/stat``, clock ticks since boot), to tell a reused pid.
    pid_started: str | None
    #: Unique per acquisition: a holder recognizes its own lease by it.
    token: str
    started_at: datetime
    heartbeat_at: datetime

    @classmethod
    def mine(cls, pipeline: str, stage: str, run_id: str, token: str) -> Lease:
        now = datetime.now(UTC)
        pid = os.getpid()
        return cls(pipeline, stage, run_id, socket.gethostname(), pid, process_start(pid), token, now, now)

    def beat(self) -> Lease:
        return replace(self, heartbeat_at=datetime.now(UTC))

    def to_json(self) -> bytes:
        document = asdict(self)
        document["started_at"] = self.started_at.isoformat()
        document["heartbeat_at"] = self.heartbeat_at.isoformat()
        return json.dumps(document, sort_keys=True).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> Lease:
        """Raises ValueError (or KeyError/TypeError) when ``data`` is not a lease."""
        document = json.loads(data)
        return cls(
            pipeline=str(document["pipeline"]),
            stage=str(document["stage"]),
            run_id=str(document["run_id"]),
            host=str(document["host"]),
            pid=int(document["pid"]),
            pid_started=document.get("pid_started"),
            token=str(document["token"]),
            started_at=_utc(document["started_at"]),
            heartbeat_at=_utc(document["heartbeat_at"]),
        )

    def stale_reason(self, stale_after_s: float, now: datetime | None = None) -> str | None:
        """Why this lease no longer protects a live run, or None while it does."""
        if self.host == socket.gethostname() and not process_alive(self.pid, self.pid_started):
            return f"its process {self.pid} on this host ({self.host}) is gone"
        age = ((now or datetime.now(UTC)) - self.heartbeat_at).total_seconds()
        if age > stale_after_s:
            return f"its last heartbeat is {age:.0f} s old (stale after {stale_after_s:.0f} s)"
        return None

    def describe(self, now: datetime | None = None) -> str:
        age = ((now or datetime.now(UTC)) - self.heartbeat_at).total_seconds()
        return (
            f"run {self.run_id!r} on host {self.host} (pid {self.pid}) since {self.started_at.isoformat()} "
            f"(last heartbeat {max(age, 0):.0f} s ago)"
        )


def process_start(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot (Linux), None when unknown."""
    fields = _stat(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def process_alive(pid: int, started: str | None) -> bool:
    """Whether ``pid`` runs on this host and is the same process (same start time when known).

    A zombie (killed, not yet reaped by its parent) is not alive.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    fields = _stat(pid)
    if fields is None:
        return not os.path.exists("/proc/self/stat")  # with /proc: it just exited; without: trust the signal
    if fields[0] == "Z":
        return False
    return started is None or len(fields) <= 19 or fields[19] == started


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), None without /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _utc(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
