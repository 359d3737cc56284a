"""Tables first met in the middle of a stream, through the real broker and Spark.

The consumer starts after the tables were created: the stream holds their rows, updates and
deletes but none of their CREATE TABLE events. With a baseline folder of ``SHOW CREATE TABLE``
statements the Iceberg tables equal the model exactly; without one, the rows' own types are used
and the facts they lack are kept as the protocol sent them: DECIMAL precision (a string column with
the exact text) and ENUM/SET members (the numbers), recorded in schema history
(docs/schema-history.md, "Tables met mid-stream").
"""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import run_stages, stage_config
from ticdc_lake.catalog import load_catalog
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.compare import table_differences
from ticdc_sim.ddl_sql import create_table_sql
from ticdc_sim.encoders import encoder_for
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]


def _as_sent(schema: TableSchema, row: dict[str, Any]) -> dict[str, Any]:
    """A model row as it reads without the facts the rows lack: decimals as their text, ENUM/SET
    as the index / bitmask the protocol sends (written from the protocol documents, not the decoders)."""
    result = dict(row)
    for column in schema.columns:
        value = row.get(column.name)
        if value is None:
            continue
        if column.mysql_type == "decimal":
            assert isinstance(value, Decimal)
            result[column.name] = str(value)
        elif column.mysql_type == "enum":
            assert column.elements is not None
            result[column.name] = str(column.elements.index(value) + 1)
        elif column.mysql_type == "set":
            assert column.elements is not None
            names = value.split(",") if value else []
            result[column.name] = str(sum(1 << column.elements.index(n) for n in names))
    return result


@pytest.mark.parametrize(("protocol", "baseline"), [("canal-json", True), ("open", False)])
def test_tables_met_mid_stream(
    spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path: Path, protocol: str, baseline: bool
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id = f"midstream-{suffix}", f"midstream_{suffix}"
    create_topic(kafka_bootstrap, topic, 3)
    sim = TicdcSimulator(
        seed=7, topic=topic, partitions=3, workload=WorkloadConfig(tables=4), encoder=encoder_for(protocol, "UTC")
    )
    sim.setup()
    created = sim.take()
    sim.run_transactions(120)
    sim.flush_watermark()
    watermark = sim.checkpoint_ts
    produce(kafka_bootstrap, sim.take())  # everything after the CREATE TABLE events
    assert "DDL" in {m.kind for m in created}
    assert "DML" not in {m.kind for m in created}

    pipeline: dict[str, Any] = {
        "id": pipeline_id,
        "protocol": protocol,
        "kafka": {"topics": [topic]},
        "target": {"namespace": f"{pipeline_id}_{{database}}"},
    }
    if baseline:
        for database, table in sim.model.tables():
            folder = tmp_path / "baseline" / database
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{table}.sql").write_text(create_table_sql(sim.model.schema(database, table)) + ";\n")
        pipeline["schema_baseline_uri"] = str(tmp_path / "baseline")
    config = stage_config(tmp_path, lake_home, pipeline)
    run_stages(spark, config, pipeline_id, kafka_bootstrap, "run-1")

    catalog = load_catalog("lake", config.catalogs["lake"])
    target = config.pipeline(pipeline_id).target
    history = [
        r
        for r in catalog.load_table(("ticdc_system", "schema_history")).scan().to_arrow().to_pylist()
        if r["pipeline"] == pipeline_id
    ]
    assert sorted((r["database"], r["table"]) for r in history) == sim.model.tables()
    assert {(r["schema_version"], r["source"]) for r in history} == {
        (Decimal(0), "baseline" if baseline else "inferred-from-rows")
    }
    for database, table in sim.model.tables():
        schema = sim.model.schema(database, table)
        iceberg = catalog.load_table((target.namespace_for(database), table))
        expected = sim.expected_iceberg_rows(database, table, watermark)
        recorded = json.loads(next(r for r in history if r["table"] == table)["table_schema"])
        missing = recorded["extra"].get("missing_facts", [])
        if baseline:
            assert missing == []
        else:
            # What the rows cannot say is recorded, column by column.
            lacking = [c.name for c in schema.columns if c.mysql_type in ("decimal", "enum", "set")]
            assert all(any(repr(name) in fact for fact in missing) for name in lacking), missing
            expected = [_as_sent(schema, row) for row in expected]
            types = {f.name: str(f.field_type) for f in iceberg.schema().fields}
            assert all(types[name] == "string" for name in lacking), types
        rows = iceberg.scan().to_arrow().to_pylist()
        assert table_differences(expected, rows) == [], f"{database}.{table}"
