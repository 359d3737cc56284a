"""Apply on real Spark counts TIMESTAMP values TiCDC sends for two instants (a repeated DST hour).

A Debezium pipeline with server zone America/New_York: of the four values, 05:00Z and 05:30Z lie in
the hour 2024-11-03 01:00-02:00 EDT, which also stands for 06:00-07:00Z; 06:30Z and 12:00Z do not.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, stage_config
from ticdc_lake.catalog import load_catalog
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.encoders import encoder_for
from ticdc_sim.model import DmlOp, RowChange
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

ZONE = "America/New_York"
VALUES = [(5, 0), (5, 30), (6, 30), (12, 0)]


def test_values_in_a_repeated_hour_are_counted_and_named(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id, database = f"dst-{suffix}", f"dst_{suffix}", f"dst_{suffix}"
    config = stage_config(
        tmp_path,
        lake_home,
        {
            "id": pipeline_id,
            "protocol": "debezium",
            "kafka": {"topics": [topic]},
            "codec": {"server_time_zone": ZONE},
        },
    )
    create_topic(kafka_bootstrap, topic, 1)
    sim = TicdcSimulator(
        seed=3, topic=topic, partitions=1, server_time_zone=ZONE, encoder=encoder_for("debezium", ZONE)
    )
    columns = (ColumnSchema("id", "int", nullable=False), ColumnSchema("at", "timestamp"))
    sim.create_table(
        TableSchema(database, "clock", columns, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))
    )
    sim.commit(
        [
            RowChange(DmlOp.INSERT, database, "clock", after={"id": i, "at": datetime(2024, 11, 3, h, m, tzinfo=UTC)})
            for i, (h, m) in enumerate(VALUES)
        ]
    )
    sim.flush_watermark()
    produce(kafka_bootstrap, sim.take())

    with caplog.at_level(logging.WARNING, logger="ticdc_lake.spark.ambiguous_frame"):
        run_stages(spark, config, pipeline_id, kafka_bootstrap, "run-1")

    catalog = load_catalog("lake", config.catalogs["lake"])
    ledger = catalog.load_table(("ticdc_system", "run_ledger")).scan().to_arrow().to_pylist()
    applied = [r for r in ledger if r["pipeline"] == pipeline_id and r["stage"] == "apply" and r["table"]]
    assert [(r["status"], r["events_in"], r["ambiguous_time_values"]) for r in applied] == [("APPLIED", 4, 2)]
    assert [r.getMessage() for r in caplog.records if r.name == "ticdc_lake.spark.ambiguous_frame"] == [
        f"apply: lake.{database}.clock: 2 TIMESTAMP value(s) of column at lie in a repeated daylight-saving "
        f"interval of {ZONE} that TiCDC sends for two instants: each may be one shift off "
        "(docs/canonical-values.md, TIMESTAMP)"
    ]
