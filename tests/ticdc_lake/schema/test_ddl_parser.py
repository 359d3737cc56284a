"""parse_create_table: every TiDB column type, attribute, key form and identifier, exactly."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from tests import tiflow_vectors
from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.ddl_parser import parse_create_table
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.ddl_sql import create_table_sql
from ticdc_sim.workload import Workload, WorkloadConfig

VECTORS = tiflow_vectors.DEBEZIUM_DATA
BIN: dict[str, Any] = {"charset": "binary", "collation": "binary"}


def col(mysql_type: str, **attrs: Any) -> ColumnSchema:
    """The expected column ``c``: non-textual types carry charset and collation ``binary``."""
    textual = mysql_type in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set")
    base: dict[str, Any] = {} if textual else dict(BIN)
    return ColumnSchema(name="c", mysql_type=mysql_type, **{**base, **attrs})


def one_column(definition: str, table_options: str = "") -> ColumnSchema:
    schema = parse_create_table(f"CREATE TABLE t (c {definition}){table_options}", "db")
    assert len(schema.columns) == 1
    return schema.columns[0]


# ---------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        ("TINYINT", col("tinyint", length=4)),
        ("TINYINT(1)", col("tinyint", length=1)),
        ("TINYINT UNSIGNED", col("tinyint", length=3, unsigned=True)),
        ("INT1", col("tinyint", length=4)),
        ("BOOL", col("tinyint", length=1)),
        ("BOOLEAN", col("tinyint", length=1)),
        ("SMALLINT", col("smallint", length=6)),
        ("SMALLINT UNSIGNED", col("smallint", length=5, unsigned=True)),
        ("INT2", col("smallint", length=6)),
        ("MEDIUMINT", col("mediumint", length=9)),
        ("MEDIUMINT UNSIGNED", col("mediumint", length=8, unsigned=True)),
        ("MIDDLEINT", col("mediumint", length=9)),
        ("INT3", col("mediumint", length=9)),
        ("INT", col("int", length=11)),
        ("INTEGER", col("int", length=11)),
        ("INT4", col("int", length=11)),
        ("INT(5)", col("int", length=5)),
        ("INT UNSIGNED", col("int", length=10, unsigned=True)),
        ("INTEGER UNSIGNED", col("int", length=10, unsigned=True)),
        ("INT SIGNED", col("int", length=11)),
        ("BIGINT", col("bigint", length=20)),
        ("INT8", col("bigint", length=20)),
        ("BIGINT(20) UNSIGNED", col("bigint", length=20, unsigned=True)),
        ("BIGINT UNSIGNED", col("bigint", length=20, unsigned=True)),
        ("SERIAL", col("bigint", length=20, unsigned=True, nullable=False)),
        ("FLOAT", col("float", length=12)),
        ("FLOAT(10)", col("float", length=12)),
        ("FLOAT(24)", col("float", length=12)),
        ("FLOAT(25)", col("double", length=22)),
        ("FLOAT(53)", col("double", length=22)),
        ("FLOAT(7,3)", col("float", length=7)),
        ("FLOAT UNSIGNED", col("float", length=12, unsigned=True)),
        ("FLOAT4", col("float", length=12)),
        ("DOUBLE", col("double", length=22)),
        ("DOUBLE PRECISION", col("double", length=22)),
        ("DOUBLE(10,2)", col("double", length=10)),
        ("DOUBLE UNSIGNED", col("double", length=22, unsigned=True)),
        ("REAL", col("double", length=22)),
        ("REAL(8,2)", col("double", length=8)),
        ("FLOAT8", col("double", length=22)),
        ("DECIMAL", col("decimal", length=10, scale=0)),
        ("DECIMAL(12)", col("decimal", length=12, scale=0)),
        ("DECIMAL(12,6)", col("decimal", length=12, scale=6)),
        ("DECIMAL(65,30)", col("decimal", length=65, scale=30)),
        ("DECIMAL(10,2) UNSIGNED", col("decimal", length=10, scale=2, unsigned=True)),
        ("DEC(5,2)", col("decimal", length=5, scale=2)),
        ("NUMERIC(5,2)", col("decimal", length=5, scale=2)),
        ("NUMERIC", col("decimal", length=10, scale=0)),
        ("FIXED(7,1)", col("decimal", length=7, scale=1)),
        ("DATE", col("date", length=10)),
        ("DATETIME", col("datetime", length=19, fsp=0)),
        ("DATETIME(0)", col("datetime", length=19, fsp=0)),
        ("DATETIME(3)", col("datetime", length=23, fsp=3)),
        ("DATETIME(6)", col("datetime", length=26, fsp=6)),
        ("TIMESTAMP", col("timestamp", length=19, fsp=0)),
        ("TIMESTAMP(6)", col("timestamp", length=26, fsp=6)),
        ("TIME", col("time", length=10, fsp=0)),
        ("TIME(2)", col("time", length=13, fsp=2)),
        ("YEAR", col("year", length=4)),
        ("YEAR(4)", col("year", length=4)),
        ("CHAR", col("char", length=1)),
        ("CHAR(10)", col("char", length=10)),
        ("CHARACTER(5)", col("char", length=5)),
        ("NCHAR(5)", col("char", length=5, charset="utf8", collation="utf8_bin")),
        ("NATIONAL CHAR(5)", col("char", length=5, charset="utf8", collation="utf8_bin")),
        ("NATIONAL CHARACTER(5)", col("char", length=5, charset="utf8", collation="utf8_bin")),
        ("VARCHAR(20)", col("varchar", length=20)),
        ("CHARACTER VARYING(20)", col("varchar", length=20)),
        ("CHAR VARYING(20)", col("varchar", length=20)),
        ("VARCHARACTER(20)", col("varchar", length=20)),
        ("NVARCHAR(5)", col("varchar", length=5, charset="utf8", collation="utf8_bin")),
        ("NATIONAL VARCHAR(5)", col("varchar", length=5, charset="utf8", collation="utf8_bin")),
        ("NATIONAL CHARACTER VARYING(5)", col("varchar", length=5, charset="utf8", collation="utf8_bin")),
        ("NCHAR VARCHAR(5)", col("varchar", length=5, charset="utf8", collation="utf8_bin")),
        ("NCHAR VARYING(5)", col("varchar", length=5, charset="utf8", collation="utf8_bin")),
        ("BINARY", col("binary", length=1)),
        ("BINARY(8)", col("binary", length=8)),
        ("VARBINARY(64)", col("varbinary", length=64)),
        ("TINYTEXT", col("tinytext", length=255)),
        ("TEXT", col("text", length=65535)),
        ("MEDIUMTEXT", col("mediumtext", length=16777215)),
        ("LONGTEXT", col("longtext", length=4294967295)),
        ("LONG", col("mediumtext", length=16777215)),
        ("LONG VARCHAR", col("mediumtext", length=16777215)),
        ("LONG VARBINARY", col("mediumblob", length=16777215)),
        ("TINYBLOB", col("tinyblob", length=255)),
        ("BLOB", col("blob", length=65535)),
        ("MEDIUMBLOB", col("mediumblob", length=16777215)),
        ("LONGBLOB", col("longblob", length=4294967295)),
        ("TEXT(50)", col("tinytext", length=255)),
        ("TEXT(1000)", col("text", length=65535)),
        ("TEXT(100000)", col("mediumtext", length=16777215)),
        ("BLOB(100)", col("tinyblob", length=255)),
        ("BLOB(300)", col("blob", length=65535)),
        ("ENUM('a','bb','c')", col("enum", length=2, elements=("a", "bb", "c"))),
        ("SET('x','yy')", col("set", length=4, elements=("x", "yy"))),
        ("BIT", col("bit", length=1)),
        ("BIT(8)", col("bit", length=8)),
        ("BIT(64)", col("bit", length=64)),
        ("JSON", col("json", length=4294967295)),
        ("VECTOR(3)", col("vector", length=3)),
    ],
)
def test_type(definition: str, expected: ColumnSchema) -> None:
    assert one_column(definition) == expected


def test_serial_is_a_unique_not_null_key() -> None:
    schema = parse_create_table("CREATE TABLE t (c SERIAL)", "db")
    assert schema.indexes == (IndexSchema("c", ("c",), unique=True, nullable=False),)


# ---------------------------------------------------------------- attributes


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        ("INT NOT NULL", col("int", length=11, nullable=False)),
        ("INT NULL", col("int", length=11, nullable=True)),
        ("INT NOT NULL NULL", col("int", length=11, nullable=True)),
        ("INT NULL NOT NULL", col("int", length=11, nullable=False)),
        ("INT AUTO_INCREMENT", col("int", length=11, nullable=False)),
        ("INT PRIMARY KEY", col("int", length=11, nullable=False)),
        ("INT KEY", col("int", length=11, nullable=False)),
        ("INT(10) ZEROFILL", col("int", length=10, unsigned=True)),
        ("INT(10) UNSIGNED ZEROFILL", col("int", length=10, unsigned=True)),
        ("INT(10) ZEROFILL UNSIGNED", col("int", length=10, unsigned=True)),
        ("DECIMAL(5,2) ZEROFILL", col("decimal", length=5, scale=2, unsigned=True)),
        ("INT COMMENT 'the ''c'' column'", col("int", length=11)),
        ("INT COLUMN_FORMAT FIXED STORAGE DISK", col("int", length=11)),
        ("INT INVISIBLE", col("int", length=11)),
        ("INT CHECK (c > 0)", col("int", length=11)),
        ("INT CONSTRAINT positive CHECK (c > 0)", col("int", length=11)),
        ("INT REFERENCES other (id)", col("int", length=11)),
        ("BIGINT AUTO_RANDOM(5) PRIMARY KEY", col("bigint", length=20, nullable=False)),
        ("BIGINT AUTO_RANDOM PRIMARY KEY", col("bigint", length=20, nullable=False)),
        ("BIGINT /*T![auto_rand] AUTO_RANDOM(5) */ PRIMARY KEY", col("bigint", length=20, nullable=False)),
        ("BIGINT PRIMARY KEY CLUSTERED", col("bigint", length=20, nullable=False)),
        ("BIGINT PRIMARY KEY NONCLUSTERED", col("bigint", length=20, nullable=False)),
        ("INT AS (1 + 1) VIRTUAL", col("int", length=11)),
        ("INT GENERATED ALWAYS AS (1 + 1) STORED", col("int", length=11)),
        ("TIMESTAMP NULL ON UPDATE CURRENT_TIMESTAMP", col("timestamp", length=19, fsp=0)),
    ],
)
def test_attribute(definition: str, expected: ColumnSchema) -> None:
    assert one_column(definition) == expected


@pytest.mark.parametrize(
    ("definition", "generated"),
    [
        ("INT AS (1 + 1)", "VIRTUAL"),
        ("INT AS (1 + 1) VIRTUAL", "VIRTUAL"),
        ("INT GENERATED ALWAYS AS (1 + 1) VIRTUAL", "VIRTUAL"),
        ("INT GENERATED ALWAYS AS (1 + 1)", "VIRTUAL"),
        ("INT AS (1 + 1) STORED", "STORED"),
    ],
)
def test_generated_columns_are_listed_in_extra(definition: str, generated: str) -> None:
    schema = parse_create_table(f"CREATE TABLE t (a INT, c {definition})", "db")
    assert schema.extra == {"generated_columns": {"c": generated}}


# ---------------------------------------------------------------- defaults


@pytest.mark.parametrize(
    ("definition", "default"),
    [
        ("INT DEFAULT 1", "1"),
        ("INT DEFAULT -1", "-1"),
        ("INT DEFAULT +2", "2"),
        ("INT DEFAULT '3'", "3"),
        ("INT DEFAULT (-4)", "-4"),
        ("INT DEFAULT NULL", None),
        ("DECIMAL(5,2) DEFAULT 1.50", "1.50"),
        ("DECIMAL(5,2) DEFAULT '0.00'", "0.00"),
        ("DOUBLE DEFAULT 1.5e3", "1.5e3"),
        ("TINYINT(1) DEFAULT TRUE", "1"),
        ("BOOL DEFAULT FALSE", "0"),
        ("VARCHAR(10) DEFAULT ''", ""),
        ("VARCHAR(10) DEFAULT 'it''s'", "it's"),
        ("VARCHAR(10) DEFAULT 'a\\\\b'", "a\\b"),
        ("VARCHAR(10) DEFAULT 'a' 'b'", "ab"),
        ("VARCHAR(10) DEFAULT _UTF8MB4'x'", "x"),
        ("VARCHAR(10) DEFAULT N'x'", "x"),
        ("VARCHAR(10) DEFAULT 'é😀'", "é😀"),
        ("VARCHAR(36) DEFAULT (UUID())", "UUID()"),
        ("BIT(3) DEFAULT b'101'", "5"),
        ("BIT(8) DEFAULT 0x41", "65"),
        ("INT DEFAULT x'10'", "16"),
        ("VARBINARY(4) DEFAULT x'4142'", "AB"),
        ("BINARY(1) DEFAULT b'01000001'", "A"),
        ("ENUM('a','b') DEFAULT 'b'", "b"),
        ("SET('a','b') DEFAULT 'a,b'", "a,b"),
        ("DATE DEFAULT '2020-01-01'", "2020-01-01"),
        ("DATE DEFAULT (CURRENT_DATE)", "CURRENT_DATE"),
        ("DATETIME DEFAULT '2020-01-01 00:00:00'", "2020-01-01 00:00:00"),
        ("DATETIME DEFAULT CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP"),
        ("DATETIME DEFAULT CURRENT_TIMESTAMP()", "CURRENT_TIMESTAMP"),
        ("DATETIME DEFAULT NOW()", "CURRENT_TIMESTAMP"),
        ("DATETIME DEFAULT LOCALTIME", "CURRENT_TIMESTAMP"),
        ("DATETIME DEFAULT LOCALTIMESTAMP()", "CURRENT_TIMESTAMP"),
        ("DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3)", "CURRENT_TIMESTAMP(3)"),
        ("TIMESTAMP(6) DEFAULT NOW(6) ON UPDATE NOW(6)", "CURRENT_TIMESTAMP(6)"),
        ("TIMESTAMP(2) DEFAULT LOCALTIMESTAMP(2)", "CURRENT_TIMESTAMP(2)"),
    ],
)
def test_default(definition: str, default: str | None) -> None:
    assert one_column(definition).default == default


# ---------------------------------------------------------------- character sets


@pytest.mark.parametrize(
    ("definition", "options", "charset", "collation"),
    [
        ("VARCHAR(5)", "", None, None),
        ("VARCHAR(5) CHARACTER SET utf8mb4", "", "utf8mb4", "utf8mb4_bin"),
        ("VARCHAR(5) CHARSET latin1", "", "latin1", "latin1_bin"),
        ("VARCHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "", "utf8mb4", "utf8mb4_general_ci"),
        ("VARCHAR(5) COLLATE utf8mb4_unicode_ci", "", "utf8mb4", "utf8mb4_unicode_ci"),
        ("VARCHAR(5) COLLATE utf8_general_ci", "", "utf8", "utf8_general_ci"),
        ("VARCHAR(5) CHARACTER SET utf8mb3", "", "utf8", "utf8_bin"),
        ("VARCHAR(5) CHARACTER SET UTF8MB4 COLLATE UTF8MB4_BIN", "", "utf8mb4", "utf8mb4_bin"),
        ("VARCHAR(5) CHARACTER SET gbk", "", "gbk", "gbk_bin"),
        ("VARCHAR(5)", " DEFAULT CHARSET=latin1", "latin1", "latin1_bin"),
        ("VARCHAR(5)", " CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci", "utf8mb4", "utf8mb4_general_ci"),
        ("VARCHAR(5)", " COLLATE=utf8mb4_unicode_ci", "utf8mb4", "utf8mb4_unicode_ci"),
        ("VARCHAR(5) CHARACTER SET ascii", " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci", "ascii", "ascii_bin"),
        ("VARCHAR(5) BINARY", " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci", "utf8mb4", "utf8mb4_bin"),
        ("VARCHAR(5) BINARY CHARACTER SET latin1", "", "latin1", "latin1_bin"),
        ("VARCHAR(5) ASCII", "", "latin1", "latin1_bin"),
        ("ENUM('a') CHARACTER SET latin1", "", "latin1", "latin1_bin"),
        ("TEXT CHARACTER SET utf8mb4", "", "utf8mb4", "utf8mb4_bin"),
        ("INT", " DEFAULT CHARSET=latin1", "binary", "binary"),
        ("JSON", " DEFAULT CHARSET=latin1", "binary", "binary"),
    ],
)
def test_charset_and_collation(definition: str, options: str, charset: str | None, collation: str | None) -> None:
    column = one_column(definition, options)
    assert (column.charset, column.collation) == (charset, collation)


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        ("CHAR(4) CHARACTER SET binary", col("binary", length=4)),
        ("VARCHAR(10) CHARACTER SET binary", col("varbinary", length=10)),
        ("TEXT CHARACTER SET binary", col("blob", length=65535)),
        ("TINYTEXT CHARSET binary", col("tinyblob", length=255)),
        ("TEXT(100) CHARACTER SET binary", col("tinyblob", length=255)),
        ("LONGTEXT COLLATE binary", col("longblob", length=4294967295)),
    ],
)
def test_binary_character_set_makes_the_binary_type(definition: str, expected: ColumnSchema) -> None:
    assert one_column(definition) == expected


def test_binary_table_charset_makes_binary_types() -> None:
    assert one_column("VARCHAR(3)", " DEFAULT CHARSET=binary") == col("varbinary", length=3)


def test_text_length_uses_the_character_set() -> None:
    assert one_column("TEXT(100) CHARACTER SET latin1").mysql_type == "tinytext"
    assert one_column("TEXT(100) CHARACTER SET utf8mb4").mysql_type == "text"


# ---------------------------------------------------------------- enum and set members


@pytest.mark.parametrize(
    ("definition", "members"),
    [
        ("ENUM('a','b','c')", ("a", "b", "c")),
        ("ENUM('it''s', 'say \"hi\"')", ("it's", 'say "hi"')),
        ("ENUM('back\\\\slash', 'quote\\'d')", ("back\\slash", "quote'd")),
        ("ENUM('a,b', ' spaced ')", ("a,b", " spaced ")),
        ("ENUM('ü', '客户', '🚀')", ("ü", "客户", "🚀")),
        ("ENUM(_UTF8MB4'x', 'y')", ("x", "y")),
        ("ENUM('')", ("",)),
        ("SET('read','write')", ("read", "write")),
    ],
)
def test_enum_and_set_members(definition: str, members: tuple[str, ...]) -> None:
    assert one_column(definition).elements == members


# ---------------------------------------------------------------- keys


def keys(sql: str) -> tuple[IndexSchema, ...]:
    return parse_create_table(sql, "db").indexes


def test_inline_primary_key() -> None:
    assert keys("CREATE TABLE t (id INT PRIMARY KEY, v INT)") == (
        IndexSchema("PRIMARY", ("id",), primary=True, unique=True),
    )


def test_primary_key_constraint_makes_its_columns_not_null() -> None:
    schema = parse_create_table("CREATE TABLE t (a INT, b VARCHAR(3) NULL, c INT, PRIMARY KEY (a, b))", "db")
    assert [c.nullable for c in schema.columns] == [False, False, True]
    assert schema.indexes == (IndexSchema("PRIMARY", ("a", "b"), primary=True, unique=True),)


@pytest.mark.parametrize(
    "definition",
    [
        "PRIMARY KEY (a)",
        "CONSTRAINT pk PRIMARY KEY (a)",
        "CONSTRAINT PRIMARY KEY (a)",
        "PRIMARY KEY (a) CLUSTERED",
        "PRIMARY KEY (a) NONCLUSTERED",
        "PRIMARY KEY (a) /*T![clustered_index] CLUSTERED */",
        "PRIMARY KEY (a) /*T![clustered_index] NONCLUSTERED */ COMMENT 'pk'",
        "PRIMARY KEY USING BTREE (a)",
        "PRIMARY KEY (a) USING HASH",
        "PRIMARY KEY (`a`(10))",
        "PRIMARY KEY (a DESC)",
    ],
)
def test_primary_key_forms(definition: str) -> None:
    assert keys(f"CREATE TABLE t (a VARCHAR(20), {definition})") == (
        IndexSchema("PRIMARY", ("a",), primary=True, unique=True),
    )


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        ("UNIQUE KEY uk (a)", IndexSchema("uk", ("a",), unique=True, nullable=True)),
        ("UNIQUE INDEX uk (a, b)", IndexSchema("uk", ("a", "b"), unique=True, nullable=True)),
        ("UNIQUE uk (a)", IndexSchema("uk", ("a",), unique=True, nullable=True)),
        ("UNIQUE (b)", IndexSchema("b", ("b",), unique=True, nullable=False)),
        ("UNIQUE KEY (b, a)", IndexSchema("b", ("b", "a"), unique=True, nullable=True)),
        ("CONSTRAINT c UNIQUE (b)", IndexSchema("c", ("b",), unique=True, nullable=False)),
        ("CONSTRAINT c UNIQUE KEY k (b)", IndexSchema("k", ("b",), unique=True, nullable=False)),
        ("UNIQUE KEY uk USING BTREE (a) COMMENT 'x'", IndexSchema("uk", ("a",), unique=True, nullable=True)),
        ("KEY k (a)", IndexSchema("k", ("a",), nullable=True)),
        ("UNIQUE KEY uk (a) GLOBAL", IndexSchema("uk", ("a",), unique=True, nullable=True)),
        ("KEY k (a) LOCAL COMMENT 'x'", IndexSchema("k", ("a",), nullable=True)),
        ("INDEX k (a(3), b DESC)", IndexSchema("k", ("a", "b"), nullable=True)),
        ("KEY (b)", IndexSchema("b", ("b",))),
        ("INDEX k USING HASH (b) INVISIBLE", IndexSchema("k", ("b",))),
        ("KEY e ((lower(a)))", IndexSchema("e", (), nullable=False)),
        ("UNIQUE KEY e ((a + 1), b)", IndexSchema("e", (), unique=True, nullable=False)),
    ],
)
def test_secondary_keys(definition: str, expected: IndexSchema) -> None:
    assert keys(f"CREATE TABLE t (a VARCHAR(9), b INT NOT NULL, {definition})") == (expected,)


@pytest.mark.parametrize(
    "definition",
    [
        "FULLTEXT KEY f (a)",
        "FULLTEXT (a)",
        "SPATIAL INDEX s (a)",
        "FOREIGN KEY (b) REFERENCES other (id)",
        "CONSTRAINT fk FOREIGN KEY fk_i (b) REFERENCES other (id) ON DELETE CASCADE",
        "CHECK (b > 0)",
        "CONSTRAINT positive CHECK (b > 0) NOT ENFORCED",
    ],
)
def test_keys_without_effect_are_left_out(definition: str) -> None:
    assert keys(f"CREATE TABLE t (a VARCHAR(9), b INT, {definition})") == ()


def test_keys_keep_definition_order_and_get_mysql_names() -> None:
    sql = (
        "CREATE TABLE t (a INT UNIQUE, b INT NOT NULL, KEY (a), UNIQUE KEY (a, b), "
        "PRIMARY KEY (b), KEY named (b), c INT UNIQUE KEY)"
    )
    assert keys(sql) == (
        IndexSchema("a", ("a",), unique=True, nullable=True),
        IndexSchema("a_2", ("a",), nullable=True),
        IndexSchema("a_3", ("a", "b"), unique=True, nullable=True),
        IndexSchema("PRIMARY", ("b",), primary=True, unique=True),
        IndexSchema("named", ("b",)),
        IndexSchema("c", ("c",), unique=True, nullable=True),
    )


def test_key_column_names_take_the_column_spelling() -> None:
    schema = parse_create_table("CREATE TABLE t (Id INT, KEY k (ID), PRIMARY KEY (iD))", "db")
    assert [index.columns for index in schema.indexes] == [("Id",), ("Id",)]


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("sql", "database", "table", "column"),
    [
        ("CREATE TABLE `d`.`t` (`c` INT)", "d", "t", "c"),
        ("CREATE TABLE d.t (c INT)", "d", "t", "c"),
        ("CREATE TABLE t (c INT)", "dflt", "t", "c"),
        ("CREATE TABLE `a.b`.`c.d` (`e.f` INT)", "a.b", "c.d", "e.f"),
        ("CREATE TABLE `my db`.`my table` (`my col` INT)", "my db", "my table", "my col"),
        ("CREATE TABLE `q``uote` (`b``t` INT)", "dflt", "q`uote", "b`t"),
        ('CREATE TABLE `it\'s` (`say "x"` INT)', "dflt", "it's", 'say "x"'),
        ("CREATE TABLE `select`.`from` (`where` INT, `order` INT)", "select", "from", "where"),
        ("CREATE TABLE `客户`.`Zähler` (`🚀` INT)", "客户", "Zähler", "🚀"),
        ("CREATE TABLE status (date DATE, `status` INT)", "dflt", "status", "date"),
        ("CREATE TABLE `1t` (`2c` INT)", "dflt", "1t", "2c"),
    ],
)
def test_identifiers(sql: str, database: str, table: str, column: str) -> None:
    schema = parse_create_table(sql, "dflt")
    assert (schema.database, schema.table, schema.columns[0].name) == (database, table, column)


def test_result_metadata() -> None:
    schema = parse_create_table("CREATE TABLE IF NOT EXISTS t (c INT) COMMENT 'hello'", "db")
    assert (schema.source, schema.version, schema.table_id) == ("ddl-sql", None, None)
    assert schema.extra == {"comment": "hello"}


def test_table_options_and_tidb_extras() -> None:
    sql = (
        "CREATE TABLE `test`.`t1` (`id` BIGINT NOT NULL /*T![auto_rand] AUTO_RANDOM(5) */, "
        "`name` VARCHAR(255) DEFAULT _UTF8MB4'abc', PRIMARY KEY(`id`) /*T![clustered_index] CLUSTERED */) "
        "ENGINE = InnoDB AUTO_INCREMENT=30001 DEFAULT CHARACTER SET = UTF8MB4 DEFAULT COLLATE = UTF8MB4_GENERAL_CI "
        "COMMENT = 'c' /*T! SHARD_ROW_ID_BITS=4 PRE_SPLIT_REGIONS=2 */"
    )
    schema = parse_create_table(sql, None)
    assert schema.columns[1] == ColumnSchema(
        "name", "varchar", length=255, default="abc", charset="utf8mb4", collation="utf8mb4_general_ci"
    )
    assert schema.extra == {"default_charset": "utf8mb4", "default_collation": "utf8mb4_general_ci", "comment": "c"}


@pytest.mark.parametrize(
    "tail",
    [
        " PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
        " PARTITION BY HASH(a) PARTITIONS 4",
        " PARTITION BY KEY() PARTITIONS 2",
        " PARTITION BY LIST COLUMNS(a) (PARTITION p0 VALUES IN (1, 2) COMMENT = 'x' ENGINE = InnoDB)",
        " DEFAULT CHARSET=latin1 TTL = `ts` + INTERVAL 1 DAY TTL_ENABLE = 'OFF'",
        " CHARSET latin1 PLACEMENT POLICY = p1",
        " CHARACTER SET = latin1, CHECKSUM = 1 PARTITION BY HASH(a) PARTITIONS 4",
    ],
)
def test_partitioning_and_unknown_table_options_are_skipped(tail: str) -> None:
    schema = parse_create_table(f"CREATE TABLE t (a INT NOT NULL, ts DATETIME, s VARCHAR(3), KEY (a)){tail}", "db")
    assert [c.name for c in schema.columns] == ["a", "ts", "s"]
    assert schema.indexes == (IndexSchema("a", ("a",)),)
    expected = "latin1" if "latin1" in tail else None
    assert schema.columns[2].charset == expected
    assert schema.extra.get("default_charset") == expected


def test_statement_may_end_with_a_semicolon_and_carry_comments() -> None:
    schema = parse_create_table("/* head */ CREATE TABLE t ( -- first\n a INT # second\n);", "db")
    assert schema.columns == (ColumnSchema("a", "int", length=11, **BIN),)


# ---------------------------------------------------------------- real DDL texts


@tiflow_vectors.needs_vectors
def test_tiflow_datatype_ddl() -> None:
    schema = parse_create_table((VECTORS / "datatype.ddl.sql").read_text(), "test")
    assert (schema.database, schema.table) == ("test", "foo")
    assert len(schema.columns) == 51
    assert schema.indexes == (IndexSchema("PRIMARY", ("pk",), primary=True, unique=True),)
    by_name = {c.name: c for c in schema.columns}
    assert by_name["pk"] == ColumnSchema("pk", "int", length=11, nullable=False, **BIN)
    assert by_name["col_dt_fsp_4"] == ColumnSchema("col_dt_fsp_4", "datetime", length=24, fsp=4, **BIN)
    assert by_name["col_t"] == ColumnSchema("col_t", "time", length=10, fsp=0, **BIN)
    assert by_name["col_ts_fsp_5"] == ColumnSchema("col_ts_fsp_5", "timestamp", length=25, fsp=5, **BIN)
    assert by_name["col_y"] == ColumnSchema("col_y", "year", length=4, **BIN)
    assert by_name["col_bit_60"] == ColumnSchema("col_bit_60", "bit", length=60, **BIN)
    assert by_name["col_varchar"] == ColumnSchema("col_varchar", "varchar", length=100)
    assert by_name["col_binary"] == ColumnSchema("col_binary", "binary", length=100, **BIN)
    assert by_name["col_blob"] == ColumnSchema("col_blob", "blob", length=65535, **BIN)
    assert by_name["col_numeric"] == ColumnSchema("col_numeric", "decimal", length=10, scale=5, **BIN)
    assert by_name["col_float"] == ColumnSchema("col_float", "float", length=12, **BIN)
    assert by_name["col_bigint_unsigned"] == ColumnSchema(
        "col_bigint_unsigned", "bigint", length=20, unsigned=True, **BIN
    )
    assert by_name["col_set"] == ColumnSchema("col_set", "set", length=5, elements=("a", "b", "c"))
    assert by_name["col_json"] == ColumnSchema("col_json", "json", length=4294967295, **BIN)


# ---------------------------------------------------------------- round trip with the simulator


def comparable(schema: TableSchema) -> tuple[object, ...]:
    """What CREATE TABLE text carries (index names compare like MySQL: case-insensitively)."""
    indexes = tuple(replace(index, name=index.name.lower()) for index in schema.indexes)
    return schema.database, schema.table, schema.columns, indexes


@pytest.mark.parametrize("seed", range(8))
def test_round_trip_with_simulated_tables(seed: int) -> None:
    tables = random.Random(seed).randint(1, 9)
    config = WorkloadConfig(tables=tables, databases=random.Random(seed + 100).randint(1, tables))
    for schema in Workload(random.Random(seed), config).table_schemas():
        parsed = parse_create_table(create_table_sql(schema), None)
        assert comparable(parsed) == comparable(schema)
        assert (parsed.source, parsed.version) == ("ddl-sql", None)


def test_round_trip_with_odd_names_and_defaults() -> None:
    base = Workload(random.Random(1), WorkloadConfig(tables=1)).table_schemas()[0]
    odd = replace(
        base,
        database="my `db`.x",
        table="客户 order's",
        columns=tuple(
            replace(c, name=f"{c.name} ü`'\"", default=None if c.default is None else c.default + "\\'")
            for c in base.columns
        ),
        indexes=tuple(replace(i, columns=tuple(f"{n} ü`'\"" for n in i.columns)) for i in base.indexes),
    )
    assert comparable(parse_create_table(create_table_sql(odd), None)) == comparable(odd)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        (
            "CREATE TABLE t (a GEOMETRY)",
            "table db.t, column 'a': type GEOMETRY is not a TiDB column type this parser knows",
        ),
        ("CREATE TABLE t (a VARCHAR)", "table db.t, column 'a': VARCHAR needs a length"),
        ("CREATE TABLE t (a DECIMAL(66,2))", "table db.t, column 'a': DECIMAL(66,2) is not a valid DECIMAL"),
        ("CREATE TABLE t (a DECIMAL(5,6))", "table db.t, column 'a': DECIMAL(5,6) is not a valid DECIMAL"),
        ("CREATE TABLE t (a FLOAT(54))", "table db.t, column 'a': FLOAT(54) needs a precision from 0 to 53"),
        ("CREATE TABLE t (a BIT(65))", "table db.t, column 'a': BIT(65) needs a length from 1 to 64"),
        (
            "CREATE TABLE t (a DATETIME(7))",
            "table db.t, column 'a': DATETIME(7) has an invalid fractional-second precision",
        ),
        ("CREATE TABLE t (a INT(3,2))", "table db.t, column 'a': INT(3,2) has too many parameters"),
        ("CREATE TABLE t (a INT, A BIGINT)", "table db.t: column 'A' is defined twice"),
        ("CREATE TABLE t (a INT PRIMARY KEY, PRIMARY KEY (a))", "table db.t: the table already has a primary key"),
        ("CREATE TABLE t (a INT, KEY k (a), KEY K (a))", "table db.t: duplicate key name 'K'"),
        ("CREATE TABLE t (a INT, KEY k (b))", "table db.t: key 'k' names column 'b', which does not exist"),
        ("CREATE TABLE t (a INT", "sqlglot cannot read it: Expecting ). Line 1, Col: 21."),
        ("CREATE TABLE t (a INT SERIAL DEFAULT VALUE)", "sqlglot cannot read it: Expecting ). Line 1, Col: 28."),
        ("CREATE TABLE db.t", "the statement has no column list"),
        ("CREATE TABLE t2 LIKE t1", "CREATE TABLE ... LIKE: the schema is a copy of table db.t1"),
        ("CREATE TABLE t (a INT) SELECT 1 AS a", "CREATE TABLE ... SELECT is not supported"),
        ("ALTER TABLE t ADD b INT", "not a CREATE TABLE statement"),
        ("CREATE TABLE a (x INT); CREATE TABLE b (y INT)", "expected one CREATE TABLE statement, found 2 statements"),
        ("CREATE TABLE t (a 'oops)", "sqlglot cannot tokenize it: Error tokenizing 'CREATE TABLE t (a 'oops'"),
    ],
)
def test_unreadable_ddl_holds_the_table(sql: str, reason: str) -> None:
    with pytest.raises(SchemaError) as caught:
        parse_create_table(sql, "db")
    assert str(caught.value) == f"cannot read DDL {sql!r}: {reason}; the table is held until its schema is known"


def test_a_table_without_database_is_an_error() -> None:
    with pytest.raises(SchemaError, match=r"table 't' has no database: the DDL names none and no default was given"):
        parse_create_table("CREATE TABLE t (a INT)", None)
