"""Keyless tables (TiCDC force-replicate): multisets in the model, the workload and the oracle."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from decimal import Decimal

import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.catalog import KEYLESS_TEMPLATE, column
from ticdc_sim.column_types import Value
from ticdc_sim.compare import table_differences
from ticdc_sim.dispatch import DispatchRule, row_partition, table_partition
from ticdc_sim.model import DdlChange, DmlOp, RowChange, Transaction, UpstreamModel
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

DB, TB = "shop", "event_log"
Frozen = tuple[tuple[str, Value], ...]


def _row(kind: int | None, source: str = "web", amount: str = "1.50") -> dict[str, Value]:
    return {
        "event_type": kind,
        "source": source,
        "amount": Decimal(amount),
        "happened_at": datetime(2025, 1, 2, 3, 4, 5),
    }


def _model() -> UpstreamModel:
    model = UpstreamModel(allow_keyless=True)
    schema = KEYLESS_TEMPLATE.build(DB, TB)
    model.apply_ddl(10, DdlChange("CREATE", "CREATE TABLE ...", DB, TB, schema))
    return model


def _frozen(row: dict[str, Value]) -> Frozen:
    return tuple(sorted(row.items()))


def test_keyless_template_has_no_key() -> None:
    schema = KEYLESS_TEMPLATE.build(DB, TB)
    assert schema.handle_key() == ()
    assert schema.indexes == ()
    assert [(c.name, c.mysql_type, c.nullable) for c in schema.columns] == [
        ("event_type", "int", True),
        ("source", "varchar", True),
        ("amount", "decimal", True),
        ("happened_at", "datetime", True),
    ]


def test_model_keeps_the_multiplicity_of_identical_rows() -> None:
    model = _model()
    ins = RowChange(DmlOp.INSERT, DB, TB, None, _row(1))
    model.apply(Transaction(20, (ins, ins, RowChange(DmlOp.INSERT, DB, TB, None, _row(2)), ins)))
    assert Counter(map(_frozen, model.rows(DB, TB))) == {_frozen(_row(1)): 3, _frozen(_row(2)): 1}
    # update one copy of three; delete one copy; an update into a copy of another row
    model.apply(
        Transaction(
            30,
            (
                RowChange(DmlOp.UPDATE, DB, TB, _row(1), _row(1, "app")),
                RowChange(DmlOp.DELETE, DB, TB, _row(1), None),
                RowChange(DmlOp.UPDATE, DB, TB, _row(2), _row(1)),
            ),
        )
    )
    assert Counter(map(_frozen, model.rows(DB, TB))) == {_frozen(_row(1)): 2, _frozen(_row(1, "app")): 1}
    assert Counter(map(_frozen, model.rows_at(DB, TB, 20))) == {_frozen(_row(1)): 3, _frozen(_row(2)): 1}
    # deleting the last copies one by one, in one transaction
    model.apply(Transaction(40, tuple(RowChange(DmlOp.DELETE, DB, TB, _row(1), None) for _ in range(2))))
    assert model.rows(DB, TB) == [_row(1, "app")]
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(50, (RowChange(DmlOp.DELETE, DB, TB, _row(1), None),)))
    assert str(caught.value) == (
        f"shop.event_log at commit_ts 50: DELETE `before` image {_row(1)!r} matches no row of the keyless table; "
        "UPDATE/DELETE images must equal an existing copy"
    )


def test_model_refuses_keyless_tables_unless_allowed() -> None:
    with pytest.raises(SchemaError, match="no primary or NOT NULL unique key"):
        UpstreamModel().apply_ddl(1, DdlChange("CREATE", "CREATE TABLE ...", DB, TB, KEYLESS_TEMPLATE.build(DB, TB)))


def _replay_multiset(transactions: list[Transaction], ref: tuple[str, str]) -> tuple[Counter[Frozen], int]:
    """An independent oracle: the table as a Counter of rows, event by event; and how many
    UPDATE/DELETE events changed one of several identical copies."""
    rows: Counter[Frozen] = Counter()
    on_duplicates = 0
    for transaction in transactions:
        for change in transaction.changes:
            if change.table_ref() != ref:
                continue
            if change.before is not None:
                before = _frozen(dict(change.before))
                assert rows[before] > 0, f"{change.op} of a row that is not there: {before}"
                on_duplicates += rows[before] > 1
                rows[before] -= 1
            if change.after is not None:
                rows[_frozen(dict(change.after))] += 1
    return +rows, on_duplicates


def test_workload_writes_duplicates_updates_and_deletes_of_copies() -> None:
    sim = TicdcSimulator(seed=21, partitions=2, workload=WorkloadConfig(tables=2, keyless_tables=2, databases=2))
    created = sim.setup()
    assert [(s.database, s.table, s.handle_key()) for s in created][2:] == [
        ("shop", "event_log", ()),
        ("shop_1", "event_log_1", ()),
    ]
    transactions = sim.run_transactions(300)
    for ref in (("shop", "event_log"), ("shop_1", "event_log_1")):
        changes = [c for t in transactions for c in t.changes if c.table_ref() == ref]
        ops = Counter(c.op for c in changes)
        assert ops[DmlOp.INSERT] > 20
        assert ops[DmlOp.UPDATE] > 10
        assert ops[DmlOp.DELETE] > 3
        expected, on_duplicates = _replay_multiset(transactions, ref)
        model_rows = Counter(map(_frozen, sim.model.rows(*ref)))
        assert model_rows == expected
        assert max(expected.values()) >= 2, "the workload made no duplicates"
        assert on_duplicates >= 3, "no UPDATE/DELETE of one of several identical copies"
        assert sim.expected_iceberg_key(*ref) == ()
        iceberg = sim.expected_iceberg_rows(*ref)
        assert len(iceberg) == sum(expected.values())
        assert table_differences(iceberg, iceberg[::-1]) == []
        assert table_differences(iceberg, iceberg[1:]) != [] or not iceberg


def test_keyless_rows_dispatch_like_the_table_under_index_value() -> None:
    schema = KEYLESS_TEMPLATE.build(DB, TB)
    expected = table_partition(DB, TB, 7)
    for kind in range(20):
        assert row_partition(DispatchRule.INDEX_VALUE, schema, _row(kind, str(kind)), 7) == expected
    sim = TicdcSimulator(
        seed=2, partitions=5, dispatch="index-value", workload=WorkloadConfig(tables=1, keyless_tables=1)
    )
    sim.run_transactions(60)
    partitions = {m.partition for m in sim.messages() if m.kind == "DML" and json.loads(m.value)["table"] == TB}
    assert partitions == {table_partition(DB, TB, 5)}


def test_keyless_event_carries_full_images() -> None:
    sim = TicdcSimulator(seed=9, workload=WorkloadConfig(tables=1, keyless_tables=1))
    sim.setup()
    schema: TableSchema = sim.model.schema(DB, TB)
    sim.take()
    duplicate = _row(7)
    sim.commit([RowChange(DmlOp.INSERT, DB, TB, None, duplicate) for _ in range(2)])
    sim.commit([RowChange(DmlOp.UPDATE, DB, TB, duplicate, _row(8))])
    dml = [json.loads(m.value) for m in sim.take() if m.kind == "DML"]
    assert [d["type"] for d in dml] == ["INSERT", "INSERT", "UPDATE"]
    assert set(dml[2]["old"]) == set(dml[2]["data"]) == {c.name for c in schema.columns}
    assert Counter(map(_frozen, sim.model.rows(DB, TB))) == {_frozen(_row(7)): 1, _frozen(_row(8)): 1}


def test_ddl_on_a_keyless_table_keeps_every_copy() -> None:
    sim = TicdcSimulator(seed=9, workload=WorkloadConfig(tables=1, keyless_tables=1))
    sim.setup()
    sim.commit([RowChange(DmlOp.INSERT, DB, TB, None, _row(1)) for _ in range(3)])
    sim.add_column(DB, TB, column("note", "varchar", length=8, default="n"))
    assert sim.model.rows(DB, TB) == [{**_row(1), "note": "n"}] * 3
    assert len(sim.expected_iceberg_rows(DB, TB)) == 3
    sim.commit([RowChange(DmlOp.DELETE, DB, TB, {**_row(1), "note": "n"}, None)])
    assert len(sim.model.rows(DB, TB)) == 2
    sim.truncate_table(DB, TB)
    assert sim.model.rows(DB, TB) == []
    sim.run_transactions(20)  # the workload goes on in the new schema
    assert all("note" in row for row in sim.model.rows(DB, TB))
