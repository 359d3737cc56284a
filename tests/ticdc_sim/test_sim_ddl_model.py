"""The reference model under every DDL kind: schema after, rows before and after, TiDB's refusals."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
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
    create_index_change,
    drop_database_change,
    drop_index_change,
    drop_table_change,
    rename_table_change,
    truncate_table_change,
)
from ticdc_sim.model import DdlChange, DmlOp, RowChange, Transaction, UpstreamModel

DB, TB = "app", "items"


def _schema(table: str = TB, database: str = DB) -> TableSchema:
    cols = (
        column("id", "int", nullable=False),
        column("name", "varchar", length=8),
        column("qty", "int"),
        column("price", "decimal", length=6, scale=2),
    )
    indexes = (
        IndexSchema("idx_name", ("name",), nullable=True),
        IndexSchema("PRIMARY", ("id",), primary=True, unique=True),
    )
    return TableSchema(database, table, cols, indexes, table_id=7, version=9, source="simulator")


def _model(table: str = TB) -> UpstreamModel:
    model = UpstreamModel()
    model.apply_ddl(10, DdlChange("CREATE", "CREATE TABLE ...", DB, table, _schema(table)))
    rows: list[dict[str, Value]] = [
        {"id": 1, "name": "a", "qty": 5, "price": Decimal("1.50")},
        {"id": 2, "name": None, "qty": None, "price": None},
    ]
    model.apply(Transaction(20, tuple(RowChange(DmlOp.INSERT, DB, table, None, r) for r in rows)))
    return model


def _alter(model: UpstreamModel, ts: int, specs: Sequence[AlterSpec], table: str = TB) -> DdlChange:
    ddl = alter_change(model.schema(DB, table), specs, ts - 1)
    model.apply_ddl(ts, ddl, specs)
    return ddl


def _names(schema: TableSchema | None) -> list[str]:
    assert schema is not None
    return [c.name for c in schema.columns]


def test_add_column_gives_existing_rows_the_default_at_the_ddl_tso() -> None:
    model = _model()
    ddl = _alter(model, 30, [AddColumnSpec(column("rank", "int", nullable=False, default="3"), after="name")])
    assert _names(ddl.table_schema) == ["id", "name", "rank", "qty", "price"]
    assert ddl.table_schema is not None
    assert (ddl.table_schema.table_id, ddl.table_schema.version) == (7, 29)
    assert model.rows_at(DB, TB, 29) == [
        {"id": 1, "name": "a", "qty": 5, "price": Decimal("1.50")},
        {"id": 2, "name": None, "qty": None, "price": None},
    ]
    assert model.rows_at(DB, TB, 30) == [
        {"id": 1, "name": "a", "rank": 3, "qty": 5, "price": Decimal("1.50")},
        {"id": 2, "name": None, "rank": 3, "qty": None, "price": None},
    ]
    assert _names(model.schema_at(DB, TB, 29)) == ["id", "name", "qty", "price"]
    assert model.schema_at(DB, TB, 30) == ddl.table_schema
    assert model.schema_at(DB, TB, 9) is None


@pytest.mark.parametrize(
    ("col", "value"),
    [
        (column("n", "int", nullable=False), 0),
        (column("d", "decimal", length=5, scale=2, nullable=False), Decimal("0.00")),
        (column("s", "varchar", length=4, nullable=False), ""),
        (column("e", "enum", elements=("x", "y"), nullable=False), "x"),
        (column("f", "double", nullable=False), 0.0),
        (column("z", "varchar", length=4), None),
        (column("p", "decimal", length=5, scale=2, default="2.5"), Decimal("2.50")),
        (column("q", "float", default="0.1"), 0.10000000149011612),
    ],
)
def test_added_column_values_follow_mysql_defaults(col: ColumnSchema, value: Value) -> None:
    model = _model()
    _alter(model, 30, [AddColumnSpec(col, first=True)])
    rows = model.rows_at(DB, TB, 30)
    assert next(iter(rows[0])) == col.name
    assert [r[col.name] for r in rows] == [value, value]


def test_not_null_date_without_default_is_refused_as_unmodelled() -> None:
    with pytest.raises(SchemaError, match="implicit default"):
        _alter(_model(), 30, [AddColumnSpec(column("d", "date", nullable=False))])


def test_drop_and_rename_column_rewrite_rows_and_indexes() -> None:
    model = _model()
    ddl = _alter(model, 30, [DropColumnSpec("name")])
    assert ddl.table_schema is not None
    assert [i.name for i in ddl.table_schema.indexes] == ["PRIMARY"]  # its single-column index goes too
    assert model.rows_at(DB, TB, 30)[0] == {"id": 1, "qty": 5, "price": Decimal("1.50")}
    ddl = _alter(model, 40, [RenameColumnSpec("id", "item_id")])
    assert ddl.table_schema is not None
    assert ddl.table_schema.indexes[0].columns == ("item_id",)
    assert model.key_columns(DB, TB) == ("item_id",)
    assert model.rows_at(DB, TB, 40)[0] == {"item_id": 1, "qty": 5, "price": Decimal("1.50")}
    assert model.rows_at(DB, TB, 29)[0] == {"id": 1, "name": "a", "qty": 5, "price": Decimal("1.50")}


def test_dropping_a_primary_key_column_is_refused() -> None:
    with pytest.raises(SchemaError, match="part of index 'PRIMARY'"):
        _alter(_model(), 30, [DropColumnSpec("id")])


@pytest.mark.parametrize(
    ("new", "values"),
    [
        (column("qty", "bigint"), [5, None]),
        (column("qty", "bigint", unsigned=True), [5, None]),
        (column("qty", "varchar", length=4), ["5", None]),
        (column("price", "decimal", length=9, scale=2), [Decimal("1.50"), None]),
        (column("name", "varchar", length=2), ["a", None]),
    ],
)
def test_modify_column_converts_values_like_mysql(new: ColumnSchema, values: list[Value]) -> None:
    model = _model()
    _alter(model, 30, [ModifyColumnSpec(new)])
    assert [r[new.name] for r in model.rows_at(DB, TB, 30)] == values


def test_modify_column_refuses_values_that_no_longer_fit_and_unmodelled_kinds() -> None:
    model = _model()
    model.apply(
        Transaction(25, (RowChange(DmlOp.INSERT, DB, TB, None, {"id": 3, "name": "abc", "qty": -1, "price": None}),))
    )
    with pytest.raises(SchemaError, match="does not fit"):
        _alter(model, 30, [ModifyColumnSpec(column("qty", "int", unsigned=True))])
    with pytest.raises(SchemaError, match="does not fit"):
        _alter(model, 30, [ModifyColumnSpec(column("name", "varchar", length=2))])
    with pytest.raises(SchemaError, match="not modelled"):
        _alter(model, 30, [ModifyColumnSpec(column("price", "double"))])
    with pytest.raises(SchemaError, match="NULL in a NOT NULL column"):
        _alter(model, 30, [ModifyColumnSpec(column("qty", "int", nullable=False))])
    assert model.last_commit_ts == 25


def test_multi_spec_alter_is_one_ddl_applied_in_statement_order() -> None:
    model = _model()
    ddl = _alter(
        model,
        30,
        [
            AddColumnSpec(column("tier", "varchar", length=8, default="basic")),
            DropColumnSpec("qty"),
            AddIndexSpec("idx_tier", ("tier",)),
        ],
    )
    assert ddl.ddl_type == "ALTER"
    assert _names(ddl.table_schema) == ["id", "name", "price", "tier"]
    assert ddl.table_schema is not None
    assert [i.name for i in ddl.table_schema.indexes] == ["idx_name", "PRIMARY", "idx_tier"]
    assert [r["tier"] for r in model.rows_at(DB, TB, 30)] == ["basic", "basic"]
    assert len(model.ddls()) == 2
    with pytest.raises(SchemaError, match="changed twice in one statement"):
        _alter(model, 40, [AddColumnSpec(column("x", "int")), DropColumnSpec("x")])


def test_primary_key_changes_rekey_the_rows() -> None:
    model = _model()
    second = model.rows(DB, TB)[1]
    model.apply(Transaction(22, (RowChange(DmlOp.UPDATE, DB, TB, second, {**second, "name": "b"}),)))
    _alter(model, 25, [ModifyColumnSpec(column("name", "varchar", length=8, nullable=False))])
    ddl, spec = create_index_change(model.schema(DB, TB), "uk_name", ("name",), True, 25)
    model.apply_ddl(26, ddl, [spec])
    ddl = _alter(model, 30, [DropPrimaryKeySpec()])
    assert ddl.ddl_type == "DINDEX"
    assert model.key_columns(DB, TB) == ("name",)
    assert model.row(DB, TB, ("b",)) == {"id": 2, "name": "b", "qty": None, "price": None}
    ddl = _alter(model, 40, [AddIndexSpec("PRIMARY", ("id",), unique=True, primary=True)])
    assert ddl.ddl_type == "CINDEX"
    assert ddl.table_schema is not None
    assert ddl.table_schema.handle_key() == ("id",)
    assert model.key_columns(DB, TB) == ("id",)
    lineage = model.lineage_at(DB, TB, 40)
    assert lineage is not None
    assert [v.ts for v in lineage.versions[(1,)]] == [20, 30, 40]
    assert [v.ts for v in lineage.versions[("a",)]] == [30, 40]
    assert [r["id"] for r in model.rows_at(DB, TB, 40)] == [1, 2]
    assert [r["name"] for r in model.rows_at(DB, TB, 35)] == ["a", "b"]


def test_key_changes_refuse_nulls_duplicates_and_keyless_tables() -> None:
    model = _model()
    with pytest.raises(SchemaError, match="NULL in a NOT NULL column"):
        _alter(model, 30, [DropPrimaryKeySpec(), AddIndexSpec("PRIMARY", ("id", "qty"), unique=True, primary=True)])
    ddl, spec = create_index_change(model.schema(DB, TB), "uk", ("id", "price"), True, 24)
    model.apply_ddl(25, ddl, [spec])
    with pytest.raises(SchemaError, match="no primary or NOT NULL unique key"):
        _alter(model, 30, [DropPrimaryKeySpec()])  # uk's price is nullable
    second = model.rows(DB, TB)[1]
    model.apply(Transaction(31, (RowChange(DmlOp.UPDATE, DB, TB, second, {**second, "name": "a"}),)))
    with pytest.raises(SchemaError, match="duplicate entry"):
        _alter(model, 40, [AddIndexSpec("uk_name", ("name",), unique=True)])
    assert model.key_columns(DB, TB) == ("id",)


def test_index_ddl_changes_the_schema_only() -> None:
    model = _model()
    ddl, spec = create_index_change(model.schema(DB, TB), "idx_qty", ("qty", "price"), False, 29)
    model.apply_ddl(30, ddl, [spec])
    ddl2, spec2 = drop_index_change(model.schema(DB, TB), "idx_name", 39)
    model.apply_ddl(40, ddl2, [spec2])
    assert [(i.name, i.columns, i.nullable) for i in model.schema(DB, TB).indexes] == [
        ("PRIMARY", ("id",), False),
        ("idx_qty", ("qty", "price"), True),
    ]
    assert model.rows_at(DB, TB, 40) == model.rows_at(DB, TB, 20)
    assert [v.ts for v in model.lineage_at(DB, TB, 40).versions[(1,)]] == [20]  # type: ignore[union-attr]


def test_rename_table_moves_rows_and_history_to_the_new_name() -> None:
    model = _model()
    ddl = rename_table_change(model.schema(DB, TB), "other", "goods", 29)
    model.apply_ddl(30, ddl)
    assert (ddl.database, ddl.table) == ("other", "goods")
    assert model.tables() == [("other", "goods")]
    assert model.rows_at("other", "goods", 30) == model.rows_at(DB, TB, 29)
    assert len(model.rows_at("other", "goods", 30)) == 2
    assert model.rows_at(DB, TB, 30) == []
    assert model.schema_at(DB, TB, 30) is None
    assert model.rows_at("other", "goods", 20) == []  # the name did not exist then
    schema = model.schema("other", "goods")
    assert (schema.table_id, schema.version) == (7, 29)
    assert [s.table for _, s in model.schema_history("other", "goods")] == [TB, "goods"]
    with pytest.raises(SchemaError, match="not in the reference model"):
        model.schema(DB, TB)


def test_renames_of_one_statement_share_the_commit_tso_in_order() -> None:
    model = _model("a")
    model.apply_ddl(21, DdlChange("CREATE", "CREATE TABLE ...", DB, "b", _schema("b")))
    a_to_tmp = rename_table_change(model.schema(DB, "a"), DB, "tmp", 29)
    assert a_to_tmp.table_schema is not None
    b_to_a = rename_table_change(model.schema(DB, "b"), DB, "a", 29)
    assert b_to_a.table_schema is not None
    tmp_to_b = rename_table_change(a_to_tmp.table_schema, DB, "b", 29)
    model.apply_ddls(30, [(a_to_tmp, ()), (b_to_a, ()), (tmp_to_b, ())])
    assert [ts for ts, _ in model.ddls()][-3:] == [30, 30, 30]
    assert len(model.rows_at(DB, "b", 30)) == 2  # the swap: a's rows are under b now
    assert model.rows_at(DB, "a", 30) == []
    with pytest.raises(SchemaError, match="is not after"):
        model.apply_ddl(30, drop_table_change(model.schema(DB, "a")))


def test_truncate_empties_the_table_at_its_tso_with_a_new_table_id() -> None:
    model = _model()
    ddl = truncate_table_change(model.schema(DB, TB), 99, 29)
    model.apply_ddl(30, ddl)
    assert (ddl.ddl_type, ddl.sql) == ("TRUNCATE", "TRUNCATE TABLE `app`.`items`")
    assert model.schema(DB, TB).table_id == 99
    assert model.rows_at(DB, TB, 29) != []
    assert model.rows_at(DB, TB, 30) == []
    row: dict[str, Value] = {"id": 1, "name": "new", "qty": None, "price": None}
    model.apply(Transaction(40, (RowChange(DmlOp.INSERT, DB, TB, None, row),)))
    assert model.rows_at(DB, TB, 40) == [row]


def test_drop_then_create_makes_a_fresh_table_and_keeps_the_old_history() -> None:
    model = _model()
    ddl = drop_table_change(model.schema(DB, TB))
    assert (ddl.ddl_type, ddl.table_schema, ddl.pre_table_schema) == ("ERASE", None, model.schema(DB, TB))
    model.apply_ddl(30, ddl)
    assert model.tables() == []
    assert model.rows_at(DB, TB, 30) == []
    assert model.schema_at(DB, TB, 30) is None
    model.apply_ddl(40, DdlChange("CREATE", "CREATE TABLE ...", DB, TB, _schema()))
    assert model.rows_at(DB, TB, 40) == []
    assert len(model.rows_at(DB, TB, 29)) == 2
    assert [ts for ts, _ in model.schema_history(DB, TB)] == [40]
    assert model.lineage_at(DB, TB, 29) is not model.lineage_at(DB, TB, 40)


def test_drop_database_drops_its_tables() -> None:
    model = _model()
    model.apply_ddl(21, DdlChange("CREATE", "CREATE TABLE ...", "keep", TB, _schema(TB, "keep")))
    model.apply_ddl(30, drop_database_change(DB))
    assert model.tables() == [("keep", TB)]
    assert model.rows_at(DB, TB, 30) == []
    assert len(model.rows_at(DB, TB, 29)) == 2


def test_an_alter_whose_schema_does_not_follow_from_its_specs_is_refused() -> None:
    model = _model()
    good = alter_change(model.schema(DB, TB), [DropColumnSpec("qty")], 29)
    with pytest.raises(SchemaError, match="does not follow from its specs"):
        model.apply_ddl(30, good, [DropColumnSpec("price")])
    with pytest.raises(SchemaError, match="no ALTER specs say how"):
        model.apply_ddl(30, good)
    with pytest.raises(SchemaError, match="never existed"):
        model.rows_at(DB, "nope", 30)
    assert model.ddls()[-1][1].ddl_type == "CREATE"
