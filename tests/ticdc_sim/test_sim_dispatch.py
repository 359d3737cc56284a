"""Partition dispatch: our documented crc32 stand-in for TiCDC's hash."""

from __future__ import annotations

import zlib
from datetime import date
from decimal import Decimal

from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.column_types import Value
from ticdc_sim.dispatch import (
    DispatchRule,
    index_value_partition,
    key_value_bytes,
    row_partition,
    table_partition,
)


def _lines() -> TableSchema:
    cols = (
        column("order_id", "bigint", nullable=False),
        column("code", "varchar", length=8, nullable=False),
        column("qty", "int"),
    )
    return TableSchema(
        "shop", "lines", cols, (IndexSchema("PRIMARY", ("order_id", "code"), primary=True, unique=True),)
    )


def test_table_rule_hashes_database_and_table() -> None:
    expected = zlib.crc32(b"shop\x00orders") % 3
    assert table_partition("shop", "orders", 3) == expected
    assert [table_partition("shop", "orders", 3) for _ in range(5)] == [expected] * 5
    assert table_partition("shop", "orders", 1) == 0
    schema = _lines()
    rows: list[dict[str, Value]] = [{"order_id": i, "code": "東京", "qty": i} for i in range(20)]
    assert {row_partition(DispatchRule.TABLE, schema, r, 7) for r in rows} == {zlib.crc32(b"shop\x00lines") % 7}


def test_index_value_rule_hashes_the_handle_key_values() -> None:
    schema = _lines()
    row: dict[str, Value] = {"order_id": 42, "code": "東京", "qty": 1}
    expected = zlib.crc32(b"shop\x00lines\x00order_id\x0042\x00code\x00" + "東京".encode()) % 16
    assert index_value_partition(schema, row, 16) == expected
    assert row_partition(DispatchRule.INDEX_VALUE, schema, row, 16) == expected
    # only key columns count
    assert row_partition(DispatchRule.INDEX_VALUE, schema, {**row, "qty": 99}, 16) == expected
    spread = {row_partition(DispatchRule.INDEX_VALUE, schema, {**row, "order_id": i}, 16) for i in range(200)}
    assert len(spread) == 16


def test_key_value_bytes_is_plain_text() -> None:
    assert key_value_bytes(18446744073709551615) == b"18446744073709551615"
    assert key_value_bytes(Decimal("1.50")) == b"1.50"
    assert key_value_bytes(b"\xff\x00") == b"\xff\x00"
    assert key_value_bytes(date(2024, 1, 2)) == b"2024-01-02"
    assert key_value_bytes(None) == b""
