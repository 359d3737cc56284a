"""Schemas of tables met mid-stream: inferred from a row's types, or read from the baseline folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from ticdc_lake.errors import ConfigError
from ticdc_lake.events import ChangeEvent, EventFacts, EventKind, Op, SourcePosition
from ticdc_lake.protocols.schema_facts import infer_schema
from ticdc_lake.schema.baseline import BASELINE_SOURCE, read_baseline
from ticdc_lake.schema.inference import INFERRED_SOURCE, MISSING_FACTS, column_from_type
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema
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


def test_a_canal_row_gives_a_version_zero_schema_with_its_key_and_missing_facts() -> None:
    row = ChangeEvent(EventKind.DML, SourcePosition("t", 0, 1), 500, "shop", "legacy", op=Op.INSERT)
    row.column_types = {"id": "bigint", "price": "decimal", "state": "enum", "note": "varchar"}
    row.facts = EventFacts(handle_key=("id",), primary_key=("id",))
    schema = infer_schema(row)
    assert schema is not None
    assert (schema.database, schema.table, schema.version, schema.source) == ("shop", "legacy", 0, INFERRED_SOURCE)
    assert [(c.name, c.mysql_type, c.nullable) for c in schema.columns] == [
        ("id", "bigint", False),
        ("price", "decimal", True),
        ("state", "enum", True),
        ("note", "varchar", True),
    ]
    assert schema.indexes == (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
    assert schema.extra[MISSING_FACTS] == [
        "column 'price': DECIMAL precision and scale unknown; the Iceberg column is a string",
        "column 'state': ENUM members unknown; values are kept as the numbers the rows send",
        "nullability and defaults: not in the rows; columns outside the key are nullable, without default",
    ]


def test_a_row_without_types_or_key_infers_nothing_or_no_key() -> None:
    row = ChangeEvent(EventKind.DML, SourcePosition("t", 0, 1), 5, "shop", "t", op=Op.INSERT)
    assert infer_schema(row) is None
    row.column_types = {"a": "int"}
    schema = infer_schema(row)
    assert schema is not None
    assert schema.handle_key() == ()
    assert "key: the rows name none; apply uses the whole row" in schema.extra[MISSING_FACTS]


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
