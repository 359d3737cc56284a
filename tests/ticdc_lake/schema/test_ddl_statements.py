"""parse_ddl: one structured result per statement, every ALTER TABLE spec kind, unknown statements."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import tiflow_vectors
from ticdc_lake.protocols.open_framing import split_batch
from ticdc_lake.schema.ddl_parser import parse_ddl
from ticdc_lake.schema.ddl_statements import (
    AddColumn,
    AddIndex,
    AlterSpec,
    AlterTableStatement,
    ColumnPosition,
    ConvertCharset,
    CreateDatabaseStatement,
    CreateIndexStatement,
    CreateTableLikeStatement,
    CreateTableStatement,
    DdlStatement,
    DropColumn,
    DropDatabaseStatement,
    DropIndex,
    DropIndexStatement,
    DropPrimaryKey,
    DropTablesStatement,
    IgnoredSpec,
    ModifyColumn,
    RenameColumn,
    RenameIndex,
    RenameTable,
    RenameTablesStatement,
    SetColumnDefault,
    SetTableOptions,
    TableName,
    TruncateTableStatement,
    UnknownStatement,
)
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema

VECTORS = tiflow_vectors.ROOT
BIN: dict[str, Any] = {"charset": "binary", "collation": "binary"}
T = TableName("db", "t")


def one(sql: str, default_database: str | None = "db") -> DdlStatement:
    statements = parse_ddl(sql, default_database)
    assert len(statements) == 1
    return statements[0]


def specs(sql: str) -> tuple[AlterSpec, ...]:
    statement = one(sql)
    assert isinstance(statement, AlterTableStatement), statement
    assert statement.sql == sql
    return statement.specs


def int_column(name: str, **attrs: Any) -> ColumnSchema:
    return ColumnSchema(name, "int", **{"length": 11, **BIN, **attrs})


# ---------------------------------------------------------------- ALTER TABLE specs


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("ADD COLUMN c INT", AddColumn(int_column("c"))),
        ("ADD c INT", AddColumn(int_column("c"))),
        ("ADD COLUMN c INT FIRST", AddColumn(int_column("c"), ColumnPosition(first=True))),
        ("ADD COLUMN c INT AFTER `b`", AddColumn(int_column("c"), ColumnPosition(after="b"))),
        ("ADD COLUMN IF NOT EXISTS c INT", AddColumn(int_column("c"), if_not_exists=True)),
        (
            "ADD COLUMN c VARCHAR(5) NOT NULL DEFAULT 'x' COMMENT 'y' AFTER b",
            AddColumn(ColumnSchema("c", "varchar", length=5, nullable=False, default="x"), ColumnPosition(after="b")),
        ),
        (
            "ADD COLUMN c INT NOT NULL PRIMARY KEY",
            AddColumn(
                int_column("c", nullable=False), indexes=(IndexSchema("PRIMARY", ("c",), primary=True, unique=True),)
            ),
        ),
        ("ADD COLUMN c INT UNIQUE", AddColumn(int_column("c"), indexes=(IndexSchema("", ("c",), unique=True),))),
        ("ADD COLUMN c INT AS (a + 1) STORED", AddColumn(int_column("c"), generated="STORED")),
        ("DROP COLUMN c", DropColumn("c")),
        ("DROP c", DropColumn("c")),
        ("DROP COLUMN IF EXISTS c", DropColumn("c", if_exists=True)),
        ("MODIFY c BIGINT NOT NULL", ModifyColumn("c", ColumnSchema("c", "bigint", length=20, nullable=False, **BIN))),
        ("MODIFY COLUMN c INT FIRST", ModifyColumn("c", int_column("c"), ColumnPosition(first=True))),
        ("CHANGE c d INT", ModifyColumn("c", int_column("d"))),
        ("CHANGE COLUMN c d INT AFTER e", ModifyColumn("c", int_column("d"), ColumnPosition(after="e"))),
        ("CHANGE c c INT UNSIGNED", ModifyColumn("c", int_column("c", length=10, unsigned=True))),
        ("RENAME COLUMN a TO b", RenameColumn("a", "b")),
        ("ALTER COLUMN c SET DEFAULT 3", SetColumnDefault("c", "3")),
        ("ALTER c SET DEFAULT 'x'", SetColumnDefault("c", "x")),
        ("ALTER c SET DEFAULT NULL", SetColumnDefault("c", None)),
        ("ALTER c SET DEFAULT (UUID())", SetColumnDefault("c", "UUID()")),
        ("ALTER c SET DEFAULT b'101'", SetColumnDefault("c", "\x05", "5")),
        ("ALTER COLUMN c DROP DEFAULT", SetColumnDefault("c", None)),
        ("ADD PRIMARY KEY (a, b)", AddIndex(IndexSchema("PRIMARY", ("a", "b"), primary=True, unique=True))),
        (
            "ADD CONSTRAINT pk PRIMARY KEY (a) CLUSTERED",
            AddIndex(IndexSchema("PRIMARY", ("a",), primary=True, unique=True)),
        ),
        ("ADD PRIMARY KEY (a) NONCLUSTERED", AddIndex(IndexSchema("PRIMARY", ("a",), primary=True, unique=True))),
        ("ADD UNIQUE KEY uk (a)", AddIndex(IndexSchema("uk", ("a",), unique=True))),
        ("ADD UNIQUE INDEX uk (a) GLOBAL", AddIndex(IndexSchema("uk", ("a",), unique=True))),
        ("ADD UNIQUE (a)", AddIndex(IndexSchema("", ("a",), unique=True))),
        ("ADD CONSTRAINT uk UNIQUE (a)", AddIndex(IndexSchema("uk", ("a",), unique=True))),
        ("ADD UNIQUE INDEX IF NOT EXISTS uk USING BTREE (a)", AddIndex(IndexSchema("uk", ("a",), unique=True), True)),
        ("ADD INDEX idx (a, b(10))", AddIndex(IndexSchema("idx", ("a", "b")))),
        ("ADD KEY (a)", AddIndex(IndexSchema("", ("a",)))),
        ("ADD INDEX IF NOT EXISTS idx (a)", AddIndex(IndexSchema("idx", ("a",)), if_not_exists=True)),
        ("ADD INDEX idx ((lower(a)))", AddIndex(IndexSchema("idx", ()))),
        ("DROP INDEX idx", DropIndex("idx")),
        ("DROP KEY idx", DropIndex("idx")),
        ("DROP INDEX IF EXISTS idx", DropIndex("idx", if_exists=True)),
        ("DROP PRIMARY KEY", DropPrimaryKey()),
        ("RENAME INDEX a TO b", RenameIndex("a", "b")),
        ("RENAME KEY a TO b", RenameIndex("a", "b")),
        ("RENAME TO t2", RenameTable(TableName("db", "t2"))),
        ("RENAME AS `other`.`t2`", RenameTable(TableName("other", "t2"))),
        ("RENAME t2", RenameTable(TableName("db", "t2"))),
        ("DEFAULT CHARSET = latin1", SetTableOptions(charset="latin1")),
        ("CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", SetTableOptions("utf8mb4", "utf8mb4_general_ci")),
        ("COLLATE = utf8mb4_bin", SetTableOptions(collation="utf8mb4_bin")),
        ("COMMENT = 'hello'", SetTableOptions(comment="hello")),
        ("CONVERT TO CHARACTER SET utf8mb4", ConvertCharset("utf8mb4")),
        ("CONVERT TO CHARSET latin1 COLLATE latin1_swedish_ci", ConvertCharset("latin1", "latin1_swedish_ci")),
    ],
)
def test_spec(spec: str, expected: AlterSpec) -> None:
    assert specs(f"ALTER TABLE t {spec}") == (expected,)


def test_add_several_columns_in_parentheses() -> None:
    assert specs("ALTER TABLE t ADD COLUMN (a INT, b INT NOT NULL)") == (
        AddColumn(int_column("a")),
        AddColumn(int_column("b", nullable=False)),
    )
    assert specs("ALTER TABLE t ADD (a INT)") == (AddColumn(int_column("a")),)


@pytest.mark.parametrize(
    "spec",
    [
        "ALGORITHM=INPLACE",
        "ALGORITHM INSTANT",
        "LOCK=NONE",
        "FORCE",
        "ENGINE=InnoDB",
        "AUTO_INCREMENT = 100",
        "ROW_FORMAT=COMPACT",
        "AUTO_ID_CACHE 1",
        "AUTO_RANDOM_BASE = 1000",
        "SHARD_ROW_ID_BITS = 4",
        "PRE_SPLIT_REGIONS = 2",
        "STATS_PERSISTENT = 0",
        "CACHE",
        "NOCACHE",
        "TTL = `ts` + INTERVAL 1 DAY",
        "TTL_ENABLE = 'OFF'",
        "REMOVE TTL",
        "PLACEMENT POLICY = p1",
        "SET TIFLASH REPLICA 1",
        "ALTER INDEX idx INVISIBLE",
        "ALTER COLUMN c SET INVISIBLE",
        "ADD CHECK (a > 0)",
        "ADD CONSTRAINT ck CHECK (a > 0)",
        "ALTER CHECK ck NOT ENFORCED",
        "DROP CHECK ck",
        "DROP CONSTRAINT ck",
        "ADD FOREIGN KEY (a) REFERENCES p (id)",
        "ADD CONSTRAINT fk FOREIGN KEY (a) REFERENCES p (id) ON DELETE CASCADE",
        "DROP FOREIGN KEY fk",
        "ADD FULLTEXT INDEX ft (a)",
        "ORDER BY a",
        "ENABLE KEYS",
    ],
)
def test_spec_without_schema_effect_is_ignored(spec: str) -> None:
    result = specs(f"ALTER TABLE t {spec}")
    assert len(result) == 1
    assert isinstance(result[0], IgnoredSpec)


@pytest.mark.parametrize(
    "spec",
    [
        "ADD PARTITION (PARTITION p1 VALUES LESS THAN (10))",
        "ADD PARTITION PARTITIONS 2",
        "DROP PARTITION p1, p2",
        "TRUNCATE PARTITION p1, p2",
        "COALESCE PARTITION 2",
        "REORGANIZE PARTITION p1, p2 INTO (PARTITION p3 VALUES LESS THAN (5))",
        "EXCHANGE PARTITION p1 WITH TABLE t2 WITHOUT VALIDATION",
        "ANALYZE PARTITION p1",
        "REBUILD PARTITION ALL",
        "REMOVE PARTITIONING",
        "PARTITION BY HASH(a) PARTITIONS 4",
        "PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
        "FIRST PARTITION LESS THAN ('2024-01-01')",
        "LAST PARTITION LESS THAN ('2025-01-01')",
    ],
)
def test_partition_specs_are_one_ignored_spec(spec: str) -> None:
    assert specs(f"ALTER TABLE t {spec}") == (IgnoredSpec(spec, "partitioning does not change the columns or keys"),)


def test_multi_spec_alter_keeps_the_order() -> None:
    sql = (
        "ALTER TABLE `db`.`t` ADD COLUMN c INT FIRST, DROP COLUMN d, MODIFY e BIGINT, "
        "ADD INDEX i (c), RENAME COLUMN f TO g, ALTER h SET DEFAULT 1, ALGORITHM=INSTANT, COMMENT 'x'"
    )
    assert specs(sql) == (
        AddColumn(int_column("c"), ColumnPosition(first=True)),
        DropColumn("d"),
        ModifyColumn("e", ColumnSchema("e", "bigint", length=20, **BIN)),
        AddIndex(IndexSchema("i", ("c",))),
        RenameColumn("f", "g"),
        SetColumnDefault("h", "1"),
        IgnoredSpec("ALGORITHM=INSTANT", "a table option without effect on the columns or keys"),
        SetTableOptions(comment="x"),
    )


def test_trailing_options_of_a_spec_are_kept_as_ignored() -> None:
    assert specs("ALTER TABLE t ADD INDEX i (a) ALGORITHM=INPLACE LOCK=NONE") == (
        AddIndex(IndexSchema("i", ("a",))),
        IgnoredSpec("ALGORITHM=INPLACE", "a table option without effect on the columns or keys"),
        IgnoredSpec("LOCK=NONE", "a table option without effect on the columns or keys"),
    )


def test_alter_table_names() -> None:
    statement = one("ALTER TABLE `my db`.`t.1` ADD c INT")
    assert isinstance(statement, AlterTableStatement)
    assert statement.table == TableName("my db", "t.1")
    statement = one("ALTER IGNORE TABLE t FORCE", None)
    assert isinstance(statement, AlterTableStatement)
    assert statement.table == TableName(None, "t")
    assert one("ALTER TABLE t") == AlterTableStatement("ALTER TABLE t", T, ())


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        (
            "ALTER TABLE t ADD COLUMN c POINT",
            "ALTER TABLE spec 'ADD COLUMN c POINT' is not understood: sqlglot does not support this syntax",
        ),
        (
            "ALTER TABLE t ADD c INT, FOO BAR",
            "ALTER TABLE spec 'FOO BAR' is not understood: sqlglot does not support this syntax",
        ),
        (
            "ALTER TABLE t ADD COLUMN c GEOMETRY",
            "table db.t, column 'c': type GEOMETRY is not a TiDB column type this parser knows",
        ),
        ("ALTER TABLE t MODIFY c VARCHAR", "table db.t, column 'c': VARCHAR needs a length"),
    ],
)
def test_unreadable_alter_is_unknown(sql: str, reason: str) -> None:
    assert one(sql) == UnknownStatement(sql, reason)


# ---------------------------------------------------------------- other statements


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "RENAME TABLE a TO b, `x`.`c` TO `y`.`d`",
            RenameTablesStatement(
                "RENAME TABLE a TO b, `x`.`c` TO `y`.`d`",
                ((TableName("db", "a"), TableName("db", "b")), (TableName("x", "c"), TableName("y", "d"))),
            ),
        ),
        (
            "RENAME TABLES a TO b",
            RenameTablesStatement("RENAME TABLES a TO b", ((TableName("db", "a"), TableName("db", "b")),)),
        ),
        ("TRUNCATE TABLE `x`.`t`", TruncateTableStatement("TRUNCATE TABLE `x`.`t`", (TableName("x", "t"),))),
        ("TRUNCATE t", TruncateTableStatement("TRUNCATE t", (T,))),
        ("DROP TABLE t", DropTablesStatement("DROP TABLE t", (T,))),
        (
            "DROP TABLE IF EXISTS a, `x`.`b`",
            DropTablesStatement("DROP TABLE IF EXISTS a, `x`.`b`", (TableName("db", "a"), TableName("x", "b")), True),
        ),
        ("DROP TEMPORARY TABLE t", DropTablesStatement("DROP TEMPORARY TABLE t", (T,))),
        ("CREATE DATABASE `new db`", CreateDatabaseStatement("CREATE DATABASE `new db`", "new db")),
        (
            "CREATE DATABASE IF NOT EXISTS d DEFAULT CHARACTER SET utf8mb4",
            CreateDatabaseStatement("CREATE DATABASE IF NOT EXISTS d DEFAULT CHARACTER SET utf8mb4", "d", True),
        ),
        ("CREATE SCHEMA s", CreateDatabaseStatement("CREATE SCHEMA s", "s")),
        ("DROP DATABASE d", DropDatabaseStatement("DROP DATABASE d", "d")),
        ("DROP SCHEMA IF EXISTS s", DropDatabaseStatement("DROP SCHEMA IF EXISTS s", "s", True)),
        (
            "CREATE TABLE t2 LIKE x.t1",
            CreateTableLikeStatement("CREATE TABLE t2 LIKE x.t1", TableName("db", "t2"), TableName("x", "t1")),
        ),
        (
            "CREATE TABLE IF NOT EXISTS t2 (LIKE t1)",
            CreateTableLikeStatement(
                "CREATE TABLE IF NOT EXISTS t2 (LIKE t1)", TableName("db", "t2"), TableName("db", "t1"), True
            ),
        ),
        (
            "CREATE UNIQUE INDEX i ON t (a, b(3)) USING BTREE COMMENT 'x' ALGORITHM=INPLACE",
            CreateIndexStatement(
                "CREATE UNIQUE INDEX i ON t (a, b(3)) USING BTREE COMMENT 'x' ALGORITHM=INPLACE",
                T,
                AddIndex(IndexSchema("i", ("a", "b"), unique=True)),
            ),
        ),
        (
            "CREATE INDEX IF NOT EXISTS `i` USING HASH ON `x`.`t` ((lower(a)))",
            CreateIndexStatement(
                "CREATE INDEX IF NOT EXISTS `i` USING HASH ON `x`.`t` ((lower(a)))",
                TableName("x", "t"),
                AddIndex(IndexSchema("i", ()), if_not_exists=True),
            ),
        ),
        (
            "CREATE FULLTEXT INDEX f ON t (a)",
            AlterTableStatement(
                "CREATE FULLTEXT INDEX f ON t (a)",
                T,
                (IgnoredSpec("FULLTEXT INDEX f (a)", "TiDB does not build FULLTEXT indexes"),),
            ),
        ),
        ("DROP INDEX i ON t", DropIndexStatement("DROP INDEX i ON t", T, DropIndex("i"))),
        (
            "DROP INDEX IF EXISTS `i` ON `x`.`t` ALGORITHM=INPLACE LOCK=NONE",
            DropIndexStatement(
                "DROP INDEX IF EXISTS `i` ON `x`.`t` ALGORITHM=INPLACE LOCK=NONE",
                TableName("x", "t"),
                DropIndex("i", True),
            ),
        ),
        ("DROP INDEX `PRIMARY` ON t", DropIndexStatement("DROP INDEX `PRIMARY` ON t", T, DropIndex("PRIMARY"))),
    ],
)
def test_statement(sql: str, expected: DdlStatement) -> None:
    assert one(sql) == expected


def test_create_table_statement() -> None:
    statement = one("CREATE TABLE IF NOT EXISTS t (a INT)")
    assert isinstance(statement, CreateTableStatement)
    assert statement.if_not_exists
    assert statement.schema.columns == (int_column("a"),)


def test_names_without_database_keep_none() -> None:
    assert one("DROP TABLE t", None) == DropTablesStatement("DROP TABLE t", (TableName(None, "t"),))
    assert str(TableName(None, "t")) == "t"
    assert str(TableName("d", "t")) == "d.t"


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("CREATE VIEW v AS SELECT 1", "sqlglot reads it as Create VIEW, which does not change a table's schema facts"),
        ("DROP VIEW v", "sqlglot reads it as Drop VIEW, which does not change a table's schema facts"),
        ("CREATE SEQUENCE s", "sqlglot reads it as Create SEQUENCE, which does not change a table's schema facts"),
        ("ALTER DATABASE d CHARACTER SET utf8mb4", "ALTER statements do not change a table's schema facts"),
        ("ALTER PLACEMENT POLICY p PRIMARY_REGION='r'", "ALTER statements do not change a table's schema facts"),
        ("SET NAMES utf8mb4", "SET statements do not change a table's schema facts"),
    ],
)
def test_statements_without_schema_effect(sql: str, reason: str) -> None:
    assert one(sql) == UnknownStatement(sql, reason, may_change_schema=False)


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("RECOVER TABLE t", "RECOVER brings back tables whose schema the DDL text does not give"),
        ("FLASHBACK TABLE t TO t2", "FLASHBACK brings back tables whose schema the DDL text does not give"),
        ("RENAME USER a TO b", "sqlglot does not support this RENAME statement"),
        ("CREATE TABLE test.table1", "the statement has no column list"),
        ("create table a", "the statement has no column list"),
        ("CREATE TABLE t (a INT", "sqlglot cannot read it: Expecting ). Line 1, Col: 21."),
        ("CREATE INDEX i ON t", "ALTER TABLE spec 'ADD INDEX i' is not understood: Expecting (. Line 1, Col: 25."),
        ("DROP INDEX i", "DROP INDEX without ON <table>"),
        ("RENAME TABLE a", "Expected TO. Line 1, Col: 14."),
    ],
)
def test_unreadable_statements_may_change_the_schema(sql: str, reason: str) -> None:
    assert one(sql) == UnknownStatement(sql, reason, may_change_schema=True)


def test_several_statements_in_one_text() -> None:
    sql = "CREATE DATABASE d; CREATE TABLE d.t (a INT);\nALTER TABLE d.t ADD b INT; CREATE VIEW v AS SELECT 1;"
    results = parse_ddl(sql, None)
    assert [type(r).__name__ for r in results] == [
        "CreateDatabaseStatement",
        "CreateTableStatement",
        "AlterTableStatement",
        "UnknownStatement",
    ]
    assert [r.sql for r in results] == [
        "CREATE DATABASE d",
        "CREATE TABLE d.t (a INT)",
        "ALTER TABLE d.t ADD b INT",
        "CREATE VIEW v AS SELECT 1",
    ]


def test_semicolons_inside_strings_and_comments_do_not_split() -> None:
    results = parse_ddl("CREATE TABLE t (a ENUM('x;y') COMMENT ';') /* ; */; DROP TABLE t", "db")
    assert [type(r).__name__ for r in results] == ["CreateTableStatement", "DropTablesStatement"]


def test_text_that_cannot_be_tokenized() -> None:
    assert parse_ddl("DROP TABLE 'x", "db") == [
        UnknownStatement("DROP TABLE 'x", "sqlglot cannot tokenize it: Error tokenizing 'DROP TABLE ''")
    ]


def test_empty_text_has_no_statements() -> None:
    assert parse_ddl("  ; -- nothing\n", "db") == []


# ---------------------------------------------------------------- real DDL texts


@tiflow_vectors.needs_vectors
def test_debezium_vector_ddl_texts() -> None:
    texts = set()
    for path in (VECTORS / "_extracted_from_tests").glob("debezium_codec_test_*value*.json"):
        payload = json.loads(path.read_text())["payload"]
        if payload.get("ddl"):
            texts.add(payload["ddl"])
    assert texts == {"CREATE TABLE test.table1", "DROP TABLE test.table2", "RENAME TABLE test.table1 to test.table2"}
    assert one("DROP TABLE test.table2") == DropTablesStatement(
        "DROP TABLE test.table2", (TableName("test", "table2"),)
    )
    assert one("RENAME TABLE test.table1 to test.table2") == RenameTablesStatement(
        "RENAME TABLE test.table1 to test.table2", ((TableName("test", "table1"), TableName("test", "table2")),)
    )
    # TiCDC's unit test sends a CREATE TABLE without columns: nothing to build a schema from.
    assert isinstance(one("CREATE TABLE test.table1"), UnknownStatement)


@tiflow_vectors.needs_vectors
def test_open_protocol_vector_ddl_texts() -> None:
    data = VECTORS / "examples/java/src/test/resources/data"
    key, value = (data / "key/ddl_key_1").read_bytes(), (data / "value/ddl_value_1").read_bytes()
    queries = [json.loads(item.data)["q"] for _, item in split_batch(key, value)]
    assert queries == ["create table a", "create table b", "create table c"]
    for query in queries:
        assert one(query, "a") == UnknownStatement(query, "the statement has no column list")
