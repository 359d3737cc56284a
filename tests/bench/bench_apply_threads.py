"""CPU seconds of a Spark driver JVM by kind of thread (task threads, JIT compilers, GC, the rest),
sampled from ``/proc`` while another command runs, split at the stages its log names.

Run: ``.venv/bin/python tests/bench/bench_apply_threads.py --log FILE -- COMMAND ...`` (for instance
``.venv/bin/python tests/bench/bench_vs_kc.py --only ticdc-lake --rounds 1``). Every second it
reads ``/proc/<pid>/task/*/stat`` of each driver JVM (``SparkSubmit`` in the command line) that
descends from the command, keeping each thread's last figure (a thread that ended keeps the
figure of its last sample), and writes the samples as JSON lines to ``--samples``. With ``--log``
(a ``dags-test.log`` written during the run; a glob is accepted), the CPU of each thread kind is
split at the times of the log's ``decode``, ``schema history`` and ``apply`` lines. Prints
figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import psutil  # type: ignore[import-untyped,unused-ignore]

TICK = os.sysconf("SC_CLK_TCK")
KINDS = [
    ("task", re.compile(r"^Executor task")),
    ("JIT", re.compile(r"Compiler")),
    ("GC", re.compile(r"^(GC Thread|G1 |VM Thread|VM Periodic|Parallel GC|ParGC)")),
    ("driver main", re.compile(r"^main$")),
]


def kind_of(name: str) -> str:
    for kind, pattern in KINDS:
        if pattern.search(name):
            return kind
    return "other"


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid``, its ended threads included (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
        text = stat.read()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def threads(pid: int) -> dict[int, tuple[str, float]]:
    found: dict[int, tuple[str, float]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="utf-8") as stat:
                text = stat.read()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        found[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / TICK)
    return found


def drivers(root: int) -> list[int]:
    try:
        children = psutil.Process(root).children(recursive=True)
    except psutil.Error:
        return []
    found = []
    for child in children:
        try:
            if child.name() == "java" and any("SparkSubmit" in part for part in child.cmdline()):
                found.append(child.pid)
        except psutil.Error:
            continue
    return found


def stage_times(log_path: Path) -> list[tuple[str, float]]:
    """(stage, epoch seconds) of each stage's first log line."""
    marks = [
        ("decode", "[ticdc_lake.spark.decode_job]"),
        ("schema history", "[ticdc_lake.spark.schema_history_job]"),
        ("apply", "[ticdc_lake.spark.apply_job]"),
    ]
    found: list[tuple[str, float]] = []
    with open(log_path, encoding="utf-8", errors="replace") as log:
        for line in log:
            for stage, mark in marks:
                if mark in line and stage not in [s for s, _ in found]:
                    found.append((stage, datetime.fromisoformat(line[:27].replace("Z", "+00:00")).timestamp()))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--samples", type=Path, default=Path("/tmp/jvm-threads.jsonl"))
    parser.add_argument("--log", help="dags-test.log of the run (a glob), to split the figures by stage")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    process = subprocess.Popen(command)
    last: dict[tuple[int, int], tuple[str, float]] = {}
    with open(args.samples, "w", encoding="utf-8") as out:
        while process.poll() is None:
            now = time.time()
            for pid in drivers(process.pid):
                for tid, (name, cpu) in threads(pid).items():
                    last[(pid, tid)] = (name, cpu)
            by_kind: dict[str, float] = defaultdict(float)
            for name, cpu in last.values():
                by_kind[kind_of(name)] += cpu
            out.write(json.dumps({"t": now, "cpu": by_kind}) + "\n")
            out.flush()
            time.sleep(1.0)
    report(args.samples, sorted(glob.glob(args.log)) if args.log else [])
    return process.returncode


def report(samples_path: Path, logs: list[str]) -> None:
    with open(samples_path, encoding="utf-8") as lines:
        samples = [json.loads(line) for line in lines]
    cuts: list[tuple[str, float]] = []
    for log_path in logs:
        cuts += stage_times(Path(log_path))
    cuts.sort(key=lambda c: c[1])
    kinds = ["task", "JIT", "GC", "driver main", "other"]
    edges = [("start", 0.0), *cuts, ("end", float("inf"))]

    def at(t: float) -> dict[str, float]:
        chosen: dict[str, float] = {}
        for s in samples:
            if s["t"] <= t:
                chosen = s["cpu"]
        return chosen

    print(f"{'from':<16}" + "".join(f"{k:>12}" for k in kinds) + f"{'all':>10}")
    for (name, begin), (_, end) in itertools.pairwise(edges):
        a, b = at(begin), at(end)
        row = [b.get(k, 0.0) - a.get(k, 0.0) for k in kinds]
        print(f"{name:<16}" + "".join(f"{v:12.1f}" for v in row) + f"{sum(row):10.1f}")


if __name__ == "__main__":
    sys.exit(main())
