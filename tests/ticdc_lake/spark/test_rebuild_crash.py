"""A rebuild killed half way (SIGKILL right after the reset) and started again converges to the model.

The killed run is ``spark_jobs/transform.py --rebuild`` in its own process (and JVM); its stage
lease is left behind and taken over by the second rebuild, which runs in this process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, simple_json_config
from ticdc_lake import failpoints
from ticdc_lake.catalog import load_catalog
from ticdc_lake.spark.rebuild_job import run_rebuild
from ticdc_lake.stage_lock import WAIT_ENV
from ticdc_sim.compare import table_differences
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

REPO = Path(__file__).resolve().parents[3]


def test_a_rebuild_killed_after_its_reset_converges_when_started_again(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, pid = f"rebuild-crash-{suffix}", f"rebuild_crash_{suffix}"
    create_topic(kafka_bootstrap, topic, 1)
    sim = TicdcSimulator(seed=64, topic=topic, partitions=1, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(12)
    watermark = sim.flush_watermark()
    produce(kafka_bootstrap, sim.take())
    config = simple_json_config(tmp_path, lake_home, pid, topic)
    pipeline = config.pipeline(pid)
    run_stages(spark, config, pid, kafka_bootstrap, "run-1")
    (db, table), _ = sorted(sim.model.tables())
    namespace = f"{pid}_{db}"
    spark.sql(f"DELETE FROM lake.{namespace}.{table} WHERE true")

    env = {k: v for k, v in os.environ.items() if k != failpoints.ENV}
    env.update({failpoints.ENV: "rebuild.after_reset", WAIT_ENV: "0"})
    command = [sys.executable, str(REPO / "spark_jobs" / "transform.py"), "--config", str(config.source_path)]
    command += ["--pipeline", pid, "--run-id", "rebuild-killed", "--rebuild", json.dumps([f"{db}.{table}"])]
    killed = subprocess.run(
        command, env=env, cwd=REPO, capture_output=True, text=True, timeout=900, start_new_session=True, check=False
    )
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:] + killed.stderr[-3000:]
    assert "ticdc-lake failpoint rebuild.after_reset" in killed.stderr
    catalog = load_catalog("lake", config.catalogs["lake"])
    assert not catalog.table_exists((namespace, table))
    assert (tmp_path / "pipeline" / "landing" / pid / "locks" / "apply").exists(), (
        "the killed run's lease is left behind"
    )

    again = run_rebuild(spark, config, pipeline, "rebuild-again", [f"{db}.{table}"])
    assert [(t.table, t.status) for t in again.tables] == [(table, "REBUILT")]
    rows = catalog.load_table((namespace, table)).scan().to_arrow().to_pylist()
    assert table_differences(sim.expected_iceberg_rows(db, table, watermark), rows) == []
    ledger = catalog.load_table(("ticdc_system", "run_ledger")).scan().to_arrow().to_pylist()
    rebuilds = {r["run_id"] for r in ledger if r["pipeline"] == pid and r["stage"] == "rebuild"}
    assert rebuilds == {"rebuild-again"}  # the killed run wrote no rebuild row
