"""What apply counts before it merges: replays of this run, and rows that carry no commit TSO."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from ticdc_lake.config import PipelineConfig
from ticdc_lake.spark.table_apply import TableWindow, _replays_and_unordered

pytestmark = [pytest.mark.spark]


def _pipeline() -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "id": "p",
            "protocol": "avro",
            "kafka": {"topics": ["t"]},
            "landing_uri": "/tmp/landing",
            "catalog": "lake",
        }
    )


def test_replays_and_rows_without_commit_ts_are_counted_apart(spark: Any) -> None:
    rows = [
        ("DML", Decimal(100), "run-2"),  # a replay: this run landed it again, at or below applied
        ("DML", Decimal(150), "run-2"),  # a replay at the applied position itself
        ("DML", Decimal(150), "run-1"),  # applied by the earlier run: not a replay of this one
        ("DML", Decimal(151), "run-2"),  # fresh
        ("DML", Decimal(0), "run-2"),  # an avro tombstone: no commit TSO
        ("DML", Decimal(0), "run-1"),
        ("WATERMARK", Decimal(0), "run-2"),
    ]
    frame = spark.createDataFrame(rows, "kind string, commit_ts decimal(20,0), run_id string")
    window = TableWindow(_pipeline(), "run-2", "shop", "items", watermark=200, applied_ts=150)
    assert _replays_and_unordered(frame, window) == (2, 2)
    window.unordered = 2
    row = window.ledger_row("APPLIED", None)
    assert row.message == (
        "2 row event(s) carry no commit TSO (Canal-JSON or avro without the TiDB extension, avro DELETE "
        "tombstones): they can only be ordered by Kafka offset and the TSO-ordered apply does not apply them "
        "(docs/protocols.md, Ordering)"
    )
    held = window.ledger_row("HELD", "DDL waits").message
    assert held is not None
    assert held.startswith("DDL waits; 2 row event(s) carry no commit TSO")
