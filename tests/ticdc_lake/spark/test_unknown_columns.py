"""Decode, schema history and apply on real Spark: rows carrying columns no schema announced.

Two pipelines on the real broker. Debezium: the Connect schema of the rows gains ``age`` while the
ALTER's message is lost. Canal-JSON (TiDB extension) with two tables that both get
``ADD COLUMN v2..v5``: for one the ALTER message is lost; the other is met after its ALTER, with a
baseline statement taken before it. Every such table is HELD before the first such row with the
reason (table, columns, position, what to do), never APPLIED without the values; what came before
is applied exactly.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, stage_config
from ticdc_lake.catalog import load_catalog
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_sim.compare import table_differences
from ticdc_sim.ddl_specs import AddColumnSpec
from ticdc_sim.encoders import encoder_for
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import OutMessage, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

V2_V5 = ["v2", "v3", "v4", "v5"]
#: A seed whose transactions after the ALTERs change both Canal-JSON tables.
SEED = 18


def _stream(
    protocol: str, topic: str, tables: int, added: list[str]
) -> tuple[TicdcSimulator, list[OutMessage], dict[str, int]]:
    """CREATE, 8 transactions, per table one ALTER adding ``added``, 8 transactions; the ALTERs' TSOs by table."""
    sim = TicdcSimulator(
        seed=SEED, topic=topic, partitions=1, encoder=encoder_for(protocol), workload=WorkloadConfig(tables=tables)
    )
    sim.setup()
    sim.run_transactions(8)
    alters = {
        table: sim.alter_table(database, table, [AddColumnSpec(ColumnSchema(name, "int")) for name in added])
        for database, table in sim.model.tables()
    }
    sim.run_transactions(8)
    sim.flush_watermark()
    return sim, sim.take(), alters


def _table_of(message: OutMessage) -> str | None:
    """The table a Canal-JSON message names (None: a watermark)."""
    table = json.loads(message.value).get("table")
    return str(table) if table else None


def _reason(protocol: str, database: str, table: str, first: tuple[int, OutMessage], columns: str, rest: str) -> str:
    offset, row = first
    return (
        f"{protocol}: row event for {database}.{table} at commit ts {row.commit_ts} (topic {row.topic} "
        f"partition 0 offset {offset}) has column(s) {columns} that schema version {rest} lacks: no DDL adding them "
        "was seen before it (a DDL this pipeline never received, or a baseline statement older than the ADD "
        "COLUMN). The row waits instead of being applied without those values, and the table is held before it: "
        "docs/schema-evolution.md, 'Columns no schema announced' says what to do"
    )


def _first_row_after(sent: list[OutMessage], commit_ts: int, table: str | None = None) -> tuple[int, OutMessage]:
    return next(
        (i, m)
        for i, m in enumerate(sent)
        if m.kind == "DML" and m.commit_ts > commit_ts and (table is None or _table_of(m) == table)
    )


def _created(commit_ts: int) -> str:
    """The ledger message's part for the CREATE TABLE applied before the hold."""
    return f"DDL CREATE at {commit_ts} (CREATE TABLE); "


def _run(
    spark: Any, lake_home: Path, kafka_bootstrap: str, home: Path, pipeline: dict[str, Any], sent: list[OutMessage]
) -> tuple[Any, dict[str, tuple[str, str]], dict[str, int]]:
    """Run the stages; the catalog, (status, message) of each table's apply row, and the version of each table."""
    home.mkdir()
    pipeline = {**pipeline, "target": {"namespace": f"{pipeline['id']}_{{database}}"}}
    config = stage_config(home, lake_home, pipeline)
    create_topic(kafka_bootstrap, pipeline["kafka"]["topics"][0], 1)
    produce(kafka_bootstrap, sent)
    run_stages(spark, config, pipeline["id"], kafka_bootstrap, "run-1")
    catalog = load_catalog("lake", config.catalogs["lake"])
    ledger = catalog.load_table(("ticdc_system", "run_ledger")).scan().to_arrow().to_pylist()
    applied = {
        r["table"]: (r["status"], r["message"])
        for r in ledger
        if r["pipeline"] == pipeline["id"] and r["stage"] == "apply" and r["table"]
    }
    history = catalog.load_table(("ticdc_system", "schema_history")).scan().to_arrow().to_pylist()
    versions = {r["table"]: int(r["schema_version"]) for r in history if r["pipeline"] == pipeline["id"]}
    return catalog, applied, versions


def test_rows_with_unannounced_columns_hold_their_table_with_the_reason(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]

    # Debezium: the ALTER's message is lost, the rows after it carry `age` in their Connect schema.
    topic, pipeline_id = f"unknown-dbz-{suffix}", f"unknown_dbz_{suffix}"
    sim, messages, alters = _stream("debezium", topic, 1, ["age"])
    ((database, table),) = sim.model.tables()
    sent = [m for m in messages if not (m.kind == "DDL" and m.commit_ts == alters[table])]
    pipeline = {"id": pipeline_id, "protocol": "debezium", "kafka": {"topics": [topic]}}
    catalog, applied, versions = _run(spark, lake_home, kafka_bootstrap, tmp_path / "dbz", pipeline, sent)
    version = versions[table]
    first = _first_row_after(sent, alters[table])
    assert applied == {
        table: (
            "HELD",
            _created(version)
            + _reason("debezium", database, table, first, "age", f"{version} (debezium-table-changes)"),
        )
    }
    rows = catalog.load_table((f"{pipeline_id}_{database}", table)).scan().to_arrow().to_pylist()
    assert table_differences(sim.expected_iceberg_rows(database, table, alters[table] - 1), rows) == []

    # Canal-JSON: `lost`'s ALTER message is lost; `late` is met after its ALTER, with an older baseline.
    topic, pipeline_id = f"unknown-canal-{suffix}", f"unknown_canal_{suffix}"
    sim, messages, alters = _stream("canal-json", topic, 2, V2_V5)
    (database, lost), (_, late) = sim.model.tables()
    create = next(m for m in messages if m.kind == "DDL" and _table_of(m) == late)
    baseline = tmp_path / "baseline" / database
    baseline.mkdir(parents=True)
    (baseline / f"{late}.sql").write_text(json.loads(create.value)["sql"])
    sent = [
        m
        for m in messages
        if not (m.kind == "DDL" and m.commit_ts == alters[lost])
        and not (_table_of(m) == late and m.commit_ts <= alters[late])
    ]
    pipeline = {
        "id": pipeline_id,
        "protocol": "canal-json",
        "kafka": {"topics": [topic]},
        "schema_baseline_uri": f"file://{baseline.parent}",
    }
    catalog, applied, versions = _run(spark, lake_home, kafka_bootstrap, tmp_path / "canal", pipeline, sent)
    version = versions[lost]
    assert late not in versions  # the baseline version is recorded with the first row bound to it: none yet
    first_lost, first_late = _first_row_after(sent, alters[lost], lost), _first_row_after(sent, alters[late], late)
    assert applied == {
        lost: (
            "HELD",
            _created(version)
            + _reason("canal-json", database, lost, first_lost, ", ".join(V2_V5), f"{version} (canal-json-ddl)"),
        ),
        late: ("HELD", _reason("canal-json", database, late, first_late, ", ".join(V2_V5), "0 (baseline)")),
    }
    rows = catalog.load_table((f"{pipeline_id}_{database}", lost)).scan().to_arrow().to_pylist()
    assert table_differences(sim.expected_iceberg_rows(database, lost, alters[lost] - 1), rows) == []
    assert not catalog.table_exists((f"{pipeline_id}_{database}", late))
