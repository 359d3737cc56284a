"""The scale-out path: the pipeline DAG submitting to a real Spark standalone master with a worker.

The cluster is the one ``include/scripts/spark-standalone.sh`` runs from the installed PySpark.
The ``spark_default`` connection points at it; the test proves both that the tables equal the
simulator's model and that every Spark task ran as an application of that cluster, with its
executors on the worker (the master's JSON and the worker's work dir say so).
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_support import Pipeline, watermark_of

from ticdc_lake.cli.airflow_runner import AirflowRunner
from ticdc_lake_airflow.spark_stages import SPARK_STAGES
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = PROJECT_ROOT / "include" / "scripts" / "spark-standalone.sh"


class StandaloneCluster:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.state = home / "spark"

    @property
    def master(self) -> str:
        return (self.state / "master").read_text().strip()

    @property
    def ui(self) -> str:
        return (self.state / "master-ui").read_text().strip()

    def state_json(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=10) as response:
            document: dict[str, Any] = json.load(response)
        return document

    def script(self, command: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "TICDC_LAKE_HOME": str(self.home)}
        return subprocess.run(
            ["bash", str(SCRIPT), command], env=env, capture_output=True, text=True, timeout=180, check=False
        )


@pytest.fixture
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """The cluster `make spark-standalone-up` runs, else a master and one worker (2 cores, 2 GiB)
    started for this test and stopped afterwards."""
    running = StandaloneCluster(Path(os.environ.get("TICDC_LAKE_HOME") or PROJECT_ROOT / "run"))
    if (running.state / "master").exists() and running.script("status").returncode == 0:
        yield running
        return
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
    started = cluster.script("start")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield cluster
    finally:
        stopped = cluster.script("stop")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_pipeline_dag_runs_on_a_standalone_cluster_and_equals_the_model(
    standalone_cluster: StandaloneCluster, tmp_path: Path, kafka_bootstrap: str
) -> None:
    master = standalone_cluster.master
    assert master.startswith("spark://127.0.0.1:")
    home = tmp_path / "home"
    (home / "catalog").mkdir(parents=True)
    suffix = os.urandom(4).hex()
    pipeline = Pipeline(
        id=f"standalone_{suffix}",
        topic=f"standalone-{suffix}",
        config_path=tmp_path / "pipelines.yaml",
        runner=AirflowRunner(tmp_path / "airflow", tmp_path / "pipelines.yaml", kafka_bootstrap, spark_master=master),
        home=home,
    )
    pipeline.write_config()
    # The driver talks to the cluster over loopback too (Spark would pick the first interface).
    document = yaml.safe_load(pipeline.config_path.read_text())
    document["pipelines"][0]["spark_conf"] = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    pipeline.config_path.write_text(yaml.safe_dump(document, sort_keys=False))
    create_topic(kafka_bootstrap, pipeline.topic, 2)
    sim = TicdcSimulator(seed=606, topic=pipeline.topic, partitions=2, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(60)
    sim.flush_watermark()
    produce(kafka_bootstrap, sim.take())

    run = pipeline.run(datetime(2026, 11, 20, 10, tzinfo=UTC))
    assert run.succeeded, run.output[-6000:]
    pipeline.assert_equals_model(sim, watermark_of(sim))

    # Every Spark task was an application of this master, finished, with executors on the worker.
    state = standalone_cluster.state_json()
    assert not [a for a in state["activeapps"] if a["name"].startswith(f"ticdc-{pipeline.id}-")]
    apps = {a["name"]: a for a in state["completedapps"] if a["name"].startswith(f"ticdc-{pipeline.id}-")}
    expected = {f"ticdc-{pipeline.id}-{stage}" for stage in SPARK_STAGES}
    assert set(apps) == expected, (sorted(apps), run.output[-3000:])
    assert {apps[name]["state"] for name in expected} == {"FINISHED"}
    work = standalone_cluster.state / "work"
    for name in expected:
        executors = sorted(p.parent.name for p in (work / apps[name]["id"]).glob("*/stderr"))
        assert executors, f"no executor ran for {name} under {work / apps[name]['id']}"
