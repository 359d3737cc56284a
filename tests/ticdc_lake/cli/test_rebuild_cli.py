"""``ticdc-lake rebuild`` in-process (Spark in the CLI's process: here the test session)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, simple_json_config
from ticdc_lake.catalog import load_catalog
from ticdc_lake.cli.main import main
from ticdc_sim.compare import table_differences
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def test_rebuild_command_restores_a_damaged_table_and_refuses_an_unknown_name(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, pid = f"rebuild-cli-{suffix}", f"rebuild_cli_{suffix}"
    create_topic(kafka_bootstrap, topic, 1)
    sim = TicdcSimulator(seed=62, topic=topic, partitions=1, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(15)
    watermark = sim.flush_watermark()
    produce(kafka_bootstrap, sim.take())
    config = simple_json_config(tmp_path, lake_home, pid, topic)
    run_stages(spark, config, pid, kafka_bootstrap, "run-1")
    (db, damaged), (_, other) = sorted(sim.model.tables())
    namespace = f"{pid}_{db}"
    spark.sql(f"DELETE FROM lake.{namespace}.{damaged} WHERE true")
    catalog = load_catalog("lake", config.catalogs["lake"])
    before = catalog.load_table((namespace, other)).current_snapshot()
    capsys.readouterr()

    argv = ["--config", str(config.source_path), "rebuild", "--pipeline", pid, "--table", f"{db}.{damaged}"]
    assert main([*argv, "--run-id", "cli-rebuild"]) == 0
    out = capsys.readouterr().out
    expected = sim.expected_iceberg_rows(db, damaged, watermark)
    assert f"pipeline {pid}: rebuild cli-rebuild, watermark {watermark}: {db}.{damaged}" in out
    assert f"{db}.{damaged}".ljust(40) + f" REBUILT  rows {len(expected)}  applied_ts {watermark}" in out
    rows = catalog.load_table((namespace, damaged)).scan().to_arrow().to_pylist()
    assert table_differences(expected, rows) == []
    after = catalog.load_table((namespace, other)).current_snapshot()
    assert before is not None
    assert after is not None
    assert after.snapshot_id == before.snapshot_id

    assert main([*argv[:-1], "shop.missing"]) == 2
    assert f"error: pipeline {pid!r}: no table 'shop.missing'" in capsys.readouterr().err
