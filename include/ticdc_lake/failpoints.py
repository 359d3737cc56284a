"""Failpoints: named places where a test makes the process crash for real.

Crash safety is proven by killing the real processes at chosen points (docs/crash-safety.md). A
product module calls ``failpoints.hit("apply.after_merge")`` at such a point; normally that is a
dictionary lookup on an empty dictionary (the environment is read once). When the environment
variable ``TICDC_LAKE_FAILPOINTS`` lists the name (comma separated), the process writes one line
to stderr and kills itself with SIGKILL: no ``finally`` block, no flush, no shutdown hook runs,
exactly as when the machine or the OOM killer stops it.

Forms of an entry:

- ``name``: crash at the first hit of ``name`` in this process;
- ``name#N``: crash at the N-th hit (a later table, a later segment);
- ``name@active-job``: at the hit, start a daemon thread that crashes the process as soon as
  Spark's status tracker reports an active job (the MERGE that follows the hit is running).

The Spark JVM dies with the process: a plain ``python`` driver starts it as a child (pyspark's
gateway would otherwise leave it to exit on its own when its stdin closes, running shutdown hooks
while a commit may still be under way), so every descendant is killed first, and the process group
too when this process leads it. Under ``spark-submit`` the JVM is the parent of the Python driver
and is killed as well.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any

ENV = "TICDC_LAKE_FAILPOINTS"
ACTIVE_JOB = "active-job"
#: How often the ``@active-job`` thread asks Spark for active jobs.
POLL_S = 0.005

_armed: dict[str, tuple[int, str]] | None = None
_hits: dict[str, int] = {}


def parse(text: str) -> dict[str, tuple[int, str]]:
    """``{name: (hit number, mode)}`` of a ``TICDC_LAKE_FAILPOINTS`` value; mode "" or "active-job"."""
    armed: dict[str, tuple[int, str]] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, _, mode = entry.partition("@")
        name, _, count = name.partition("#")
        if mode not in ("", ACTIVE_JOB) or not name or (count and not count.isdigit()) or count == "0":
            raise ValueError(
                f"{ENV}: entry {entry!r} is not 'name', 'name#N' or 'name@{ACTIVE_JOB}' "
                "(N >= 1); fix the environment variable"
            )
        armed[name.strip()] = (int(count or 1), mode)
    return armed


def armed() -> dict[str, tuple[int, str]]:
    """The failpoints of this process, read from the environment once."""
    global _armed
    if _armed is None:
        _armed = parse(os.environ.get(ENV, ""))
    return _armed


def hit(name: str) -> None:
    """Crash here if ``name`` is armed (see the module documentation); otherwise do nothing."""
    points = _armed if _armed is not None else armed()
    if not points or name not in points:
        return
    number, mode = points[name]
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] != number:
        return
    if mode == ACTIVE_JOB:
        threading.Thread(target=_crash_at_active_job, args=(name,), name=f"failpoint-{name}", daemon=True).start()
        return
    crash(name)


def crash(name: str, detail: str = "") -> None:
    """Kill the Spark JVM (child, or parent under spark-submit), every other descendant and this process."""
    me = os.getpid()
    children = _descendants(me)
    jvm_parent = _spark_submit_parent()
    victims = children + ([jvm_parent] if jvm_parent is not None else [])
    line = f"ticdc-lake failpoint {name}{detail}: killing process {me}"
    sys.stderr.write(line + (f" and {victims}" if victims else "") + " with SIGKILL\n")
    sys.stderr.flush()
    for pid in victims:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    if os.getpgrp() == me:
        os.killpg(me, signal.SIGKILL)
    os.kill(me, signal.SIGKILL)


def _crash_at_active_job(name: str) -> None:
    # Through sys.modules: only the spark subpackage may import pyspark, and a hit there loaded it.
    pyspark: Any = sys.modules.get("pyspark")
    context: Any = pyspark.SparkContext._active_spark_context if pyspark is not None else None
    if context is None:
        crash(name, " (no Spark context)")
        return
    tracker = context.statusTracker()
    while True:
        jobs = tracker.getActiveJobsIds()
        if jobs:
            crash(name, f" during Spark job(s) {list(jobs)}")
        time.sleep(POLL_S)


def _descendants(root: int) -> list[int]:
    """Every live descendant of ``root``, children first (Linux ``/proc``; empty elsewhere)."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _spark_submit_parent() -> int | None:
    """The JVM that started this Python driver under ``spark-submit`` (None for a plain ``python``)."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/comm", encoding="ascii", errors="replace") as comm:
            return parent if comm.read().strip() == "java" else None
    except OSError:
        return None
