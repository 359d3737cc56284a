"""The TiDB action of each simulated DDL and the DDL event TiCDC builds from it (``tidb_ddl``, ``ddl_event``)."""

from __future__ import annotations

import json

import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.ddl_event import TicdcDdlEvent, ticdc_event
from ticdc_sim.model import DdlChange
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder
from ticdc_sim.tidb_ddl import (
    canal_event_type,
    ddl_action,
    debezium_change_type,
    simple_type,
    tidb_job_action,
)

T = TableSchema(
    "d",
    "t",
    (column("id", "bigint", nullable=False),),
    (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
    table_id=5,
    version=9,
)


@pytest.mark.parametrize(
    ("sql", "action", "job_action", "simple", "canal", "debezium"),
    [
        ("CREATE DATABASE `d`", 1, 1, "QUERY", "QUERY", "CREATE"),
        ("DROP DATABASE IF EXISTS `d`", 2, 2, "QUERY", "QUERY", "DROP"),
        ("CREATE TABLE `d`.`t` (`id` BIGINT PRIMARY KEY)", 3, 3, "CREATE", "CREATE", "CREATE"),
        ("DROP TABLE `d`.`t`", 4, 4, "ERASE", "ERASE", "DROP"),
        ("ALTER TABLE `d`.`t` ADD COLUMN `c` DECIMAL(10,2) DEFAULT '1,2'", 5, 5, "ALTER", "ALTER", "ALTER"),
        ("ALTER TABLE `d`.`t` ADD `c` INT", 5, 5, "ALTER", "ALTER", "ALTER"),
        ("ALTER TABLE `d`.`t` DROP COLUMN `c`", 6, 6, "ALTER", "ALTER", "ALTER"),
        ("ALTER TABLE `d`.`t` MODIFY COLUMN `c` BIGINT", 12, 12, "ALTER", "ALTER", "ALTER"),
        ("ALTER TABLE `d`.`t` CHANGE `c` `e` INT", 12, 12, "ALTER", "ALTER", "ALTER"),
        ("ALTER TABLE `d`.`t` RENAME COLUMN `c` TO `e`", 12, 12, "ALTER", "ALTER", "ALTER"),
        ("ALTER TABLE `d`.`t` ALTER COLUMN `c` SET DEFAULT 3", 15, 15, "ALTER", "ALTER", "ALTER"),
        ("ALTER TABLE `d`.`t` ADD COLUMN `a` INT, DROP COLUMN `b`", 61, 61, "ALTER", "ALTER", "ALTER"),
        ("ALTER TABLE `d`.`t` ADD COLUMN (`a` INT, `b` INT)", 61, 61, "ALTER", "ALTER", "ALTER"),
        ("ALTER TABLE `d`.`t,x` ADD INDEX `i`(`a`, `b`)", 7, 7, "CINDEX", "CINDEX", "ALTER"),
        ("ALTER TABLE `d`.`t` ADD UNIQUE KEY `u`(`a`)", 7, 7, "CINDEX", "CINDEX", "ALTER"),
        ("CREATE UNIQUE INDEX `u` ON `d`.`t` (`a`)", 7, 7, "CINDEX", "CINDEX", "ALTER"),
        ("DROP INDEX `u` ON `d`.`t`", 8, 8, "DINDEX", "DINDEX", "DROP"),
        ("ALTER TABLE `d`.`t` DROP INDEX `u`", 8, 8, "DINDEX", "DINDEX", "DROP"),
        (
            "ALTER TABLE `d`.`t` ADD PRIMARY KEY(`a`, `b`) /*T![clustered_index] NONCLUSTERED */",
            32,
            32,
            "CINDEX",
            "CINDEX",
            "ALTER",
        ),
        ("ALTER TABLE `d`.`t` ADD CONSTRAINT `pk` PRIMARY KEY (`a`)", 32, 32, "CINDEX", "CINDEX", "ALTER"),
        ("ALTER TABLE `d`.`t` DROP PRIMARY KEY", 33, 33, "DINDEX", "DINDEX", "ALTER"),
        ("ALTER TABLE `d`.`t` ADD FOREIGN KEY (`a`) REFERENCES `p`(`a`)", 9, 9, "CINDEX", "CINDEX", None),
        ("ALTER TABLE `d`.`t` DROP FOREIGN KEY `f`", 10, 10, "DINDEX", "DINDEX", None),
        ("TRUNCATE TABLE `d`.`t`", 11, 11, "TRUNCATE", "TRUNCATE", "DROP"),
        ("RENAME TABLE `d`.`a` TO `d`.`t`", 14, 14, "RENAME", "RENAME", "ALTER"),
        ("ALTER TABLE `d`.`a` RENAME TO `d`.`t`", 14, 14, "RENAME", "RENAME", "ALTER"),
        ("RENAME TABLE `d`.`a` TO `d`.`t`, `d`.`b` TO `d`.`c`", 14, 47, "RENAME", "RENAME", "ALTER"),
        ("ALTER TABLE `d`.`t` COMMENT = 'x'", 17, 17, "ALTER", "ALTER", "ALTER"),
        ("CREATE VIEW `d`.`v` AS SELECT 1", 21, 21, "QUERY", "QUERY", "CREATE"),
    ],
)
def test_action_and_what_each_encoder_derives(
    sql: str, action: int, job_action: int, simple: str, canal: str, debezium: str | None
) -> None:
    ddl = DdlChange("ALTER", sql, "d", "t", T, T)
    assert (ddl_action(ddl), tidb_job_action(ddl)) == (action, job_action)
    assert (simple_type(action), canal_event_type(action), debezium_change_type(action)) == (simple, canal, debezium)


def test_unknown_statement_names_the_ddl() -> None:
    with pytest.raises(SchemaError, match="cannot tell its TiDB action type"):
        ddl_action(DdlChange("QUERY", "FLASHBACK TABLE `t`", "d", "t", None))
    with pytest.raises(SchemaError, match="unknown clause"):
        ddl_action(DdlChange("ALTER", "ALTER TABLE `t` FROBNICATE", "d", "t", None))


def test_drop_table_event_is_the_dropped_table_with_a_rebuilt_query() -> None:
    ddl = DdlChange("ERASE", "DROP TABLE IF EXISTS t", "d", "t", None, T)
    assert ticdc_event(ddl) == TicdcDdlEvent(4, "DROP TABLE `d`.`t`", "d", "t", T, T)


def test_multi_table_rename_events_get_their_own_query() -> None:
    after = TableSchema("e", "u", T.columns, T.indexes, table_id=5, version=10)
    sql = "RENAME TABLE `d`.`t` TO `e`.`u`, `d`.`x` TO `d`.`y`"
    assert ticdc_event(DdlChange("RENAME", sql, "e", "u", after, T)) == TicdcDdlEvent(
        14, "RENAME TABLE `d`.`t` TO `e`.`u`", "e", "u", after, T
    )
    single = "RENAME TABLE `d`.`t` TO `e`.`u`"
    assert ticdc_event(DdlChange("RENAME", single, "e", "u", after, T)).query == single


def test_create_and_schema_ddl_carry_no_pre_table_info() -> None:
    assert (
        ticdc_event(DdlChange("CREATE", "CREATE TABLE `d`.`t` (`id` BIGINT)", "d", "t", T, T)).pre_table_schema is None
    )
    assert ticdc_event(DdlChange("QUERY", "DROP DATABASE `d`", "d", None, None)) == TicdcDdlEvent(
        2, "DROP DATABASE `d`", "d", "", None, None
    )
    with pytest.raises(SchemaError, match="needs the table schema after the DDL"):
        ticdc_event(DdlChange("ALTER", "ALTER TABLE `d`.`t` DROP COLUMN `c`", "d", "t", None, T))


def test_simple_json_erase_sends_the_dropped_table_twice() -> None:
    """``newDDLMessage``: TableInfo (the dropped table) and PreTableInfo are both set for DROP TABLE."""
    message = SimpleJsonEncoder().encode_ddl(DdlChange("ERASE", "DROP TABLE t", "d", "t", None, T), 7, 8)
    document = json.loads(message.value)
    assert (document["type"], document["sql"]) == ("ERASE", "DROP TABLE `d`.`t`")
    assert document["tableSchema"] == document["preTableSchema"]
    assert (
        document["tableSchema"]["schema"],
        document["tableSchema"]["table"],
        document["tableSchema"]["tableID"],
    ) == (
        "d",
        "t",
        5,
    )
