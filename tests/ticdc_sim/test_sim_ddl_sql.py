"""DdlChange builders: the SQL text TiCDC would carry, the Simple subtype and the schemas."""

from __future__ import annotations

import re

import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.ddl_changes import (
    AddColumnSpec,
    AddIndexSpec,
    AlterSpec,
    DropColumnSpec,
    DropIndexSpec,
    DropPrimaryKeySpec,
    ModifyColumnSpec,
    RenameColumnSpec,
    alter_change,
    create_database_change,
    create_index_change,
    drop_database_change,
    drop_index_change,
    drop_table_change,
    rename_table_change,
    truncate_table_change,
)
from ticdc_sim.ddl_sql import rename_table_sql

PRE = TableSchema(
    "db",
    "t",
    (column("id", "int", nullable=False), column("name", "varchar", length=8), column("qty", "int")),
    (IndexSchema("idx_name", ("name",), nullable=True), IndexSchema("PRIMARY", ("id",), primary=True, unique=True)),
    table_id=5,
    version=6,
    source="simulator",
)


@pytest.mark.parametrize(
    ("specs", "ddl_type", "sql"),
    [
        (
            [AddColumnSpec(ColumnSchema("c", "int", default="5"))],
            "ALTER",
            "ALTER TABLE `db`.`t` ADD COLUMN `c` int NULL DEFAULT '5'",
        ),
        (
            [AddColumnSpec(column("c", "varchar", length=4, nullable=False), first=True)],
            "ALTER",
            "ALTER TABLE `db`.`t` ADD COLUMN `c` varchar(4) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL FIRST",
        ),
        (
            [AddColumnSpec(column("c", "decimal", length=8, scale=3), after="id")],
            "ALTER",
            "ALTER TABLE `db`.`t` ADD COLUMN `c` decimal(8,3) NULL AFTER `id`",
        ),
        ([DropColumnSpec("qty")], "ALTER", "ALTER TABLE `db`.`t` DROP COLUMN `qty`"),
        ([RenameColumnSpec("qty", "q`ty")], "ALTER", "ALTER TABLE `db`.`t` RENAME COLUMN `qty` TO `q``ty`"),
        (
            [ModifyColumnSpec(column("qty", "bigint", unsigned=True, nullable=False, default="0"))],
            "ALTER",
            "ALTER TABLE `db`.`t` MODIFY COLUMN `qty` bigint unsigned NOT NULL DEFAULT '0'",
        ),
        ([AddIndexSpec("i", ("qty", "name"))], "CINDEX", "ALTER TABLE `db`.`t` ADD INDEX `i` (`qty`,`name`)"),
        ([AddIndexSpec("u", ("qty",), unique=True)], "CINDEX", "ALTER TABLE `db`.`t` ADD UNIQUE INDEX `u` (`qty`)"),
        ([DropIndexSpec("idx_name")], "DINDEX", "ALTER TABLE `db`.`t` DROP INDEX `idx_name`"),
        ([DropPrimaryKeySpec()], "DINDEX", "ALTER TABLE `db`.`t` DROP PRIMARY KEY"),
        (
            [DropPrimaryKeySpec(), AddIndexSpec("PRIMARY", ("id", "qty"), unique=True, primary=True)],
            "ALTER",
            "ALTER TABLE `db`.`t` DROP PRIMARY KEY, ADD PRIMARY KEY (`id`,`qty`)",
        ),
        (
            [AddColumnSpec(column("tier", "int")), DropColumnSpec("name"), AddIndexSpec("i", ("tier",))],
            "ALTER",
            "ALTER TABLE `db`.`t` ADD COLUMN `tier` int NULL, DROP COLUMN `name`, ADD INDEX `i` (`tier`)",
        ),
    ],
)
def test_alter_sql_and_subtype(specs: list[AlterSpec], ddl_type: str, sql: str) -> None:
    ddl = alter_change(PRE, specs, 41)
    assert (ddl.ddl_type, ddl.sql, ddl.database, ddl.table) == (ddl_type, sql, "db", "t")
    assert ddl.pre_table_schema == PRE
    assert ddl.table_schema is not None
    assert (ddl.table_schema.table_id, ddl.table_schema.version, ddl.table_schema.source) == (5, 41, "simulator")


def test_added_column_is_completed_like_tidb_describes_it() -> None:
    ddl = alter_change(PRE, [AddColumnSpec(ColumnSchema("c", "varchar", length=4))], 41)
    assert ddl.table_schema is not None
    assert ddl.table_schema.columns[-1] == ColumnSchema(
        "c", "varchar", length=4, charset="utf8mb4", collation="utf8mb4_bin"
    )
    ddl = alter_change(PRE, [AddColumnSpec(ColumnSchema("n", "int"))], 41)
    assert ddl.table_schema is not None
    assert ddl.table_schema.columns[-1] == ColumnSchema("n", "int", length=11, charset="binary", collation="binary")


