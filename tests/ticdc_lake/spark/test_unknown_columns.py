"""Decode, schema history and apply on real Spark: rows carrying columns no schema announced.

Three streams whose rows have a column the schema they bind to lacks, each with its own pipeline
on the real broker: Debezium whose Connect schema gains ``age`` with its DDL message lost,
Canal-JSON (TiDB extension) whose ``ADD COLUMN v2..v5`` was lost, and Canal-JSON that starts after
that ADD COLUMN with a baseline statement taken before it. In each, the table is HELD before the
first such row with the reason (table, columns, position, what to do), never APPLIED without the
values; what came before is applied exactly.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, stage_config
from ticdc_lake.catalog import load_catalog
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.simulator.compare import table_differences
from ticdc_lake.simulator.ddl_specs import AddColumnSpec
from ticdc_lake.simulator.encoders import encoder_for
from ticdc_lake.simulator.producer import create_topic, produce
from ticdc_lake.simulator.simulator import OutMessage, TicdcSimulator
from ticdc_lake.simulator.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def _stream(protocol: str, topic: str, added: list[str]) -> tuple[TicdcSimulator, list[OutMessage], int]:
    """One table: CREATE, 8 transactions, one ALTER adding ``added``, 8 transactions."""
    sim = TicdcSimulator(
        seed=17, topic=topic, partitions=1, encoder=encoder_for(protocol), workload=WorkloadConfig(tables=1)
    )
    sim.setup()
    sim.run_transactions(8)
    ((database, table),) = sim.model.tables()
    alter_ts = sim.alter_table(database, table, [AddColumnSpec(ColumnSchema(name, "int")) for name in added])
    sim.run_transactions(8)
    sim.flush_watermark()
    return sim, sim.take(), alter_ts


def _reason(protocol: str, sim: TicdcSimulator, sent: list[OutMessage], alter_ts: int, columns: str, rest: str) -> str:
    ((database, table),) = sim.model.tables()
    offset, first = next((i, m) for i, m in enumerate(sent) if m.kind == "DML" and m.commit_ts > alter_ts)
    return (
        f"{protocol}: row event for {database}.{table} at commit ts {first.commit_ts} (topic {first.topic} "
        f"partition 0 offset {offset}) has column(s) {columns} that schema version {rest} lacks: no DDL adding them "
        "was seen before it (a DDL this pipeline never received, or a baseline statement older than the ADD "
        "COLUMN). The row waits instead of being applied without those values, and the table is held before it: "
        "docs/schema-evolution.md, 'Columns no schema announced' says what to do"
    )


def _run(
    spark: Any, lake_home: Path, kafka_bootstrap: str, home: Path, pipeline: dict[str, Any], sent: list[OutMessage]
) -> tuple[Any, list[dict[str, Any]]]:
    home.mkdir()
    config = stage_config(home, lake_home, pipeline)
    create_topic(kafka_bootstrap, pipeline["kafka"]["topics"][0], 1)
    produce(kafka_bootstrap, sent)
    run_stages(spark, config, pipeline["id"], kafka_bootstrap, "run-1")
    catalog = load_catalog("lake", config.catalogs["lake"])
    ledger = catalog.load_table(("ticdc_system", "run_ledger")).scan().to_arrow().to_pylist()
    return catalog, [r for r in ledger if r["pipeline"] == pipeline["id"] and r["stage"] == "apply" and r["table"]]


def _created(commit_ts: int) -> str:
    """The ledger message's part for the CREATE TABLE applied before the hold."""
    return f"DDL CREATE at {commit_ts} (CREATE TABLE); "


def _namespace(pipeline_id: str) -> dict[str, str]:
    return {"namespace": f"{pipeline_id}_{{database}}"}


def _history_source(catalog: Any, pipeline_id: str) -> tuple[int, str]:
    rows = catalog.load_table(("ticdc_system", "schema_history")).scan().to_arrow().to_pylist()
    ((version, source),) = [(int(r["schema_version"]), r["source"]) for r in rows if r["pipeline"] == pipeline_id]
    return version, source


