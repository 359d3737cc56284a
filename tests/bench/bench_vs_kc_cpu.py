"""Where a side's CPU seconds go, for `make bench-vs-kc`: by kind of process and by stage of a run.

The meter (bench_vs_kc_measure.TreeMeter) samples, every 0.5 s, each running descendant's own user +
system seconds (``/proc/<pid>/stat``) and sorts the process into a kind by its command line
(:func:`classify`). A process's CPU is the last figure sampled for it, so what it burns between its
last sample and its exit is in the tree's total but in no kind: the table prints it as
``not sampled``. Per kind, the sampled seconds are cumulative over time; the seconds of a stage are
the cumulative figure at its end minus the one at its start, both interpolated linearly between
the two samples around each boundary (:func:`attribute`). The boundaries of a ticdc-lake run come
from the lines its ``airflow dags test`` log already has (:data:`LAKE_STAGES`).

Memory by kind: at each sample the sampler also adds up the resident set size of the running
processes of each kind (:attr:`KindSamples.rss`, beside the CPU figures of the same moment); each
stage gets the highest sum per kind within it and the highest sum over all kinds (``Stage.rss``,
``Stage.rss_all``), which :func:`table` prints under the CPU rows. Shared pages count in every
process that maps them, as the tree's peak (bench_vs_kc_measure) counts them. The meter samples by
kind every 0.5 s and also at every new peak of the tree's sum (sampled every 0.25 s), so the
run's peak is among the samples by kind, read again a moment later.

One thing ``RUSAGE_CHILDREN`` never sees: a process whose parent ignores ``SIGCHLD`` is reaped by
the kernel, and its CPU time is added to no one (``pyspark.daemon`` does that to the Python
workers it forks). The sampler notes such exits (:attr:`KindSampler.auto_reaped_s`, their last
sampled figure) so the tree's total can add them.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

AIRFLOW = "Airflow task process"
LAUNCHER = "spark-submit launcher"
DRIVER_JVM = "Spark driver JVM"
PY_DRIVER = "Python driver"
PY_WORKERS = "Python workers"
CONNECT = "Kafka Connect JVM"
OTHER = "other"
#: Column order of the printed tables.
KINDS = (AIRFLOW, LAUNCHER, DRIVER_JVM, PY_DRIVER, PY_WORKERS, CONNECT, OTHER)
NOT_SAMPLED = "not sampled"

#: (stage, the log text that starts it), in run order. The run's first stage starts with the
#: meter; a stage whose marker is missing from the log is folded into the stage before it.
LAKE_STAGES: tuple[tuple[str, str], ...] = (
    ("Airflow start", ""),
    ("land task start", "[DAG TEST] starting task_id=land "),
    ("land", "landing pipeline '"),
    ("spark start", "[DAG TEST] end task task_id=land "),
    ("decode", "transform: step 1/3 decode"),
    ("schema history", "transform: step 2/3 schema_history"),
    ("apply", "transform: step 3/3 apply"),
    ("run end", "transform: done in"),
    ("process exit", "DagRun Finished: "),
)
_MIB = 2**20
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z ")


def classify(cmdline: Sequence[str], parent_kind: str | None) -> str:
    """The kind of a process from its command line, or its parent's kind when that says nothing.

    A Python process started by the Spark driver JVM is the Python driver; the ``pyspark.daemon``
    and the workers it forks are the Python workers.
    """
    args = " ".join(cmdline)
    program = os.path.basename(cmdline[0]) if cmdline else ""
    if "org.apache.spark.launcher.Main" in args:
        return LAUNCHER
    if "org.apache.spark.deploy.SparkSubmit" in args:
        return DRIVER_JVM
    if "ConnectStandalone" in args:
        return CONNECT
    if "pyspark.daemon" in args or "pyspark.worker" in args:
        return PY_WORKERS
    if any(os.path.basename(a) in ("spark-submit", "spark-class") for a in cmdline[:2]):
        return LAUNCHER
    if program.startswith("python") and (parent_kind == DRIVER_JVM or "spark_jobs/service.py" in args):
        return PY_DRIVER  # the Spark run service's Python process is its driver too
    if any(os.path.basename(a) == "airflow" for a in cmdline[:2]):
        return AIRFLOW
    return parent_kind or OTHER


@dataclass(frozen=True, slots=True)
class ProcSample:
    """One running process as read at one sample."""

    pid: int
    created: float
    ppid: int
    cmdline: Sequence[str]
    cpu_s: float
    #: Whether it ignores SIGCHLD: its children are reaped by the kernel, uncounted.
    ignores_sigchld: bool = False
    #: Resident set size in bytes.
    rss: int = 0


@dataclass(frozen=True, slots=True)
class Seen:
    """One process as last sampled."""

    pid: int
    kind: str
    command: str
    cpu_s: float


class KindSamples(list[tuple[float, dict[str, float]]]):
    """The sampler's (time, cumulative CPU seconds by kind) samples, with :attr:`rss`: at the same
    index, the resident bytes by kind of the processes running at that sample."""

    def __init__(self, samples: Iterable[tuple[float, dict[str, float]]] = (), rss: Iterable[dict[str, int]] = ()):
        super().__init__(samples)
        self.rss: list[dict[str, int]] = list(rss)


@dataclass
class KindSampler:
    """Per-kind cumulative CPU seconds over time, from samples of each process's own CPU time, and
    the resident memory by kind at each sample."""

    samples: KindSamples = field(default_factory=KindSamples)
    processes: dict[tuple[int, float], Seen] = field(default_factory=dict)
    #: Pids this process reaped itself (the subreaper's ``waitpid``): in ``RUSAGE_CHILDREN`` already.
    reaped_pids: set[int] = field(default_factory=set)
    #: Last sampled CPU seconds of each process that vanished while its parent ignored SIGCHLD.
    _vanished: dict[tuple[int, float], float] = field(default_factory=dict)
    _alive: dict[tuple[int, float], tuple[int, float] | None] = field(default_factory=dict)
    _ignoring: set[tuple[int, float]] = field(default_factory=set)

    def start(self, at: float, running: Iterable[ProcSample] = ()) -> None:
        """The first sample: the processes already ``running`` (their CPU seconds so far are the
        baseline of every stage after), or none."""
        found = list(running)
        if found:
            self.observe(at, found)
        else:
            self.samples.append((at, {}))
            self.samples.rss.append({})

    def observe(self, at: float, found: Iterable[ProcSample]) -> None:
        """One sample of every running descendant, parents before children where possible (a
        child's kind may be its parent's). A command line that changed (``exec``) is classified
        again."""
        kinds_by_pid = {key[0]: seen.kind for key, seen in self.processes.items()}
        keys_by_pid: dict[int, tuple[int, float]] = {}
        alive: dict[tuple[int, float], tuple[int, float] | None] = {}
        ignoring: set[tuple[int, float]] = set()
        rss: dict[str, int] = {}
        for proc in found:
            key = (proc.pid, proc.created)
            keys_by_pid[proc.pid] = key
            alive[key] = keys_by_pid.get(proc.ppid)
            if proc.ignores_sigchld:
                ignoring.add(key)
            known = self.processes.get(key)
            command = " ".join(proc.cmdline)[:160]
            if known is not None and known.command == command:
                kind = known.kind
            else:
                kind = classify(proc.cmdline, kinds_by_pid.get(proc.ppid))
            kinds_by_pid[proc.pid] = kind
            rss[kind] = rss.get(kind, 0) + proc.rss
            self.processes[key] = Seen(proc.pid, kind, command, max(proc.cpu_s, known.cpu_s if known else 0.0))
        for key, parent in self._alive.items():  # exited since the last sample
            if key not in alive and parent is not None and parent in self._ignoring:
                self._vanished[key] = self.processes[key].cpu_s
        self._alive, self._ignoring = alive, ignoring
        totals: dict[str, float] = {}
        for seen in self.processes.values():
            totals[seen.kind] = totals.get(seen.kind, 0.0) + seen.cpu_s
        self.samples.append((at, totals))
        self.samples.rss.append(rss)

    @property
    def auto_reaped_s(self) -> float:
        """CPU seconds of the processes the kernel reaped: those that vanished while their parent
        ignored SIGCHLD, at their last sampled figure, less any this process reaped itself (a child
        that outlived such a parent is re-parented to the subreaper, which waits for it). Whether
        parent and child vanished in the same interval does not matter: when Spark stops,
        ``pyspark.daemon`` kills its workers and exits within one."""
        return sum(cpu for (pid, _), cpu in self._vanished.items() if pid not in self.reaped_pids)

    def by_kind(self) -> dict[str, float]:
        return dict(self.samples[-1][1]) if self.samples else {}

    def peak_rss_by_kind(self) -> dict[str, int]:
        """Each kind's highest resident bytes (sum over its processes at one sample) over the run."""
        peaks: dict[str, int] = {}
        for rss in self.samples.rss:
            for kind, size in rss.items():
                peaks[kind] = max(peaks.get(kind, 0), size)
        return peaks


