"""apply_alter: a table's schema through every ALTER TABLE spec, CREATE/DROP INDEX and RENAME TABLE."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.ddl_parser import apply_alter, parse_create_table, parse_ddl
from ticdc_lake.schema.ddl_statements import (
    AlterTableStatement,
    CreateIndexStatement,
    DropIndexStatement,
    RenameTablesStatement,
    TableName,
)
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.ddl_sql import create_table_sql

BIN: dict[str, Any] = {"charset": "binary", "collation": "binary"}
BASE = (
    "CREATE TABLE `shop`.`t` (id BIGINT NOT NULL, name VARCHAR(20), qty INT DEFAULT 1, note TEXT, "
    "PRIMARY KEY (id), UNIQUE KEY uk_name (name), KEY idx_qty_name (qty, name)) DEFAULT CHARSET=utf8mb4"
)


def base() -> TableSchema:
    return parse_create_table(BASE, None)


def alter(schema: TableSchema, sql: str) -> TableSchema:
    statements = parse_ddl(sql, "shop")
    assert len(statements) == 1
    statement = statements[0]
    assert isinstance(
        statement, AlterTableStatement | CreateIndexStatement | DropIndexStatement | RenameTablesStatement
    )
    return apply_alter(schema, statement)


def names(schema: TableSchema) -> list[str]:
    return [c.name for c in schema.columns]


def index(schema: TableSchema, name: str) -> IndexSchema:
    return next(i for i in schema.indexes if i.name == name)


def text_column(name: str, **attrs: Any) -> ColumnSchema:
    return ColumnSchema(name, **{"mysql_type": "varchar", "charset": "utf8mb4", "collation": "utf8mb4_bin", **attrs})


def test_base_schema() -> None:
    schema = base()
    assert names(schema) == ["id", "name", "qty", "note"]
    assert schema.indexes == (
        IndexSchema("PRIMARY", ("id",), primary=True, unique=True),
        IndexSchema("uk_name", ("name",), unique=True, nullable=True),
        IndexSchema("idx_qty_name", ("qty", "name"), nullable=True),
    )
    assert schema.extra == {"default_charset": "utf8mb4", "default_collation": "utf8mb4_bin"}


# ---------------------------------------------------------------- columns


@pytest.mark.parametrize(
    ("spec", "order"),
    [
        ("ADD COLUMN c INT", ["id", "name", "qty", "note", "c"]),
        ("ADD COLUMN c INT FIRST", ["c", "id", "name", "qty", "note"]),
        ("ADD COLUMN c INT AFTER `NAME`", ["id", "name", "c", "qty", "note"]),
        ("ADD COLUMN (c INT, d INT)", ["id", "name", "qty", "note", "c", "d"]),
        ("ADD c INT FIRST, ADD d INT AFTER c", ["c", "d", "id", "name", "qty", "note"]),
        ("MODIFY note TEXT FIRST", ["note", "id", "name", "qty"]),
        ("MODIFY COLUMN id BIGINT AFTER qty", ["name", "qty", "id", "note"]),
        ("CHANGE note remark TEXT AFTER id", ["id", "remark", "name", "qty"]),
        ("DROP COLUMN qty, ADD COLUMN qty INT FIRST", ["qty", "id", "name", "note"]),
    ],
)
def test_column_order(spec: str, order: list[str]) -> None:
    assert names(alter(base(), f"ALTER TABLE t {spec}")) == order


def test_added_text_column_takes_the_table_charset() -> None:
    schema = alter(base(), "ALTER TABLE t ADD COLUMN c VARCHAR(5) NOT NULL DEFAULT 'x'")
    assert schema.columns[-1] == text_column("c", length=5, nullable=False, default="x")
    own = alter(base(), "ALTER TABLE t ADD COLUMN c VARCHAR(5) CHARACTER SET latin1")
    assert (own.columns[-1].charset, own.columns[-1].collation) == ("latin1", "latin1_bin")


def test_added_text_column_keeps_unknown_charset_when_the_table_has_none() -> None:
    schema = parse_create_table("CREATE TABLE d.t (a INT)", None)
    assert alter(schema, "ALTER TABLE d.t ADD b CHAR(2)").columns[-1] == ColumnSchema("b", "char", length=2)


def test_added_column_with_inline_keys() -> None:
    schema = alter(
        base(), "ALTER TABLE t DROP PRIMARY KEY, ADD COLUMN k INT AUTO_INCREMENT PRIMARY KEY, ADD u INT UNIQUE"
    )
    assert schema.indexes[-2:] == (
        IndexSchema("PRIMARY", ("k",), primary=True, unique=True),
        IndexSchema("u", ("u",), unique=True, nullable=True),
    )
    assert schema.column("k") == ColumnSchema("k", "int", length=11, nullable=False, **BIN)


def test_modify_column_replaces_the_definition() -> None:
    schema = alter(base(), "ALTER TABLE t MODIFY qty BIGINT UNSIGNED NOT NULL DEFAULT 5")
    assert schema.column("qty") == ColumnSchema(
        "qty", "bigint", length=20, unsigned=True, nullable=False, default="5", **BIN
    )
    assert index(schema, "idx_qty_name").nullable  # name is still nullable


def test_modify_column_updates_index_nullability() -> None:
    schema = alter(base(), "ALTER TABLE t MODIFY name VARCHAR(40) NOT NULL")
    assert schema.column("name") == text_column("name", length=40, nullable=False)
    assert not index(schema, "uk_name").nullable
    assert schema.handle_key() == ("id",)


def test_change_column_renames_in_indexes() -> None:
    schema = alter(base(), "ALTER TABLE t CHANGE COLUMN `name` `full name` VARCHAR(30)")
    assert names(schema) == ["id", "full name", "qty", "note"]
    assert index(schema, "uk_name").columns == ("full name",)
    assert index(schema, "idx_qty_name").columns == ("qty", "full name")


def test_modify_primary_key_column_stays_not_null() -> None:
    schema = alter(base(), "ALTER TABLE t MODIFY id INT")
    assert schema.column("id") == ColumnSchema("id", "int", length=11, nullable=False, **BIN)


def test_rename_column() -> None:
    schema = alter(base(), "ALTER TABLE t RENAME COLUMN qty TO quantity")
    assert names(schema) == ["id", "name", "quantity", "note"]
    assert index(schema, "idx_qty_name").columns == ("quantity", "name")
    assert alter(base(), "ALTER TABLE t RENAME COLUMN qty TO QTY").columns[2].name == "QTY"


def test_drop_column_removes_it_from_indexes() -> None:
    schema = alter(base(), "ALTER TABLE t DROP COLUMN name")
    assert names(schema) == ["id", "qty", "note"]
    assert schema.indexes == (
        IndexSchema("PRIMARY", ("id",), primary=True, unique=True),
        IndexSchema("idx_qty_name", ("qty",), nullable=True),
    )


def test_set_and_drop_default() -> None:
    schema = alter(base(), "ALTER TABLE t ALTER COLUMN qty SET DEFAULT 7, ALTER name SET DEFAULT 'n'")
    assert (schema.column("qty").default, schema.column("name").default) == ("7", "n")  # type: ignore[union-attr]
    assert alter(schema, "ALTER TABLE t ALTER qty DROP DEFAULT").column("qty").default is None  # type: ignore[union-attr]


def test_bit_literal_default_depends_on_the_column_type() -> None:
    schema = alter(base(), "ALTER TABLE t ALTER qty SET DEFAULT b'101', ALTER name SET DEFAULT x'4142'")
    assert (schema.column("qty").default, schema.column("name").default) == ("5", "AB")  # type: ignore[union-attr]


def test_generated_columns_are_followed() -> None:
    schema = alter(base(), "ALTER TABLE t ADD g INT AS (qty * 2) VIRTUAL, ADD h INT AS (qty) STORED")
    assert schema.extra["generated_columns"] == {"g": "VIRTUAL", "h": "STORED"}
    schema = alter(schema, "ALTER TABLE t RENAME COLUMN g TO g2, DROP COLUMN h")
    assert schema.extra["generated_columns"] == {"g2": "VIRTUAL"}
    schema = alter(schema, "ALTER TABLE t MODIFY g2 INT")
    assert "generated_columns" not in schema.extra


def test_if_exists_and_if_not_exists_are_no_ops() -> None:
    schema = base()
    assert alter(schema, "ALTER TABLE t ADD COLUMN IF NOT EXISTS qty BIGINT") == schema
    assert alter(schema, "ALTER TABLE t DROP COLUMN IF EXISTS nope") == schema
    assert alter(schema, "ALTER TABLE t DROP INDEX IF EXISTS nope") == schema
    assert alter(schema, "ALTER TABLE t ADD INDEX IF NOT EXISTS uk_name (qty)") == schema


# ---------------------------------------------------------------- keys


def test_add_and_drop_primary_key() -> None:
    schema = alter(base(), "ALTER TABLE t DROP PRIMARY KEY")
    assert [i.name for i in schema.indexes] == ["uk_name", "idx_qty_name"]
    assert schema.column("id").nullable is False  # type: ignore[union-attr]
    schema = alter(schema, "ALTER TABLE t ADD PRIMARY KEY (name, qty)")
    assert index(schema, "PRIMARY") == IndexSchema("PRIMARY", ("name", "qty"), primary=True, unique=True)
    assert [c.nullable for c in schema.columns] == [False, False, False, True]
    assert not index(schema, "idx_qty_name").nullable
    assert schema.handle_key() == ("name", "qty")


def test_drop_index_primary_drops_the_primary_key() -> None:
    schema = alter(base(), "DROP INDEX `PRIMARY` ON t")
    assert all(not i.primary for i in schema.indexes)


def test_add_indexes_get_mysql_names() -> None:
    schema = alter(base(), "ALTER TABLE t ADD INDEX (qty), ADD UNIQUE (qty), ADD KEY (name), ADD INDEX ((qty + 1))")
    assert schema.indexes[3:] == (
        IndexSchema("qty", ("qty",), nullable=True),
        IndexSchema("qty_2", ("qty",), unique=True, nullable=True),
        IndexSchema("name", ("name",), nullable=True),
        IndexSchema("expression_index", ()),
    )


def test_create_and_drop_index_statements() -> None:
    schema = alter(base(), "CREATE UNIQUE INDEX uq ON shop.t (qty)")
    assert index(schema, "uq") == IndexSchema("uq", ("qty",), unique=True, nullable=True)
    schema = alter(schema, "DROP INDEX uq ON t")
    assert [i.name for i in schema.indexes] == ["PRIMARY", "uk_name", "idx_qty_name"]


def test_unique_not_null_key_becomes_the_handle_after_dropping_the_primary_key() -> None:
    schema = alter(base(), "ALTER TABLE t MODIFY name VARCHAR(20) NOT NULL, DROP PRIMARY KEY")
    assert schema.handle_key() == ("name",)


def test_rename_index() -> None:
    schema = alter(base(), "ALTER TABLE t RENAME INDEX uk_name TO uk_n, RENAME KEY IDX_QTY_NAME TO i2")
    assert [i.name for i in schema.indexes] == ["PRIMARY", "uk_n", "i2"]


def test_multi_statement_alter_applies_in_order() -> None:
    schema = alter(
        base(),
        "ALTER TABLE shop.t ADD COLUMN c INT NOT NULL AFTER id, ADD UNIQUE KEY uk_c (c), DROP INDEX uk_name, "
        "MODIFY note MEDIUMTEXT, RENAME COLUMN qty TO quantity, ALGORITHM=INSTANT",
    )
    assert names(schema) == ["id", "c", "name", "quantity", "note"]
    assert [(i.name, i.columns) for i in schema.indexes] == [
        ("PRIMARY", ("id",)),
        ("idx_qty_name", ("quantity", "name")),
        ("uk_c", ("c",)),
    ]
    assert schema.column("note") == text_column("note", mysql_type="mediumtext", length=16777215)


# ---------------------------------------------------------------- table level


def test_rename_table_spec_and_statement() -> None:
    schema = alter(base(), "ALTER TABLE t RENAME TO archive.t_old")
    assert (schema.database, schema.table) == ("archive", "t_old")
    schema = alter(base(), "ALTER TABLE t RENAME AS t2")
    assert (schema.database, schema.table) == ("shop", "t2")
    schema = alter(base(), "RENAME TABLE other.x TO other.y, shop.t TO shop.t3")
    assert (schema.database, schema.table) == ("shop", "t3")


def test_table_options_change_later_columns_only() -> None:
    schema = alter(base(), "ALTER TABLE t DEFAULT CHARSET = latin1, COMMENT 'c'")
    assert schema.extra == {"default_charset": "latin1", "default_collation": "latin1_bin", "comment": "c"}
    assert schema.column("name") == text_column("name", length=20)
    schema = alter(schema, "ALTER TABLE t ADD x VARCHAR(3)")
    assert (schema.columns[-1].charset, schema.columns[-1].collation) == ("latin1", "latin1_bin")
    schema = alter(schema, "ALTER TABLE t COLLATE utf8mb4_general_ci")
    assert schema.extra["default_charset"] == "utf8mb4"
    assert schema.extra["default_collation"] == "utf8mb4_general_ci"


def test_convert_to_charset_changes_every_textual_column() -> None:
    schema = alter(base(), "ALTER TABLE t CONVERT TO CHARACTER SET latin1 COLLATE latin1_swedish_ci")
    assert [(c.charset, c.collation) for c in schema.columns] == [
        ("binary", "binary"),
        ("latin1", "latin1_swedish_ci"),
        ("binary", "binary"),
        ("latin1", "latin1_swedish_ci"),
    ]
    assert schema.extra["default_charset"] == "latin1"


def test_ignored_specs_change_nothing() -> None:
    sql = "ALTER TABLE t ALGORITHM=INPLACE, LOCK=NONE, ADD PARTITION (PARTITION p1 VALUES LESS THAN (10))"
    assert alter(base(), sql) == base()


def test_followed_schema_equals_a_fresh_create_table() -> None:
    """After a chain of ALTERs the schema is what CREATE TABLE of the result text gives."""
    schema = base()
    for sql in (
        "ALTER TABLE t ADD COLUMN price DECIMAL(12,2) NOT NULL DEFAULT '0.00' AFTER qty, ADD KEY (price)",
        "ALTER TABLE t CHANGE note remark VARCHAR(200) CHARACTER SET latin1 NULL FIRST, DROP INDEX uk_name",
        "ALTER TABLE t ADD COLUMN flags SET('a','b') NOT NULL DEFAULT 'a,b', ADD UNIQUE KEY uk (flags, id)",
        "ALTER TABLE t MODIFY qty SMALLINT UNSIGNED, RENAME INDEX price TO idx_price, DROP COLUMN name",
        "ALTER TABLE t ADD COLUMN at DATETIME(3) DEFAULT '2020-01-01 00:00:00.000', ALTER qty SET DEFAULT 9",
    ):
        schema = alter(schema, sql)
    fresh = parse_create_table(create_table_sql(schema), None)
    assert fresh.columns == schema.columns
    assert [replace(i, name=i.name.lower()) for i in fresh.indexes] == [
        replace(i, name=i.name.lower()) for i in schema.indexes
    ]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("ALTER TABLE t ADD COLUMN QTY INT", "ADD COLUMN: column 'QTY' already exists"),
        ("ALTER TABLE t ADD COLUMN c INT AFTER nope", "AFTER 'nope': the column does not exist"),
        ("ALTER TABLE t DROP COLUMN nope", "DROP COLUMN: column 'nope' does not exist"),
        ("ALTER TABLE t MODIFY nope INT", "column 'nope' does not exist"),
        ("ALTER TABLE t CHANGE qty name INT", "column 'name' already exists"),
        ("ALTER TABLE t RENAME COLUMN qty TO note", "column 'note' already exists"),
        ("ALTER TABLE t RENAME COLUMN nope TO x", "column 'nope' does not exist"),
        ("ALTER TABLE t ALTER nope SET DEFAULT 1", "column 'nope' does not exist"),
        ("ALTER TABLE t ADD PRIMARY KEY (qty)", "the table already has a primary key"),
        ("ALTER TABLE t ADD INDEX uk_name (qty)", "duplicate key name 'uk_name'"),
        ("ALTER TABLE t ADD INDEX i (nope)", "key 'i' names column 'nope', which does not exist"),
        ("ALTER TABLE t DROP INDEX nope", "DROP INDEX: index 'nope' does not exist"),
        ("ALTER TABLE t DROP PRIMARY KEY, DROP PRIMARY KEY", "DROP PRIMARY KEY: the table has no primary key"),
        ("ALTER TABLE t RENAME INDEX nope TO x", "index 'nope' does not exist"),
        ("ALTER TABLE t RENAME INDEX uk_name TO idx_qty_name", "RENAME INDEX: index 'idx_qty_name' already exists"),
        ("ALTER TABLE other.t ADD c INT", "the DDL changes table other.t, not this one"),
        ("ALTER TABLE t2 ADD c INT", "the DDL changes table shop.t2, not this one"),
        ("RENAME TABLE shop.x TO shop.y", "the DDL does not rename this table"),
    ],
)
def test_spec_that_cannot_apply(sql: str, problem: str) -> None:
    with pytest.raises(SchemaError) as caught:
        alter(base(), sql)
    assert str(caught.value) == f"table shop.t: {problem}; the DDL was: {sql}"


def test_table_names_compare_case_insensitively() -> None:
    statement = AlterTableStatement("ALTER TABLE SHOP.T FORCE", TableName("SHOP", "T"), ())
    assert apply_alter(base(), statement) == base()
