"""The pipeline DAG with ``spark_service`` set: its transform runs in a real Spark run service.

The service is ``spark_jobs/service.py`` started for the test (tests/spark_service_support.py: its
own port and token file) with the test's pipeline file, and stopped at the end. Two ``airflow dags
test`` runs go through it: the tables equal the simulator's model after each, the task log has the
stage's own lines, and the service counted both runs. Then, with the service stopped, the transform task fails with the
client's "cannot reach" message, which says how to start it (one test: a second service start
would cost a Spark driver's start for nothing).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from e2e_support import Pipeline, watermark_of

from tests.spark_service_support import SparkServiceProcess
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]

CONN_ID = "ticdc_spark_service"


@pytest.fixture
def spark_service(tmp_path: Path) -> Iterator[Callable[[Path], SparkServiceProcess]]:
    """Starts a service for a pipeline file (after the test wrote it); every one is stopped at the end."""
    started: list[SparkServiceProcess] = []

    def start(config: Path) -> SparkServiceProcess:
        service = SparkServiceProcess(config, tmp_path / f"service-{len(started)}")
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()


def _use_service(pipeline: Pipeline) -> None:
    document = yaml.safe_load(pipeline.config_path.read_text())
    document["pipelines"][0]["spark_service"] = CONN_ID
    pipeline.config_path.write_text(yaml.safe_dump(document, sort_keys=False))


def test_dag_runs_through_the_service_equal_the_model_and_a_stopped_service_fails_the_task(
    e2e_pipeline: Callable[..., Pipeline],
    spark_service: Callable[[Path], SparkServiceProcess],
    kafka_bootstrap: str,
) -> None:
    pipeline = e2e_pipeline()
    _use_service(pipeline)
    service = spark_service(pipeline.config_path)
    pipeline.runner.extra_env[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = service.connection()
    create_topic(kafka_bootstrap, pipeline.topic, 2)
    sim = TicdcSimulator(seed=1404, topic=pipeline.topic, partitions=2, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(60)
    sim.flush_watermark()
    produce(kafka_bootstrap, sim.take())

    run1 = pipeline.run(datetime(2026, 11, 20, 10, tzinfo=UTC))
    assert run1.succeeded, run1.output[-6000:] + service.log_tail()
    pipeline.assert_equals_model(sim, watermark_of(sim))
    # The stage's own lines, relayed from the service into the task log; no spark-submit ran.
    assert "[ticdc_lake.spark.transform_job] transform: done in" in run1.output, run1.output[-6000:]
    assert f"goes to the Spark run service at 127.0.0.1:{service.port}" in run1.output
    assert "spark-submit exited after" not in run1.output

    sim.run_transactions(60)
    sim.flush_watermark()
    produce(kafka_bootstrap, sim.take())
    run2 = pipeline.run(datetime(2026, 11, 20, 11, tzinfo=UTC))
    assert run2.succeeded, run2.output[-6000:] + service.log_tail()
    pipeline.assert_equals_model(sim, watermark_of(sim))
    assert "[ticdc_lake.spark.transform_job] transform: done in" in run2.output

    health = service.health()
    assert (health["runs"], health["busy"]) == (2, None)

    # The service stopped: the transform task fails, retryably, with the client's message.
    service.stop()
    # One task alone (`airflow tasks test`): under `dags test` the DAG's retries would wait minutes.
    airflow = Path(sys.executable).parent / "airflow"
    done = subprocess.run(
        [str(airflow), "tasks", "test", pipeline.dag_id, "transform", "2026-11-20T12:00:00+00:00"],
        env=pipeline.runner.env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    # `tasks test` exits 0 whatever the task did; the execution API logs the state it set.
    assert "new_state=up_for_retry" in output, output[-6000:]
    assert f"cannot reach the Spark run service at 127.0.0.1:{service.port}" in output, output[-6000:]
    start_it = "Start it (include/scripts/spark_service.sh start, or the spark-service service of docker-compose.yml)"
    assert start_it in output, output[-6000:]
