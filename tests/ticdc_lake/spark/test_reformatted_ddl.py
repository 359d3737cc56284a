"""Decode, schema history and apply on real Spark: Canal-JSON whose DDL a relay re-serialized.

A relay that re-serializes messages writes ``"isDdl": true`` (valid JSON, not TiCDC's compact
bytes). The schema pass must still find the DDL: the rows landed in the same batch bind to the
DDL's schema version and the table applies, instead of binding to a schema inferred from the rows
and holding the table ("schema versions 0 and … differ inside one apply segment").
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, topic_pipeline
from ticdc_lake.catalog import load_catalog
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_sim.compare import table_differences
from ticdc_sim.ddl_specs import AddColumnSpec
from ticdc_sim.encoders import encoder_for
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def test_canal_ddl_written_with_spaces_applies_with_the_rows_of_its_batch(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id = f"spaced-canal-{suffix}", f"spaced_canal_{suffix}"
    sim = TicdcSimulator(
        seed=23, topic=topic, partitions=1, encoder=encoder_for("canal-json"), workload=WorkloadConfig(tables=1)
    )
    sim.setup()
    sim.run_transactions(6)
    ((database, table),) = sim.model.tables()
    sim.alter_table(database, table, [AddColumnSpec(ColumnSchema("extra", "int"))])
    sim.run_transactions(6)
    sim.flush_watermark()
    sent = [
        dataclasses.replace(m, value=json.dumps(json.loads(m.value), ensure_ascii=False).encode())
        if m.kind == "DDL"
        else m
        for m in sim.take()
    ]
    assert sum(b'"isDdl": true' in m.value for m in sent) == 2  # CREATE TABLE and ALTER TABLE
    assert not any(b'"isDdl":true' in m.value for m in sent)

    home = tmp_path / "pipeline"
    home.mkdir()
    config = topic_pipeline(home, lake_home, pipeline_id, topic, "canal-json")
    create_topic(kafka_bootstrap, topic, 1)
    produce(kafka_bootstrap, sent)
    run_stages(spark, config, pipeline_id, kafka_bootstrap, "run-1")

    catalog = load_catalog("lake", config.catalogs["lake"])
    ledger = catalog.load_table(("ticdc_system", "run_ledger")).scan().to_arrow().to_pylist()
    applied = [r["status"] for r in ledger if r["pipeline"] == pipeline_id and r["stage"] == "apply" and r["table"]]
    assert applied == ["APPLIED"]
    rows = catalog.load_table((f"{pipeline_id}_{database}", table)).scan().to_arrow().to_pylist()
    assert table_differences(sim.expected_iceberg_rows(database, table), rows) == []
    assert "extra" in rows[0]
