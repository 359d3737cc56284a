"""Rebuild from the landed batches on real Spark and Kafka: one table, a renamed table, every table.

One stream (three tables, an ADD COLUMN, a RENAME TABLE) is landed and applied once. Then the
tables are damaged behind the pipeline's back (rows deleted, a stray row added) so a plain run
would not notice, and rebuilt: each rebuilt table equals the simulator's model at the watermark,
the untouched tables keep their snapshot, the ledger records the rebuild, a quarantined message
that now decodes is resolved, and a reset left without its apply (a rebuild killed half way) is
finished by a plain apply run.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, simple_json_config
from ticdc_lake.catalog import load_catalog
from ticdc_lake.spark import table_positions
from ticdc_lake.spark.apply_job import run_apply
from ticdc_lake.spark.rebuild_job import run_rebuild
from ticdc_lake.spark.rebuild_reset import reset_tables
from ticdc_lake.spark.rebuild_scope import resolve
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_sim.catalog import column
from ticdc_sim.compare import table_differences
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def _touch(sim: TicdcSimulator, database: str, table: str, transactions: int = 3) -> None:
    for _ in range(transactions):
        sim.commit(sim.workload.next_changes(sim.model, only=[(database, table)]))


def test_rebuild_one_table_a_renamed_table_and_every_table(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, pid = f"rebuild-{suffix}", f"rebuild_{suffix}"
    create_topic(kafka_bootstrap, topic, 2)
    sim = TicdcSimulator(seed=61, topic=topic, partitions=2, workload=WorkloadConfig(tables=3))
    sim.setup()
    sim.run_transactions(25)
    (db, first), (_, second), (_, third) = sorted(sim.model.tables())
    sim.add_column(db, first, column("rebuild_note", "varchar", length=16, nullable=True, default="n"))
    _touch(sim, db, first)
    moved = f"{second}_moved"
    sim.rename_table(db, second, db, moved)
    _touch(sim, db, moved)
    sim.run_transactions(10)
    sim.flush_watermark()
    marks = [sim.last_watermark(p) for p in range(2)]
    watermark = min(m for m in marks if m is not None)
    produce(kafka_bootstrap, sim.take())

    config = simple_json_config(tmp_path, lake_home, pid, topic)
    pipeline = config.pipeline(pid)
    run_stages(spark, config, pid, kafka_bootstrap, "run-1")
    catalog = load_catalog("lake", config.catalogs["lake"])
    namespace = f"{pid}_{db}"
    system = SystemTables.of(config, pipeline)

    def rows(table: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = catalog.load_table((namespace, table)).scan().to_arrow().to_pylist()
        return found

    def differences(table: str) -> list[str]:
        return table_differences(sim.expected_iceberg_rows(db, table, watermark), rows(table))

    def snapshot(table: str) -> int:
        current = catalog.load_table((namespace, table)).current_snapshot()
        assert current is not None
        return int(current.snapshot_id)

    def mine(system_table: str) -> list[dict[str, Any]]:
        found = catalog.load_table(("ticdc_system", system_table)).scan().to_arrow().to_pylist()
        return [r for r in found if r["pipeline"] == pid]

    for table in (first, moved, third):
        assert differences(table) == [], table
    assert table_positions.low_water(spark, system, pipeline) > 0

    # Damage behind the pipeline's back: a plain run does not see it (positions unchanged).
    spark.sql(f"DELETE FROM lake.{namespace}.{first} WHERE true")
    stray = spark.table(f"lake.{namespace}.{moved}").limit(1)
    stray.writeTo(f"lake.{namespace}.{moved}").append()
    assert differences(first) != []
    assert differences(moved) != []

    # A message of the third table recorded as quarantined (as if an older decoder had failed on it).
    good = spark.sql(
        f"SELECT batch_id, topic, `partition`, `offset` FROM {system.change_events} "
        f"WHERE pipeline = '{pid}' AND kind = 'DML' AND `table` = '{third}' ORDER BY `offset` LIMIT 1"
    ).first()
    spark.sql(
        f"INSERT INTO {system.quarantine} VALUES ('{pid}', '{good['batch_id']}', '{topic}', {good['partition']}, "
        f"{good['offset']}, 0, 'simple-json', 'old decoder bug', NULL, NULL, 'SKIPPED', 'skip', 'run-0', "
        f"current_timestamp(), NULL, NULL, '{db}', '{third}', NULL)"
    )
    untouched = snapshot(third)

    # One table, by its upstream name.
    one = run_rebuild(spark, config, pipeline, "rebuild-1", [f"{db}.{first}"])
    assert one.scope.names == ((db, first),)
    assert one.resolved == 1
    assert one.decode.batches == 1
    assert differences(first) == []
    assert differences(moved) != [], "a table not named must stay as it was"
    assert snapshot(third) == untouched
    (rebuilt,) = one.tables
    assert (rebuilt.status, rebuilt.rows, rebuilt.applied_ts) == ("REBUILT", len(rows(first)), watermark)
    (resolved,) = mine("quarantine")
    assert (resolved["status"], resolved["resolved_run_id"]) == ("RESOLVED", "rebuild-1")
    ledger = {(r["stage"], r["table"]): r for r in mine("run_ledger") if r["run_id"] == "rebuild-1"}
    assert {k[0] for k in ledger} == {"decode", "schema_history", "apply", "rebuild"}
    table_row, pipeline_row = ledger[("rebuild", first)], ledger[("rebuild", None)]
    assert (table_row["status"], table_row["rows_inserted"]) == ("REBUILT", len(rows(first)))
    assert table_row["watermark"] == Decimal(watermark) == pipeline_row["watermark"]
    assert pipeline_row["status"] == "OK"

    # The renamed table by its Iceberg name: its rows before the RENAME are under the old name.
    two = run_rebuild(spark, config, pipeline, "rebuild-2", [f"{namespace}.{moved}"])
    assert two.scope.names == tuple(sorted([(db, second), (db, moved)]))
    assert differences(moved) == []
    assert not catalog.table_exists((namespace, second))
    assert snapshot(third) == untouched

    # A reset whose apply never ran (a rebuild killed half way): a plain apply run finishes it.
    spark.sql(f"DELETE FROM lake.{namespace}.{third} WHERE true")
    reset_tables(spark, system, pipeline, resolve(spark, system, pipeline, [f"{db}.{third}"]))
    assert not catalog.table_exists((namespace, third))
    assert table_positions.low_water(spark, system, pipeline) == 0
    run_apply(spark, config, pipeline, "run-2")
    assert differences(third) == []

    # Every table.
    every = run_rebuild(spark, config, pipeline, "rebuild-3", "*")
    assert every.scope.everything
    assert set(every.scope.names) == {(db, first), (db, second), (db, moved), (db, third)}
    for table in (first, moved, third):
        assert differences(table) == [], table
    assert {t.status for t in every.tables} == {"REBUILT"}
    gone = next(t for t in every.tables if t.table == second)
    assert gone.rows is None  # renamed away: no table under the old name
