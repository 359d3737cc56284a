"""Shared by the crash and concurrency tests: a small DDL stream, stage processes, checks against the model."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e_support import watermark_of

from tests.stage_runs import simple_json_pipeline
from ticdc_lake import failpoints
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.identifiers import iceberg_table_name
from ticdc_lake.stage_lock import WAIT_ENV
from ticdc_lake.status import applied_snapshot
from ticdc_sim.catalog import column
from ticdc_sim.compare import table_differences
from ticdc_sim.encoders import encoder_for
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

REPO = Path(__file__).resolve().parents[2]
DB = "shop"
#: The table that gets ADD COLUMN, and the one that gets RENAME COLUMN (old, new).
ADDED = ("orders", "priority")
RENAMED = ("accounts", "owner", "holder")


@dataclass
class Lake:
    """One pipeline on the shared test lake, its pipeline file and the stream produced into its topic."""

    config: LakeConfig
    config_path: Path
    pipeline: PipelineConfig
    sim: TicdcSimulator
    watermark: int
    bootstrap: str

    def catalog(self) -> Any:
        return load_catalog(self.pipeline.catalog, self.config.catalog_for(self.pipeline))

    def iceberg(self, table: str, catalog: Any = None) -> Any:
        identifier = (self.pipeline.target.namespace_for(DB), iceberg_table_name(table))
        return (catalog or self.catalog()).load_table(identifier)

    def tables(self) -> list[str]:
        return sorted(table for database, table in self.sim.model.tables() if database == DB)

    def stages(self, run_id: str, stages: str = "land,decode,schema_history,apply") -> list[str]:
        script = str(REPO / "tests" / "e2e" / "pipeline_run.py")
        return [sys.executable, script, *self._args(run_id), "--bootstrap", self.bootstrap, "--stages", stages]

    def apply_job(self, run_id: str) -> list[str]:
        return [sys.executable, str(REPO / "spark_jobs" / "apply.py"), *self._args(run_id)]

    def _args(self, run_id: str) -> list[str]:
        return ["--config", str(self.config_path), "--pipeline", self.pipeline.id, "--run-id", run_id]

    def positions(self) -> dict[str, int | None]:
        """Per table the applied TSO recorded in Iceberg (None: the table has no applied snapshot)."""
        catalog = self.catalog()
        result: dict[str, int | None] = {}
        for table in self.tables():
            try:
                iceberg = self.iceberg(table, catalog)
            except Exception:  # not created yet
                result[table] = None
                continue
            applied = applied_snapshot(iceberg, self.pipeline.id)[0]
            ddl = iceberg.properties.get("ticdc.ddl-applied-ts")
            result[table] = max(applied or 0, int(ddl)) if ddl is not None else applied
        return result

    def differences(self) -> dict[str, list[str]]:
        """Per table what differs from the model at the watermark: columns, then rows (empty: equal)."""
        catalog = self.catalog()
        problems: dict[str, list[str]] = {}
        for table in self.tables():
            iceberg = self.iceberg(table, catalog)
            columns = [(f.name, str(f.field_type).replace(" ", "")) for f in iceberg.schema().fields]
            wanted = self.sim.expected_iceberg_columns(DB, table, self.watermark)
            found = [] if columns == wanted else [f"columns {columns} != {wanted}"]
            expected = self.sim.expected_iceberg_rows(DB, table, self.watermark)
            found += table_differences(expected, iceberg.scan().to_arrow().to_pylist())
            if found:
                problems[table] = found
        return problems

    def ledger(self) -> list[dict[str, Any]]:
        table = self.catalog().load_table((self.config.catalog_for(self.pipeline).system_namespace, "run_ledger"))
        return [r for r in table.scan().to_arrow().to_pylist() if r["pipeline"] == self.pipeline.id]


def ddl_lake(home: Path, lake_home: Path, bootstrap: str, seed: int) -> Lake:
    """Three tables with DML, an ADD COLUMN and a RENAME COLUMN between DML, a tail after the
    watermark and at-least-once copies of each partition's start, produced into a new topic."""
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id = f"crash-{suffix}", f"crash_{suffix}"
    home.mkdir(parents=True, exist_ok=True)
    config = simple_json_pipeline(home, lake_home, pipeline_id, topic)
    create_topic(bootstrap, topic, 3)
    sim = TicdcSimulator(
        seed=seed,
        topic=topic,
        partitions=3,
        workload=WorkloadConfig(tables=3),
        encoder=encoder_for("simple-json", "UTC"),
    )
    sim.setup()
    sim.run_transactions(30)
    _touch(sim, ADDED[0])
    sim.add_column(DB, ADDED[0], column(ADDED[1], "int", nullable=False, default="3"), after="status")
    _touch(sim, ADDED[0])
    _touch(sim, RENAMED[0])
    sim.rename_column(DB, RENAMED[0], RENAMED[1], RENAMED[2])
    _touch(sim, RENAMED[0])
    sim.run_transactions(20)
    sim.flush_watermark()
    sim.run_transactions(5)  # after the watermark: must wait
    watermark = watermark_of(sim)
    assert watermark < sim.model.last_commit_ts
    sim.replay(partitions=range(sim.partitions), start=0, count=10)
    produce(bootstrap, sim.take())
    pipeline = config.pipeline(pipeline_id)
    return Lake(config, home / "pipelines.yaml", pipeline, sim, watermark, bootstrap)


def _touch(sim: TicdcSimulator, table: str) -> None:
    for _ in range(2):
        sim.commit(sim.workload.next_changes(sim.model, only=[(DB, table)]))


def run(
    command: list[str], *, armed: str | None = None, wait_s: float = 0, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run a stage process in its own process group (a failpoint then kills the JVM with it)."""
    env = {k: v for k, v in os.environ.items() if k != failpoints.ENV}
    if armed is not None:
        env[failpoints.ENV] = armed
    env[WAIT_ENV] = str(wait_s)
    return subprocess.run(
        command, env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout, start_new_session=True, check=False
    )


def start(command: list[str], logs: Path, *, wait_s: float = 0) -> subprocess.Popen[bytes]:
    """Start a stage process without waiting for it; its stdout and stderr go to ``logs``.out/.err
    (files, not pipes: a full pipe would stall a run that holds a lock)."""
    env = {k: v for k, v in os.environ.items() if k != failpoints.ENV}
    env[WAIT_ENV] = str(wait_s)
    with open(f"{logs}.out", "wb") as out, open(f"{logs}.err", "wb") as err:
        return subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=err, start_new_session=True)


def output(result: subprocess.CompletedProcess[str]) -> str:
    tail = f"--- stdout (tail)\n{result.stdout[-4000:]}\n--- stderr (tail)\n{result.stderr[-4000:]}"
    return f"exit {result.returncode}\n{tail}"