def test_primary_key_spec_makes_its_columns_not_null() -> None:
    ddl = alter_change(PRE, [DropPrimaryKeySpec(), AddIndexSpec("PRIMARY", ("qty",), primary=True)], 41)
    assert ddl.table_schema is not None
    assert ddl.table_schema.column("qty") == column("qty", "int", nullable=False)
    assert ddl.table_schema.indexes == (
        IndexSchema("idx_name", ("name",), nullable=True),
        IndexSchema("PRIMARY", ("qty",), primary=True, unique=True, nullable=False),
    )


def test_index_statements() -> None:
    ddl, spec = create_index_change(PRE, "u", ("qty",), True, 41)
    assert (ddl.ddl_type, ddl.sql) == ("CINDEX", "CREATE UNIQUE INDEX `u` ON `db`.`t` (`qty`)")
    assert spec == AddIndexSpec("u", ("qty",), unique=True)
    assert ddl.table_schema is not None
    assert ddl.table_schema.indexes[-1] == IndexSchema("u", ("qty",), unique=True, nullable=True)
    ddl, spec = create_index_change(PRE, "i", ("qty", "id"), False, 41)
    assert ddl.sql == "CREATE INDEX `i` ON `db`.`t` (`qty`,`id`)"
    ddl, spec = drop_index_change(PRE, "idx_name", 41)
    assert (ddl.ddl_type, ddl.sql) == ("DINDEX", "DROP INDEX `idx_name` ON `db`.`t`")
    assert ddl.table_schema is not None
    assert [i.name for i in ddl.table_schema.indexes] == ["PRIMARY"]


def test_table_and_database_statements() -> None:
    ddl = rename_table_change(PRE, "db2", "t2", 41)
    assert (ddl.ddl_type, ddl.sql, ddl.database, ddl.table) == (
        "RENAME",
        "RENAME TABLE `db`.`t` TO `db2`.`t2`",
        "db2",
        "t2",
    )
    assert ddl.pre_table_schema == PRE
    assert ddl.table_schema is not None
    assert (ddl.table_schema.database, ddl.table_schema.table, ddl.table_schema.table_id) == ("db2", "t2", 5)
    assert rename_table_sql([("a", "b", "c", "d"), ("e", "f", "g", "h")]) == (
        "RENAME TABLE `a`.`b` TO `c`.`d`, `e`.`f` TO `g`.`h`"
    )
    ddl = truncate_table_change(PRE, 77, 41)
    assert (ddl.ddl_type, ddl.sql, ddl.table) == ("TRUNCATE", "TRUNCATE TABLE `db`.`t`", "t")
    assert ddl.table_schema is not None
    assert (ddl.table_schema.table_id, ddl.table_schema.version) == (77, 41)
    ddl = drop_table_change(PRE)
    assert (ddl.ddl_type, ddl.sql, ddl.table, ddl.table_schema, ddl.pre_table_schema) == (
        "ERASE",
        "DROP TABLE `db`.`t`",
        "t",
        None,
        PRE,
    )
    ddl = drop_database_change("db")
    assert (ddl.ddl_type, ddl.sql, ddl.database, ddl.table, ddl.table_schema) == (
        "QUERY",
        "DROP DATABASE `db`",
        "db",
        None,
        None,
    )
    assert create_database_change("db").sql == "CREATE DATABASE `db`"


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ([AddColumnSpec(column("qty", "int"))], "column 'qty' already exists"),
        ([AddColumnSpec(column("x", "int"), after="nope")], "column 'nope' does not exist"),
        ([DropColumnSpec("nope")], "column 'nope' does not exist"),
        ([RenameColumnSpec("qty", "name")], "column 'name' already exists"),
        ([DropIndexSpec("PRIMARY")], "index 'PRIMARY' does not exist"),
        ([AddIndexSpec("PRIMARY", ("qty",), primary=True)], "already has a primary key"),
        ([AddIndexSpec("idx_name", ("qty",))], "index 'idx_name' already exists"),
        ([AddIndexSpec("i", ("nope",))], "unknown columns ['nope']"),
        ([DropPrimaryKeySpec(), DropPrimaryKeySpec()], "has no primary key to drop"),
        ([ModifyColumnSpec(column("qty", "bigint")), RenameColumnSpec("qty", "q")], "changed twice"),
        ([], "no specification given"),
    ],
)
def test_impossible_alters_are_refused_with_the_reason(specs: list[AlterSpec], message: str) -> None:
    with pytest.raises(SchemaError, match=re.escape(message)) as caught:
        alter_change(PRE, specs, 41)
    assert "db.t" in str(caught.value)
