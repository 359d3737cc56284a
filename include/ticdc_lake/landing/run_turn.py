"""Whose turn it is to run a pipeline: one run at a time, whatever started the runs.

Airflow's ``max_active_runs=1`` does not bound a backfill (``airflow backfill create`` without
``--max-active-runs`` runs up to 10 runs at once, and backfill runs are not counted against the
scheduled ones), so the land task, the first task of every run, takes the pipeline's *turn*
before it lands and keeps it until its run ends:

- the turn is the newest file of ``<landing>/<pipeline>/locks/turn/`` (``000000000001``, ``...2``),
  naming the run that holds it; a new turn file is created exclusively (a hard link on a local
  filesystem, a conditional PUT on S3), so two runs can never both take the next turn;
- a turn is held while its run is active (queued or running in Airflow: the caller says, through
  ``is_active``), so a failed task waiting for its retry keeps it, and a run that ends (success,
  failed, deleted) frees it without any heartbeat;
- runs that wait register under ``turn/waiting/``; the turn goes to the one whose Airflow run
  started first (a backfill's runs start in the backfill's order, ``--run-backwards`` included),
  once every running run of the pipeline has registered (at most ``settle_s`` after registering,
  so a run that never reaches its land task cannot hold the others back).

:meth:`RunTurn.poke` never blocks: it returns None when the turn is the caller's, or why it waits
(the land task then reschedules itself and asks again).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pyarrow.fs as pafs

from ticdc_lake.storage_files import create_exclusive, delete_if_exists, open_filesystem, read_if_exists

TURN_DIR = "locks/turn"
#: Seconds a waiting run waits for the other running runs to register before ignoring them.
SETTLE_S = 120.0
#: Turn files kept (older ones are removed as new turns are taken).
KEEP_TURNS = 20


class RunTurn:
    """The turn of one pipeline on its landing storage."""

    def __init__(self, landing_uri: str, pipeline_id: str, *, settle_s: float = SETTLE_S) -> None:
        self.pipeline_id = pipeline_id
        self.settle_s = settle_s
        self._fs, base = open_filesystem(landing_uri)
        self.folder = f"{base}/{pipeline_id}/{TURN_DIR}"
        self.where = f"{landing_uri.rstrip('/')}/{pipeline_id}/{TURN_DIR}"

    def holder(self) -> tuple[int, str] | None:
        """The newest turn: its number and the run holding it; None before the first turn."""
        numbers = sorted(int(info.base_name) for info in self._list(self.folder) if info.base_name.isdigit())
        if not numbers:
            return None
        data = self._read(f"{self.folder}/{numbers[-1]:012d}") or b"{}"
        return numbers[-1], str(json.loads(data).get("run_id", "?"))

    def poke(
        self,
        run_id: str,
        started: datetime,
        is_active: Callable[[str], bool],
        running: int,
        now: datetime | None = None,
    ) -> str | None:
        """Take the turn for ``run_id``: None when it is (or already was) this run's, else why it waits.

        ``started`` is when Airflow started the run (orders the waiting runs), ``is_active`` tells
        whether a run is still queued or running, ``running`` is how many runs of the pipeline
        Airflow has running (this one included).
        """
        now = now or datetime.now(UTC)
        me = self._register(run_id, started, now)
        current = self.holder()
        if current is not None and current[1] == run_id:
            self._delete(self._waiting_path(run_id))
            return None
        if current is not None and is_active(current[1]):
            return (
                f"run {current[1]!r} has the turn of pipeline {self.pipeline_id!r} ({self.where}) until it ends; "
                "if that run is stuck (its process gone), mark it failed in Airflow"
            )
        waiters = [me]
        for entry in self._waiting():
            if entry["run_id"] == run_id:
                continue
            if is_active(entry["run_id"]):
                waiters.append(entry)
            else:
                self._delete(self._waiting_path(entry["run_id"]))
        registered_since = datetime.fromisoformat(me["registered_at"])
        if len(waiters) < running and now - registered_since < timedelta(seconds=self.settle_s):
            return (
                f"{running - len(waiters)} other running run(s) of pipeline {self.pipeline_id!r} have not "
                "reached their land task yet; the run that started first goes first"
            )
        first = min(waiters, key=lambda entry: (entry["started"], entry["run_id"]))
        if first["run_id"] != run_id:
            return f"run {first['run_id']!r} started earlier and goes first"
        number = (current[0] if current is not None else 0) + 1
        if not self._create(f"{self.folder}/{number:012d}", json.dumps({"run_id": run_id}).encode()):
            return "another run took the turn at the same moment"
        self._delete(self._waiting_path(run_id))
        for old in range(max(1, number - KEEP_TURNS), number - KEEP_TURNS // 2):
            self._delete(f"{self.folder}/{old:012d}")  # keep the folder small; the newest turns stay
        return None

    # -- waiting runs --------------------------------------------------------------------------

    def _waiting_path(self, run_id: str) -> str:
        return f"{self.folder}/waiting/{hashlib.sha256(run_id.encode()).hexdigest()[:32]}.json"

    def _register(self, run_id: str, started: datetime, now: datetime) -> dict[str, str]:
        path = self._waiting_path(run_id)
        old = self._read(path)
        if old is not None:
            entry: dict[str, str] = json.loads(old)
            if entry.get("started") == started.isoformat():
                return entry
        entry = {"run_id": run_id, "started": started.isoformat(), "registered_at": now.isoformat()}
        self._fs.create_dir(f"{self.folder}/waiting", recursive=True)
        with self._fs.open_output_stream(path, compression=None) as out:
            out.write(json.dumps(entry).encode())
        return entry

    def _waiting(self) -> list[dict[str, str]]:
        entries = []
        for info in self._list(f"{self.folder}/waiting"):
            data = self._read(info.path)
            if data is not None and info.base_name.endswith(".json"):
                entries.append(json.loads(data))
        return entries

    # -- storage -------------------------------------------------------------------------------

    def _create(self, path: str, data: bytes) -> bool:
        """Exclusive create; False when ``path`` exists."""
        self._fs.create_dir(self.folder, recursive=True)
        return create_exclusive(self._fs, path, data, f"{self.folder}/.turn.{uuid.uuid4().hex}.tmp")

    def _list(self, folder: str) -> list[pafs.FileInfo]:
        infos = self._fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        return [info for info in infos if info.type == pafs.FileType.File]

    def _read(self, path: str) -> bytes | None:
        return read_if_exists(self._fs, path)

    def _delete(self, path: str) -> None:
        delete_if_exists(self._fs, path)
