"""DDL → Iceberg change plans, for each DDL kind and policy (no Spark)."""

from __future__ import annotations

from dataclasses import replace

from ticdc_lake import tso
from ticdc_lake.apply.ddl_changes import (
    AddIcebergColumn,
    ColumnToString,
    CreateNamespace,
    CreateTable,
    DropIcebergColumn,
    DropIcebergTable,
    DropNamespace,
    MoveColumn,
    RenameIcebergColumn,
    RenameIcebergTable,
    SetIdentifierFields,
    TruncateTable,
    WidenColumn,
    describe_change,
)
from ticdc_lake.apply.ddl_fill import fill_value, implicit_default
from ticdc_lake.apply.ddl_plan import DdlEvent, IcebergColumn, dropped_name, plan_ddl, renamed_from
from ticdc_lake.config import DropColumnPolicy, DropTablePolicy, Policies, TypeChangePolicy
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema

PK = (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
TS = 450_000_000_000_000_000


def _schema(*columns: ColumnSchema, indexes: tuple[IndexSchema, ...] = PK, table: str = "t") -> TableSchema:
    return TableSchema("db", table, columns, indexes)


ID = ColumnSchema("id", "int", nullable=False)
A = ColumnSchema("a", "int")
B = ColumnSchema("b", "varchar", length=10)
PRE = _schema(ID, A, B)
#: The Iceberg columns of PRE.
CURRENT = [IcebergColumn("id", "int", True), IcebergColumn("a", "int"), IcebergColumn("b", "string")]


def _event(query: str, post: TableSchema | None, kind: str = "ALTER", pre: TableSchema | None = PRE) -> DdlEvent:
    return DdlEvent(TS, kind, query, "db", "t", pre, post)


def test_create_table_and_database_ddl() -> None:
    assert plan_ddl(_event("CREATE TABLE t (id INT PRIMARY KEY)", PRE, "CREATE", None), Policies(), None).changes == [
        CreateTable(PRE)
    ]
    create_db = DdlEvent(TS, "CREATE", "CREATE DATABASE shop", "shop", None)
    assert plan_ddl(create_db, Policies(), None).changes == [CreateNamespace("shop")]
    drop_db = DdlEvent(TS, "ERASE", "DROP DATABASE shop", "shop", None)
    assert plan_ddl(drop_db, Policies(), None).changes == [DropNamespace("shop")]


def test_add_column_with_default_position_and_implicit_default() -> None:
    post = _schema(ID, A, ColumnSchema("c", "int", nullable=False, default="5"), B)
    plan = plan_ddl(_event("ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT 5 AFTER a", post), Policies(), CURRENT)
    assert plan.changes == [AddIcebergColumn("c", "int", after="a", fill="5")]
    post = _schema(ID, A, B, ColumnSchema("d", "varchar", nullable=False))
    plan = plan_ddl(_event("ALTER TABLE t ADD COLUMN d VARCHAR(5) NOT NULL FIRST", post), Policies(), CURRENT)
    assert plan.changes == [AddIcebergColumn("d", "string", first=True, fill="")]
    assert implicit_default(ColumnSchema("e", "enum", nullable=False, elements=("x", "y"))) == "x"
    assert implicit_default(ColumnSchema("e", "datetime", nullable=False)) == "0000-00-00 00:00:00"


def test_fill_values_follow_canonical_text() -> None:
    at = tso.from_datetime(tso.to_datetime(TS).replace(year=2024, month=1, day=2, hour=3, minute=4, second=5))
    stamp = ColumnSchema("s", "timestamp", default="CURRENT_TIMESTAMP")
    assert fill_value(stamp, at) == ("2024-01-02T03:04:05Z", None)
    assert fill_value(ColumnSchema("d", "datetime", default="CURRENT_TIMESTAMP"), at, "Asia/Shanghai") == (
        "2024-01-02 11:04:05",
        None,
    )
    assert fill_value(ColumnSchema("t", "timestamp", default="2024-01-01 08:00:00"), at, "Asia/Shanghai") == (
        "2024-01-01T00:00:00Z",
        None,
    )
    assert fill_value(ColumnSchema("b", "varbinary", default="AB"), at) == ("QUI=", None)
    assert fill_value(ColumnSchema("u", "varchar", default="(uuid())"), at)[0] == "(uuid())"
    value, note = fill_value(ColumnSchema("u", "bigint", default="(rand())"), at)
    assert value is None
    assert note == "the default '(rand())' of column 'u' is an expression; existing rows get NULL"


def test_drop_column_follows_on_drop_column() -> None:
    post = _schema(ID, A)
    assert plan_ddl(_event("ALTER TABLE t DROP COLUMN b", post), Policies(), CURRENT).changes == [
        DropIcebergColumn("b")
    ]
    keep = Policies(on_drop_column=DropColumnPolicy.KEEP)
    kept = plan_ddl(_event("ALTER TABLE t DROP COLUMN b", post), keep, CURRENT)
    assert kept.changes == []
    assert kept.notes == ["column 'b' kept (on_drop_column: keep); new rows hold NULL in it"]


def test_rename_and_change_column_come_from_the_statement() -> None:
    post = _schema(ID, ColumnSchema("a2", "int"), B)
    plan = plan_ddl(_event("ALTER TABLE t RENAME COLUMN a TO a2", post), Policies(), CURRENT)
    assert plan.changes == [RenameIcebergColumn("a", "a2")]
    post = _schema(ID, ColumnSchema("a2", "bigint"), B)
    plan = plan_ddl(_event("ALTER TABLE t CHANGE COLUMN a a2 BIGINT", post), Policies(), CURRENT)
    assert plan.changes == [RenameIcebergColumn("a", "a2"), WidenColumn("a2", "long")]


def test_modify_widening_incompatible_and_fail_policy() -> None:
    post = _schema(ID, ColumnSchema("a", "bigint"), B)
    assert plan_ddl(_event("ALTER TABLE t MODIFY a BIGINT", post), Policies(), CURRENT).changes == [
        WidenColumn("a", "long")
    ]
    post = _schema(ID, ColumnSchema("a", "varchar", length=20), B)
    query = "ALTER TABLE t MODIFY a VARCHAR(20) FIRST"
    plan = plan_ddl(_event(query, post), Policies(), CURRENT)
    assert plan.changes == [ColumnToString("a"), MoveColumn("a", first=True)]
    held = plan_ddl(_event(query, post), Policies(on_incompatible_type_change=TypeChangePolicy.FAIL), CURRENT)
    assert held.changes == []
    assert held.held == (
        f"DDL ALTER at commit ts {TS} on db.t ('ALTER TABLE t MODIFY a VARCHAR(20) FIRST'): column 'a' changes from "
        "Iceberg type int to string, which Iceberg cannot do in place; set policies.on_incompatible_type_change to "
        "keep_as_string to keep the column as text"
    )
    # A column already kept as string stays string: nothing to do.
    current = [IcebergColumn("id", "int", True), IcebergColumn("a", "string"), IcebergColumn("b", "string")]
    post = _schema(ID, ColumnSchema("a", "bigint"), B)
    assert plan_ddl(_event("ALTER TABLE t MODIFY a BIGINT", post), Policies(), current).changes == []


def test_multi_spec_alter_keeps_spec_order() -> None:
    post = _schema(ID, ColumnSchema("a", "bigint"), ColumnSchema("c", "int"))
    query = "ALTER TABLE t DROP COLUMN b, MODIFY a BIGINT, ADD COLUMN c INT"
    assert plan_ddl(_event(query, post), Policies(), CURRENT).changes == [
        DropIcebergColumn("b"),
        WidenColumn("a", "long"),
        AddIcebergColumn("c", "int"),
    ]


def test_primary_key_changes_set_identifier_fields() -> None:
    no_key = replace(PRE, indexes=())
    plan = plan_ddl(_event("ALTER TABLE t DROP PRIMARY KEY", no_key), Policies(), CURRENT)
    assert plan.changes == [SetIdentifierFields(())]
    plan = plan_ddl(_event("ALTER TABLE t ADD PRIMARY KEY (id)", PRE, pre=no_key), Policies(), CURRENT)
    assert plan.changes == [SetIdentifierFields(("id",))]
    index = plan_ddl(_event("CREATE INDEX i ON t (a)", PRE, kind="CINDEX"), Policies(), CURRENT)
    assert index.changes == []


def test_rename_truncate_drop_table() -> None:
    renamed = _schema(ID, A, B, table="t2")
    plan = plan_ddl(_event("RENAME TABLE t TO t2", renamed, kind="RENAME"), Policies(), CURRENT)
    assert plan.changes == [RenameIcebergTable("db", "t", "db", "t2")]
    plan = plan_ddl(_event("ALTER TABLE t RENAME TO t2", renamed), Policies(), CURRENT)
    assert plan.changes == [RenameIcebergTable("db", "t", "db", "t2")]
    assert plan_ddl(_event("TRUNCATE TABLE t", None, kind="TRUNCATE"), Policies(), None).changes == [TruncateTable()]
    drop = _event("DROP TABLE t", None, kind="ERASE")
    assert plan_ddl(drop, Policies(), None).changes == [DropIcebergTable(keep=True)]
    assert plan_ddl(drop, Policies(on_drop_table=DropTablePolicy.DROP), None).changes == [DropIcebergTable(keep=False)]
    assert dropped_name("t", 12) == "t__dropped_12"


def test_unknown_schema_holds_the_table() -> None:
    event = DdlEvent(TS, "ALTER", "ALTER TABLE t FROBNICATE", "db", "t", PRE, None, schema_error="not understood")
    assert plan_ddl(event, Policies(), None).held == (
        f"DDL ALTER at commit ts {TS} on db.t ('ALTER TABLE t FROBNICATE'): its schema could not be derived: "
        "not understood"
    )
    missing = plan_ddl(_event("ALTER TABLE t ADD COLUMN c INT", None), Policies(), None)
    assert missing.held is not None
    assert missing.held.endswith("the DDL event carries no table schema, so its effect is unknown")
    view = plan_ddl(_event("CREATE VIEW v AS SELECT 1", None, kind="QUERY"), Policies(), None)
    assert view.held is None
    assert view.changes == []


def test_ledger_text_of_changes() -> None:
    assert describe_change(AddIcebergColumn("c", "int", fill="7")) == "ADD COLUMN c (existing rows: '7')"
    assert describe_change(RenameIcebergTable("db", "a", "db", "b")) == "RENAME TABLE TO db.b"
    assert describe_change(SetIdentifierFields(("id", "k"))) == "IDENTIFIER FIELDS (id, k)"


def test_alter_of_a_table_not_in_iceberg_yet_creates_it_as_after_the_ddl() -> None:
    post = _schema(ID, A, B, ColumnSchema("c", "int"))
    plan = plan_ddl(_event("ALTER TABLE t ADD COLUMN c INT", post), Policies(), None)
    assert plan.changes == [CreateTable(post)]
    assert plan.notes == ["the Iceberg table did not exist: created as after the DDL"]


def test_renamed_from_reads_the_statement_when_the_schema_before_is_missing() -> None:
    pair = DdlEvent(TS, "RENAME", "RENAME TABLE a TO b, c TO d", "db", "d")
    assert renamed_from(pair) == ("db", "c")
    alter = DdlEvent(TS, "ALTER", "ALTER TABLE other.a RENAME TO db.b", "db", "b")
    assert renamed_from(alter) == ("other", "a")
    assert renamed_from(DdlEvent(TS, "ALTER", "ALTER TABLE b ADD COLUMN c INT", "db", "b")) is None
    with_pre = DdlEvent(TS, "RENAME", "RENAME TABLE t TO t2", "db", "t2", PRE, _schema(ID, A, B, table="t2"))
    assert renamed_from(with_pre) == ("db", "t")
