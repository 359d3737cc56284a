"""Ledger appends: the rows as written, without a Python job (no Python workers for a few driver rows)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.spark import ledger
from ticdc_lake.spark.system_tables import SystemTables

pytestmark = pytest.mark.spark


def test_appended_rows_read_back_exactly_and_come_from_a_local_relation(spark: Any) -> None:
    started = datetime(2026, 11, 21, 10, 30, 0, 123456, tzinfo=UTC)
    stage = ledger.stage_row("p", "run-1", "decode", LedgerStatus.OK, started, 1.25, 7, None)
    table = replace(
        ledger.stage_row("p", "run-1", "apply", LedgerStatus.APPLIED, started, 0.5, 3, "held: sasl.password=hunter2x"),
        database="shop",
        table="items",
        iceberg_table="lake.shop.items",
        window_start=Decimal(0),
        window_end=Decimal(2**64 - 1),
        watermark=Decimal(2**64 - 1),
        rows_inserted=2,
        rows_updated=1,
        rows_deleted=0,
        snapshot_id=2**63 - 1,
        duplicates_skipped=4,
        ambiguous_time_values=0,
    )
    frame = ledger.ledger_frame(spark, [stage, table])
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "LocalTableScan" in plan, plan
    assert "ExistingRDD" not in plan, plan

    tables = SystemTables("lake", f"sys_{uuid.uuid4().hex[:8]}")
    tables.ensure(spark)
    ledger.append(spark, tables, [stage, table])
    query = f"SELECT *, CAST(started_at AS STRING) AS started_text FROM {tables.run_ledger} ORDER BY stage"
    got = [r.asDict() for r in spark.sql(query).collect()]  # apply, then decode
    assert got[1] == {
        "pipeline": "p",
        "run_id": "run-1",
        "stage": "decode",
        "database": None,
        "table": None,
        "iceberg_table": None,
        "status": "OK",
        "window_start": None,
        "window_end": None,
        "watermark": None,
        "events_in": 7,
        "replays_skipped": None,
        "rows_inserted": None,
        "rows_updated": None,
        "rows_deleted": None,
        "unrepresentable_values": None,
        "snapshot_id": None,
        "message": None,
        "started_at": got[1]["started_at"],
        "duration_ms": 1250,
        "duplicates_skipped": None,
        "ambiguous_time_values": None,
        "started_text": "2026-11-21 10:30:00.123456",  # the session's time zone is UTC
    }
    assert {k: got[0][k] for k in ("status", "window_end", "watermark", "snapshot_id", "message")} == {
        "status": "APPLIED",
        "window_end": Decimal(2**64 - 1),
        "watermark": Decimal(2**64 - 1),
        "snapshot_id": 2**63 - 1,
        "message": "held: sasl.password=***",
    }
    assert (got[0]["database"], got[0]["table"], got[0]["rows_inserted"], got[0]["duplicates_skipped"]) == (
        "shop",
        "items",
        2,
        4,
    )
