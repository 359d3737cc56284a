"""One run at a time per pipeline stage: an exclusive lease on the landing storage.

Airflow's ``max_active_runs=1`` protects one Airflow; a backfill next to a scheduled run, or two
deployments, can still run a stage of one pipeline twice at once. Each stage (land, decode,
schema history, apply) therefore holds ``<landing>/<pipeline>/locks/<stage>`` while it runs:

- acquired by an exclusive create through the same ``pyarrow.fs`` filesystem the landing store
  uses (on a local filesystem a hard link of a complete temporary file, which fails if the name
  exists, as manifests are published);
- kept alive by a daemon thread that rewrites its heartbeat every ``HEARTBEAT_S``;
- stale when its heartbeat is older than ``STALE_AFTER_S`` or its process is gone from this host;
  a stale lease is taken over atomically: renamed away (only one contender's rename succeeds; a
  contender that finds it renamed a fresh lease puts it back), then created anew;
- a second run waits up to the wait time (:func:`wait_seconds`), then fails with
  :class:`ConcurrentRunError` naming the holder and what to do.

Object stores have no exclusive create or atomic rename through ``pyarrow.fs``. On S3 the lease is
created with a conditional PUT (``If-None-Match: *``, :mod:`ticdc_lake.conditional_put`), which is
exclusive; the stale-lease takeover there is a check-then-delete, and without credentials to sign
the PUT the create is a check-then-write (docs/crash-safety.md). Waiting between tries is
tenacity's loop.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

import pyarrow.fs as pafs
import tenacity

from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import ConcurrentRunError
from ticdc_lake.stage_lease import Lease
from ticdc_lake.storage_files import create_exclusive, delete_if_exists, open_filesystem, read_if_exists, write_file

LOCK_DIR = "locks"
#: Seconds a run waits for another run's lease before failing (until the setting is wired).
DEFAULT_WAIT_S = 900.0
#: Overrides the wait (seconds; 0 fails at once), for operations and tests.
WAIT_ENV = "TICDC_LAKE_LOCK_WAIT_S"
HEARTBEAT_S = 10.0
STALE_AFTER_S = 120.0
POLL_S = 1.0

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _HeldError(Exception):
    """Another run holds the lease: :meth:`PipelineLock.acquire` tries again after ``wait_s``."""

    def __init__(self, wait_s: float) -> None:
        super().__init__(wait_s)
        self.wait_s = wait_s


def _held_wait(state: tenacity.RetryCallState) -> float:
    """Seconds before the next try, as the attempt that raised :class:`_HeldError` said."""
    error = state.outcome.exception() if state.outcome is not None else None
    return error.wait_s if isinstance(error, _HeldError) else 0.0


def wait_seconds(pipeline: PipelineConfig) -> float:
    """``TICDC_LAKE_LOCK_WAIT_S`` if set (tests), else the pipeline's ``lock_wait_s``."""
    text = os.environ.get(WAIT_ENV)
    if text:
        return float(text)
    return float(pipeline.lock_wait_s)


