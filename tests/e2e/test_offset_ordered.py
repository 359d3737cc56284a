"""Protocol settings without commit TSO (canal-json and avro without the TiDB extension) through the
real broker and Spark: applied in per-partition offset order, every table equals the model after
each run, TiCDC's at-least-once suffix replay included, and a column added upstream (canal-json: an
ALTER sent as SQL to partition 0; avro: a new writer schema) reaches Iceberg
(docs/offset-ordered-apply.md, "Schema versions without commit TSO")."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from tests.stage_runs import run_stages, stage_config
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import LakeConfig, Policies
from ticdc_lake.identifiers import iceberg_table_name
from ticdc_sim.catalog import column
from ticdc_sim.compare import table_differences
from ticdc_sim.encoders import encoder_for
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import OperationMix, WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]

#: protocol -> TiCDC partition dispatcher: rows of one key always reach one partition.
DISPATCH = {"canal-json": "index-value", "avro": "table"}


def _differences(sim: TicdcSimulator, config: LakeConfig, pipeline_id: str) -> dict[str, Any]:
    catalog = load_catalog("lake", config.catalogs["lake"])
    target = config.pipeline(pipeline_id).target
    found: dict[str, Any] = {}
    for database, table in sim.model.tables():
        expected = sim.expected_iceberg_rows(database, table, sim.model.last_commit_ts, Policies())
        iceberg = catalog.load_table((target.namespace_for(database), iceberg_table_name(table)))
        columns = [(f.name, str(f.field_type).replace(" ", "")) for f in iceberg.schema().fields]
        # avro: the table comes from the registry's writer schema, so DECIMAL keeps its precision.
        want = sim.expected_iceberg_columns(database, table, sim.model.last_commit_ts, Policies())
        diff = table_differences(expected, iceberg.scan().to_arrow().to_pylist())
        if diff or columns != want:
            found[f"{database}.{table}"] = {"columns": (columns, want), "rows": diff[:3], "count": len(diff)}
    return found


def _held(config: LakeConfig, pipeline_id: str) -> list[tuple[str, str, str]]:
    ledger = load_catalog("lake", config.catalogs["lake"]).load_table(("ticdc_system", "run_ledger"))
    return [
        (r["table"], r["status"], r["message"])
        for r in ledger.scan().to_arrow().to_pylist()
        if r["pipeline"] == pipeline_id and r["table"] is not None and r["status"] not in ("APPLIED", "NOOP")
    ]


@pytest.mark.parametrize("protocol", sorted(DISPATCH))
def test_offset_ordered_runs_equal_the_model(
    protocol: str, spark: Any, lake_home: Path, kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id = f"offsets-{suffix}", f"offsets_{suffix}"
    config = stage_config(
        tmp_path,
        lake_home,
        {
            "id": pipeline_id,
            "protocol": protocol,
            "kafka": {"topics": [topic]},
            "codec": {"enable_tidb_extension": False},
            "target": {"namespace": f"{pipeline_id}_{{database}}"},
        },
    )
    assert config.pipeline(pipeline_id).offset_ordered
    options: dict[str, Any] = {"enable_tidb_extension": False}
    registry = None
    if protocol == "avro":
        client = SchemaRegistryClient({"url": schema_registry_url})
        options |= {
            "register": lambda subject, text: client.register_schema(subject, Schema(text, "AVRO")),
            "topic": topic,
        }
        registry = {"url": schema_registry_url}
    create_topic(kafka_bootstrap, topic, 3)
    sim = TicdcSimulator(
        seed=20261125,
        topic=topic,
        partitions=3,
        dispatch=DISPATCH[protocol],
        workload=WorkloadConfig(tables=3, databases=1, mix=OperationMix(key_update=0)),
        encoder=encoder_for(protocol, "UTC", **options),
    )
    sim.setup(create_databases=True)

    def run(number: int) -> None:
        produce(kafka_bootstrap, sim.take())
        run_stages(spark, config, pipeline_id, kafka_bootstrap, f"run-{suffix}-{number}", registry)
        assert _held(config, pipeline_id) == []
        assert _differences(sim, config, pipeline_id) == {}

    sim.run_transactions(30)
    run(1)
    sim.run_transactions(20)
    run(2)
    # TiCDC restarts from its checkpoint: the last messages of every partition are sent again, in order.
    for partition in range(sim.partitions):
        sent = len(sim.partition_log(partition))
        if sent:
            sim.replay(partitions=[partition], start=max(0, sent - 8))
    sim.run_transactions(10)
    run(3)

    # ADD COLUMN (avro: a new writer schema; canal-json: an ALTER without commit TSO to partition 0).
    database, table = sim.model.tables()[0]
    sim.add_column(database, table, column("note", "varchar", length=16, nullable=True))
    sim.run_transactions(10)
    run(4)
    catalog = load_catalog("lake", config.catalogs["lake"])
    namespace = config.pipeline(pipeline_id).target.namespace_for(database)
    assert "note" in [f.name for f in catalog.load_table((namespace, iceberg_table_name(table))).schema().fields]
