"""Decode, schema history and apply on real Spark: DML that arrives before its table's schema.

The table's CREATE and BOOTSTRAP messages are held back from the first batch, so its rows decode
as PENDING and the table waits while the others are applied; once the schema arrives in a later
batch, the first batch is decoded again and the table catches up exactly.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, stage_config
from ticdc_lake.catalog import load_catalog
from ticdc_sim.compare import table_differences
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import OutMessage, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def _announces(message: OutMessage, table: str) -> bool:
    if message.kind not in ("DDL", "BOOTSTRAP"):
        return False
    schema = json.loads(message.value).get("tableSchema") or {}
    return bool(schema.get("table") == table)


def _watermark(sim: TicdcSimulator) -> int:
    return min(m for m in (sim.last_watermark(p) for p in range(sim.partitions)) if m is not None)


def test_pending_rows_wait_for_their_schema_then_apply(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id = f"pending-{suffix}", f"pending_{suffix}"
    config = stage_config(
        tmp_path,
        lake_home,
        {
            "id": pipeline_id,
            "protocol": "simple-json",
            "kafka": {"topics": [topic]},
            "target": {"namespace": f"{pipeline_id}_{{database}}"},
        },
    )
    create_topic(kafka_bootstrap, topic, 3)
    sim = TicdcSimulator(seed=99, topic=topic, partitions=3, workload=WorkloadConfig(tables=2))
    sim.setup()
    (database, late), (_, early) = sorted(sim.model.tables(), key=lambda t: t[1] != "orders")
    sim.run_transactions(60)
    first = sim.take()
    held = [m for m in first if _announces(m, late)]
    assert held, "the workload should announce the late table"
    produce(kafka_bootstrap, [m for m in first if not _announces(m, late)])
    first_watermark = _watermark(sim)

    def run(run_id: str) -> None:
        run_stages(spark, config, pipeline_id, kafka_bootstrap, run_id)

    run("run-1")
    catalog = load_catalog("lake", config.catalogs["lake"])
    namespace = f"{pipeline_id}_{database}"
    rows = catalog.load_table((namespace, early)).scan().to_arrow().to_pylist()
    assert table_differences(sim.expected_iceberg_rows(database, early, first_watermark), rows) == []
    assert not catalog.table_exists((namespace, late))
    pending = [
        r
        for r in catalog.load_table(("ticdc_system", "decoded_batches")).scan().to_arrow().to_pylist()
        if r["pipeline"] == pipeline_id
    ]
    assert sum(r["pending"] for r in pending) > 0
    ledger = catalog.load_table(("ticdc_system", "run_ledger")).scan().to_arrow().to_pylist()
    held_rows = [r for r in ledger if r["pipeline"] == pipeline_id and r["table"] == late]
    assert [r["status"] for r in held_rows] == ["HELD"]
    assert "waits for its table schema version" in held_rows[0]["message"]

    # The schema arrives late (at-least-once redelivery of the held messages), with more changes.
    sim.run_transactions(40)
    sim.flush_watermark()
    produce(kafka_bootstrap, held + sim.take())
    run("run-2")
    second_watermark = _watermark(sim)
    for table in (early, late):
        rows = catalog.load_table((namespace, table)).scan().to_arrow().to_pylist()
        assert table_differences(sim.expected_iceberg_rows(database, table, second_watermark), rows) == [], table
    batches = [
        r
        for r in catalog.load_table(("ticdc_system", "decoded_batches")).scan().to_arrow().to_pylist()
        if r["pipeline"] == pipeline_id
    ]
    assert sum(r["pending"] for r in batches) == 0
