"""Run one scenario: workload and DDLs into the model, TiCDC-like delivery to the real broker at
random cut points, the four stages in-process, and after every run the check of every table.

Delivery follows TiCDC's at-least-once MQ sink: watermarks broadcast by the simulator, byte-equal
copies of already-sent ranges (``sim.replay``), and runs scheduled at arbitrary points: a random
prefix of what is pending is produced before each run, the rest waits for a later one; some runs
get nothing new at all.
"""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.harness.checks import check_table, table_names
from tests.harness.moves import DdlMoves
from tests.harness.scenario import Scenario, build_simulator
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import LakeConfig, load_config
from ticdc_lake.landing.lander import land
from ticdc_lake.spark.apply_job import ApplySummary, run_apply
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.schema_history_job import run_schema_history
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import OutMessage, TicdcSimulator


@dataclass(frozen=True, slots=True)
class Services:
    """Where a scenario runs: the Spark session, the lake (catalog ``lake``), broker and registry."""

    spark: Any
    lake_home: Path
    kafka_bootstrap: str
    registry_url: str | None
    #: Each scenario gets its own pipeline folder (pipelines.yaml, landing) under it.
    work_dir: Path


@dataclass(slots=True)
class ScenarioResult:
    scenario: Scenario
    runs: int = 0
    events: int = 0
    tables: int = 0
    seconds: float = 0.0
    #: Seconds spent in land, decode, schema history, apply (summed over runs) and in the checks.
    stage_seconds: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    check_seconds: float = 0.0
    rows_checked: int = 0
    ddls: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _topics(sim: TicdcSimulator) -> list[str]:
    """The topics the simulator writes (several with topic-per-table dispatch)."""
    return sorted(sim.topics) or [sim.topic]