def cumulative_at(samples: Sequence[tuple[float, Mapping[str, float]]], kind: str, at: float) -> float:
    """A kind's cumulative CPU seconds at time ``at``, linear between the samples around it."""
    if not samples or at <= samples[0][0]:
        return samples[0][1].get(kind, 0.0) if samples else 0.0
    times = [t for t, _ in samples]
    i = bisect_right(times, at)
    if i >= len(samples):
        return samples[-1][1].get(kind, 0.0)
    (t0, a), (t1, b) = samples[i - 1], samples[i]
    v0, v1 = a.get(kind, 0.0), b.get(kind, 0.0)
    return v0 + (v1 - v0) * (at - t0) / (t1 - t0) if t1 > t0 else v1


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    start: float
    end: float
    cpu: dict[str, float]
    #: Highest resident bytes per kind at one sample within the stage (empty: not sampled).
    rss: dict[str, int] = field(default_factory=dict)
    #: Highest resident bytes of all kinds together at one sample within the stage.
    rss_all: int = 0

    @property
    def wall_s(self) -> float:
        return self.end - self.start


def attribute(
    samples: Sequence[tuple[float, Mapping[str, float]]], starts: Sequence[tuple[str, float]], end: float
) -> list[Stage]:
    """Per stage (each from its start to the next one's, the last to ``end``), CPU seconds per kind,
    and, when ``samples`` has them (:class:`KindSamples`), the peak resident bytes per kind and of all
    kinds together at the samples within the stage."""
    kinds = sorted({k for _, totals in samples for k in totals})
    memory = samples.rss if isinstance(samples, KindSamples) else []
    stages = []
    for n, (name, start) in enumerate(starts):
        stop = starts[n + 1][1] if n + 1 < len(starts) else end
        cpu = {k: cumulative_at(samples, k, stop) - cumulative_at(samples, k, start) for k in kinds}
        within = [rss for (at, _), rss in zip(samples, memory, strict=False) if start <= at <= stop]
        peaks: dict[str, int] = {}
        for rss in within:
            for kind, size in rss.items():
                peaks[kind] = max(peaks.get(kind, 0), size)
        stages.append(Stage(name, start, stop, cpu, peaks, max((sum(r.values()) for r in within), default=0)))
    return stages


