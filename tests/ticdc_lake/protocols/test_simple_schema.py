from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ticdc_lake.errors import DecodeError
from ticdc_lake.protocols.simple_schema import table_schema_from_simple, table_schema_to_simple
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema

# The TableSchema example of the Simple protocol document, plus columns that exercise every
# dataType attribute (written by hand from the document and tiflow's ``simple/message.go``).
SIMPLE_SCHEMA_JSON = """
{
  "schema": "simple", "table": "user", "tableID": 148, "version": 447984074911121426,
  "columns": [
    {"name": "id", "dataType": {"mysqlType": "int", "charset": "binary", "collate": "binary", "length": 11},
     "nullable": false, "default": null},
    {"name": "name", "dataType": {"mysqlType": "varchar", "charset": "utf8mb4", "collate": "utf8mb4_bin",
     "length": 255}, "nullable": true, "default": null},
    {"name": "price", "dataType": {"mysqlType": "decimal", "charset": "binary", "collate": "binary",
     "length": 12, "decimal": 6, "unsigned": true, "zerofill": true}, "nullable": true,
     "default": "0.000000"},
    {"name": "whole", "dataType": {"mysqlType": "decimal", "charset": "binary", "collate": "binary",
     "length": 10}, "nullable": true, "default": null},
    {"name": "created", "dataType": {"mysqlType": "datetime", "charset": "binary", "collate": "binary",
     "length": 26, "decimal": 6}, "nullable": true, "default": "CURRENT_TIMESTAMP(6)"},
    {"name": "ts", "dataType": {"mysqlType": "timestamp", "charset": "binary", "collate": "binary",
     "length": 19}, "nullable": true, "default": null},
    {"name": "size", "dataType": {"mysqlType": "enum", "charset": "utf8mb4", "collate": "utf8mb4_bin",
     "length": 1, "elements": ["small", "medium", "large"]}, "nullable": true, "default": "small"},
    {"name": "flags", "dataType": {"mysqlType": "bit", "charset": "binary", "collate": "binary",
     "length": 8, "unsigned": true}, "nullable": true, "default": 5},
    {"name": "score", "dataType": {"mysqlType": "float", "charset": "binary", "collate": "binary",
     "length": 12}, "nullable": true, "default": null},
    {"name": "email", "dataType": {"mysqlType": "varchar", "charset": "utf8mb4", "collate": "utf8mb4_bin",
     "length": 100}, "nullable": false, "default": null}
  ],
  "indexes": [
    {"name": "primary", "unique": true, "primary": true, "nullable": false, "columns": ["id"]},
    {"name": "uk_email", "unique": true, "primary": false, "nullable": false, "columns": ["email"]}
  ]
}
"""


def simple_schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SIMPLE_SCHEMA_JSON)
    return data


def test_table_schema_from_simple_maps_every_attribute() -> None:
    schema = table_schema_from_simple(simple_schema(), source="simple-bootstrap")
    assert schema.database == "simple"
    assert schema.table == "user"
    assert schema.table_id == 148
    assert schema.version == 447984074911121426
    assert schema.source == "simple-bootstrap"
    assert schema.columns == (
        ColumnSchema("id", "int", length=11, nullable=False, charset="binary", collation="binary"),
        ColumnSchema("name", "varchar", length=255, charset="utf8mb4", collation="utf8mb4_bin"),
        ColumnSchema(
            "price", "decimal", length=12, scale=6, unsigned=True, default="0.000000",
            charset="binary", collation="binary",
        ),
        ColumnSchema("whole", "decimal", length=10, scale=0, charset="binary", collation="binary"),
        ColumnSchema(
            "created", "datetime", length=26, fsp=6, default="CURRENT_TIMESTAMP(6)",
            charset="binary", collation="binary",
        ),
        ColumnSchema("ts", "timestamp", length=19, fsp=0, charset="binary", collation="binary"),
        ColumnSchema(
            "size", "enum", length=1, default="small", charset="utf8mb4", collation="utf8mb4_bin",
            elements=("small", "medium", "large"),
        ),
        ColumnSchema(
            "flags", "bit", length=8, unsigned=True, default="5", charset="binary", collation="binary"
        ),
        ColumnSchema("score", "float", length=12, charset="binary", collation="binary"),
        ColumnSchema(
            "email", "varchar", length=100, nullable=False, charset="utf8mb4", collation="utf8mb4_bin"
        ),
    )  # fmt: skip
    assert schema.indexes == (
        IndexSchema("primary", ("id",), primary=True, unique=True, nullable=False),
        IndexSchema("uk_email", ("email",), primary=False, unique=True, nullable=False),
    )
    assert schema.handle_key() == ("id",)
    assert schema.column("price") is not None
    assert schema.columns[2].type_text() == "decimal(12,6) unsigned"


def test_source_is_what_the_caller_says() -> None:
    assert table_schema_from_simple(simple_schema(), source="simple-ddl").source == "simple-ddl"


def test_round_trip_through_the_simple_object() -> None:
    schema = table_schema_from_simple(simple_schema(), source="simple-ddl")
    again = table_schema_from_simple(table_schema_to_simple(schema), source="simple-ddl")
    assert again == schema


