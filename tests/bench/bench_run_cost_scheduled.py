"""Fixed cost of a pipeline run as a running Airflow executes it: triggered, scheduled, two tasks.

`make bench-run-cost-scheduled` runs it; it prints figures and asserts nothing. The pipeline,
workload and runs (first, few, nothing; ``--rounds``) are those of ``bench_run_cost.py``, but each
run is triggered through the REST API of the local Airflow that ``include/scripts/airflow.sh
start`` runs (API server, scheduler, DAG processor, LocalExecutor), as a scheduled run would be,
instead of ``airflow dags test`` (which starts the CLI, parses the DAG folder twice and builds an
in-process execution API for every run). ``--spark-service`` sends the transform to a Spark run
service started before the runs (``docs/spark-service.md``); without it each run pays a
``spark-submit``.

Per run it prints wall seconds from the trigger to the run's end (the run's ``end_date``), the
time of each step (queued, started, ended for the run and for both tasks, from the REST API), the
stage lines of the transform task's log, and CPU seconds: every process of the bench's tree during
the run (API server, scheduler, DAG processor, the task processes, the Spark run service or the
spark-submit JVMs, Python workers) minus what the long-lived ones used before it. The idle CPU rate
of those long-lived processes (measured for 20 s before the runs) is printed apart: a run of
``W`` wall seconds contains about ``W`` times that rate of Airflow's own background work.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import bench_vs_kc_measure as measure  # type: ignore[import-not-found,unused-ignore]  # beside this file
from bench_run_cost import PHASE_LINES, SERVICE_CONN_ID, Bench  # type: ignore[import-not-found,unused-ignore]

from ticdc_lake.cli.airflow_service import AirflowApi, service_login

PROJECT_ROOT = Path(__file__).resolve().parents[2]
AIRFLOW_SCRIPT = PROJECT_ROOT / "include" / "scripts" / "airflow.sh"
sys.path.insert(0, str(PROJECT_ROOT / "tests"))
from spark_service_support import free_port  # type: ignore[import-not-found,unused-ignore]  # noqa: E402

IDLE_S = 20.0


class ScheduledBench(Bench):  # type: ignore[misc,unused-ignore]
    """The bench's pipeline in a running local Airflow; each run triggered and awaited."""

    def __init__(self, home: Path, bootstrap: str, *, spark_service: bool) -> None:
        super().__init__(home, bootstrap, spark_service=spark_service)
        self.airflow_home = home / "scheduled"
        self.env = dict(
            os.environ,
            TICDC_LAKE_HOME=str(self.airflow_home),
            TICDC_LAKE_CONFIG=str(home / "conf" / "pipelines.yaml"),
            TICDC_LAKE_AIRFLOW_PORT=str(free_port()),
            TICDC_LAKE_KAFKA_BOOTSTRAP=bootstrap,
        )
        if self.service is not None:
            self.env[f"AIRFLOW_CONN_{SERVICE_CONN_ID.upper()}"] = self.service.connection()
        started = time.monotonic()
        self._script("start")
        print(f"local Airflow started in {time.monotonic() - started:.1f} s (not counted in the runs)", flush=True)
        self.api = AirflowApi(service_login(self.airflow_home))
        self.dag_id = f"ticdc_{self.pipeline}"
        deadline = time.monotonic() + 180
        while self.dag_id not in self.api.dag_ids():  # the DAG processor has not parsed the file yet
            if time.monotonic() > deadline:
                raise SystemExit(f"the DAG {self.dag_id} did not appear in 180 s")
            time.sleep(2)
        self.api.unpause(self.dag_id)

    def _script(self, command: str) -> None:
        done = subprocess.run(
            [str(AIRFLOW_SCRIPT), command], env=self.env, capture_output=True, text=True, timeout=600, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"airflow.sh {command} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")

    def idle_rate(self) -> float:
        """CPU seconds per wall second of the running processes while no run happens."""
        meter = measure.TreeMeter().start()
        before = meter.cpu()
        time.sleep(IDLE_S)
        return float((meter.total() - before) / IDLE_S)

    def scheduled_run(self, label: str, transactions: int) -> None:
        self.feed(label, transactions)
        meter = measure.TreeMeter().start()
        before = meter.cpu()
        triggered = datetime.now(UTC)
        run_id = self.api.trigger(self.dag_id, triggered.replace(microsecond=0))
        state = self.api.await_run(self.dag_id, run_id, timeout_s=900)
        cpu = meter.total() - before
        run = self.api.run(self.dag_id, run_id)
        tasks = self.api._call("GET", f"/api/v2/dags/{self.dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
        ended = _at(run["end_date"])
        wall = (ended - triggered).total_seconds()
        print(f"\n== run '{label}': {state}, wall {wall:.1f} s (trigger to run end), CPU {cpu:.1f} s")
        marks = [("run queued", run.get("queued_at")), ("run started", run.get("start_date"))]
        for task in sorted(tasks, key=lambda t: t["start_date"] or ""):
            for what in ("queued_when", "start_date", "end_date"):
                marks.append((f"{task['task_id']} {what.split('_')[0]}", task.get(what)))
        marks.append(("run ended", run["end_date"]))
        previous = 0.0
        for name, value in sorted(((n, (_at(v) - triggered).total_seconds()) for n, v in marks if v), key=_second):
            print(f"  {value:6.1f} s  (+{value - previous:5.1f})  {name}")
            previous = value
        log = self.api.task_log(self.dag_id, run_id, "transform")
        for line in log.splitlines():
            if (match := PHASE_LINES.search(line)) or "transform: done in" in line:
                print(f"  {match.group(1) if match else line.strip()[:220]}")


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _second(item: tuple[str, float]) -> float:
    return item[1]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_run_cost_scheduled.py", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=None, help="Kafka bootstrap (default: the local broker of run/kafka)")
    parser.add_argument("--transactions", type=int, default=10, help="transactions of the 'few' run")
    parser.add_argument("--rounds", type=int, default=1, help="how many few/nothing pairs to run")
    parser.add_argument("--spark-service", action="store_true", help="send the transform to a Spark run service")
    parser.add_argument("--keep", action="store_true", help="keep the bench folder (logs)")
    args = parser.parse_args(argv)
    measure.become_subreaper()  # the services airflow.sh starts in the background stay in the measured tree
    bootstrap = args.bootstrap or (PROJECT_ROOT / "run" / "kafka" / "bootstrap").read_text().strip()
    home = Path(tempfile.mkdtemp(prefix="bench-run-cost-scheduled-"))
    bench: ScheduledBench | None = None
    try:
        bench = ScheduledBench(home, bootstrap, spark_service=args.spark_service)
        print(f"idle CPU of the running processes: {bench.idle_rate():.2f} CPU s per second", flush=True)
        bench.scheduled_run("first", 10)
        for _ in range(args.rounds):
            bench.scheduled_run("few", args.transactions)
            bench.scheduled_run("nothing", 0)
    finally:
        if bench is not None:
            bench._script("stop")
            if bench.service is not None:
                bench.service.stop()
        if args.keep:
            print(f"bench folder kept: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