class ScenarioRun:
    """The state of one scenario between runs (see the module docstring)."""

    def __init__(self, services: Services, scenario: Scenario) -> None:
        self.services, self.scenario = services, scenario
        suffix = uuid.uuid4().hex[:6]
        name = f"rnd_{scenario.protocol.replace('-', '_')}_{scenario.seed}_{suffix}"
        self.pipeline_id, self.topic = name, name.replace("_", "-")
        self.home = services.work_dir / name
        self.home.mkdir(parents=True)
        self.rng = random.Random(f"delivery:{scenario.protocol}:{scenario.seed}")
        register = None
        if scenario.protocol == "avro":
            if services.registry_url is None:
                raise ValueError("the avro protocol needs the schema registry; start include/scripts/registry.sh")
            from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

            client = SchemaRegistryClient({"url": services.registry_url})
            register = lambda subject, text: client.register_schema(subject, Schema(text, "AVRO"))  # noqa: E731
        self.sim = build_simulator(scenario, self.topic, register)
        self.moves = DdlMoves(self.sim, self.rng, scenario.protocol)
        self.pending: list[OutMessage] = []
        self.produced: Counter[tuple[str, int]] = Counter()
        self.created_topics: set[str] = set()
        self.events = 0
        self.timings: list[tuple[float, ...]] = []
        self.topic_marks: dict[str, int] = {}
        #: Model rows compared with Iceberg rows, over all runs (0 would mean nothing was checked).
        self.rows_checked = 0

    # ------------------------------------------------------------------ upstream and delivery
    def generate(self) -> None:
        """One run's worth of upstream: transactions, DDLs at random points, idle time."""
        low, high = self.scenario.transactions
        for _ in range(self.rng.randint(low, high)):
            if self.rng.random() < self.scenario.ddl_probability:
                self.moves.random_ddl()
            elif self.rng.random() < 0.05:
                self.sim.advance(self.rng.uniform(0.5, 3.0))
            else:
                self.sim.run_transactions(1)
        if self.rng.random() < 0.5:
            self.sim.flush_watermark()
        if self.rng.random() < 0.3:
            self.sim.run_transactions(self.rng.randint(1, 3))  # a tail after the last watermark

    def replay_some(self) -> None:
        """At-least-once: send again a random range that was already produced (or is pending)."""
        for _ in range(self.rng.randint(0, 2)):
            topic = self.rng.choice(_topics(self.sim))
            partition = self.rng.randrange(self.sim.partitions)
            log = self.sim.partition_log(partition, topic=topic)
            sent = self.produced[(topic, partition)] or len(log)
            if not log or not sent:
                continue
            start = self.rng.randrange(min(sent, len(log)))
            count = self.rng.randint(1, min(40, len(log) - start))
            self.sim.replay(partitions=[partition], start=start, count=count, topic=topic)

    def deliver(self, everything: bool) -> int:
        """Produce a random prefix of what is pending (all of it when ``everything``)."""
        self.pending.extend(self.sim.take())
        cut = len(self.pending) if everything else self.rng.randint(len(self.pending) // 3, len(self.pending))
        batch, self.pending = self.pending[:cut], self.pending[cut:]
        for topic in sorted(({m.topic for m in batch} | set(_topics(self.sim))) - self.created_topics):
            create_topic(self.services.kafka_bootstrap, topic, self.sim.partitions)
            self.created_topics.add(topic)
        produce(self.services.kafka_bootstrap, batch)
        self.produced.update((m.topic, m.partition) for m in batch)
        self.events += len(batch)
        return len(batch)

    # ------------------------------------------------------------------ the pipeline
    def config(self) -> LakeConfig:
        """Write the pipeline file (re-read every run, as in Airflow) listing every topic so far."""
        lake = self.services.lake_home
        topics = sorted(set(_topics(self.sim)) | self.created_topics)
        document = {
            "catalogs": {
                "lake": {"uri": f"jdbc:sqlite:{lake}/catalog/lake.db", "warehouse": f"file://{lake}/warehouse"}
            },
            "pipelines": [
                {
                    "id": self.pipeline_id,
                    "protocol": self.scenario.protocol,
                    "kafka": {"topics": topics},
                    "landing_uri": f"file://{self.home}/landing",
                    "catalog": "lake",
                    "target": {"namespace": f"{self.pipeline_id}_{{database}}"},
                }
            ],
        }
        path = self.home / "pipelines.yaml"
        path.write_text(yaml.safe_dump(document))
        return load_config(path)

    def run_stages(self, index: int) -> tuple[LakeConfig, ApplySummary]:
        config = self.config()
        pipeline = config.pipeline(self.pipeline_id)
        run_id = f"{self.pipeline_id}-run{index}"
        url = self.services.registry_url
        registry = {"url": url} if self.scenario.protocol == "avro" and url is not None else None
        spark = self.services.spark
        t0 = time.monotonic()
        land(pipeline, {"bootstrap.servers": self.services.kafka_bootstrap}, run_id, None, registry=registry)
        t1 = time.monotonic()
        run_decode(spark, config, pipeline, run_id)
        t2 = time.monotonic()
        run_schema_history(spark, config, pipeline, run_id)
        t3 = time.monotonic()
        summary = run_apply(spark, config, pipeline, run_id)
        self.timings.append((t1 - t0, t2 - t1, t3 - t2, time.monotonic() - t3))
        return config, summary

    def applied_watermarks(self, summary: ApplySummary) -> dict[str, int]:
        """Per topic, the TSO its tables are applied up to after this run.

        The run applies every table of a topic with a watermark up to the run's watermark (the
        lowest topic watermark); the tables of a topic without one wait at what they had.
        """
        run_mark = summary.watermark
        for topic, mark in summary.watermarks.items():
            if mark is not None and run_mark is not None:
                self.topic_marks[topic] = run_mark
        return self.topic_marks

    def check(self, index: int, config: LakeConfig, summary: ApplySummary) -> list[str]:
        """Every table name against the model at the watermark its topic was applied to."""
        marks = self.applied_watermarks(summary)
        pipeline = config.pipeline(self.pipeline_id)
        catalog = load_catalog("lake", config.catalogs["lake"])
        s = self.scenario
        failures = []
        where = f"seed {s.seed} protocol {s.protocol} run {index}"
        if summary.held or summary.failed:
            failures.append(f"{where}: apply held {summary.held} failed {summary.failed}")
        for ref in table_names(self.sim):
            topic = self.sim.topic_of(*ref)
            watermark = marks.get(topic, 0)
            problems, rows = check_table(self.sim, catalog, pipeline, ref, watermark, s.protocol)
            self.rows_checked += rows
            if problems:
                lines = "\n    ".join(problems)
                failures.append(
                    f"{where} table {ref[0]}.{ref[1]} (topic {topic}, watermark {watermark}, run watermark "
                    f"{summary.watermark}):\n    {lines}"
                )
        return failures


def run_scenario(services: Services, scenario: Scenario) -> ScenarioResult:
    """Run ``scenario`` and check every table after every run; stops at the first failing run."""
    started = time.monotonic()
    result = ScenarioResult(scenario)
    state = ScenarioRun(services, scenario)
    state.sim.setup(create_databases=state.rng.random() < 0.5)
    for index in range(scenario.runs):
        last = index == scenario.runs - 1
        quiet = index > 0 and not last and state.rng.random() < 0.25
        if not quiet:
            state.generate()
            state.replay_some()
            state.deliver(everything=last and state.rng.random() < 0.5)
        try:
            config, summary = state.run_stages(index)
        except Exception as exc:  # a stage that fails is a finding: keep the seed with it
            where = f"seed {scenario.seed} protocol {scenario.protocol} run {index}"
            failures = [f"{where}: the stages raised {type(exc).__name__}: {str(exc)[:2000]}"]
        else:
            checked = time.monotonic()
            failures = state.check(index, config, summary)
            result.check_seconds += time.monotonic() - checked
        result.runs += 1
        if failures:
            result.failures = [*failures, f"ddls so far: {state.moves.done}", f"replay: {scenario.replay_command()}"]
            break
    result.events, result.tables = state.events, len(table_names(state.sim))
    result.ddls, result.rows_checked = list(state.moves.done), state.rows_checked
    result.seconds = time.monotonic() - started
    land_s, decode_s, history_s, apply_s = (sum(t[i] for t in state.timings) for i in range(4))
    result.stage_seconds = (land_s, decode_s, history_s, apply_s)
    return result
