"""What apply works out before it merges: replays, rows without commit TSO, schema versions, DDL order."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from ticdc_lake.config import PipelineConfig
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.spark.ddl_sequence import collect_ddls
from ticdc_lake.spark.system_tables import COLUMNS
from ticdc_lake.spark.table_apply import prepare_windows
from ticdc_lake.spark.table_window import SchemaVersions, TableWindow

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
    frame = spark.createDataFrame(
        [("shop", "items", kind, ts, run, "READY", Decimal(1)) for kind, ts, run in rows],
        "`database` string, `table` string, kind string, commit_ts decimal(20,0), run_id string, status string, "
        "schema_version decimal(20,0)",
    )
    window = TableWindow(_pipeline(), "run-2", "shop", "items", watermark=200, applied_ts=150)
    assert prepare_windows(spark, [window], frame, "run-2") is None  # one table: nothing cached
    assert (window.replays, window.unordered, window.ready, window.ready_versions) == (2, 2, 1, (1,))
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


def test_schema_versions_by_commit_ts() -> None:
    history = SchemaVersions()
    first = TableSchema("shop", "items", (ColumnSchema("id", "int"),), version=10)
    second = TableSchema("shop", "items", (ColumnSchema("id", "int"), ColumnSchema("a", "int")), version=30)
    history.add(30, 300, second)
    history.add(10, 100, first)
    assert history.at(99) is None
    assert history.at(100) is first
    assert history.at(299) is first
    assert history.at(300) is second
    assert history.at(10**19) is second


def test_broadcast_and_redelivered_ddl_is_sequenced_once_in_statement_order(spark: Any) -> None:
    names = spark.createDataFrame([], COLUMNS["change_events"]).columns

    def ddl(partition: int, offset: int, ts: int, table: str, query: str) -> tuple[Any, ...]:
        values = {
            "pipeline": "p",
            "batch_id": "b",
            "topic": "t",
            "partition": partition,
            "offset": offset,
            "idx": 0,
            "kind": "DDL",
            "commit_ts": Decimal(ts),
            "database": "shop",
            "table": table,
            "ddl_type": "RENAME",
            "ddl_query": query,
            "status": "READY",
            "run_id": "r",
        }
        return tuple(values.get(n) for n in names)

    swap = "RENAME TABLE a TO b, c TO d"
    rows = [
        ddl(0, 5, 200, "b", swap),
        ddl(0, 6, 200, "d", swap),
        ddl(1, 2, 200, "b", swap),
        ddl(1, 3, 200, "d", swap),
        ddl(1, 9, 200, "b", swap),  # redelivered after a producer retry
        ddl(0, 1, 100, "x", "RENAME TABLE w TO x"),
    ]
    sequenced = collect_ddls(spark.createDataFrame(rows, COLUMNS["change_events"]))
    assert [(d.event.commit_ts, d.event.table, d.ordinal) for d in sequenced] == [
        (100, "x", 0),
        (200, "b", 0),
        (200, "d", 1),
    ]