def stage_starts(
    lines: Iterable[str], started: float, stages: Sequence[tuple[str, str]] = LAKE_STAGES
) -> list[tuple[str, float]]:
    """(stage, epoch seconds) of each stage found in a log of UTC-stamped lines, in run order.

    The first stage starts at ``started``; each later one at the first line holding its marker
    after the previous stage's start. Missing stages are left out (their time goes to the one
    before).
    """
    found: list[tuple[str, float]] = [(stages[0][0], started)]
    wanted = 1
    for line in lines:
        if wanted >= len(stages):
            break
        match = _STAMP.match(line)
        if match is None:
            continue
        for n in range(wanted, len(stages)):
            if stages[n][1] in line:
                at = datetime.fromisoformat(match.group(1) + "+00:00").timestamp()
                found.append((stages[n][0], max(at, found[-1][1])))
                wanted = n + 1
                break
    return found


def table(stages: Sequence[Stage], total_cpu: float, total_wall: float) -> list[str]:
    """The breakdown as printable lines: a row per stage, a column per kind that used CPU."""
    kinds = [k for k in KINDS if any(abs(s.cpu.get(k, 0.0)) >= 0.05 for s in stages)]
    kinds += sorted({k for s in stages for k in s.cpu} - set(KINDS))
    width = max(14, *(len(k) + 2 for k in kinds)) if kinds else 14
    head = f"  {'stage':<16}{'wall s':>8}" + "".join(f"{k:>{width}}" for k in kinds) + f"{'CPU s':>9}"
    lines = [head]
    sums = dict.fromkeys(kinds, 0.0)
    sampled = 0.0
    for stage in stages:
        row = sum(stage.cpu.values())
        sampled += row
        for k in kinds:
            sums[k] += stage.cpu.get(k, 0.0)
        cells = "".join(f"{stage.cpu.get(k, 0.0):>{width}.1f}" for k in kinds)
        lines.append(f"  {stage.name:<16}{stage.wall_s:>8.1f}{cells}{row:>9.1f}")
    lines.append(
        f"  {'all (sampled)':<16}{total_wall:>8.1f}"
        + "".join(f"{sums[k]:>{width}.1f}" for k in kinds)
        + f"{sampled:>9.1f}"
    )
    lines.append(f"  {NOT_SAMPLED:<16}{'':>8}{'':>{width * len(kinds)}}{total_cpu - sampled:>9.1f}")
    if any(stage.rss for stage in stages):
        lines += _rss_lines(stages, width)
    return lines


def _rss_lines(stages: Sequence[Stage], width: int) -> list[str]:
    """Peak resident MiB per stage and kind (the highest sum over a kind's processes at one sample),
    the last column all kinds together at one sample; the last row the whole run's peaks."""
    kinds = [k for k in KINDS if any(s.rss.get(k, 0) >= _MIB for s in stages)]
    kinds += sorted({k for s in stages for k in s.rss} - set(KINDS))
    lines = [f"  {'peak RSS MiB':<16}{'':>8}" + "".join(f"{k:>{width}}" for k in kinds) + f"{'all':>9}"]
    for stage in stages:
        cells = "".join(f"{stage.rss.get(k, 0) / _MIB:>{width}.0f}" for k in kinds)
        lines.append(f"  {stage.name:<16}{'':>8}{cells}{stage.rss_all / _MIB:>9.0f}")
    run = "".join(f"{max(s.rss.get(k, 0) for s in stages) / _MIB:>{width}.0f}" for k in kinds)
    lines.append(f"  {'whole run':<16}{'':>8}{run}{max(s.rss_all for s in stages) / _MIB:>9.0f}")
    return lines
