"""Schemas of tables met mid-stream: inferred from a row's types, or read from the baseline folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from ticdc_lake.errors import ConfigError
from ticdc_lake.schema.baseline import BASELINE_SOURCE, read_baseline
from ticdc_lake.schema.inference import column_from_type
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.schema.type_mapping import iceberg_type


@pytest.mark.parametrize(
    ("text", "column", "missing", "iceberg"),
    [
        ("int(11)", ColumnSchema("c", "int", length=11), False, "int"),
        ("int unsigned", ColumnSchema("c", "int", length=10, unsigned=True), False, "long"),
        ("decimal(10,2)", ColumnSchema("c", "decimal", length=10, scale=2), False, "decimal(10,2)"),
        ("decimal", ColumnSchema("c", "decimal"), True, "string"),
        ("enum('a','b')", ColumnSchema("c", "enum", length=1, elements=("a", "b")), False, "string"),
        ("enum", ColumnSchema("c", "enum"), True, "string"),
        ("set", ColumnSchema("c", "set"), True, "string"),
        ("varbinary", ColumnSchema("c", "varbinary"), False, "binary"),
        ("DATETIME(3)", ColumnSchema("c", "datetime", length=23, fsp=3), False, "timestamp"),
        ("connect:int16", ColumnSchema("c", "smallint"), True, "int"),
        ("geometry soup", ColumnSchema("c", "longtext"), True, "string"),
    ],
)
def test_type_texts_become_columns(text: str, column: ColumnSchema, missing: bool, iceberg: str) -> None:
    found, fact = column_from_type("c", text)
    assert found == column
    assert (fact is not None) == missing
    assert iceberg_type(found) == iceberg


def test_the_baseline_folder_names_databases_by_statement_folder_or_file(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "orders.sql").write_text(
        "CREATE TABLE `orders` (\n  `id` bigint NOT NULL,\n  `amount` decimal(12,2) DEFAULT NULL,\n"
        "  PRIMARY KEY (`id`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\n"
    )
    (tmp_path / "crm.sql").write_text("CREATE TABLE a (x INT PRIMARY KEY); CREATE TABLE other.b (y INT);")
    (tmp_path / "notes.txt").write_text("not a statement")
    schemas = read_baseline(f"file://{tmp_path}")
    assert [(s.database, s.table, s.version, s.source) for s in schemas] == [
        ("crm", "a", 0, BASELINE_SOURCE),
        ("other", "b", 0, BASELINE_SOURCE),
        ("shop", "orders", 0, BASELINE_SOURCE),
    ]
    orders = schemas[2]
    assert [c.type_text() for c in orders.columns] == ["bigint", "decimal(12,2)"]
    assert orders.handle_key() == ("id",)


def test_a_bad_baseline_is_a_configuration_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "shop.sql").write_text("CREATE TABLE t (x INT); CREATE TABLE t (((")
    with pytest.raises(ConfigError, match=r"shop\.sql: cannot read statement"):
        read_baseline(str(tmp_path))
    (tmp_path / "shop.sql").write_text("CREATE TABLE t (x INT);")
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "t.sql").write_text("CREATE TABLE t (y INT);")
    with pytest.raises(ConfigError, match=r"table shop\.t is defined in"):
        read_baseline(str(tmp_path))
    with pytest.raises(ConfigError, match="cannot be listed"):
        read_baseline(str(tmp_path / "missing"))
