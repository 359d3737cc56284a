"""Decode on real Spark: rows whose schema never arrives end in the quarantine, not in a wait forever."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import load_config
from ticdc_lake.landing.lander import land
from ticdc_lake.spark.apply_job import run_apply
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.schema_history_job import run_schema_history
from ticdc_lake.tso import physical_ms
from ticdc_sim.compare import table_differences
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import OutMessage, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

TIMEOUT_S = 1


def _announces(message: OutMessage, table: str) -> bool:
    if message.kind not in ("DDL", "BOOTSTRAP"):
        return False
    return bool((json.loads(message.value).get("tableSchema") or {}).get("table") == table)


def _write_config(path: Path, lake_home: Path, pipeline_id: str, topic: str, policy: str) -> None:
    pipeline = {
        "id": pipeline_id,
        "protocol": "simple-json",
        "kafka": {"topics": [topic]},
        "landing_uri": f"file://{path.parent}/landing",
        "catalog": "lake",
        "target": {"namespace": f"{pipeline_id}_{{database}}"},
        "policies": {"on_decode_error": policy, "pending_schema_timeout_s": TIMEOUT_S},
    }
    catalogs = {
        "lake": {"uri": f"jdbc:sqlite:{lake_home}/catalog/lake.db", "warehouse": f"file://{lake_home}/warehouse"}
    }
    path.write_text(yaml.safe_dump({"catalogs": catalogs, "pipelines": [pipeline]}))


def test_rows_whose_schema_never_arrives_are_quarantined_then_skipped(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id = f"expiry-{suffix}", f"expiry_{suffix}"
    config_file = tmp_path / "pipelines.yaml"
    _write_config(config_file, lake_home, pipeline_id, topic, "halt")
    create_topic(kafka_bootstrap, topic, 2)
    sim = TicdcSimulator(seed=7, topic=topic, partitions=2, workload=WorkloadConfig(tables=2))
    sim.setup()
    (database, lost), (_, kept) = sorted(sim.model.tables(), key=lambda t: t[1] != "orders")
    sim.run_transactions(80)
    sim.flush_watermark()
    messages = sim.take()
    produce(kafka_bootstrap, [m for m in messages if not _announces(m, lost)])

    # Expected: each row of the lost table that its partition's watermark passed by the timeout.
    expected = set()
    for partition in range(sim.partitions):
        mark = sim.last_watermark(partition)
        assert mark is not None
        sent = [m for m in sim.partition_log(partition) if not _announces(m, lost)]
        for offset, message in enumerate(sent):
            waited_ms = physical_ms(mark) - physical_ms(message.commit_ts)
            if message.kind == "DML" and json.loads(message.value)["table"] == lost and waited_ms >= TIMEOUT_S * 1000:
                expected.add((partition, offset))
    assert expected, "the workload should leave rows of the lost table far behind the watermark"

    config = load_config(config_file)
    pipeline = config.pipeline(pipeline_id)
    land(pipeline, {"bootstrap.servers": kafka_bootstrap}, "run-1", None)
    # Under halt the stage succeeds (apply holds the lost table) and its ledger row names the messages.
    summary = run_decode(spark, config, pipeline, "run-1")
    assert summary.quarantined == len(expected)
    catalog = load_catalog("lake", config.catalogs["lake"])
    (decoded,) = [
        r
        for r in catalog.load_table(("ticdc_system", "run_ledger")).scan().to_arrow().to_pylist()
        if r["pipeline"] == pipeline_id and r["stage"] == "decode"
    ]
    assert decoded["status"] == "OK"
    assert f"pipeline {pipeline_id!r}: {len(expected)} message(s) could not be decoded" in decoded["message"]
    assert "still waits for schema version" in decoded["message"]

    quarantine = [
        r
        for r in catalog.load_table(("ticdc_system", "quarantine")).scan().to_arrow().to_pylist()
        if r["pipeline"] == pipeline_id
    ]
    assert {(r["partition"], r["offset"]) for r in quarantine} == expected
    assert {r["status"] for r in quarantine} == {"QUARANTINED"}
    assert all(r["raw_value"] and json.loads(r["raw_value"])["table"] == lost for r in quarantine)
    assert all(f"(policies.pending_schema_timeout_s = {TIMEOUT_S})" in r["reason"] for r in quarantine)
    assert {(r["database"], r["table"]) for r in quarantine} == {(database, lost)}
    events = [
        r
        for r in catalog.load_table(("ticdc_system", "change_events")).scan().to_arrow().to_pylist()
        if r["pipeline"] == pipeline_id
    ]
    left = {(r["partition"], r["offset"]) for r in events if r["status"] == "PENDING"}
    assert not left & expected

    # Under skip the quarantined rows are recorded as skipped and the other table is applied.
    _write_config(config_file, lake_home, pipeline_id, topic, "skip")
    config = load_config(config_file)
    pipeline = config.pipeline(pipeline_id)
    run_decode(spark, config, pipeline, "run-2")
    run_schema_history(spark, config, pipeline, "run-2")
    run_apply(spark, config, pipeline, "run-2")
    statuses = {
        r["status"]
        for r in catalog.load_table(("ticdc_system", "quarantine")).scan().to_arrow().to_pylist()
        if r["pipeline"] == pipeline_id
    }
    assert statuses == {"SKIPPED"}
    watermark = min(m for m in (sim.last_watermark(p) for p in range(sim.partitions)) if m is not None)
    rows = catalog.load_table((f"{pipeline_id}_{database}", kept)).scan().to_arrow().to_pylist()
    assert table_differences(sim.expected_iceberg_rows(database, kept, watermark), rows) == []
