"""The seeded workload: type coverage, operation mix and TiDB's one-event-per-key rule."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column, table_layout
from ticdc_sim.model import DmlOp, Transaction
from ticdc_sim.random_values import ValueGenerator, is_ambiguous_wall_time
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import OperationMix, WorkloadConfig


def _run(transactions: int, **config: object) -> tuple[TicdcSimulator, list[Transaction]]:
    sim = TicdcSimulator(seed=21, workload=WorkloadConfig(**config))  # type: ignore[arg-type]
    return sim, sim.run_transactions(transactions)


def test_default_tables_cover_the_required_types_and_keys() -> None:
    sim, _ = _run(1)
    schemas = [sim.model.schema(db, t) for db, t in sim.model.tables()]
    types = {
        (c.mysql_type, c.unsigned, c.fsp if c.mysql_type in ("datetime", "timestamp") else None)
        for s in schemas
        for c in s.columns
    }
    required = {
        ("int", False, None),
        ("bigint", False, None),
        ("bigint", True, None),
        ("decimal", False, None),
        ("varchar", False, None),
        ("text", False, None),
        ("datetime", False, 0),
        ("datetime", False, 6),
        ("timestamp", False, 0),
        ("timestamp", False, 3),
        ("date", False, None),
        ("varbinary", False, None),
        ("binary", False, None),
        ("json", False, None),
        ("enum", False, None),
    }
    assert required <= types
    keys = {s.table: [s.column(k).mysql_type for k in s.handle_key()] for s in schemas}  # type: ignore[union-attr]
    assert keys == {"orders": ["bigint"], "accounts": ["varchar"], "order_lines": ["bigint", "int"]}
    assert all(s.version is not None and s.table_id is not None and s.source == "simulator" for s in schemas)


def test_tables_and_databases_are_chosen_by_the_caller() -> None:
    layout = [(db, t) for db, t, _ in table_layout(6, 2, "shop")]
    assert layout == [
        ("shop", "orders"),
        ("shop_1", "accounts"),
        ("shop", "order_lines"),
        ("shop_1", "sensor_readings"),
        ("shop", "orders_1"),
        ("shop_1", "accounts_1"),
    ]
    sim, _ = _run(20, tables=6, databases=2)
    assert sim.model.tables() == sorted(layout)
    with pytest.raises(ValueError, match="databases <= tables"):
        WorkloadConfig(tables=1, databases=2)


def test_transactions_mix_operations_and_respect_one_event_per_key() -> None:
    sim, transactions = _run(600, tables=4)
    ops: Counter[str] = Counter()
    for txn in transactions:
        assert 1 <= len({(c.database, c.table) for c in txn.changes}) <= 2
        seen: set[tuple[str, str, tuple[object, ...]]] = set()
        for change in txn.changes:
            key_cols = sim.model.key_columns(change.database, change.table)
            images = [change.before, change.after] if change.op is DmlOp.UPDATE else [change.before or change.after]
            keys = {tuple(image[k] for k in key_cols) for image in images if image is not None}
            for key in keys:
                assert (change.database, change.table, key) not in seen
                seen.add((change.database, change.table, key))
            ops["split " + change.op.value if change.split else change.op.value] += 1
        # after a split, a table's DELETEs come first (TiCDC sorts DELETE < UPDATE < INSERT)
        for table in {(c.database, c.table) for c in txn.changes if c.split}:
            order = [c.op for c in txn.changes if (c.database, c.table) == table]
            assert order == sorted(order, key=[DmlOp.DELETE, DmlOp.UPDATE, DmlOp.INSERT].index)
    assert ops["split DELETE"] == ops["split INSERT"] > 50
    assert ops["INSERT"] > ops["UPDATE"] > ops["DELETE"] > 50
    assert max(len(t.changes) for t in transactions) <= 12  # 6 rows, a split row is two events


def test_operation_mix_and_raw_key_updates_are_configurable() -> None:
    _, inserts_only = _run(50, mix=OperationMix(insert=1, update=0, delete=0, key_update=0))
    assert {c.op for t in inserts_only for c in t.changes} == {DmlOp.INSERT}
    sim, raw = _run(200, tables=1, split_key_updates=False, mix=OperationMix(1, 0, 0, 1))
    key_changing = [
        c
        for t in raw
        for c in t.changes
        if c.op is DmlOp.UPDATE and c.before["id"] != c.after["id"]  # type: ignore[index]
    ]
    assert key_changing
    assert not any(c.split for t in raw for c in t.changes)
    assert len(sim.model.rows("shop", "orders")) == sum(1 for t in raw for c in t.changes if c.op is DmlOp.INSERT)


def test_values_include_edge_cases_nulls_and_non_utf8_bytes() -> None:
    _, transactions = _run(800, tables=4)
    values = [
        (c.table, name, value) for t in transactions for c in t.changes for name, value in (c.after or {}).items()
    ]
    assert ("accounts", "lifetime_points", 18446744073709551615) in values
    assert any(v is None for table, name, v in values if (table, name) == ("orders", "note"))
    for table, name in [("orders", "city"), ("accounts", "avatar"), ("order_lines", "shipped_at")]:
        column_values = [v for t, n, v in values if (t, n) == (table, name)]
        assert None in column_values
        assert any(v is not None for v in column_values)
    texts = [v for _, _, v in values if isinstance(v, str)]
    for word in ("東京", "Zürich", "🚀"):
        assert any(word in v for v in texts)
    binaries = [v for _, _, v in values if isinstance(v, bytes)]
    assert any(_not_utf8(v) for v in binaries)
    assert any(isinstance(v, datetime) and v.microsecond for _, n, v in values if n == "shipped_at")
    assert any(isinstance(v, date) and v.year < 1970 for _, n, v in values if n == "opened_on")
    codes = [c.after["account_code"] for t in transactions for c in t.changes if c.after and c.table == "accounts"]
    assert any(not str(code).isascii() for code in codes)


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def test_timestamps_avoid_wall_times_the_server_zone_repeats() -> None:
    new_york = ZoneInfo("America/New_York")
    assert is_ambiguous_wall_time(datetime(2024, 11, 3, 5, 30, tzinfo=UTC), new_york)  # 01:30 EDT
    assert is_ambiguous_wall_time(datetime(2024, 11, 3, 6, 30, tzinfo=UTC), new_york)  # 01:30 EST
    assert not is_ambiguous_wall_time(datetime(2024, 11, 3, 7, 30, tzinfo=UTC), new_york)
    assert not is_ambiguous_wall_time(datetime(2024, 3, 10, 7, 30, tzinfo=UTC), new_york)  # after the gap
    generator = ValueGenerator(random.Random(1), 0.0, server_time_zone="America/New_York")
    stamps = [generator.non_null(column("t", "timestamp")) for _ in range(30_000)]
    assert not any(is_ambiguous_wall_time(s, new_york) for s in stamps)  # type: ignore[arg-type]
    unguarded = ValueGenerator(random.Random(1), 0.0)
    utc_stamps = [unguarded.non_null(column("t", "timestamp")) for _ in range(30_000)]
    assert any(is_ambiguous_wall_time(s, new_york) for s in utc_stamps)  # type: ignore[arg-type]


def test_only_limits_a_transaction_to_the_named_tables() -> None:
    sim, _ = _run(10, tables=4)
    for _ in range(20):
        changes = sim.workload.next_changes(sim.model, only=[("shop", "accounts")])
        assert {(c.database, c.table) for c in changes} == {("shop", "accounts")}
        sim.commit(changes)
    with pytest.raises(ValueError, match=r"not for \[\('shop', 'nope'\)\]"):
        sim.workload.next_changes(sim.model, only=[("shop", "nope")])
    with pytest.raises(ValueError, match="not for no table"):
        sim.workload.next_changes(sim.model, only=[])


def test_tables_outside_the_layout_and_changed_keys_get_unique_generated_keys() -> None:
    sim, _ = _run(10, tables=1)
    schema = TableSchema(
        "shop",
        "extra",
        (column("k", "int", nullable=False), column("code", "varchar", length=10, nullable=False), column("v", "int")),
        (IndexSchema("PRIMARY", ("k", "code"), primary=True, unique=True),),
    )
    sim.workload.attach(sim.create_table(schema))
    sim.create_index("shop", "orders", "uk", ("id", "customer"), unique=True)
    sim.drop_primary_key("shop", "orders")
    assert sim.model.key_columns("shop", "orders") == ("id", "customer")
    sim.run_transactions(200)
    assert len(sim.model.rows("shop", "extra")) > 20
    ids = [row["id"] for row in sim.model.rows("shop", "orders")]
    assert len(ids) == len(set(ids))  # integer key columns still come from a sequence
    sim.add_primary_key("shop", "orders", ("id",))
    sim.run_transactions(20)
