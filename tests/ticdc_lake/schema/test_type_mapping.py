from __future__ import annotations

from typing import Any

import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.schema.type_mapping import iceberg_type, is_lossless_widening


def col(mysql_type: str, **attrs: Any) -> ColumnSchema:
    return ColumnSchema(name="c", mysql_type=mysql_type, **attrs)


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        (col("tinyint"), "int"),
        (col("tinyint", unsigned=True), "int"),
        (col("smallint"), "int"),
        (col("smallint", unsigned=True), "int"),
        (col("mediumint"), "int"),
        (col("mediumint", unsigned=True), "int"),
        (col("int"), "int"),
        (col("int", unsigned=True), "long"),
        (col("bigint"), "long"),
        (col("bigint", unsigned=True), "decimal(20,0)"),
        (col("year"), "int"),
        (col("float"), "float"),
        (col("double"), "double"),
        (col("decimal", length=12, scale=6), "decimal(12,6)"),
        (col("decimal", length=10, scale=0), "decimal(10,0)"),
        (col("decimal", length=38, scale=10), "decimal(38,10)"),
        (col("decimal", length=65, scale=30), "string"),
        (col("decimal"), "string"),
        (col("decimal", length=10, scale=None), "decimal(10,0)"),
        (col("decimal", length=12, scale=2, unsigned=True), "decimal(12,2)"),
        (col("char", length=10), "string"),
        (col("varchar", length=255), "string"),
        (col("tinytext"), "string"),
        (col("text"), "string"),
        (col("mediumtext"), "string"),
        (col("longtext"), "string"),
        (col("json"), "string"),
        (col("enum", elements=("a", "b")), "string"),
        (col("set", elements=("a", "b")), "string"),
        (col("vector"), "string"),
        (col("binary", length=16), "binary"),
        (col("varbinary", length=255), "binary"),
        (col("tinyblob"), "binary"),
        (col("blob"), "binary"),
        (col("mediumblob"), "binary"),
        (col("longblob"), "binary"),
        (col("bit", length=8), "long"),
        (col("date"), "date"),
        (col("datetime", fsp=6), "timestamp"),
        (col("timestamp", fsp=3), "timestamptz"),
        (col("time", fsp=6), "string"),
    ],
    ids=lambda value: value.type_text() if isinstance(value, ColumnSchema) else str(value),
)
def test_iceberg_type(column: ColumnSchema, expected: str) -> None:
    assert iceberg_type(column) == expected


def test_binary_is_decided_by_the_type_name_not_the_charset() -> None:
    assert iceberg_type(col("varchar", charset="binary")) == "string"
    assert iceberg_type(col("varbinary", charset="utf8mb4")) == "binary"


def test_unknown_type_is_a_schema_error_naming_column_and_type() -> None:
    with pytest.raises(SchemaError, match=r"^column 'c' of table shop\.t has MySQL type 'geometry', which has no "):
        iceberg_type(col("geometry"), table="shop.t")
    with pytest.raises(SchemaError, match=r"^column 'c' has MySQL type 'geometry'"):
        iceberg_type(col("geometry"))


def test_decimal_with_scale_above_precision_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match=r"^column 'c' is DECIMAL\(5,6\): the scale exceeds the precision"):
        iceberg_type(col("decimal", length=5, scale=6))


@pytest.mark.parametrize(
    ("old", "new", "lossless"),
    [
        ("int", "long", True),
        ("float", "double", True),
        ("decimal(10,2)", "decimal(12,2)", True),
        ("decimal(10,2)", "decimal(38,2)", True),
        ("decimal(10, 2)", "decimal(12,2)", True),
        ("int", "int", False),
        ("long", "int", False),
        ("double", "float", False),
        ("int", "double", False),
        ("long", "decimal(20,0)", False),
        ("decimal(10,2)", "decimal(12,3)", False),
        ("decimal(12,2)", "decimal(10,2)", False),
        ("decimal(10,2)", "decimal(10,2)", False),
        ("decimal(10,2)", "decimal(39,2)", False),
        ("string", "string", False),
        ("date", "timestamp", False),
        ("timestamp", "timestamptz", False),
    ],
)
def test_is_lossless_widening(old: str, new: str, lossless: bool) -> None:
    assert is_lossless_widening(old, new) is lossless
