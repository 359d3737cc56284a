"""Fixed cost of a pipeline run: where the seconds of a small run go, from Airflow's start to its end.

`make bench-run-cost` runs it. It prints figures; it asserts nothing. A one-topic Simple JSON
pipeline of 4 tables (3 partitions, the simulator's workload) on the local broker, a JDBC (SQLite)
catalog and a landing folder in a temporary directory; every run is `airflow dags test` of the
pipeline's DAG (`AirflowRunner`, as the end-to-end tests run it), with Spark on `local[2]`:

1. **first**: the CREATE TABLEs and a few transactions (the run that creates the tables);
2. **few**: a few transactions over the 4 tables (``--transactions``);
3. **nothing**: nothing new since the last run.

Before the runs it prints what importing the DAG file costs a fresh Python (``airflow.sdk``, then
the file: what the DAG processor pays at every parse). Per run it prints the timeline (Airflow
process start → the CLI's two DAG folder parses → the land task handed to the runner → started,
once Airflow's in-process execution API is up → spark-submit → the driver JVM's first log line,
the Python driver's start, SparkContext → SparkSession ready → each step of the Spark application
and the apply phases it logs, each Python worker daemon's start → Spark stopped → spark-submit
exited → run report read → end), wall and CPU
seconds (of the `airflow` process and every child it waited for: the JVM, Python workers), and
counts: Spark jobs per step (from Spark's event log, written to the bench folder), catalog table
loads and metadata refreshes (from the driver's Spark log), driver JVMs and Python processes
started (each Python start goes through a wrapper named by ``spark.pyspark.python``; forks of the
worker daemon are not starts). ``--rounds N`` repeats the few/nothing pair and prints each.

``--spark-service`` runs the same runs with the pipeline's ``spark_service`` set: a Spark run
service (``docs/spark-service.md``) is started for the bench before the first run, outside the
runs' figures, and each run's transform task sends its work there instead of a ``spark-submit``.
The CPU seconds of a run then add the service's (driver, JVM, Python workers) during that run to
the ``airflow`` process tree's; the Spark jobs are those the service's event log records in the run.

Per run it also prints the CPU table of ``make bench-vs-kc`` (bench_vs_kc_cpu): CPU seconds by
stage of the run (Airflow start, land task start, land, spark start, decode, schema history,
apply, exit and report) and by kind of process (the ``airflow`` process itself, the
``spark-submit`` launcher, the driver JVM, the Python driver and workers), so what Airflow costs
around the Spark work reads apart from Spark's. Before the runs it prints whether the Python
processes read compiled bytecode (:func:`bytecode_status`): with ``PYTHONDONTWRITEBYTECODE`` set and
an environment installed without it (``uv pip install`` without ``--compile-bytecode``), every
process compiles every module it imports, every time.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import bench_vs_kc_cpu as cpu_kinds  # type: ignore[import-not-found,unused-ignore]  # beside this file
import bench_vs_kc_measure as measure  # type: ignore[import-not-found,unused-ignore]  # beside this file
import yaml

from ticdc_lake.cli.airflow_runner import PROJECT_ROOT as TREE_ROOT  # the tree measured (PYTHONPATH)
from ticdc_lake.cli.airflow_runner import AirflowRunner
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the Spark run service helper
from spark_service_support import SparkServiceProcess, end_on_sigterm  # type: ignore[import-not-found,unused-ignore]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
#: The Airflow connection of the bench's Spark run service (``--spark-service``).
SERVICE_CONN_ID = "ticdc_spark_service"
STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z")
#: Timeline marks: (label, pattern of the Airflow output line); the first line matching after the previous mark.
MARKS = (
    ("CLI up, DAG folder parse 1", r"Filling up the DagBag"),
    ("DAG folder parse 2", r"Filling up the DagBag"),
    ("dag run created", r"Created dag run"),
    ("land task handed to the runner", r"\[DAG TEST\] running task .*\.land "),
    ("land task start (execution API up)", r"Task started"),
    ("land task end", r"\[DAG TEST\] end task task_id=land"),
    ("spark-submit", r"Spark connection 'spark_default'"),
    ("run sent to the Spark service", r"goes to the Spark run service at"),
    ("session ready, decode", r"transform: step 1/3 decode"),
    ("schema history", r"transform: step 2/3"),
    ("apply", r"transform: step 3/3"),
    ("spark app done", r"transform: done in"),
    ("Spark stopped (driver)", r"Spark stopped in"),
    ("spark-submit exited", r"spark-submit exited after"),
    ("Spark service answered the run's end", r"Spark run service at .*: the run ended after"),
    ("run report read", r"run report read in"),
    ("run summary logged", r"run summary: pipeline"),
    ("transform task end", r"\[DAG TEST\] end task task_id=transform"),
)
#: Marks from the driver's Spark log: (label, text of the line, None for any); the first line holding it.
SPARK_LOG_MARKS = (
    ("driver JVM: first log line", None),
    ("SparkContext starting", "Running Spark version"),
    ("first Spark job", "Starting job:"),
    ("SparkContext stopped", "Successfully stopped SparkContext"),
)
SPARK_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) ")
STEPS = ("decode", "schema history", "apply")
#: Phase lines the stages log (``<stage>: ... <name> <seconds>s``): printed as they are.
PHASE_LINES = re.compile(
    r"((?:decode: done in|apply: phases|schema history: no new|schema history: \d+ version).*?)(?: \[airflow|$)"
)


@dataclass
class RunCost:
    label: str
    ok: bool
    wall: float
    cpu: float
    marks: list[tuple[str, float]] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)
    jobs: Counter[str] = field(default_factory=Counter)
    table_loads: int = 0
    metadata_refreshes: int = 0
    jvms: int = 0
    pythons: Counter[str] = field(default_factory=Counter)
    #: ``marks`` with those of the driver's Spark log and of the Python starts, in time order.
    timeline: list[tuple[str, float]] = field(default_factory=list)
    #: CPU seconds by stage of the run and kind of process (``bench_vs_kc_cpu.table``).
    cpu_table: list[str] = field(default_factory=list)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_run_cost.py", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=None, help="Kafka bootstrap (default: the local broker of run/kafka)")
    parser.add_argument("--transactions", type=int, default=10, help="transactions of the 'few' run")
    parser.add_argument("--rounds", type=int, default=1, help="how many few/nothing pairs to run")
    parser.add_argument("--keep", action="store_true", help="keep the bench folder (logs, event logs)")
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting added to the pipeline's spark_conf (to measure a setting; repeatable)",
    )
    parser.add_argument(
        "--spark-service", action="store_true", help="send the Spark work to a Spark run service started for the bench"
    )
    args = parser.parse_args(argv)
    end_on_sigterm()  # a `kill` of the bench still stops the services it started
    measure.become_subreaper()  # CPU of workers orphaned by their parent's exit is waited for here
    bootstrap = args.bootstrap or (PROJECT_ROOT / "run" / "kafka" / "bootstrap").read_text().strip()
    home = Path(tempfile.mkdtemp(prefix="bench-run-cost-"))
    bench: Bench | None = None
    try:
        extra = dict(item.split("=", 1) for item in args.spark_conf)
        bench = Bench(home, bootstrap, extra, spark_service=args.spark_service)
        print(f"Python bytecode: {bytecode_status()}", flush=True)
        print(f"DAG file parse: {bench.parse_cost()}", flush=True)
        results = [bench.run("first", transactions=10)]
        for _ in range(args.rounds):
            results.append(bench.run("few", transactions=args.transactions))
            results.append(bench.run("nothing", transactions=0))
        for result in results:
            report(result)
        print("\nsummary (wall s / CPU s):")
        for result in results:
            print(f"  {result.label:<8} {'ok' if result.ok else 'FAILED':<6} {result.wall:6.1f} / {result.cpu:6.1f}")
    finally:
        if bench is not None and bench.service is not None:
            bench.service.stop()
        if args.keep:
            print(f"bench folder kept: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    return 0


class Bench:
    def __init__(
        self, home: Path, bootstrap: str, spark_conf: dict[str, str] | None = None, *, spark_service: bool = False
    ) -> None:
        self.home = home
        self.bootstrap = bootstrap
        self.spark_conf = spark_conf or {}
        suffix = uuid.uuid4().hex[:8]
        self.pipeline, self.topic = f"cost_{suffix}", f"cost-{suffix}"
        self.events = home / "events"
        self.events.mkdir()
        (home / "catalog").mkdir()
        self.python_log = home / "python-starts.log"
        wrapper = home / "python"
        wrapper.write_text(
            f'#!/bin/sh\necho "$(date +%s.%N) $*" >> {self.python_log}\nexec {sys.executable} "$@"\n', encoding="utf-8"
        )
        wrapper.chmod(0o755)
        config = home / "conf" / "pipelines.yaml"  # the lake home (task Spark logs) is home/run
        config.parent.mkdir()
        document = self._document(wrapper)
        self.service: SparkServiceProcess | None = None
        if spark_service:
            document["pipelines"][0]["spark_service"] = SERVICE_CONN_ID  # type: ignore[index]
        config.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        extra_env = {}
        if spark_service:
            started = time.monotonic()
            self.service = SparkServiceProcess(config, home / "spark-service")
            print(f"Spark run service started in {time.monotonic() - started:.1f} s (not counted in the runs)")
            extra_env[f"AIRFLOW_CONN_{SERVICE_CONN_ID.upper()}"] = self.service.connection()
        try:
            self.runner = AirflowRunner(home / "airflow", config, bootstrap, extra_env=extra_env)
            self.runner.migrate()
            create_topic(bootstrap, self.topic, 3)
        except BaseException:  # the caller gets no Bench to stop the service with
            if self.service is not None:
                self.service.stop()
            raise
        self.sim = TicdcSimulator(
            seed=20261125, topic=self.topic, partitions=3, workload=WorkloadConfig(tables=4, databases=2)
        )
        self.runs = 0

    def _document(self, wrapper: Path) -> dict[str, object]:
        return {
            "catalogs": {
                "lake": {
                    "type": "jdbc",
                    "uri": f"jdbc:sqlite:{self.home}/catalog/lake.db",
                    "warehouse": f"file://{self.home}/warehouse",
                }
            },
            "pipelines": [
                {
                    "id": self.pipeline,
                    "protocol": "simple-json",
                    "kafka": {"connection_id": "kafka_default", "topics": [self.topic]},
                    "schedule": "@hourly",
                    "landing_uri": f"file://{self.home}/landing",
                    "catalog": "lake",
                    "target": {"namespace": "{database}"},
                    "spark_conf": {
                        "spark.eventLog.enabled": "true",
                        "spark.eventLog.dir": self.events.as_uri(),
                        "spark.eventLog.compress": "false",
                        "spark.eventLog.rolling.enabled": "false",
                        "spark.pyspark.python": str(wrapper),
                        **self.spark_conf,
                    },
                }
            ],
        }

    def feed(self, label: str, transactions: int) -> None:
        """The run's input on the topic: the CREATE TABLEs first, then ``transactions`` up to a watermark."""
        if label == "first":
            self.sim.setup()
        if transactions:
            self.sim.run_transactions(transactions)
            self.sim.flush_watermark()
            produce(self.bootstrap, self.sim.take())

    def run(self, label: str, transactions: int) -> RunCost:
        self.feed(label, transactions)
        logs_before = set(self.events.iterdir())
        started_epoch = time.time()
        meter = measure.TreeMeter().start()
        before = meter.cpu() if self.service is not None else 0.0  # the service's CPU so far
        result = self.runner.test_dag(
            f"ticdc_{self.pipeline}", datetime(2026, 11, 20, tzinfo=UTC) + timedelta(hours=self.runs)
        )
        cpu = meter.total() - before
        self.runs += 1
        cost = RunCost(label, result.succeeded, result.seconds, cpu)
        (self.home / f"airflow-{self.runs:02d}-{label}.log").write_text(result.output, encoding="utf-8")
        lines = result.output.splitlines()
        starts = cpu_kinds.stage_starts(lines, meter.started_epoch)
        stages = cpu_kinds.attribute(meter.kinds.samples, starts, meter.started_epoch + result.seconds)
        cost.cpu_table = cpu_kinds.table(stages, cpu, result.seconds)
        cost.marks = _marks(lines, started_epoch)
        timeline = list(cost.marks)
        cost.phases = [m.group(1) for line in lines if (m := PHASE_LINES.search(line))]
        step_starts = [t for name, t in cost.marks if name in ("session ready, decode", "schema history", "apply")]
        logs = set(self.events.iterdir()) if self.service is not None else set(self.events.iterdir()) - logs_before
        for path in logs:  # the service's one event log holds every run's jobs: counted by time
            cost.jobs.update(_jobs_by_step(path, started_epoch, step_starts, started_epoch + result.seconds))
        spark_log = _spark_log(lines)
        if spark_log is not None and spark_log.exists():
            text = spark_log.read_text(encoding="utf-8", errors="replace")
            timeline += _spark_log_marks(text, started_epoch)
            cost.table_loads = text.count("Table loaded by catalog")
            cost.metadata_refreshes = text.count("Refreshing table metadata from new version")
            cost.jvms = text.count("Running Spark version")
        if not result.succeeded:
            print(result.output[-4000:], file=sys.stderr)
        cost.pythons = _python_starts(self.python_log, started_epoch, started_epoch + result.seconds)
        timeline += _python_marks(self.python_log, started_epoch, started_epoch + result.seconds)
        cost.timeline = sorted(timeline, key=lambda mark: mark[1])
        return cost

    def parse_cost(self) -> str:
        """What importing the pipelines' DAG file costs a fresh Python (the DAG processor parses it often)."""
        script = (
            "import resource, runpy, sys, time\n"
            "def cpu():\n"
            "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
            "    return r.ru_utime + r.ru_stime\n"
            "t0, c0 = time.perf_counter(), cpu()\n"
            "import airflow.sdk\n"
            "t1, c1 = time.perf_counter(), cpu()\n"
            "runpy.run_path(sys.argv[1])\n"
            "t2, c2 = time.perf_counter(), cpu()\n"
            "print(f'airflow.sdk import {t1 - t0:.2f} s wall / {c1 - c0:.2f} s CPU, '\n"
            "      f'then the DAG file {t2 - t1:.2f} s wall / {c2 - c1:.2f} s CPU')\n"
        )
        dag_file = TREE_ROOT / "dags" / "ticdc_pipelines.py"
        done = subprocess.run(
            [sys.executable, "-c", script, str(dag_file)],
            env=self.runner.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() or f"failed: {done.stderr.strip()[-500:]}"


def bytecode_status() -> str:
    """Whether this environment's Python processes read compiled bytecode or compile every module they import."""
    root = Path(sysconfig.get_paths()["purelib"])
    sources = [path for path in root.rglob("*.py") if "__pycache__" not in path.parts]
    compiled = sum(1 for path in sources if Path(importlib.util.cache_from_source(str(path))).exists())
    settings = ", ".join(
        f"{k}={os.environ[k]}" for k in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX") if k in os.environ
    )
    settings = settings or "neither PYTHONDONTWRITEBYTECODE nor PYTHONPYCACHEPREFIX set"
    return f"{compiled} of {len(sources)} modules of {root} have cached bytecode ({settings})"


def _epoch(line: str) -> float | None:
    match = STAMP.match(line)
    return datetime.fromisoformat(match.group(1)).replace(tzinfo=UTC).timestamp() if match else None


def _marks(lines: list[str], started: float) -> list[tuple[str, float]]:
    """Seconds from the start of the ``airflow`` process to each timeline mark found."""
    marks, index = [], 0
    for name, pattern in MARKS:
        regex = re.compile(pattern)
        for i in range(index, len(lines)):
            if regex.search(lines[i]) and (at := _epoch(lines[i])) is not None:
                marks.append((name, at - started))
                index = i + 1
                break
    return marks


def _spark_log_marks(text: str, started: float) -> list[tuple[str, float]]:
    """Seconds from the start of the ``airflow`` process to the ``SPARK_LOG_MARKS`` of a driver's Spark log."""
    marks = []
    lines = text.splitlines()
    for name, needle in SPARK_LOG_MARKS:
        for line in lines:
            if (needle is None or needle in line) and (match := SPARK_STAMP.match(line)):
                at = datetime.fromisoformat(match.group(1)).replace(tzinfo=UTC).timestamp()  # the JVM logs UTC here
                marks.append((f"    [spark log] {name}", at - started))
                break
    return marks


def _python_marks(log: Path, start: float, end: float) -> list[tuple[str, float]]:
    """Each Python process start (driver, worker daemons) as a timeline mark."""
    if not log.exists():
        return []
    marks = []
    for line in log.read_text(encoding="utf-8").splitlines():
        at, _, command = line.partition(" ")
        if start <= float(at) <= end + 1:
            marks.append((f"    [python] {_python_kind(command)} started", float(at) - start))
    return marks


def _python_kind(command: str) -> str:
    return "daemon" if "daemon" in command else "worker" if "pyspark.worker" in command else "driver"


def _jobs_by_step(path: Path, started: float, step_starts: list[float], ended: float) -> Counter[str]:
    """Spark jobs of an event log submitted between ``started`` and ``ended``, per step of the run."""
    files = sorted(path.rglob("*")) if path.is_dir() else [path]
    jobs: Counter[str] = Counter()
    for file in files:
        if not file.is_file() or file.name.startswith("appstatus"):
            continue
        for line in file.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"Event":"SparkListenerJobStart"' not in line:
                continue
            submitted = json.loads(line)["Submission Time"] / 1000 - started
            if submitted < 0 or submitted > ended - started:
                continue  # another run's (the Spark run service's event log)
            step = "before decode"
            for name, at in zip(STEPS, step_starts, strict=False):
                if submitted >= at:
                    step = name
            jobs[step] += 1
    return jobs


def _spark_log(lines: list[str]) -> Path | None:
    for line in lines:
        if match := re.search(r"Spark's own log \(INFO and up\) goes to (\S+);", line):
            return Path(match.group(1))
    return None


def _python_starts(log: Path, start: float, end: float) -> Counter[str]:
    kinds: Counter[str] = Counter()
    if not log.exists():
        return kinds
    for line in log.read_text(encoding="utf-8").splitlines():
        at, _, command = line.partition(" ")
        if start <= float(at) <= end + 1:
            kinds[_python_kind(command)] += 1
    return kinds


def report(cost: RunCost) -> None:
    print(f"\n== run '{cost.label}': {'ok' if cost.ok else 'FAILED'}, wall {cost.wall:.1f} s, CPU {cost.cpu:.1f} s")
    previous = 0.0
    for name, at in cost.timeline or cost.marks:
        print(f"  {at:6.1f} s  (+{at - previous:5.1f})  {name}")
        previous = at
    print(f"  {cost.wall:6.1f} s  (+{cost.wall - previous:5.1f})  airflow process exited")
    for phase in cost.phases:
        print(f"  phases: {phase}")
    jobs = ", ".join(f"{step} {cost.jobs[step]}" for step in ("before decode", *STEPS) if cost.jobs[step])
    print(f"  Spark jobs: {sum(cost.jobs.values())} ({jobs or 'none'})")
    print(f"  catalog: {cost.table_loads} table loads, {cost.metadata_refreshes} metadata refreshes")
    pythons = ", ".join(f"{n} {k}" for k, n in sorted(cost.pythons.items())) or "none"
    print(f"  starts: {cost.jvms} driver JVM(s) (+1 launcher JVM per spark-submit), Python processes: {pythons}")
    print("  CPU s by stage and process:")
    for line in cost.cpu_table:
        print(f"  {line}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
