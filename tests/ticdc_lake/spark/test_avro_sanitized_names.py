"""Decode, schema history and apply on real Spark: avro rows of tables and columns whose names
TiCDC's avro encoder sanitizes land in the one Iceberg table their DDL names.

The simulator's avro encoder writes the Avro record, namespace and field names as TiCDC does
(``we ird`` → ``we_ird``, ``1st-col`` → ``_1st_col``, ``数据`` → ``__``) and its DDL messages
(``avro-enable-watermark``) with the upstream names, through the real schema registry and broker.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, topic_pipeline
from ticdc_lake.catalog import load_catalog
from ticdc_lake.identifiers import iceberg_namespace_name
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.compare import table_differences
from ticdc_sim.encoders import encoder_for
from ticdc_sim.model import DmlOp, RowChange
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

DATABASE = "shop db"
WEIRD, DATA = "we ird", "1st-数据"


def _key(*columns: ColumnSchema) -> tuple[IndexSchema, ...]:
    return (IndexSchema("PRIMARY", (columns[0].name,), primary=True, unique=True),)


def test_sanitized_avro_names_apply_to_the_upstream_table(
    spark: Any, lake_home: Path, kafka_bootstrap: str, schema_registry_url: str, tmp_path: Path
) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    client = SchemaRegistryClient({"url": schema_registry_url})
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id = f"avro-names-{suffix}", f"avro_names_{suffix}"
    encoder = encoder_for(
        "avro", "UTC", register=lambda subject, text: client.register_schema(subject, Schema(text, "AVRO")), topic=topic
    )
    sim = TicdcSimulator(seed=29, topic=topic, partitions=1, encoder=encoder)
    weird_cols = (
        ColumnSchema("id", "int", nullable=False),
        ColumnSchema("first name", "varchar", length=20),
        ColumnSchema("1st-col", "int"),
    )
    data_cols = (ColumnSchema("编号", "int", nullable=False), ColumnSchema("值", "varchar", length=20))
    sim.create_database(DATABASE)
    sim.create_table(TableSchema(DATABASE, WEIRD, weird_cols, _key(*weird_cols)))
    sim.create_table(TableSchema(DATABASE, DATA, data_cols, _key(*data_cols)))
    sim.commit(
        [
            RowChange(DmlOp.INSERT, DATABASE, WEIRD, None, {"id": 1, "first name": "a", "1st-col": 10}),
            RowChange(DmlOp.INSERT, DATABASE, WEIRD, None, {"id": 2, "first name": "b", "1st-col": 20}),
            RowChange(DmlOp.INSERT, DATABASE, DATA, None, {"编号": 1, "值": "一"}),
        ]
    )
    sim.add_column(DATABASE, WEIRD, ColumnSchema("new col", "int"))
    sim.commit(
        [
            RowChange(
                DmlOp.UPDATE,
                DATABASE,
                WEIRD,
                {"id": 1, "first name": "a", "1st-col": 10, "new col": None},
                {"id": 1, "first name": "a2", "1st-col": 11, "new col": 7},
            ),
            RowChange(DmlOp.INSERT, DATABASE, DATA, None, {"编号": 2, "值": "二"}),
        ]
    )
    sim.flush_watermark()
    sent = sim.take()

    home = tmp_path / "pipeline"
    home.mkdir()
    config = topic_pipeline(home, lake_home, pipeline_id, topic, "avro")
    create_topic(kafka_bootstrap, topic, 1)
    produce(kafka_bootstrap, sent)
    run_stages(spark, config, pipeline_id, kafka_bootstrap, "run-1", registry={"url": schema_registry_url})

    catalog = load_catalog("lake", config.catalogs["lake"])
    namespace = iceberg_namespace_name(f"{pipeline_id}_{DATABASE}")
    assert sorted(name for _, name in catalog.list_tables(namespace)) == sorted([WEIRD, DATA])
    assert [n for n in catalog.list_namespaces() if n[0].startswith(pipeline_id)] == [(namespace,)]
    for table in (WEIRD, DATA):
        rows = catalog.load_table((namespace, table)).scan().to_arrow().to_pylist()
        assert table_differences(sim.expected_iceberg_rows(DATABASE, table), rows) == [], table
    ledger = catalog.load_table(("ticdc_system", "run_ledger")).scan().to_arrow().to_pylist()
    mine = [r for r in ledger if r["pipeline"] == pipeline_id and r["stage"] == "apply" and r["table"]]
    assert sorted((r["table"], r["status"]) for r in mine) == [(DATA, "APPLIED"), (WEIRD, "APPLIED")]
