"""The Iceberg oracle after DDL: columns, types and rows under each policy."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import pytest

from ticdc_lake.config import DropColumnPolicy, DropTablePolicy, Policies, TypeChangePolicy
from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.column_types import Value
from ticdc_sim.ddl_changes import (
    AddColumnSpec,
    AddIndexSpec,
    AlterSpec,
    DropColumnSpec,
    DropPrimaryKeySpec,
    ModifyColumnSpec,
    RenameColumnSpec,
    alter_change,
    drop_table_change,
    rename_table_change,
    truncate_table_change,
)
from ticdc_sim.expected import (
    IcebergValue,
    expected_iceberg_columns,
    expected_iceberg_key,
    expected_iceberg_rows,
    iceberg_table_source,
)
from ticdc_sim.expected_evolution import spark_cast_to_string, text_of
from ticdc_sim.expected_values import expected_iceberg_value
from ticdc_sim.model import DdlChange, DmlOp, RowChange, Transaction, UpstreamModel
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

DB, TB = "db", "t"
DB_SHOP = "shop"
KEEP_COLUMNS = Policies(on_drop_column=DropColumnPolicy.KEEP)
FAIL = Policies(on_incompatible_type_change=TypeChangePolicy.FAIL)
DROP_TABLES = Policies(on_drop_table=DropTablePolicy.DROP)


def _schema(table: str = TB) -> TableSchema:
    cols = (
        column("id", "int", nullable=False),
        column("qty", "int"),
        column("price", "decimal", length=6, scale=2),
        column("temp", "float"),
        column("name", "varchar", length=8, nullable=False, default=""),
    )
    return TableSchema(DB, table, cols, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),), 1, 1)


def _row(id_: int, qty: int | None = None, price: str | None = None, name: str = "n") -> dict[str, Value]:
    return {"id": id_, "qty": qty, "price": Decimal(price) if price else None, "temp": 0.5, "name": name}


class _Upstream:
    """A tiny upstream: one table, DDL and DML at the TSOs the test chooses."""

    def __init__(self) -> None:
        self.model = UpstreamModel()
        self.model.apply_ddl(10, DdlChange("CREATE", "CREATE TABLE ...", DB, TB, _schema()))

    def alter(self, ts: int, *specs: AlterSpec, table: str = TB) -> None:
        self.model.apply_ddl(ts, alter_change(self.model.schema(DB, table), specs, ts - 1), specs)

    def insert(self, ts: int, *rows: dict[str, Value], table: str = TB) -> None:
        self.model.apply(Transaction(ts, tuple(RowChange(DmlOp.INSERT, DB, table, None, r) for r in rows)))

    def update(self, ts: int, key: Value, table: str = TB, **values: Value) -> None:
        before = self.model.row(DB, table, (key,))
        assert before is not None
        self.model.apply(Transaction(ts, (RowChange(DmlOp.UPDATE, DB, table, before, {**before, **values}),)))

    def rows(self, tso: int, policies: Policies | None = None, table: str = TB) -> list[dict[str, IcebergValue]] | None:
        return expected_iceberg_rows(self.model, DB, table, tso, policies or Policies())

    def columns(self, tso: int, policies: Policies | None = None, table: str = TB) -> list[tuple[str, str]]:
        return expected_iceberg_columns(self.model, DB, table, tso, policies or Policies())


def _col(rows: Sequence[dict[str, IcebergValue]] | None, name: str) -> list[object]:
    assert rows is not None
    return [r.get(name, "<absent>") for r in rows]


def test_add_column_existing_rows_get_the_default_at_the_position() -> None:
    up = _Upstream()
    up.insert(20, _row(1, 5))
    up.alter(30, AddColumnSpec(column("rank", "bigint", nullable=False, default="7"), first=True))
    up.insert(40, {**_row(2), "rank": 1})
    assert up.columns(29) == [
        ("id", "int"),
        ("qty", "int"),
        ("price", "decimal(6,2)"),
        ("temp", "float"),
        ("name", "string"),
    ]
    assert up.columns(30)[0] == ("rank", "long")
    assert up.rows(29) == [{"id": 1, "qty": 5, "price": None, "temp": 0.5, "name": "n"}]
    assert _col(up.rows(40), "rank") == [7, 1]
    assert list(up.rows(40)[0]) == ["rank", "id", "qty", "price", "temp", "name"]  # type: ignore[index]


@pytest.mark.parametrize("policies", [Policies(), KEEP_COLUMNS])
def test_drop_column_under_each_policy(policies: Policies) -> None:
    up = _Upstream()
    up.insert(20, _row(1, 5), _row(2, 6))
    up.alter(30, DropColumnSpec("qty"))
    up.update(40, 2, name="changed")
    up.insert(50, {k: v for k, v in _row(3).items() if k != "qty"})
    rows = up.rows(50, policies)
    if policies.on_drop_column is DropColumnPolicy.DROP:
        assert ("qty", "int") not in up.columns(50, policies)
        assert _col(rows, "qty") == ["<absent>"] * 3
    else:
        assert up.columns(50, policies)[1] == ("qty", "int")
        assert _col(rows, "qty") == [5, None, None]  # kept, NULL once rewritten after the drop
    assert _col(rows, "name") == ["n", "changed", "n"]


def test_rename_column_keeps_values_and_type() -> None:
    up = _Upstream()
    up.insert(20, _row(1, 5))
    up.alter(30, RenameColumnSpec("qty", "amount"))
    up.insert(40, {**{k: v for k, v in _row(2).items() if k != "qty"}, "amount": 9})
    assert up.columns(40)[1] == ("amount", "int")
    assert _col(up.rows(40), "amount") == [5, 9]


def test_widening_modifies_keep_values_and_widen_the_type() -> None:
    up = _Upstream()
    up.insert(20, _row(1, 5, "1.50"))
    up.alter(
        30,
        ModifyColumnSpec(column("qty", "bigint")),
        ModifyColumnSpec(column("price", "decimal", length=9, scale=2)),
        ModifyColumnSpec(column("temp", "double")),
    )
    assert up.columns(30)[1:4] == [("qty", "long"), ("price", "decimal(9,2)"), ("temp", "double")]
    assert up.rows(30) == [{"id": 1, "qty": 5, "price": Decimal("1.50"), "temp": 0.5, "name": "n"}]


def test_incompatible_modify_keeps_every_value_as_string() -> None:
    up = _Upstream()
    up.insert(20, _row(1, 5, "1.50"), _row(2, None, "-3.00"))
    up.alter(
        30,
        ModifyColumnSpec(column("qty", "varchar", length=12)),
        ModifyColumnSpec(column("price", "decimal", length=40, scale=2)),
    )
    up.insert(40, {**_row(3), "qty": "abc", "price": Decimal("2.25")})
    up.update(50, 1, qty="xyz")
    assert up.columns(50)[1:3] == [("qty", "string"), ("price", "string")]
    assert _col(up.rows(50), "qty") == ["xyz", None, "abc"]
    assert _col(up.rows(50), "price") == ["1.50", "-3.00", "2.25"]
    assert _col(up.rows(45), "qty") == ["5", None, "abc"]


def test_int_to_bigint_unsigned_is_not_a_widening_in_iceberg() -> None:
    up = _Upstream()
    up.insert(20, _row(1, 5))
    up.alter(30, ModifyColumnSpec(column("qty", "bigint", unsigned=True)))
    up.insert(40, {**_row(2), "qty": 2**64 - 1})
    assert up.columns(40)[1] == ("qty", "string")
    assert _col(up.rows(40), "qty") == ["5", "18446744073709551615"]


def test_fail_policy_holds_the_table_just_before_the_ddl() -> None:
    up = _Upstream()
    up.insert(20, _row(1, 5))
    up.alter(30, ModifyColumnSpec(column("qty", "varchar", length=12)))
    up.insert(40, {**_row(2), "qty": "x"})
    assert up.columns(40, FAIL)[1] == ("qty", "int")
    assert up.rows(40, FAIL) == up.rows(29, FAIL) == [{"id": 1, "qty": 5, "price": None, "temp": 0.5, "name": "n"}]


def test_key_changes_move_the_identifier_fields() -> None:
    up = _Upstream()
    up.insert(20, _row(1, 5, name="a"), _row(2, 6, name="b"))
    up.alter(30, AddIndexSpec("uk", ("name",), unique=True))
    up.alter(40, DropPrimaryKeySpec())
    assert expected_iceberg_key(up.model, DB, TB, 35) == ("id",)
    assert expected_iceberg_key(up.model, DB, TB, 40) == ("name",)
    up.update(50, "a", qty=7)
    assert _col(up.rows(50), "qty") == [7, 6]


def test_truncate_keeps_only_rows_committed_after_it() -> None:
    up = _Upstream()
    up.insert(20, _row(1), _row(2))
    up.model.apply_ddl(30, truncate_table_change(up.model.schema(DB, TB), 2, 29))
    up.insert(40, _row(2, 8))
    assert _col(up.rows(29), "id") == [1, 2]
    assert up.rows(30) == []
    assert _col(up.rows(40), "qty") == [8]


def test_rename_moves_everything_to_the_new_name() -> None:
    up = _Upstream()
    up.insert(20, _row(1))
    up.model.apply_ddl(30, rename_table_change(up.model.schema(DB, TB), DB, "t2", 29))
    up.insert(40, _row(2), table="t2")
    assert _col(up.rows(40, table="t2"), "id") == [1, 2]
    assert up.rows(40) is None
    assert up.columns(40) == []
    assert up.rows(29, table="t2") is None


@pytest.mark.parametrize("policies", [Policies(), DROP_TABLES])
def test_drop_table_under_each_policy_and_a_fresh_table_after_create(policies: Policies) -> None:
    up = _Upstream()
    up.insert(20, _row(1))
    up.alter(25, DropColumnSpec("temp"))
    up.model.apply_ddl(30, drop_table_change(up.model.schema(DB, TB)))
    if policies.on_drop_table is DropTablePolicy.KEEP:
        assert up.rows(35, policies) == [{"id": 1, "qty": None, "price": None, "name": "n"}]
        assert [n for n, _ in up.columns(35, policies)] == ["id", "qty", "price", "name"]
        assert iceberg_table_source(up.model, DB, TB, 35, policies) is not None
    else:
        assert up.rows(35, policies) is None
        assert up.columns(35, policies) == []
        assert expected_iceberg_key(up.model, DB, TB, 35, policies) == ()
    up.model.apply_ddl(40, DdlChange("CREATE", "CREATE TABLE ...", DB, TB, _schema()))
    up.insert(50, _row(7))
    assert _col(up.rows(50, policies), "id") == [7]
    assert up.rows(40, policies) == []
    assert ("temp", "float") in up.columns(40, policies)


def test_narrowing_long_to_int_is_kept_as_string_and_unknown_tables_are_reported() -> None:
    up = _Upstream()
    up.insert(20, _row(1, 5))
    up.alter(30, ModifyColumnSpec(column("qty", "bigint")), AddColumnSpec(column("d", "date")))
    up.alter(40, ModifyColumnSpec(column("qty", "int")))
    assert up.columns(40)[1] == ("qty", "string")
    assert up.columns(40)[-1] == ("d", "date")
    assert _col(up.rows(40), "qty") == ["5"]
    with pytest.raises(SchemaError, match="never existed"):
        expected_iceberg_rows(up.model, DB, "nope", 30)


def test_string_forms_the_oracle_does_not_model_are_reported() -> None:
    with pytest.raises(SchemaError, match="CAST of an Iceberg double value to string is not modelled"):
        spark_cast_to_string("double", 0.5, "db.t")
    with pytest.raises(SchemaError, match="text form of a double value"):
        text_of(column("x", "double"), 0.5, "db.t")
    assert spark_cast_to_string("decimal(6,2)", Decimal("0.00"), "db.t") == "0.00"
    assert text_of(column("x", "decimal", length=6, scale=2), Decimal("1.5"), "db.t") == "1.50"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_after_compatible_ddl_the_oracle_equals_the_converted_model_rows(seed: int) -> None:
    """Cross-check: with drop-column ``drop`` and only Iceberg-compatible changes, replaying each
    row's last write through the DDLs gives exactly the model's current rows, converted."""
    sim = TicdcSimulator(seed=seed, partitions=1, workload=WorkloadConfig(tables=4))
    sim.run_transactions(40)
    sim.add_column(DB_SHOP, "orders", column("prio", "int", nullable=False, default="2"), first=True)
    sim.run_transactions(10)
    sim.rename_column(DB_SHOP, "orders", "city", "town")
    sim.modify_column(DB_SHOP, "order_lines", column("quantity", "bigint", nullable=False, default="1"))
    sim.create_index(DB_SHOP, "accounts", "uk", ("account_code", "owner"), unique=True)
    sim.drop_primary_key(DB_SHOP, "accounts")
    sim.run_transactions(20)
    sim.add_primary_key(DB_SHOP, "accounts", ("account_code",))
    sim.drop_column(DB_SHOP, "sensor_readings", "site")
    sim.rename_table(DB_SHOP, "sensor_readings", DB_SHOP, "readings")
    sim.run_transactions(20)
    for database, table in sim.model.tables():
        schema = sim.model.schema(database, table)
        converted = [
            {c.name: expected_iceberg_value(c, row[c.name]) for c in schema.columns}
            for row in sim.model.rows(database, table)
        ]
        assert sim.expected_iceberg_rows(database, table) == converted, table
        assert [n for n, _ in sim.expected_iceberg_columns(database, table)] == [c.name for c in schema.columns]
