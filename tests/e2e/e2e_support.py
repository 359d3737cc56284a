"""End-to-end helpers: a pipeline file and Airflow home per test, and checks against the model."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from tests.lake_model import assert_lake_equals_model
from tests.lake_model import watermark_of as watermark_of  # the end-to-end tests import it from here
from ticdc_lake.catalog import load_catalog
from ticdc_lake.cli.airflow_runner import AirflowRunner, DagRunResult
from ticdc_lake.config import load_config
from ticdc_sim.producer import produce
from ticdc_sim.simulator import TicdcSimulator


@dataclass
class Pipeline:
    id: str
    topic: str
    config_path: Path
    runner: AirflowRunner
    home: Path
    protocol: str = "simple-json"

    @property
    def dag_id(self) -> str:
        return f"ticdc_{self.id}"

    def write_config(self, **policies: str) -> None:
        document = {
            "catalogs": {
                "lake": {
                    "type": "jdbc",
                    "uri": f"jdbc:sqlite:{self.home}/catalog/lake.db",
                    "warehouse": f"file://{self.home}/warehouse",
                }
            },
            "pipelines": [
                {
                    "id": self.id,
                    "protocol": self.protocol,
                    "kafka": {"connection_id": "kafka_default", "topics": [self.topic]},
                    "schedule": "@hourly",
                    "landing_uri": f"file://{self.home}/landing",
                    "catalog": "lake",
                    "target": {"namespace": "{database}"},
                    "policies": dict(policies),
                }
            ],
        }
        self.config_path.write_text(yaml.safe_dump(document, sort_keys=False))

    def run(self, logical_date: Any) -> DagRunResult:
        return self.runner.test_dag(self.dag_id, logical_date)

    def catalog(self) -> Any:
        config = load_config(self.config_path)
        return load_catalog("lake", config.catalogs["lake"])

    def table_rows(self, database: str, table: str) -> list[dict[str, Any]]:
        return list(self.catalog().load_table((database, table)).scan().to_arrow().to_pylist())

    def assert_equals_model(self, sim: TicdcSimulator, watermark: int) -> None:
        """Every upstream table equals the reference model as of ``watermark``."""
        assert_lake_equals_model(self.catalog(), self.id, sim, watermark)


def ledger_rows(pipeline: Pipeline) -> list[dict[str, Any]]:
    table = pipeline.catalog().load_table(("ticdc_system", "run_ledger"))
    return [r for r in table.scan().to_arrow().to_pylist() if r["pipeline"] == pipeline.id]


def run_one_round(pipeline: Pipeline, sim: TicdcSimulator, kafka_bootstrap: str, *, deletes: bool = True) -> int:
    """One run over everything at once; returns its watermark.

    The workload's CREATE TABLEs, 200 transactions (key-changing updates and deletes unless
    ``deletes=False``), a tail after the last watermark that must wait, and at-least-once copies
    of already-sent messages in the same landed batch. After the run every table equals the model
    at the watermark. (Applied state carried across runs is protocol-free: test_simple_pipeline.)
    """
    sim.setup()
    sim.run_transactions(200)
    sim.flush_watermark()
    sim.run_transactions(15)
    watermark = watermark_of(sim)
    assert watermark < sim.model.last_commit_ts, "the test wants transactions after the watermark"
    replayed = sim.replay(partitions=range(sim.partitions), start=3, count=25)
    assert any(m.kind == "DML" for m in replayed)
    produce(kafka_bootstrap, sim.take())
    run = pipeline.run(datetime(2026, 11, 20, 10, tzinfo=UTC))
    assert run.succeeded, run.output[-5000:]
    pipeline.assert_equals_model(sim, watermark)
    ops = {c.op.value for t in sim.model.transactions() for c in t.changes}
    assert {"INSERT", "UPDATE", "DELETE"} <= ops if deletes else ops == {"INSERT", "UPDATE"}
    splits = any(c.split for t in sim.model.transactions() for c in t.changes)
    assert splits == deletes, "key-changing updates in the workload do not match the test's intent"
    statuses = {(r["stage"], r["status"]) for r in ledger_rows(pipeline) if r["table"] is None}
    assert statuses == {("decode", "OK"), ("schema_history", "OK"), ("apply", "OK")}, statuses
    return watermark
