"""The local Airflow started the documented way (include/scripts/airflow.sh), for the UI tests.

Shared by test_airflow_ui.py (the REST API) and browser_ui.py (`make test-ui`, a real browser).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from e2e_support import Pipeline, watermark_of

from ticdc_lake import tso
from ticdc_lake.cli.airflow_runner import PROJECT_ROOT, AirflowRunner
from ticdc_lake.cli.airflow_service import USERNAME, AirflowApi, Login, service_login
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

SCRIPT = PROJECT_ROOT / "include" / "scripts" / "airflow.sh"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _script(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), command], env=env, capture_output=True, text=True, timeout=600, check=False)


@contextmanager
def started_airflow(pipeline: Pipeline, kafka_bootstrap: str) -> Iterator[Login]:
    """`include/scripts/airflow.sh start` for the pipeline's home and file on a free port; stop at the end."""
    port = _free_port()
    env = dict(
        os.environ,
        TICDC_LAKE_HOME=str(pipeline.home),
        TICDC_LAKE_CONFIG=str(pipeline.config_path),
        TICDC_LAKE_AIRFLOW_PORT=str(port),
        TICDC_LAKE_KAFKA_BOOTSTRAP=kafka_bootstrap,
    )
    airflow_home = pipeline.home / "airflow"
    template = AirflowRunner.template_db
    if template is not None and template.exists():  # the suite's migrated database: saves a migrate
        airflow_home.mkdir(parents=True)
        shutil.copyfile(template, airflow_home / "airflow.db")
        (airflow_home / ".migrated").write_text("ok (copied)\n")
    try:
        started = _script("start", env)
        assert started.returncode == 0, started.stdout + started.stderr
        login = service_login(pipeline.home)
        assert login.url == f"http://127.0.0.1:{port}"
        ready = f"Airflow UI ready on {login.url} (login: {USERNAME} / {login.password})"
        assert started.stdout.splitlines()[-1] == ready
        status = _script("status", env)
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.stdout.splitlines()[-1] == ready
        yield login
    finally:
        stopped = _script("stop", env)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert stopped.stdout.splitlines()[-1] == "airflow.sh: stopped"
        assert _script("status", env).stdout == "airflow.sh: not running\n"


def produce_workload(pipeline: Pipeline, kafka_bootstrap: str) -> tuple[TicdcSimulator, int]:
    """Three tables' CREATEs and 80 transactions on a real-time upstream clock; returns the watermark."""
    create_topic(kafka_bootstrap, pipeline.topic, 2)
    start = datetime.now(UTC) - timedelta(minutes=2)
    sim = TicdcSimulator(
        seed=16, topic=pipeline.topic, partitions=2, start=start, workload=WorkloadConfig(tables=3, databases=1)
    )
    sim.setup()
    sim.run_transactions(80)
    sim.flush_watermark()
    produce(kafka_bootstrap, sim.take())
    return sim, watermark_of(sim)


def run_to_success(api: AirflowApi, pipeline: Pipeline) -> str:
    """Triggers a run of the pipeline's DAG, waits for it; returns its run id (fails with the logs)."""
    api.unpause(pipeline.dag_id)
    run_id = api.trigger(pipeline.dag_id, datetime.now(UTC).replace(microsecond=0))
    state = api.await_run(pipeline.dag_id, run_id, timeout_s=600)
    states = api.task_states(pipeline.dag_id, run_id)
    if state != "success":
        logs = "\n".join(
            f"== {t}\n{api.task_log(pipeline.dag_id, run_id, t)}" for t in states if states[t] != "upstream_failed"
        )
        raise AssertionError(f"run {run_id} {state}: {states}\n{logs[-8000:]}")
    assert states == {"land": "success", "transform": "success"}
    return run_id


def summary_rows(log: str) -> dict[str, list[str]]:
    """The run summary's table rows (``lake.<db>.<table> STATUS events inserted ...``) by table,
    without the last cell (seconds)."""
    rows = {}
    for line in log.splitlines():
        cells = line.split()
        if cells and re.fullmatch(r"lake\.[a-z0-9_]+\.[a-z0-9_]+", cells[0]):
            rows[cells[0]] = cells[1:-1]
    return rows


def expected_summary_rows(pipeline: Pipeline, sim: TicdcSimulator, watermark: int) -> dict[str, list[str]]:
    """What the summary of the first run over the workload says per table: every row inserted by it."""
    events = Counter(f"lake.{c.database}.{c.table}" for t in sim.model.transactions() for c in t.changes)
    applied_at = tso.to_datetime(watermark).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    expected = {}
    for database, table in sim.model.tables():
        name = f"lake.{database}.{table}"
        count = len(pipeline.table_rows(database, table))
        expected[name] = ["APPLIED", str(events[name]), str(count), "0", "0", str(watermark), *applied_at.split()]
    return expected