def test_to_simple_omits_zero_attributes_like_ticdc() -> None:
    schema = table_schema_from_simple(simple_schema(), source="simple-ddl")
    data = table_schema_to_simple(schema)
    assert data["columns"][0] == {
        "name": "id",
        "dataType": {"mysqlType": "int", "charset": "binary", "collate": "binary", "length": 11},
        "nullable": False,
        "default": None,
    }
    assert data["columns"][2]["dataType"] == {
        "mysqlType": "decimal",
        "charset": "binary",
        "collate": "binary",
        "length": 12,
        "decimal": 6,
        "unsigned": True,
    }
    assert data["indexes"][0] == {
        "name": "primary",
        "unique": True,
        "primary": True,
        "nullable": False,
        "columns": ["id"],
    }


def test_unspecified_length_and_empty_charset_read_as_unknown() -> None:
    data = simple_schema()
    data["columns"][0]["dataType"].update({"length": -1, "charset": "", "collate": ""})
    column = table_schema_from_simple(data, source="simple-ddl").columns[0]
    assert (column.length, column.charset, column.collation) == (None, None, None)


def test_type_names_are_lower_case() -> None:
    data = simple_schema()
    data["columns"][1]["dataType"]["mysqlType"] = "VARCHAR"
    assert table_schema_from_simple(data, source="simple-ddl").columns[1].mysql_type == "varchar"


def test_null_indexes_mean_none() -> None:
    data = simple_schema()
    data["indexes"] = None
    schema = table_schema_from_simple(data, source="simple-ddl")
    assert schema.indexes == ()
    assert schema.handle_key() == ()


def broken(path: list[str | int], value: Any = None, *, delete: bool = False) -> dict[str, Any]:
    data = copy.deepcopy(simple_schema())
    target: Any = data
    for part in path[:-1]:
        target = target[part]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            ["not", "an", "object"],
            "simple-json: tableSchema must be a JSON object, got an array",
        ),
        (
            broken(["schema"], delete=True),
            "simple-json: tableSchema.schema is missing",
        ),
        (
            broken(["table"], 7),
            "simple-json: tableSchema.table must be a string, got number 7",
        ),
        (
            broken(["version"], "447984074911121426"),
            "simple-json: tableSchema.version must be an integer in 0..18446744073709551615, got string "
            '"447984074911121426" (table simple.user)',
        ),
        (
            broken(["version"], -1),
            "simple-json: tableSchema.version must be an integer in 0..18446744073709551615, got number -1 "
            "(table simple.user)",
        ),
        (
            broken(["columns"], {}),
            "simple-json: tableSchema.columns must be an array, got an object (table simple.user)",
        ),
        (
            broken(["columns", 1, "dataType", "mysqlType"], None),
            "simple-json: tableSchema.columns[1].dataType.mysqlType must be a string, got null (table simple.user)",
        ),
        (
            broken(["columns", 2, "dataType", "decimal"], "6"),
            "simple-json: tableSchema.columns[2].dataType.decimal must be an integer in -1..256, "
            'got string "6" (table simple.user)',
        ),
        (
            broken(["columns", 0, "nullable"], delete=True),
            "simple-json: tableSchema.columns[0].nullable is missing (table simple.user)",
        ),
        (
            broken(["columns", 0, "dataType", "unsigned"], 1),
            "simple-json: tableSchema.columns[0].dataType.unsigned must be true or false, got number 1 "
            "(table simple.user)",
        ),
        (
            broken(["columns", 6, "dataType", "elements"], ["a", 1]),
            "simple-json: tableSchema.columns[6].dataType.elements must be an array of strings, got an array "
            "(table simple.user)",
        ),
        (
            broken(["columns", 0, "default"], True),
            "simple-json: tableSchema.columns[0].default must be a string, a number or null, got true "
            "(table simple.user)",
        ),
        (
            broken(["columns", 1, "name"], "id"),
            "simple-json: tableSchema.columns names a column twice (table simple.user)",
        ),
        (
            broken(["indexes", 1, "columns"], ["mail"]),
            "simple-json: tableSchema.indexes[1].columns names column 'mail', which the table does not have "
            "(table simple.user)",
        ),
        (
            broken(["indexes", 0, "primary"], delete=True),
            "simple-json: tableSchema.indexes[0].primary is missing (table simple.user)",
        ),
    ],
)
def test_malformed_table_schema_is_a_decode_error_naming_the_field(data: Any, message: str) -> None:
    with pytest.raises(DecodeError) as caught:
        table_schema_from_simple(data, source="simple-ddl")
    assert str(caught.value) == message


def test_field_name_in_errors_is_the_callers() -> None:
    with pytest.raises(DecodeError) as caught:
        table_schema_from_simple(broken(["table"], 7), source="simple-ddl", field="preTableSchema")
    assert str(caught.value) == "simple-json: preTableSchema.table must be a string, got number 7"


def test_table_schema_json_round_trip_keeps_simple_facts() -> None:
    schema = table_schema_from_simple(simple_schema(), source="simple-bootstrap")
    assert TableSchema.from_json(schema.to_json()) == schema