def test_rows_with_unannounced_columns_hold_their_table_with_the_reason(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]

    # Debezium: the ALTER's message is lost, the rows after it carry `age` in their Connect schema.
    topic = f"unknown-dbz-{suffix}"
    sim, messages, alter_ts = _stream("debezium", topic, ["age"])
    sent = [m for m in messages if not (m.kind == "DDL" and m.commit_ts == alter_ts)]
    pipeline_id = f"unknown_dbz_{suffix}"
    catalog, ledger = _run(
        spark,
        lake_home,
        kafka_bootstrap,
        tmp_path / "dbz",
        {"id": pipeline_id, "protocol": "debezium", "kafka": {"topics": [topic]}, "target": _namespace(pipeline_id)},
        sent,
    )
    ((database, table),) = sim.model.tables()
    version, source = _history_source(catalog, pipeline_id)
    assert [(r["status"], r["message"]) for r in ledger] == [
        ("HELD", _created(version) + _reason("debezium", sim, sent, alter_ts, "age", f"{version} ({source})"))
    ]
    rows = catalog.load_table((f"{pipeline_id}_{database}", table)).scan().to_arrow().to_pylist()
    assert table_differences(sim.expected_iceberg_rows(database, table, alter_ts - 1), rows) == []

    # Canal-JSON with the TiDB extension: `ADD COLUMN v2..v5` is lost.
    topic = f"unknown-canal-{suffix}"
    sim, messages, alter_ts = _stream("canal-json", topic, ["v2", "v3", "v4", "v5"])
    sent = [m for m in messages if not (m.kind == "DDL" and m.commit_ts == alter_ts)]
    pipeline_id = f"unknown_canal_{suffix}"
    catalog, ledger = _run(
        spark,
        lake_home,
        kafka_bootstrap,
        tmp_path / "canal",
        {"id": pipeline_id, "protocol": "canal-json", "kafka": {"topics": [topic]}, "target": _namespace(pipeline_id)},
        sent,
    )
    ((database, table),) = sim.model.tables()
    version, source = _history_source(catalog, pipeline_id)
    assert source == "canal-json-ddl"
    assert [(r["status"], r["message"]) for r in ledger] == [
        (
            "HELD",
            _created(version) + _reason("canal-json", sim, sent, alter_ts, "v2, v3, v4, v5", f"{version} ({source})"),
        )
    ]
    rows = catalog.load_table((f"{pipeline_id}_{database}", table)).scan().to_arrow().to_pylist()
    assert table_differences(sim.expected_iceberg_rows(database, table, alter_ts - 1), rows) == []

    # The same Canal-JSON stream read from after the ADD COLUMN, with a baseline taken before it.
    create = next(m for m in messages if m.kind == "DDL")
    baseline = tmp_path / "baseline" / database
    baseline.mkdir(parents=True)
    (baseline / f"{table}.sql").write_text(json.loads(create.value)["sql"])
    topic = f"unknown-base-{suffix}"
    sent = [dataclasses.replace(m, topic=topic) for m in messages if m.commit_ts > alter_ts]
    pipeline_id = f"unknown_base_{suffix}"
    catalog, ledger = _run(
        spark,
        lake_home,
        kafka_bootstrap,
        tmp_path / "base",
        {
            "id": pipeline_id,
            "protocol": "canal-json",
            "kafka": {"topics": [topic]},
            "schema_baseline_uri": f"file://{baseline.parent}",
            "target": _namespace(pipeline_id),
        },
        sent,
    )
    assert [(r["status"], r["message"]) for r in ledger] == [
        ("HELD", _reason("canal-json", sim, sent, alter_ts, "v2, v3, v4, v5", "0 (baseline)"))
    ]
    assert not catalog.table_exists((f"{pipeline_id}_{database}", table))
