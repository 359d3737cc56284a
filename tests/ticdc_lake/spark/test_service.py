"""The Spark run service as a real process: runs sent to it equal the model, and it fails like spark-submit.

Each service is ``spark_jobs/service.py`` in a process of its own (its own JVM, ``local[2]``), on a
free loopback port with its own token file, over a pipeline file and catalog of the test's own.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil  # type: ignore[import-untyped,unused-ignore]
import pytest

from tests.lake_model import assert_lake_equals_model, watermark_of
from tests.spark_service_support import SparkServiceProcess
from tests.stage_runs import stage_config
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import load_config
from ticdc_lake.errors import ConfigError, ServiceError
from ticdc_lake.landing.lander import land
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE
from ticdc_lake.spark_service_client import RunOutcome, RunRequest, SparkServiceClient, code_version
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


@dataclass
class Lake:
    """A pipeline file, its catalog and landing, and the simulator feeding its topic."""

    home: Path
    bootstrap: str
    pipeline: str = field(default_factory=lambda: f"svc_{uuid.uuid4().hex[:8]}")

    def __post_init__(self) -> None:
        (self.home / "catalog").mkdir(parents=True)
        self.topic = self.pipeline.replace("_", "-")
        pipeline = {"id": self.pipeline, "protocol": "simple-json", "kafka": {"topics": [self.topic]}}
        pipeline |= {"target": {"namespace": "{database}"}, "spark_conf": {"spark.sql.shuffle.partitions": "2"}}
        self.config = Path(stage_config(self.home, self.home, pipeline).source_path)
        create_topic(self.bootstrap, self.topic, 3)
        self.sim = TicdcSimulator(
            seed=20261126, topic=self.topic, partitions=3, workload=WorkloadConfig(tables=3, databases=2)
        )
        self.runs = 0

    def produce_and_land(self, transactions: int) -> str:
        """Transactions up to a watermark, produced and landed; the run id to transform them with."""
        if self.runs == 0:
            self.sim.setup()
        self.sim.run_transactions(transactions)
        self.sim.flush_watermark()
        produce(self.bootstrap, self.sim.take())
        self.runs += 1
        run_id = f"run-{self.runs}"
        land(load_config(self.config).pipeline(self.pipeline), {"bootstrap.servers": self.bootstrap}, run_id, None)
        return run_id

    def assert_equals_model(self) -> None:
        catalog = load_catalog("lake", load_config(self.config).catalogs["lake"])
        assert_lake_equals_model(catalog, self.pipeline, self.sim, watermark_of(self.sim))


class Service(SparkServiceProcess):
    """A service for ``lake``'s pipeline file, with a way to send it that pipeline's runs."""

    def __init__(self, lake: Lake, failpoints: str = "") -> None:
        super().__init__(lake.config, lake.home / "service", failpoints=failpoints)
        self.lake = lake

    def run(self, run_id: str, pipeline: str | None = None) -> tuple[RunOutcome, list[str]]:
        return self.run_for(self.lake, run_id, pipeline)

    def run_for(self, lake: Lake, run_id: str, pipeline: str | None = None) -> tuple[RunOutcome, list[str]]:
        """A run of ``lake``'s pipeline file (any file: the service reads it per run)."""
        lines: list[str] = []
        request = RunRequest(str(lake.config), pipeline or lake.pipeline, run_id, version=code_version())
        return self.client().run(request, lines.append), lines


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory, kafka_bootstrap: str) -> Lake:
    return Lake(tmp_path_factory.mktemp("service-lake"), kafka_bootstrap)


@pytest.fixture(scope="module")
def service(lake: Lake) -> Iterator[Service]:
    started = Service(lake)
    yield started
    started.stop()


def test_runs_sent_to_the_service_equal_the_model_and_stream_the_stage_log(service: Service, lake: Lake) -> None:
    outcome, lines = service.run(lake.produce_and_land(30))
    assert outcome == RunOutcome(0, None), "\n".join(lines)
    assert any("INFO [ticdc_lake.spark.transform_job] transform: done in" in line for line in lines), lines
    lake.assert_equals_model()

    outcome, lines = service.run(lake.produce_and_land(30))  # updates and deletes of the rows above
    assert outcome == RunOutcome(0, None), "\n".join(lines)
    lake.assert_equals_model()
    health = service.client().health()
    assert (health["runs"], health["busy"], health["version"]) == (2, None, code_version())
    # Its driver JVM (local master) runs the serial collector, as a run's own JVM does.
    java = [p for p in psutil.Process(service.process.pid).children(recursive=True) if p.name() == "java"]
    assert len(java) == 1
    assert "-XX:+UseSerialGC" in java[0].cmdline()


