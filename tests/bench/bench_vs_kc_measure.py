"""Wall seconds, CPU seconds and peak memory of a process tree, for `make bench-vs-kc`.

The tree is every process this bench process started, directly or not. The bench makes itself a
child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so a descendant whose parent exits first is
re-parented here rather than to init, and its CPU time is not lost. CPU seconds are user + system
time of

* every descendant already waited for: ``getrusage(RUSAGE_CHILDREN)`` of this process, since
  the start (a waited-for child's figure includes the children it waited for in turn), plus
* every descendant still running: its own user + system time and that of the children it has
  waited for (``/proc/<pid>/stat``; a running process's children that it has not waited for are
  in the list themselves).

Peak memory is the highest sum of resident set sizes over the tree, sampled every
``interval`` seconds (shared pages are counted in each process that maps them, as RSS does).
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import psutil  # type: ignore[import-untyped,unused-ignore]

_PR_SET_CHILD_SUBREAPER = 36


class CpuTimes(Protocol):
    user: float
    system: float
    children_user: float
    children_system: float


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False where that fails."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def waited_cpu() -> float:
    """User + system seconds of every descendant this process has waited for, so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tree_cpu(waited_since_start: float, running: Iterable[CpuTimes]) -> float:
    """CPU seconds of a tree: what was waited for since the start plus each running process's own
    time and its waited-for children's."""
    return waited_since_start + sum(t.user + t.system + t.children_user + t.children_system for t in running)


def reap_orphans() -> int:
    """Wait for every exited descendant re-parented here (subreaper); returns how many."""
    reaped = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped += 1


def _descendants() -> list[Any]:
    try:
        return list(psutil.Process().children(recursive=True))
    except psutil.NoSuchProcess:
        return []


@dataclass
class TreeMeter:
    """Measures the processes started while it runs: call :meth:`start` before starting them."""

    interval: float = 0.25
    started: float = 0.0
    waited_at_start: float = 0.0
    peak_rss: int = 0
    most_processes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> TreeMeter:
        reap_orphans()
        self.waited_at_start = waited_cpu()
        self.started = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def wall(self) -> float:
        return time.perf_counter() - self.started

    def cpu(self) -> float:
        """CPU seconds of the tree so far (running processes included)."""
        running = []
        for process in _descendants():
            try:
                running.append(process.cpu_times())
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return tree_cpu(waited_cpu() - self.waited_at_start, running)

    def sample(self) -> None:
        total = 0
        processes = _descendants()
        for process in processes:
            try:
                total += int(process.memory_info().rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        self.peak_rss = max(self.peak_rss, total)
        self.most_processes = max(self.most_processes, len(processes))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()


def finish(process: subprocess.Popen[Any], timeout_s: float = 60.0) -> int:
    """Wait for ``process`` to exit (KILL after ``timeout_s``), stop what it left running, reap orphans."""
    try:
        code = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    for child in _descendants():  # anything it left running
        try:
            child.terminate()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(_descendants(), timeout=timeout_s)
    reap_orphans()
    return code
