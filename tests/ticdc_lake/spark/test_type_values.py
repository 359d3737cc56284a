"""Every MySQL/TiDB type through the real stages, proven against literal Iceberg types and values.

One wide table (one column per type and variant) with six rows - minimums, maximums, zeros, all
NULL, edge values, MySQL zero dates - is encoded by the simulator's Simple JSON encoder, produced
to the real broker, landed, decoded, recorded in schema history and applied, once for the whole
module. Each column's test then checks the Iceberg type pyiceberg reports and the values it reads
against expectations written out by hand here (docs/type-mapping.md), never
computed by the product's conversion code (``type_cases.py``); the simulator's independent oracle is checked against
the same literals. Values Iceberg cannot hold (bit(64) from 2**63, zero dates) must be NULL and
counted in the run ledger.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.types import (
    IntegerType,
)

from tests.stage_runs import run_stages, stage_config
from tests.ticdc_lake.spark.type_cases import (
    CASES,
    EXPECTED_UNREPRESENTABLE,
    NULL_ROW,
    ROW_IDS,
    SERVER_ZONE,
    TABLE,
    ZeroDateEncoder,
    wide_rows,
    wide_schema,
)
from ticdc_lake.catalog import load_catalog
from ticdc_sim.column_types import normalize_value
from ticdc_sim.expected import expected_iceberg_value
from ticdc_sim.model import DmlOp, RowChange
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


@dataclass(frozen=True)
class Applied:
    rows: dict[int, dict[str, Any]]
    fields: dict[str, Any]
    unrepresentable: list[int | None]


@pytest.fixture(scope="module")
def applied(spark: Any, lake_home: Path, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Applied:
    tmp_path = tmp_path_factory.mktemp("type-values")
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id, database = f"types-{suffix}", f"types_{suffix}", f"types_{suffix}"
    config = stage_config(
        tmp_path,
        lake_home,
        {
            "id": pipeline_id,
            "protocol": "simple-json",
            "kafka": {"topics": [topic]},
            "codec": {"server_time_zone": SERVER_ZONE},
        },
    )
    create_topic(kafka_bootstrap, topic, 2)
    sim = TicdcSimulator(
        seed=4, topic=topic, partitions=2, server_time_zone=SERVER_ZONE, encoder=ZeroDateEncoder(SERVER_ZONE)
    )
    with localcontext() as context:
        context.prec = 100  # DECIMAL(65,30) has 65 digits; Python's default context keeps 28
        sim.create_table(wide_schema(database))
        rows = wide_rows()
        sim.commit([RowChange(DmlOp.INSERT, database, TABLE, after=row) for row in rows[:3]])
        sim.commit([RowChange(DmlOp.INSERT, database, TABLE, after=row) for row in rows[3:]])
    sim.flush_watermark()
    produce(kafka_bootstrap, sim.take())

    run_stages(spark, config, pipeline_id, kafka_bootstrap, "run-1")

    catalog = load_catalog("lake", config.catalogs["lake"])
    table = catalog.load_table((database, TABLE))
    read = {row["id"]: row for row in table.scan().to_arrow().to_pylist()}
    fields = {f.name: f for f in table.schema().fields}
    ledger = catalog.load_table(("ticdc_system", "run_ledger")).scan().to_arrow().to_pylist()
    counts = [
        r["unrepresentable_values"]
        for r in ledger
        if r["pipeline"] == pipeline_id and r["stage"] == "apply" and r["table"] == TABLE
    ]
    return Applied(read, fields, counts)


def _same(actual: Any, expected: Any) -> bool:
    """Equal, with the same Python type; floats bit for bit (-0.0 is not 0.0), decimals with their scale."""
    if type(actual) is not type(expected):
        return False
    if isinstance(expected, float):
        return struct.pack("<d", actual) == struct.pack("<d", expected)
    if isinstance(expected, Decimal):
        return bool(actual.as_tuple() == expected.as_tuple())
    if isinstance(expected, datetime):
        # Naive stays naive; an aware value must be in UTC (pyarrow gives ZoneInfo("UTC")).
        return bool(actual == expected and actual.utcoffset() == expected.utcoffset())
    return bool(actual == expected)


def test_the_table_holds_exactly_the_six_rows(applied: Applied) -> None:
    assert sorted(applied.rows) == [1, 2, 3, 4, 5, 6]
    assert list(applied.fields) == ["id", *CASES]
    assert applied.fields["id"].required
    assert applied.fields["id"].field_type == IntegerType()


@pytest.mark.parametrize("name", list(CASES))
def test_iceberg_type_and_values(applied: Applied, name: str) -> None:
    case = CASES[name]
    field = applied.fields[name]
    assert field.field_type == case.iceberg
    assert not field.required
    assert applied.rows[NULL_ROW][name] is None
    for row_id, expected in zip(ROW_IDS, case.expected, strict=True):
        actual = applied.rows[row_id][name]
        assert _same(actual, expected), f"row {row_id}: {actual!r} != {expected!r}"


def test_values_iceberg_cannot_hold_are_null_and_counted(applied: Applied) -> None:
    nulled = sum(
        1
        for case in CASES.values()
        for value, expected in zip(case.values, case.expected, strict=True)
        if value is not None and expected is None
    )
    assert nulled == EXPECTED_UNREPRESENTABLE
    assert applied.unrepresentable == [EXPECTED_UNREPRESENTABLE]


@pytest.mark.parametrize("name", list(CASES))
def test_the_literals_agree_with_the_simulator_oracle(name: str) -> None:
    """The hand-written expectations and the simulator's independent oracle say the same."""
    case = CASES[name]
    for value, expected in zip(case.values, case.expected, strict=True):
        if expected is None:
            continue  # the oracle does not model values Iceberg cannot hold
        with localcontext() as context:
            context.prec = 100
            stored = normalize_value(case.column, value, f"types.{TABLE}")
            assert _same(expected_iceberg_value(case.column, stored), expected), f"{value!r}"