def test_a_run_that_fails_ends_with_the_stage_exit_code_and_its_reason(service: Service, lake: Lake) -> None:
    outcome, lines = service.run("run-x", pipeline="no_such_pipeline")
    assert outcome == RunOutcome(EXIT_NOT_RETRYABLE, None)
    assert (
        f"ERROR [ticdc_lake.transform] transform failed: {lake.config}: no pipeline 'no_such_pipeline' (configured: "
        f"{lake.pipeline}). Add it under 'pipelines:' or pass one of the configured ids."
    ) in lines


def test_the_service_refuses_a_wrong_token_another_version_and_an_unknown_stage(service: Service, lake: Lake) -> None:
    stranger = SparkServiceClient("127.0.0.1", service.port, "not-the-token")
    with pytest.raises(ConfigError) as token:
        stranger.health()
    assert str(token.value) == (
        f"the Spark run service at 127.0.0.1:{service.port} refused the token (missing or wrong bearer token): set "
        "the connection's password to the service's token (the file its --token-file names)"
    )
    request = RunRequest(str(lake.config), lake.pipeline, "run-y", version="0123456789abcdef")
    with pytest.raises(ServiceError) as version:
        service.client().run(request, print)
    assert not version.value.retryable
    assert str(version.value) == (
        f"the Spark run service at 127.0.0.1:{service.port} answered 409: this Spark run service runs ticdc-lake "
        f"{code_version()}, the run of pipeline '{lake.pipeline}' comes from 0123456789abcdef: restart the service "
        "after an upgrade (include/scripts/spark_service.sh restart) so both run the same code"
    )
    request = RunRequest(str(lake.config), lake.pipeline, "run-y", stage="land", version=code_version())
    with pytest.raises(ServiceError) as stage:
        service.client().run(request, print)
    assert str(stage.value).endswith(
        "answered 409: run request: unknown stage 'land'; known: transform, decode, schema_history, apply"
    )


def test_a_service_that_dies_mid_run_is_recovered_by_the_next_run(tmp_path: Path, kafka_bootstrap: str) -> None:
    lake = Lake(tmp_path / "lake", kafka_bootstrap)
    dying = Service(lake, failpoints="apply.after_merge#2")  # killed after the second table's MERGE
    try:
        with pytest.raises(ServiceError) as raised:
            dying.run(lake.produce_and_land(40))
        assert f"the Spark run service at 127.0.0.1:{dying.port} " in str(raised.value)
        assert raised.value.retryable
        assert dying.process.wait(60) != 0
    finally:
        dying.stop()
    restarted = Service(lake)
    try:
        outcome, lines = restarted.run("run-1-retry")
        assert outcome == RunOutcome(0, None), "\n".join(lines)
        lake.assert_equals_model()
    finally:
        restarted.stop()


def test_a_caller_that_leaves_gets_its_run_cancelled_and_the_next_run_recovers(
    service: Service, tmp_path: Path, kafka_bootstrap: str
) -> None:
    lake = Lake(tmp_path / "lake", kafka_bootstrap)  # a pipeline of its own: its first run creates its tables
    request = RunRequest(str(lake.config), lake.pipeline, lake.produce_and_land(40), version=code_version())
    body = request.to_json()
    with socket.create_connection(("127.0.0.1", service.port), timeout=60) as sock:
        sock.sendall(
            b"POST /runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {service.client().token}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        assert sock.recv(4096).startswith(b"HTTP/1.0 200 ")  # the run started; the caller leaves
    deadline = time.monotonic() + 300
    while "left; its Spark jobs were cancelled" not in service.log_file.read_text(errors="replace"):
        assert time.monotonic() < deadline, service.log_tail()
        time.sleep(0.5)
    while service.client().health()["busy"] is not None:  # the cancelled run ended
        assert time.monotonic() < deadline, service.log_tail()
        time.sleep(0.5)

    outcome, lines = service.run_for(lake, "run-1-again")
    assert outcome == RunOutcome(0, None), "\n".join(lines)
    lake.assert_equals_model()
