"""Canal-JSON ``mysqlType`` parsing and value canonicalisation (docs/type-mapping.md, docs/canonical-values.md)."""

from __future__ import annotations

import re

import pytest

from ticdc_lake.canonical import zone_info
from ticdc_lake.protocols.canal_values import ColumnType, canonical_value, describe, parse_mysql_type

UTC = zone_info("UTC")
SHANGHAI = zone_info("Asia/Shanghai")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("int", ColumnType("int", "int")),
        ("int unsigned", ColumnType("int unsigned", "int", unsigned=True)),
        ("bigint unsigned zerofill", ColumnType("bigint unsigned zerofill", "bigint", unsigned=True)),
        ("int(11)", ColumnType("int(11)", "int", length=11)),
        ("varchar(20)", ColumnType("varchar(20)", "varchar", length=20)),
        ("decimal(10,2)", ColumnType("decimal(10,2)", "decimal", length=10, scale=2)),
        ("decimal(12,6) unsigned", ColumnType("decimal(12,6) unsigned", "decimal", True, 12, 6)),
        ("datetime(3)", ColumnType("datetime(3)", "datetime", length=3)),
        ("bit(10)", ColumnType("bit(10)", "bit", length=10)),
        ("varbinary", ColumnType("varbinary", "varbinary")),
        ("enum", ColumnType("enum", "enum")),
        ("set", ColumnType("set", "set")),
        ("enum('a','b')", ColumnType("enum('a','b')", "enum", members=("a", "b"))),
        ("set('x','y','z')", ColumnType("set('x','y','z')", "set", members=("x", "y", "z"))),
        ("enum('it''s','a)b','')", ColumnType("enum('it''s','a)b','')", "enum", members=("it's", "a)b", ""))),
        ("enum('a\\nb','c\\\\d')", ColumnType("enum('a\\nb','c\\\\d')", "enum", members=("a\nb", "c\\\\d"))),
        ("vector", ColumnType("vector", "vector")),
    ],
)
def test_parse_mysql_type(text: str, expected: ColumnType) -> None:
    assert parse_mysql_type(text) == expected


@pytest.mark.parametrize(
    ("text", "binary"),
    [
        ("binary(16)", True),
        ("varbinary", True),
        ("tinyblob", True),
        ("longblob", True),
        ("blob", True),
        ("char(4)", False),
        ("text", False),
        ("json", False),
        ("bit(1)", False),
    ],
)
def test_binary_is_decided_by_the_type_name(text: str, binary: bool) -> None:
    assert parse_mysql_type(text).binary is binary


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "geometry",
            "type 'geometry' is not supported by the decoder; exclude the table from the pipeline "
            "(target.exclude) or ask for the type to be supported",
        ),
        (
            "widget",
            "unknown MySQL type 'widget': not a type name TiCDC sends (docs/type-mapping.md lists them); "
            "exclude the table from the pipeline (target.exclude) or ask for the type to be supported",
        ),
        (
            "",
            "unknown MySQL type '': not a type name TiCDC sends (docs/type-mapping.md lists them); "
            "exclude the table from the pipeline (target.exclude) or ask for the type to be supported",
        ),
        ("int signed", "unexpected words 'signed' in type 'int signed' (only unsigned, zerofill)"),
        (
            "int unsigned unsigned",
            "unexpected words 'unsigned unsigned' in type 'int unsigned unsigned' (only unsigned, zerofill)",
        ),
        ("decimal(10,2", "unbalanced parenthesis or quote in type 'decimal(10,2'"),
        ("decimal(10,x)", "type arguments '10,x' of 'decimal(10,x)' are not one or two integers"),
        ("int(11)x", "unexpected 'x' after the type arguments in 'int(11)x'"),
        ("enum(a,b)", "ENUM/SET members in 'enum(a,b)' must be quoted: 'a','b'"),
        ("enum('a' 'b')", "expected ',' between ENUM/SET members in \"enum('a' 'b')\""),
    ],
)
def test_parse_mysql_type_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        parse_mysql_type(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("mysql_type", "value", "expected"),
    [
        ("tinyint", "-128", "-128"),
        ("tinyint unsigned", "255", "255"),
        ("int(11)", "007", "7"),
        ("bigint", "-9223372036854775808", "-9223372036854775808"),
        ("bigint unsigned", "18446744073709551615", "18446744073709551615"),
        ("year", "2023", "2023"),
        ("bit", "18446744073709551615", "18446744073709551615"),
        ("bit(10)", "1023", "1023"),
        ("float", "3.14", "3.14"),
        ("double", "100000000000000000000", "100000000000000000000"),
        ("decimal(10,2)", "-0.10", "-0.10"),
        ("decimal", "179394.233300", "179394.233300"),
        ("date", "2023-11-30", "2023-11-30"),
        ("datetime(3)", "2023-11-30 12:34:56.123", "2023-11-30 12:34:56.123"),
        ("datetime", "0000-00-00 00:00:00", "0000-00-00 00:00:00"),
        ("time", "-838:59:59", "-838:59:59"),
        ("timestamp", "2024-01-01 00:00:00.250", "2024-01-01T00:00:00.250Z"),
        ("varchar", "日本語🙂", "日本語🙂"),
        ("text", "", ""),
        ("json", '{"k": "v"}', '{"k": "v"}'),
        ("vector", "[1,2.5]", "[1,2.5]"),
        ("varbinary", "\x00\xff\x80A", "AP+AQQ=="),
        ("blob", "", ""),
        ("binary(2)", "\x00\x00", "AAA="),
        ("enum", "2", "2"),
        ("enum", "0", "0"),
        ("set", "5", "5"),
        ("enum('a','b')", "2", "b"),
        ("enum('a','b')", "0", ""),
        ("set('x','y','z')", "5", "x,z"),
        ("set('x','y','z')", "0", ""),
    ],
)
def test_canonical_value(mysql_type: str, value: str, expected: str) -> None:
    assert canonical_value(parse_mysql_type(mysql_type), value, UTC) == expected


