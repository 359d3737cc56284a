"""Where a run's JVM CPU goes, per Spark job, from a Spark event log.

Run: ``.venv/bin/python tests/bench/bench_apply_stages.py EVENT_LOG [--since-callsite TEXT]``.
The event log is the uncompressed, non-rolling file Spark writes with ``spark.eventLog.enabled``
(``bench_vs_kc.py --variant-conf spark.eventLog.enabled=true --variant-conf
spark.eventLog.dir=file:///tmp/events --variant-conf spark.eventLog.compress=false``). Per job
(in submission order, from the first job whose call site contains ``--since-callsite``, by default
the apply stage's first grouped-counts job): the call site, the SQL execution's description, the
stages' executor CPU and run seconds, shuffle bytes written and read, output bytes; then the sums
per call site. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

NS = 1e9
MS = 1e3
MIB = 2**20


@dataclass
class Job:
    job_id: int
    site: str
    execution: int | None
    stages: list[int]
    submitted: float
    ended: float = 0.0


@dataclass
class StageFigures:
    cpu_s: float = 0.0
    run_s: float = 0.0
    tasks: int = 0
    shuffle_write: int = 0
    shuffle_read: int = 0
    output: int = 0
    gc_s: float = 0.0
    names: set[str] = field(default_factory=set)


def read(path: Path) -> tuple[list[Job], dict[int, StageFigures], dict[int, str]]:
    jobs: list[Job] = []
    stages: dict[int, StageFigures] = defaultdict(StageFigures)
    executions: dict[int, str] = {}
    by_id: dict[int, Job] = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            kind = event["Event"]
            if kind == "SparkListenerJobStart":
                props = event.get("Properties") or {}
                execution = props.get("spark.sql.execution.id")
                job = Job(
                    event["Job ID"],
                    props.get("callSite.short", "?"),
                    int(execution) if execution is not None else None,
                    list(event["Stage IDs"]),
                    event["Submission Time"] / MS,
                )
                jobs.append(job)
                by_id[job.job_id] = job
            elif kind == "SparkListenerJobEnd" and event["Job ID"] in by_id:
                by_id[event["Job ID"]].ended = event["Completion Time"] / MS
            elif kind.endswith("SparkListenerSQLExecutionStart"):
                executions[int(event["executionId"])] = event.get("description", "")
            elif kind == "SparkListenerTaskEnd":
                metrics = event.get("Task Metrics") or {}
                figures = stages[event["Stage ID"]]
                figures.tasks += 1
                figures.cpu_s += metrics.get("Executor CPU Time", 0) / NS
                figures.run_s += metrics.get("Executor Run Time", 0) / MS
                figures.gc_s += metrics.get("JVM GC Time", 0) / MS
                write = metrics.get("Shuffle Write Metrics") or {}
                figures.shuffle_write += write.get("Shuffle Bytes Written", 0)
                read_ = metrics.get("Shuffle Read Metrics") or {}
                figures.shuffle_read += read_.get("Remote Bytes Read", 0) + read_.get("Local Bytes Read", 0)
                figures.output += (metrics.get("Output Metrics") or {}).get("Bytes Written", 0)
            elif kind == "SparkListenerStageSubmitted":
                stages[event["Stage Info"]["Stage ID"]].names.add(event["Stage Info"]["Stage Name"])
    return jobs, stages, executions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("event_log", type=Path)
    parser.add_argument("--since-callsite", default="table_apply.py", help="first job whose call site contains this")
    args = parser.parse_args()
    jobs, stages, executions = read(args.event_log)
    start = next((i for i, j in enumerate(jobs) if args.since_callsite in j.site), 0)
    chosen = jobs[start:]
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0] * 6)
    heads = ("wall s", "cpu s", "run s", "gc s", "shw MiB", "shr MiB", "out MiB")
    print(f"{'job':>5} " + " ".join(f"{h:>8}" for h in heads) + "  site")
    total = [0.0] * 6
    for job in chosen:
        f = [stages[s] for s in job.stages if s in stages]
        row = [
            sum(x.cpu_s for x in f),
            sum(x.run_s for x in f),
            sum(x.gc_s for x in f),
            sum(x.shuffle_write for x in f) / MIB,
            sum(x.shuffle_read for x in f) / MIB,
            sum(x.output for x in f) / MIB,
        ]
        site = job.site.replace("/work/main/include/ticdc_lake/", "")
        what = executions.get(job.execution, "") if job.execution is not None else ""
        wall = job.ended - job.submitted if job.ended else 0.0
        print(
            f"{job.job_id:>5} {wall:7.1f} {row[0]:7.2f} {row[1]:7.2f} {row[2]:6.2f} {row[3]:8.1f} {row[4]:8.1f} "
            f"{row[5]:8.1f}  {site} [{what[:60]}]"
        )
        for i, v in enumerate(row):
            sums[site][i] += v
            total[i] += v
    print(f"\n{'cpu s':>7} {'run s':>7} {'gc s':>6} {'shw MiB':>8} {'shr MiB':>8} {'out MiB':>8}  call site (sum)")
    for site, row in sorted(sums.items(), key=lambda kv: -kv[1][0]):
        print(f"{row[0]:7.2f} {row[1]:7.2f} {row[2]:6.2f} {row[3]:8.1f} {row[4]:8.1f} {row[5]:8.1f}  {site}")
    print(f"{total[0]:7.2f} {total[1]:7.2f} {total[2]:6.2f} {total[3]:8.1f} {total[4]:8.1f} {total[5]:8.1f}  all")


if __name__ == "__main__":
    main()
