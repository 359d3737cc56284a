"""TiCDC's topic-per-table dispatch: topics found by pattern, one watermark for all, a dropped
table's topic (which TiCDC stops sending watermarks to) does not stop the pipeline."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, stage_config
from ticdc_lake.catalog import load_catalog
from ticdc_sim.compare import table_differences
from ticdc_sim.encoders import encoder_for
from ticdc_sim.producer import produce_all
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]


def test_topic_per_table_with_a_dropped_table(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    prefix, pipeline_id = f"tpt-{suffix}", f"tpt_{suffix}"
    sim = TicdcSimulator(
        seed=11,
        topic=prefix,
        partitions=2,
        topic_dispatch="table",
        watermark_topics="active",
        workload=WorkloadConfig(tables=3),
        encoder=encoder_for("simple-json", "UTC"),
    )
    sim.setup()
    sim.run_transactions(40)
    doomed = sim.model.tables()[0]
    sim.drop_table(*doomed)
    sim.run_transactions(40)
    sim.flush_watermark()
    watermark = sim.checkpoint_ts
    produce_all(kafka_bootstrap, sim.take(), 2)
    assert len(sim.topics) == 4  # the default topic and one per table

    pipeline = {
        "id": pipeline_id,
        "protocol": "simple-json",
        "kafka": {"topics": [prefix], "topic_pattern": re.escape(prefix) + "_.*"},
        "target": {"namespace": f"{pipeline_id}_{{database}}"},
    }
    config = stage_config(tmp_path, lake_home, pipeline)
    run_stages(spark, config, pipeline_id, kafka_bootstrap, "run-1")

    catalog = load_catalog("lake", config.catalogs["lake"])
    ledger = [
        r
        for r in catalog.load_table(("ticdc_system", "run_ledger")).scan().to_arrow().to_pylist()
        if r["pipeline"] == pipeline_id and r["stage"] == "apply" and r["table"] is None and r["database"] is None
    ]
    assert [int(r["watermark"]) for r in ledger] == [watermark]
    target = config.pipeline(pipeline_id).target
    for database, table in sim.model.tables():
        rows = catalog.load_table((target.namespace_for(database), table)).scan().to_arrow().to_pylist()
        assert table_differences(sim.expected_iceberg_rows(database, table, watermark), rows) == [], table
    dropped = catalog.load_table((target.namespace_for(doomed[0]), doomed[1]))
    assert "ticdc.dropped-at" in dropped.properties
