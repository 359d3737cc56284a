"""Isolation on real Spark and Kafka: a quarantined message holds back only its table (issue 5).

Two tables in one topic (table dispatch, 2 partitions) and one table in a second topic. A
malformed copy of a row message of table A (a bad ``schemaVersion``, after the table name) is
appended after a watermark: under ``halt`` the run succeeds, B and the second topic's table reach
the watermark, A stays at the watermark before the bad message with a HELD ledger row saying why
and what to do. Under ``skip`` the next run records the message as skipped and A catches up.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, stage_config
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import CodecOptions, LakeConfig
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_sim.compare import table_differences
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def _config(home: Path, lake_home: Path, pipeline_id: str, topics: list[str], policy: str) -> LakeConfig:
    return stage_config(
        home,
        lake_home,
        {
            "id": pipeline_id,
            "protocol": "simple-json",
            "kafka": {"topics": topics},
            "target": {"namespace": f"{pipeline_id}_{{database}}"},
            "policies": {"on_decode_error": policy},
        },
    )


def _watermark(sim: TicdcSimulator) -> int:
    marks = [sim.last_watermark(p) for p in range(sim.partitions)]
    assert all(m is not None for m in marks)
    return min(m for m in marks if m is not None)


def test_a_quarantined_message_holds_only_its_table_until_skipped(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, other_topic, pipeline_id = f"hold-{suffix}", f"hold-other-{suffix}", f"hold_{suffix}"
    create_topic(kafka_bootstrap, topic, 2)
    create_topic(kafka_bootstrap, other_topic, 1)
    sim = TicdcSimulator(seed=11, topic=topic, partitions=2, dispatch="table", workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(15)
    sim.flush_watermark()
    (database, held), (_, kept) = sorted(sim.model.tables())

    # A malformed copy of a row message of the held table: valid JSON, a bad value after the table name.
    partition, original = next(
        (p, m)
        for p in range(2)
        for m in sim.partition_log(p)
        if m.kind == "DML" and json.loads(m.value)["table"] == held
    )
    doc = json.loads(original.value)
    doc["schemaVersion"] = "not a number"
    bad_value = json.dumps(doc).encode()
    hold_at = sim.last_watermark(partition)
    assert hold_at is not None
    bad = sim.append_malformed(partition, bad_value)
    sim.run_transactions(15)
    sim.flush_watermark()
    watermark = _watermark(sim)
    assert sim.expected_iceberg_rows(database, held, hold_at) != sim.expected_iceberg_rows(database, held, watermark)

    other = TicdcSimulator(
        seed=12, topic=other_topic, partitions=1, workload=WorkloadConfig(tables=1, database_prefix="other")
    )
    other.setup()
    other.run_transactions(5)
    other.advance(60)  # the second topic's watermark passes the first's: the pipeline applies to the lower
    other.run_transactions(3)
    other.flush_watermark()
    assert _watermark(other) > watermark
    ((other_database, other_table),) = other.model.tables()

    messages = sim.take()
    offsets = produce(kafka_bootstrap, messages)
    bad_offset = next(o for m, (_, o) in zip(messages, offsets, strict=True) if m is bad)
    produce(kafka_bootstrap, other.take())
    with pytest.raises(DecodeError) as rejected:
        decoder_for("simple-json", CodecOptions()).decode(
            RawMessage(topic, partition, bad_offset, 0, None, bad_value), MemorySchemaLookup()
        )

    home = tmp_path / "pipeline"
    home.mkdir()
    config = _config(home, lake_home, pipeline_id, [topic, other_topic], "halt")
    run_stages(spark, config, pipeline_id, kafka_bootstrap, "run-1")  # succeeds: only the table is held

    catalog = load_catalog("lake", config.catalogs["lake"])

    def rows(db: str, table: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = catalog.load_table((f"{pipeline_id}_{db}", table)).scan().to_arrow().to_pylist()
        return found

    def mine(system_table: str) -> list[dict[str, Any]]:
        found = catalog.load_table(("ticdc_system", system_table)).scan().to_arrow().to_pylist()
        return [r for r in found if r["pipeline"] == pipeline_id]

    assert table_differences(sim.expected_iceberg_rows(database, kept, watermark), rows(database, kept)) == []
    assert (
        table_differences(
            other.expected_iceberg_rows(other_database, other_table, watermark),
            rows(other_database, other_table),
        )
        == []
    )
    assert table_differences(sim.expected_iceberg_rows(database, held, hold_at), rows(database, held)) == []

    (quarantined,) = mine("quarantine")
    assert (quarantined["partition"], quarantined["offset"], quarantined["status"]) == (
        partition,
        bad_offset,
        "QUARANTINED",
    )
    assert (quarantined["database"], quarantined["table"]) == (database, held)
    assert quarantined["reason"] == str(rejected.value)
    ledger = {(r["run_id"], r["stage"], r["table"]): r for r in mine("run_ledger")}
    assert ledger[("run-1", "decode", None)]["status"] == "OK"
    row = ledger[("run-1", "apply", held)]
    assert row["status"] == "HELD"
    assert row["message"].endswith(
        f"held: the message at topic {topic!r} partition {partition} offset {bad_offset} could not be decoded "
        f"({rejected.value}); table {database}.{held} is held at commit ts {hold_at}, the last watermark before it "
        "in its partition. Fix the producer and re-decode, or set policies.on_decode_error: skip for this pipeline "
        f"in {home / 'pipelines.yaml'} to record it as skipped and go on"
    )
    assert ledger[("run-1", "apply", kept)]["status"] == "APPLIED"
    assert ledger[("run-1", "apply", None)]["status"] == "OK"

    # Under skip the message is recorded as skipped and the held table catches up.
    config = _config(home, lake_home, pipeline_id, [topic, other_topic], "skip")
    run_stages(spark, config, pipeline_id, kafka_bootstrap, "run-2")
    (skipped,) = mine("quarantine")
    assert (skipped["status"], skipped["policy"], skipped["resolved_run_id"]) == ("SKIPPED", "skip", "run-2")
    assert table_differences(sim.expected_iceberg_rows(database, held, watermark), rows(database, held)) == []
    assert {r["status"] for r in mine("run_ledger") if r["run_id"] == "run-2" and r["table"] == held} == {"APPLIED"}


def test_ensure_adds_the_location_columns_to_a_quarantine_table_created_before(spark: Any) -> None:
    namespace = f"old_{uuid.uuid4().hex[:8]}"
    tables = SystemTables("lake", namespace)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{namespace}")
    spark.sql(f"CREATE TABLE {tables.quarantine} (pipeline STRING NOT NULL, reason STRING) USING iceberg")
    tables.ensure(spark)
    tables.ensure(spark)  # idempotent
    assert spark.table(tables.quarantine).columns == ["pipeline", "reason", "database", "table", "commit_ts"]
