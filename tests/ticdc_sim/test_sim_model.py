"""The reference model: history, rows_at, normalization and the TiDB rules it enforces."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.column_types import Value
from ticdc_sim.model import DdlChange, DmlOp, RowChange, Transaction, UpstreamModel

DB, TB = "app", "users"


def _schema() -> TableSchema:
    cols = (
        column("id", "bigint", nullable=False),
        column("name", "varchar", length=16),
        column("balance", "decimal", length=8, scale=2),
        column("token", "binary", length=4),
        column("code", "char", length=4),
        column("seen", "timestamp", fsp=3),
        column("u", "bigint", unsigned=True),
    )
    return TableSchema(DB, TB, cols, (IndexSchema("primary", ("id",), primary=True, unique=True),))


def _row(id_: int, name: Value = "x", **extra: Value) -> dict[str, Value]:
    row: dict[str, Value] = {
        "id": id_,
        "name": name,
        "balance": None,
        "token": None,
        "code": None,
        "seen": None,
        "u": None,
    }
    row.update(extra)
    return row


def _model() -> UpstreamModel:
    model = UpstreamModel()
    model.apply_ddl(10, DdlChange("CREATE", "CREATE TABLE ...", DB, TB, _schema()))
    return model


def _ins(row: dict[str, Value]) -> RowChange:
    return RowChange(DmlOp.INSERT, DB, TB, None, row)


def _upd(before: dict[str, Value], after: dict[str, Value]) -> RowChange:
    return RowChange(DmlOp.UPDATE, DB, TB, before, after)


def _del(before: dict[str, Value]) -> RowChange:
    return RowChange(DmlOp.DELETE, DB, TB, before, None)


def test_rows_at_follows_history_with_key_changes_and_deletes() -> None:
    model = _model()
    model.apply(Transaction(100, (_ins(_row(1, "a")), _ins(_row(2, "b")), _ins(_row(3, "c")))))
    model.apply(Transaction(200, (_upd(_row(1, "a"), _row(1, "a2")),)))
    # key-changing update, split the TiCDC way: DELETE old key + INSERT new key, same commit_ts
    model.apply(
        Transaction(
            300,
            (
                RowChange(DmlOp.DELETE, DB, TB, _row(2, "b"), None, split=True),
                RowChange(DmlOp.INSERT, DB, TB, None, _row(20, "b"), split=True),
            ),
        )
    )
    model.apply(Transaction(400, (_del(_row(3, "c")),)))
    model.apply(Transaction(500, (_ins(_row(3, "c-again")),)))
    # an UPDATE that changes the key without being split (output-raw-change-event)
    model.apply(Transaction(600, (_upd(_row(1, "a2"), _row(5, "a2")),)))

    def names(tso: int) -> list[tuple[object, object]]:
        return [(r["id"], r["name"]) for r in model.rows_at(DB, TB, tso)]

    assert names(9) == []
    assert names(10) == []
    assert names(99) == []
    assert names(100) == [(1, "a"), (2, "b"), (3, "c")]
    assert names(199) == [(1, "a"), (2, "b"), (3, "c")]
    assert names(200) == [(1, "a2"), (2, "b"), (3, "c")]
    assert names(300) == [(1, "a2"), (3, "c"), (20, "b")]
    assert names(400) == [(1, "a2"), (20, "b")]
    assert names(500) == [(1, "a2"), (3, "c-again"), (20, "b")]
    assert names(600) == [(3, "c-again"), (5, "a2"), (20, "b")]
    assert names(10**18) == names(600)
    assert model.rows(DB, TB) == model.rows_at(DB, TB, 600)
    assert model.row(DB, TB, (1,)) is None
    assert model.row(DB, TB, (5,)) == _row(5, "a2")
    assert [t.commit_ts for t in model.transactions()] == [100, 200, 300, 400, 500, 600]


def test_rows_at_returns_copies() -> None:
    model = _model()
    model.apply(Transaction(100, (_ins(_row(1, "a")),)))
    model.rows_at(DB, TB, 100)[0]["name"] = "changed"
    assert model.rows_at(DB, TB, 100)[0]["name"] == "a"


def test_values_are_normalized_like_tidb_stores_them() -> None:
    model = _model()
    shanghai = timezone(timedelta(hours=8))
    result = model.apply(
        Transaction(
            100,
            (
                _ins(
                    _row(
                        1,
                        balance=Decimal("1.5"),
                        token=b"\xff",
                        code="ab  ",
                        seen=datetime(2024, 1, 1, 8, 0, 0, 123000, tzinfo=shanghai),
                        u=2**64 - 1,
                    )
                ),
            ),
        )
    )
    stored = model.rows(DB, TB)[0]
    assert stored["balance"] == Decimal("1.50")
    assert str(stored["balance"]) == "1.50"
    assert stored["token"] == b"\xff\x00\x00\x00"
    assert stored["code"] == "ab"
    assert stored["seen"] == datetime(2024, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)
    assert stored["seen"].tzinfo is UTC  # type: ignore[union-attr]
    assert stored["u"] == 18446744073709551615
    assert result.changes[0].after == stored


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"u": 2**64},
            "app.users.u (bigint unsigned): expected an int in [0, 18446744073709551615], got 18446744073709551616",
        ),
        ({"u": -1}, "app.users.u (bigint unsigned): expected an int in [0, 18446744073709551615], got -1"),
        ({"u": True}, "app.users.u (bigint unsigned): expected an int, got True"),
        (
            {"balance": Decimal("1.234")},
            "app.users.balance (decimal(8,2)): expected a Decimal with at most 2 fraction digits, got Decimal('1.234')",
        ),
        (
            {"balance": Decimal("1000000.00")},
            "app.users.balance (decimal(8,2)): expected a Decimal that fits decimal(8,2), got Decimal('1000000.00')",
        ),
        (
            {"seen": datetime(2024, 1, 1, 0, 0, 0, 123400, tzinfo=UTC)},
            "app.users.seen (timestamp(3)): expected at most 3 fraction digits, "
            "got datetime.datetime(2024, 1, 1, 0, 0, 0, 123400, tzinfo=datetime.timezone.utc)",
        ),
        (
            {"seen": datetime(2024, 1, 1)},
            "app.users.seen (timestamp(3)): expected a timezone-aware datetime (TIMESTAMP is an instant), "
            "got datetime.datetime(2024, 1, 1, 0, 0)",
        ),
        (
            {"token": b"12345"},
            "app.users.token (binary(4)): expected at most 4 bytes, got b'12345'",
        ),
        (
            {"name": "x" * 17},
            f"app.users.name (varchar(16)): expected at most 16 characters, got {'x' * 17!r}",
        ),
        ({"id": None}, "app.users.id: NULL in a NOT NULL column"),
    ],
)
def test_invalid_values_are_rejected(extra: dict[str, Value], message: str) -> None:
    model = _model()
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(100, (_ins(_row(1, **extra)),)))
    assert str(caught.value) == message
    assert model.rows(DB, TB) == []
    assert model.last_commit_ts == 10


def test_tidb_rules_are_enforced() -> None:
    model = _model()
    model.apply(Transaction(100, (_ins(_row(1, "a")),)))
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(100, (_ins(_row(2)),)))
    assert str(caught.value) == "transaction: commit_ts 100 is not after the previous commit_ts 100"
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(200, (_ins(_row(1)),)))
    assert str(caught.value) == "app.users at commit_ts 200: INSERT to key (1,), which already exists"
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(200, (_upd(_row(1, "wrong"), _row(1, "b")),)))
    assert str(caught.value) == (
        "app.users at commit_ts 200: UPDATE `before` image "
        f"{_row(1, 'wrong')!r} differs from the current row {_row(1, 'a')!r}"
    )
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(200, (_ins(_row(2)), _del(_row(2)))))
    assert "differs from the current row None" in str(caught.value)
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(200, (_upd(_row(1, "a"), _row(1, "b")), _del(_row(1, "a")))))
    assert str(caught.value) == "app.users at commit_ts 200: key (1,) is changed twice in one transaction"
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(200, (RowChange(DmlOp.INSERT, DB, "nope", None, _row(9)),)))
    assert str(caught.value) == "table app.nope is not in the reference model (create it first)"
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(200, (_ins({"id": 2}),)))
    assert str(caught.value) == (
        "app.users: row image lacks columns ['name', 'balance', 'token', 'code', 'seen', 'u'] (images are full rows)"
    )
    # nothing of the failed transactions leaked into the state
    assert model.rows(DB, TB) == [_row(1, "a")]
    assert model.last_commit_ts == 100


def test_create_table_needs_a_key_and_a_new_name() -> None:
    model = _model()
    with pytest.raises(SchemaError) as caught:
        model.apply_ddl(20, DdlChange("CREATE", "CREATE TABLE ...", DB, TB, _schema()))
    assert str(caught.value) == "table app.users already exists in the reference model"
    keyless = TableSchema(DB, "logs", (column("msg", "text"),))
    with pytest.raises(SchemaError) as caught:
        model.apply_ddl(20, DdlChange("CREATE", "CREATE TABLE ...", DB, "logs", keyless))
    assert str(caught.value) == "table app.logs has no primary or NOT NULL unique key; the model needs one"
    assert model.tables() == [(DB, TB)]
    assert model.schema(DB, TB).column("u") is not None
    assert model.key_columns(DB, TB) == ("id",)


def test_composite_and_varchar_keys_sort_like_the_key() -> None:
    cols = (
        column("code", "varchar", length=8, nullable=False),
        column("line", "int", nullable=False),
        column("born", "date"),
    )
    schema = TableSchema(DB, "lines", cols, (IndexSchema("PRIMARY", ("code", "line"), primary=True, unique=True),))
    model = UpstreamModel()
    model.apply_ddl(1, DdlChange("CREATE", "CREATE TABLE ...", DB, "lines", schema))
    rows: list[dict[str, Value]] = [
        {"code": "東京", "line": 1, "born": None},
        {"code": "Zürich", "line": 2, "born": date(1969, 7, 20)},
        {"code": "Zürich", "line": 1, "born": None},
        {"code": "A", "line": 3, "born": None},
    ]
    model.apply(Transaction(2, tuple(RowChange(DmlOp.INSERT, DB, "lines", None, r) for r in rows)))
    assert [(r["code"], r["line"]) for r in model.rows_at(DB, "lines", 2)] == [
        ("A", 3),
        ("Zürich", 1),
        ("Zürich", 2),
        ("東京", 1),
    ]
