"""Every DDL kind the simulator produces, with what TiCDC puts in its DDL event, stated by hand.

A sequence on ``shop``: CREATE DATABASE, CREATE TABLE ``orders``, ADD COLUMN (with DEFAULT), DROP
COLUMN, RENAME COLUMN, MODIFY COLUMN, a multi-spec ALTER, CREATE INDEX, ALTER TABLE ADD INDEX, DROP
INDEX, RENAME TABLE, TRUNCATE TABLE, a second table ``events`` (unique key only) getting a
nonclustered PRIMARY KEY added and dropped, a two-table RENAME TABLE (two events, one commit TSO),
DROP TABLE and DROP DATABASE. Table schemas are built by hand; the expectations (query, subtype,
action, names, table infos) come from reading tiflow (``cdc/model/sink.go`` ``FromJobWithArgs``,
``cdc/entry/schema_storage.go``, ``simple/message.go`` ``getDDLType``), not from the encoders:

* DROP TABLE's query is rebuilt as ``DROP TABLE `db`.`t```; its table info is the dropped table;
* each half of a multi-table RENAME is ``RENAME TABLE `old` TO `new``` with action 14 (not 47);
* schema-level DDL has no table info; CREATE TABLE has no pre-table info.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.column_types import Value
from ticdc_sim.model import DdlChange

BASE_TS = 450_000_000_000_000_000

ID = column("id", "bigint", nullable=False)
NAME = column("name", "varchar", length=20)
NOTE = column("note", "varchar", length=40)
QTY = column("qty", "int", nullable=False, default="1")
TITLE = column("title", "varchar", length=20)
QTY_BIG = column("qty", "bigint", nullable=False, default="1")
TITLE_40 = column("title", "varchar", length=40)
PRICE = column("price", "decimal", length=10, scale=2, default="0.00")
PAYLOAD = column("payload", "varchar", length=64)
PK = IndexSchema("PRIMARY", ("id",), primary=True, unique=True)
UK = IndexSchema("uk_id", ("id",), unique=True)
IDX_TITLE = IndexSchema("idx_title", ("title",))
IDX_QTY = IndexSchema("idx_qty", ("qty",))


def _orders(version: int, columns: tuple[ColumnSchema, ...], *indexes: IndexSchema) -> TableSchema:
    return TableSchema("shop", "orders", columns, (PK, *indexes), table_id=70, version=version, source="simulator")


ORDERS_0 = _orders(BASE_TS + 2, (ID, NAME, NOTE))
ORDERS_ADD = _orders(BASE_TS + 3, (ID, NAME, NOTE, QTY))
ORDERS_DROP = _orders(BASE_TS + 4, (ID, NAME, QTY))
ORDERS_RENAME_COL = _orders(BASE_TS + 5, (ID, TITLE, QTY))
ORDERS_MODIFY = _orders(BASE_TS + 6, (ID, TITLE, QTY_BIG))
ORDERS_MULTI = _orders(BASE_TS + 7, (ID, TITLE_40, QTY_BIG, PRICE))
ORDERS_CINDEX = _orders(BASE_TS + 8, ORDERS_MULTI.columns, IDX_TITLE)
ORDERS_ADD_INDEX = _orders(BASE_TS + 9, ORDERS_MULTI.columns, IDX_TITLE, IDX_QTY)
ORDERS_DINDEX = _orders(BASE_TS + 10, ORDERS_MULTI.columns, IDX_QTY)
ORDERS_V2 = replace(ORDERS_DINDEX, table="orders_v2", version=BASE_TS + 11)
ORDERS_V2_TRUNCATED = replace(ORDERS_V2, table_id=71, version=BASE_TS + 12)
EVENTS_0 = TableSchema("shop", "events", (ID, PAYLOAD), (UK,), table_id=80, version=BASE_TS + 13, source="simulator")
EVENTS_PK = replace(EVENTS_0, indexes=(UK, PK), version=BASE_TS + 14)
EVENTS_NO_PK = replace(EVENTS_0, version=BASE_TS + 15)
EVENTS_OLD = replace(EVENTS_NO_PK, table="events_old", version=BASE_TS + 16)
ORDERS_BACK = replace(ORDERS_V2_TRUNCATED, table="orders", version=BASE_TS + 16)

_RENAME_BOTH = "RENAME TABLE `shop`.`events` TO `shop`.`events_old`, `shop`.`orders_v2` TO `shop`.`orders`"


@dataclass(frozen=True, slots=True)
class DdlCase:
    name: str
    ddl: DdlChange
    commit_ts: int
    #: What TiCDC's DDL event holds (see the module docstring).
    query: str
    subtype: str
    action: int
    database: str
    table: str | None
    #: ``TableInfo`` (the dropped table for DROP TABLE) and ``PreTableInfo``.
    after: TableSchema | None
    before: TableSchema | None


def _case(
    name: str,
    ddl: DdlChange,
    tso: int,
    subtype: str,
    action: int,
    *,
    query: str | None = None,
    after: TableSchema | None = None,
    before: TableSchema | None = None,
) -> DdlCase:
    table = after.table if after is not None else ddl.table
    return DdlCase(name, ddl, BASE_TS + tso, query or ddl.sql, subtype, action, ddl.database, table, after, before)


def _alter(sql: str, after: TableSchema, before: TableSchema, kind: str = "ALTER") -> DdlChange:
    return DdlChange(kind, sql, "shop", after.table, after, before)


CASES: tuple[DdlCase, ...] = (
    _case("create database", DdlChange("QUERY", "CREATE DATABASE `shop`", "shop", None, None), 1, "QUERY", 1),
    _case(
        "create table",
        DdlChange(
            "CREATE",
            "CREATE TABLE `shop`.`orders` (`id` BIGINT NOT NULL,`name` VARCHAR(20) NULL,`note` VARCHAR(40) NULL,"
            "PRIMARY KEY(`id`) /*T![clustered_index] CLUSTERED */)",
            "shop",
            "orders",
            ORDERS_0,
        ),
        2,
        "CREATE",
        3,
        after=ORDERS_0,
    ),
    _case(
        "add column with default",
        _alter("ALTER TABLE `shop`.`orders` ADD COLUMN `qty` INT NOT NULL DEFAULT 1", ORDERS_ADD, ORDERS_0),
        3,
        "ALTER",
        5,
        after=ORDERS_ADD,
        before=ORDERS_0,
    ),
    _case(
        "drop column",
        _alter("ALTER TABLE `shop`.`orders` DROP COLUMN `note`", ORDERS_DROP, ORDERS_ADD),
        4,
        "ALTER",
        6,
        after=ORDERS_DROP,
        before=ORDERS_ADD,
    ),
    _case(
        "rename column",
        _alter("ALTER TABLE `shop`.`orders` RENAME COLUMN `name` TO `title`", ORDERS_RENAME_COL, ORDERS_DROP),
        5,
        "ALTER",
        12,
        after=ORDERS_RENAME_COL,
        before=ORDERS_DROP,
    ),
    _case(
        "modify column",
        _alter(
            "ALTER TABLE `shop`.`orders` MODIFY COLUMN `qty` BIGINT NOT NULL DEFAULT 1",
            ORDERS_MODIFY,
            ORDERS_RENAME_COL,
        ),
        6,
        "ALTER",
        12,
        after=ORDERS_MODIFY,
        before=ORDERS_RENAME_COL,
    ),
    _case(
        "multi-spec alter",
        _alter(
            "ALTER TABLE `shop`.`orders` ADD COLUMN `price` DECIMAL(10,2) NULL DEFAULT '0.00', "
            "MODIFY COLUMN `title` VARCHAR(40) NULL",
            ORDERS_MULTI,
            ORDERS_MODIFY,
        ),
        7,
        "ALTER",
        61,
        after=ORDERS_MULTI,
        before=ORDERS_MODIFY,
    ),
    _case(
        "create index",
        _alter("CREATE INDEX `idx_title` ON `shop`.`orders` (`title`)", ORDERS_CINDEX, ORDERS_MULTI, "CINDEX"),
        8,
        "CINDEX",
        7,
        after=ORDERS_CINDEX,
        before=ORDERS_MULTI,
    ),
    _case(
        "alter table add index",
        _alter("ALTER TABLE `shop`.`orders` ADD INDEX `idx_qty`(`qty`)", ORDERS_ADD_INDEX, ORDERS_CINDEX, "CINDEX"),
        9,
        "CINDEX",
        7,
        after=ORDERS_ADD_INDEX,
        before=ORDERS_CINDEX,
    ),
    _case(
        "drop index",
        _alter("DROP INDEX `idx_title` ON `shop`.`orders`", ORDERS_DINDEX, ORDERS_ADD_INDEX, "DINDEX"),
        10,
        "DINDEX",
        8,
        after=ORDERS_DINDEX,
        before=ORDERS_ADD_INDEX,
    ),
    _case(
        "rename table",
        _alter("RENAME TABLE `shop`.`orders` TO `shop`.`orders_v2`", ORDERS_V2, ORDERS_DINDEX, "RENAME"),
        11,
        "RENAME",
        14,
        after=ORDERS_V2,
        before=ORDERS_DINDEX,
    ),
    _case(
        "truncate table",
        _alter("TRUNCATE TABLE `shop`.`orders_v2`", ORDERS_V2_TRUNCATED, ORDERS_V2, "TRUNCATE"),
        12,
        "TRUNCATE",
        11,
        after=ORDERS_V2_TRUNCATED,
        before=ORDERS_V2,
    ),
    _case(
        "create table without primary key",
        DdlChange(
            "CREATE",
            "CREATE TABLE `shop`.`events` (`id` BIGINT NOT NULL,`payload` VARCHAR(64) NULL,UNIQUE KEY `uk_id`(`id`))",
            "shop",
            "events",
            EVENTS_0,
        ),
        13,
        "CREATE",
        3,
        after=EVENTS_0,
    ),
    _case(
        "add primary key",
        _alter(
            "ALTER TABLE `shop`.`events` ADD PRIMARY KEY(`id`) /*T![clustered_index] NONCLUSTERED */",
            EVENTS_PK,
            EVENTS_0,
            "CINDEX",
        ),
        14,
        "CINDEX",
        32,
        after=EVENTS_PK,
        before=EVENTS_0,
    ),
    _case(
        "drop primary key",
        _alter("ALTER TABLE `shop`.`events` DROP PRIMARY KEY", EVENTS_NO_PK, EVENTS_PK, "DINDEX"),
        15,
        "DINDEX",
        33,
        after=EVENTS_NO_PK,
        before=EVENTS_PK,
    ),
    # RENAME TABLE a TO b, c TO d: one event per table, both at one commit TSO, queries rebuilt.
    _case(
        "rename tables (first)",
        _alter(_RENAME_BOTH, EVENTS_OLD, EVENTS_NO_PK, "RENAME"),
        16,
        "RENAME",
        14,
        query="RENAME TABLE `shop`.`events` TO `shop`.`events_old`",
        after=EVENTS_OLD,
        before=EVENTS_NO_PK,
    ),
    _case(
        "rename tables (second)",
        _alter(_RENAME_BOTH, ORDERS_BACK, ORDERS_V2_TRUNCATED, "RENAME"),
        16,
        "RENAME",
        14,
        query="RENAME TABLE `shop`.`orders_v2` TO `shop`.`orders`",
        after=ORDERS_BACK,
        before=ORDERS_V2_TRUNCATED,
    ),
    _case(
        "drop table",
        DdlChange("ERASE", "DROP TABLE IF EXISTS `shop`.`events_old`", "shop", "events_old", None, EVENTS_OLD),
        17,
        "ERASE",
        4,
        query="DROP TABLE `shop`.`events_old`",
        after=EVENTS_OLD,
        before=EVENTS_OLD,
    ),
    _case("drop database", DdlChange("QUERY", "DROP DATABASE `attic`", "attic", None, None), 18, "QUERY", 2),
)

#: Rows in ``orders`` after ADD COLUMN: encoded in the new schema, they must decode with ``qty``.
ROW_AFTER_ADD: dict[str, Value] = {"id": 1, "name": "a", "note": None, "qty": 5}
ROW_AFTER_ADD_TEXT = {"id": "1", "name": "a", "note": None, "qty": "5"}
