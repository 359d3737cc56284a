"""Wall seconds, CPU seconds and peak memory of a process tree, for `make bench-vs-kc`.

The tree is every process this bench process started, directly or not. The bench makes itself a
child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so a descendant whose parent exits first is
re-parented here rather than to init, and its CPU time is not lost. CPU seconds are user + system
time of

* every descendant already waited for: ``getrusage(RUSAGE_CHILDREN)`` of this process, since
  the start (a waited-for child's figure includes the children it waited for in turn), plus
* every descendant still running: its own user + system time and that of the children it has
  waited for (``/proc/<pid>/stat``; a running process's children that it has not waited for are
  in the list themselves), plus
* every descendant the kernel reaped because its parent ignores ``SIGCHLD`` (the Python workers
  ``pyspark.daemon`` forks): such a process's time reaches nobody's ``RUSAGE_CHILDREN``, so it
  is counted at its last sampled figure (bench_vs_kc_cpu.KindSampler.auto_reaped_s; what it
  burnt after that sample, under 0.5 s of wall, is lost).

Peak memory is the highest sum of resident set sizes over the tree, sampled every
``interval`` seconds (shared pages are counted in each process that maps them, as RSS does).
Every ``kind_interval`` seconds, and at each sample that sets a new peak, the meter also samples
each process's own CPU seconds and resident set size by kind of process (bench_vs_kc_cpu), which
the bench cuts at the stages of a run.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import bench_vs_kc_cpu as cpu_kinds  # type: ignore[import-not-found,unused-ignore]  # beside this file
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


def ignores_sigchld(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGCHLD (``SigIgn`` of /proc/<pid>/status), so that the
    kernel reaps its children and adds their CPU time to nobody's ``RUSAGE_CHILDREN``."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGCHLD - 1) & 1)
    except OSError:
        return False
    return False


#: Every pid :func:`reap_orphans` waited for: their CPU time is in ``RUSAGE_CHILDREN``.
REAPED: set[int] = set()


def reap_orphans() -> int:
    """Wait for every exited descendant re-parented here (subreaper); returns how many (their pids
    go to :data:`REAPED`)."""
    reaped = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        REAPED.add(pid)
        reaped += 1


def _descendants(spared: frozenset[int] = frozenset()) -> list[Any]:
    """Every running descendant of this process, less the processes ``spared`` and theirs."""
    try:
        found = list(psutil.Process().children(recursive=True))
    except psutil.NoSuchProcess:
        return []
    if not spared:
        return found
    left_out = set(spared)
    for pid in spared:
        try:
            left_out.update(child.pid for child in psutil.Process(pid).children(recursive=True))
        except psutil.NoSuchProcess:
            continue
    return [process for process in found if process.pid not in left_out]


def _cpu_times(processes: Iterable[Any]) -> list[CpuTimes]:
    times = []
    for process in processes:
        try:
            times.append(process.cpu_times())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return times


@dataclass
class TreeMeter:
    """Measures the processes started while it runs: call :meth:`start` before starting them.

    A descendant already running at the start (the Spark run service of ``bench_vs_kc
    --spark-service``) counts only with what it does after the start: its CPU seconds then are
    the baseline of :meth:`cpu` and of the first sample by kind. One given in ``spared`` is left
    out altogether."""

    interval: float = 0.25
    kind_interval: float = 0.5
    started: float = 0.0
    #: time.time() at the start, to compare with the timestamps of logs.
    started_epoch: float = 0.0
    waited_at_start: float = 0.0
    #: CPU seconds of the descendants already running at the start.
    running_at_start: float = 0.0
    peak_rss: int = 0
    most_processes: int = 0
    kinds: cpu_kinds.KindSampler = field(default_factory=cpu_kinds.KindSampler)
    #: Processes (with their descendants) already running that this meter leaves out: the Spark run
    #: service of ``bench_vs_kc --spark-service`` during the sink's rounds.
    spared: frozenset[int] = frozenset()
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _kinds_at: float = 0.0

    def start(self) -> TreeMeter:
        reap_orphans()
        self.waited_at_start = waited_cpu()
        self.started = time.perf_counter()
        self.started_epoch = time.time()
        running = _descendants(self.spared)
        self.running_at_start = tree_cpu(0.0, _cpu_times(running))
        self.kinds.start(self.started_epoch, self._proc_samples(running))
        self._kinds_at = self.started
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def wall(self) -> float:
        return time.perf_counter() - self.started

    def cpu(self) -> float:
        """CPU seconds of the tree so far (running processes included), with the processes the
        kernel reaped uncounted (parent ignoring SIGCHLD) at their last sampled figure."""
        running = _cpu_times(_descendants(self.spared))
        self.kinds.reaped_pids = set(REAPED)
        waited = waited_cpu() - self.waited_at_start
        return tree_cpu(waited, running) + float(self.kinds.auto_reaped_s) - self.running_at_start

    def sample(self) -> None:
        total = 0
        processes = _descendants(self.spared)
        for process in processes:
            try:
                total += int(process.memory_info().rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        peak = total > self.peak_rss
        self.peak_rss = max(self.peak_rss, total)
        self.most_processes = max(self.most_processes, len(processes))
        # A new peak is sampled by kind at once, so the table by kind sees the moment of the peak.
        if peak or time.perf_counter() - self._kinds_at >= self.kind_interval - 1e-3:
            self._kinds_at = time.perf_counter()
            self.sample_kinds(processes)

    def sample_kinds(self, processes: list[Any] | None = None) -> None:
        """One sample of each running descendant's own CPU seconds and resident bytes, by kind."""
        found = self._proc_samples(processes if processes is not None else _descendants(self.spared))
        self.kinds.observe(time.time(), found)

    @staticmethod
    def _proc_samples(processes: Iterable[Any]) -> list[cpu_kinds.ProcSample]:
        """Each of ``processes`` as read now, parents before children."""
        found = []
        for process in processes:
            try:
                with process.oneshot():
                    times = process.cpu_times()
                    found.append(
                        cpu_kinds.ProcSample(
                            process.pid,
                            process.create_time(),
                            process.ppid(),
                            process.cmdline(),
                            times.user + times.system,
                            ignores_sigchld(process.pid),
                            int(process.memory_info().rss),
                        )
                    )
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        found.sort(key=lambda f: (f.created, f.pid))  # parents were created before their children
        return found

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def total(self) -> float:
        """After the measured processes ended: reap what they left here, stop, and return the tree's
        CPU seconds (the Python workers the kernel reaped included, which ``RUSAGE_CHILDREN`` lacks)."""
        self.sample()
        reap_orphans()
        cpu = self.cpu()
        self.stop()
        return cpu

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()


def finish(process: subprocess.Popen[Any], timeout_s: float = 60.0, spared: frozenset[int] = frozenset()) -> int:
    """Wait for ``process`` to exit (KILL after ``timeout_s``), stop what it left running (but not
    the processes ``spared`` and theirs), reap orphans."""
    try:
        code = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    left = _descendants(spared)  # anything it left running
    for child in left:
        try:
            child.terminate()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(left, timeout=timeout_s)
    reap_orphans()
    return code