class PipelineLock:
    """The lease of one stage of one pipeline; a context manager (acquire on enter, release on exit)."""

    def __init__(
        self,
        landing_uri: str,
        pipeline_id: str,
        stage: str,
        run_id: str,
        *,
        wait_s: float = DEFAULT_WAIT_S,
        stale_after_s: float = STALE_AFTER_S,
        heartbeat_s: float = HEARTBEAT_S,
        poll_s: float = POLL_S,
        logger: logging.Logger | None = None,
    ) -> None:
        self.pipeline_id, self.stage, self.run_id = pipeline_id, stage, run_id
        self.wait_s, self.stale_after_s, self.heartbeat_s, self.poll_s = wait_s, stale_after_s, heartbeat_s, poll_s
        self._fs, base = open_filesystem(landing_uri)
        self._local = isinstance(self._fs, pafs.LocalFileSystem)
        self._folder = f"{base}/{pipeline_id}/{LOCK_DIR}"
        self.path = f"{self._folder}/{stage}"
        self.where = f"{landing_uri.rstrip('/')}/{pipeline_id}/{LOCK_DIR}/{stage}"
        self._log = logger or logging.getLogger(__name__)
        self.lease: Lease | None = None
        #: Set by the heartbeat when another run took the lease over (this run was deemed stale).
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- acquiring and releasing ---------------------------------------------------------------

    def acquire(self) -> Lease:
        began = time.monotonic()
        deadline = began + self.wait_s
        mine = Lease.mine(self.pipeline_id, self.stage, self.run_id, uuid.uuid4().hex)
        self._fs.create_dir(self._folder, recursive=True)
        waiting_for: list[str] = []  # the token of the lease this run last said it waits for

        def attempt() -> None:
            """Create the lease, or raise :class:`_HeldError` (try again) or ConcurrentRunError (give up)."""
            if self._create(mine):
                return
            holder = self.holder()
            if holder is None:
                raise _HeldError(0.0)  # released in between: try again at once
            reason = holder.stale_reason(self.stale_after_s)
            if reason is not None:
                self._log.warning(
                    "pipeline %r stage %r: taking over the lease of %s at %s: %s",
                    self.pipeline_id,
                    self.stage,
                    holder.describe(),
                    self.where,
                    reason,
                )
                self._take_over(holder)
                raise _HeldError(0.0)
            if time.monotonic() >= deadline:
                raise self._busy(holder, time.monotonic() - began)
            if waiting_for[-1:] != [holder.token]:
                waiting_for.append(holder.token)
                self._log.info(
                    "pipeline %r stage %r: %s holds %s; run %r waits (up to %.0f s)",
                    self.pipeline_id,
                    self.stage,
                    holder.describe(),
                    self.where,
                    self.run_id,
                    self.wait_s,
                )
            raise _HeldError(max(0.0, min(self.poll_s, deadline - time.monotonic())))

        tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_HeldError),
            wait=_held_wait,
            stop=tenacity.stop_never,
            reraise=True,
        )(attempt)
        self.lease = mine
        self._stop.clear()
        self._thread = threading.Thread(target=self._heartbeat, name=f"lease-{self.stage}", daemon=True)
        self._thread.start()
        self._log.info("pipeline %r stage %r: run %r holds %s", self.pipeline_id, self.stage, self.run_id, self.where)
        return mine

    def release(self) -> None:
        """Stop the heartbeat and remove the lease if it is still this run's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        lease, self.lease = self.lease, None
        if lease is None:
            return
        if not self._remove_if(lease.token):
            self._log.error(
                "pipeline %r stage %r: run %r had lost its lease at %s before it finished: another run took it over "
                "or it was deleted",
                self.pipeline_id,
                self.stage,
                self.run_id,
                self.where,
            )

    def __enter__(self) -> Lease:
        return self.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()

    def holder(self) -> Lease | None:
        """The lease there now (None when there is none); an unreadable one counts from its file time."""
        data = self._read(self.path)
        if data is None:
            return None
        try:
            return Lease.from_json(data)
        except (ValueError, KeyError, TypeError):
            info = self._fs.get_file_info(self.path)
            mtime = info.mtime if isinstance(info.mtime, datetime) else datetime.now(UTC)
            at = mtime if mtime.tzinfo is not None else mtime.replace(tzinfo=UTC)
            return Lease(self.pipeline_id, self.stage, "(unreadable lease)", "?", -1, None, "?", at, at)

    # -- the storage operations ----------------------------------------------------------------

    def _create(self, lease: Lease) -> bool:
        """Exclusive create of the lease file; False when one exists."""
        return create_exclusive(self._fs, self.path, lease.to_json(), self._temporary(), durable=True)

    def _take_over(self, stale: Lease) -> None:
        """Remove ``stale`` if it is still the lease there; the caller then creates its own."""
        self._remove_if(stale.token)

    def _remove_if(self, token: str) -> bool:
        """Remove the lease if it carries ``token``; a fresh lease moved away by mistake is put back."""
        if not self._local:
            current = self.holder()
            if current is None or current.token != token:
                return False
            self._delete(self.path)
            return True
        away = self._temporary(".away")
        try:
            self._fs.move(self.path, away)
        except (FileNotFoundError, OSError):
            return False  # gone already (another contender moved it)
        try:
            data = self._read(away) or b""
            try:
                moved = Lease.from_json(data).token
            except (ValueError, KeyError, TypeError):
                moved = "?"
            if moved == token:  # "?" matches an unreadable lease judged stale
                return True
            try:  # not the lease we meant: a run created it meanwhile; give it back
                os.link(away, self.path)
            except FileExistsError:
                self._log.error("%s: could not put back the lease of another run; it will see it lost", self.where)
            return False
        finally:
            self._delete(away)

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            lease = self.lease
            if lease is None:
                return
            try:
                if not self._beat(lease):
                    self.lost.set()
                    self._log.error(
                        "pipeline %r stage %r: run %r lost its lease at %s: its heartbeat was late and another "
                        "run took it over; the two runs may now overlap",
                        self.pipeline_id,
                        self.stage,
                        self.run_id,
                        self.where,
                    )
                    return
            except OSError as exc:  # a storage hiccup: try again at the next beat
                self._log.warning("%s: heartbeat failed: %s", self.where, exc)

    def _beat(self, lease: Lease) -> bool:
        current = self.holder()
        if current is None or current.token != lease.token:
            return False
        fresh = lease.beat()
        if not self._local:
            self._write(self.path, fresh.to_json())
        else:
            temporary = self._temporary()
            try:
                self._write(temporary, fresh.to_json())
                os.replace(temporary, self.path)
            finally:
                self._delete(temporary)
        self.lease = fresh
        return True

    def _busy(self, holder: Lease, waited: float) -> ConcurrentRunError:
        return ConcurrentRunError(
            f"pipeline {self.pipeline_id!r} stage {self.stage!r}: {holder.describe()} holds the pipeline lock "
            f"{self.where}; run {self.run_id!r} waited {waited:.0f} s for it and stopped without changing "
            f"anything. Run it again once the other run has finished (a retry does); if that run is gone from "
            f"host {holder.host}, its lease is taken over once its heartbeat is {self.stale_after_s:.0f} s old, "
            f"or delete {self.where} after making sure pid {holder.pid} is not running"
        )

    def _temporary(self, kind: str = ".tmp") -> str:
        return f"{self._folder}/.{self.stage}.{uuid.uuid4().hex}{kind}"

    def _write(self, path: str, data: bytes) -> None:
        write_file(self._fs, path, data, durable=True)

    def _read(self, path: str) -> bytes | None:
        return read_if_exists(self._fs, path)

    def _delete(self, path: str) -> None:
        delete_if_exists(self._fs, path)


def stage_lock(pipeline: PipelineConfig, stage: str, run_id: str, **options: Any) -> PipelineLock:
    """The lock of ``stage`` of ``pipeline`` on its landing storage, waiting :func:`wait_seconds`."""
    options.setdefault("wait_s", wait_seconds(pipeline))
    return PipelineLock(pipeline.landing_uri, pipeline.id, stage, run_id, **options)


def locked(stage: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorator: the function (with parameters ``pipeline`` and ``run_id``) runs holding the stage's lease."""

    def decorate(function: Callable[_P, _R]) -> Callable[_P, _R]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            bound = signature.bind(*args, **kwargs)
            with stage_lock(bound.arguments["pipeline"], stage, str(bound.arguments["run_id"])):
                return function(*args, **kwargs)

        return run

    return decorate