def test_timestamp_is_server_wall_time() -> None:
    column = parse_mysql_type("timestamp(3)")
    assert canonical_value(column, "2024-01-01 08:00:00.250", SHANGHAI) == "2024-01-01T00:00:00.250Z"
    assert canonical_value(column, "0000-00-00 00:00:00", SHANGHAI) == "0000-00-00 00:00:00"


@pytest.mark.parametrize(
    ("mysql_type", "value", "message"),
    [
        ("tinyint", "128", "128 is outside the range -128..127"),
        ("int unsigned", "-1", "-1 is outside the range 0..4294967295"),
        (
            "bigint unsigned",
            "18446744073709551616",
            "18446744073709551616 is outside the range 0..18446744073709551615",
        ),
        ("int", "1.0", "'1.0' is not a base-10 integer"),
        ("bit(3)", "8", "8 is outside the range 0..7"),
        ("year", "2156", "2156 is outside the range 0..2155"),
        ("float", "NaN", "'NaN' is not a finite floating-point number"),
        ("decimal", "1e5", "'1e5' is not a decimal number"),
        ("date", "2023-13-01", "'2023-13-01' is not a DATE value YYYY-MM-DD"),
        (
            "varbinary",
            "caf\u00e9\u20ac",
            "binary value has character '€' at position 4, beyond U+00FF: TiCDC "
            "writes binary strings as ISO-8859-1, one character per byte",
        ),
        ("enum('a','b')", "3", "ENUM index 3 is beyond the 2 members ('a', 'b')"),
        ("set('x','y')", "4", "SET bitmask 4 has bits beyond the 2 members ('x', 'y')"),
        ("enum", "65536", "65536 is outside the range 0..65535"),
        ("enum", "a", "'a' is not a base-10 integer"),
    ],
)
def test_canonical_value_errors(mysql_type: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        canonical_value(parse_mysql_type(mysql_type), value, UTC)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("value", "shown"),
    [(1, "number 1"), (1.5, "number 1.5"), (True, "true"), ([], "an array"), ({}, "an object"), (None, "null")],
)
def test_values_must_be_strings(value: object, shown: str) -> None:
    with pytest.raises(ValueError, match="expected a JSON string") as info:
        canonical_value(parse_mysql_type("int"), value, UTC)
    assert str(info.value) == f"expected a JSON string, got {shown}"
    assert describe("x" * 41) == 'string "' + "x" * 40 + '…"'
