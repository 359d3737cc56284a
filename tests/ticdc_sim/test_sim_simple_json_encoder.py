"""The Simple JSON encoder against the protocol document's examples and hand-written messages."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim import go_json
from ticdc_sim.catalog import column
from ticdc_sim.column_types import Value
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder

# ---------------------------------------------------------------------------------------------
# The examples of the TiCDC Simple protocol document (docs.pingcap.com, "TiCDC Simple Protocol"), verbatim.


def _compact(pretty: str) -> bytes:
    """The document's pretty-printed JSON as Go's compact output (key order kept)."""
    return json.dumps(json.loads(pretty), ensure_ascii=False, separators=(",", ":")).encode()


def _doc_columns(with_create_time: bool) -> str:
    columns = """
         {"name":"id","dataType":{"mysqlType":"int","charset":"binary","collate":"binary","length":11},
          "nullable":false,"default":null},
         {"name":"name","dataType":{"mysqlType":"varchar","charset":"utf8mb4","collate":"utf8mb4_bin",
          "length":255},"nullable":true,"default":null},
         {"name":"age","dataType":{"mysqlType":"int","charset":"binary","collate":"binary","length":11},
          "nullable":true,"default":null},
         {"name":"score","dataType":{"mysqlType":"float","charset":"binary","collate":"binary","length":12},
          "nullable":true,"default":null}"""
    if with_create_time:
        columns += """,
         {"name":"createTime","dataType":{"mysqlType":"timestamp","charset":"binary","collate":"binary",
          "length":19},"nullable":true,"default":null}"""
    return columns


_DOC_INDEXES = """[{"name":"primary","unique":true,"primary":true,"nullable":false,"columns":["id"]}]"""

DOC_ALTER = f"""{{
   "version":1,
   "type":"ALTER",
   "sql":"ALTER TABLE `user` ADD COLUMN `createTime` TIMESTAMP",
   "commitTs":447987408682614795,
   "buildTs":1708936343598,
   "tableSchema":{{"schema":"simple","table":"user","tableID":148,"version":447987408682614791,
      "columns":[{_doc_columns(True)}],"indexes":{_DOC_INDEXES}}},
   "preTableSchema":{{"schema":"simple","table":"user","tableID":148,"version":447984074911121426,
      "columns":[{_doc_columns(False)}],"indexes":{_DOC_INDEXES}}}
}}"""

DOC_BOOTSTRAP = f"""{{
   "version":1,
   "type":"BOOTSTRAP",
   "commitTs":0,
   "buildTs":1708924603278,
   "tableSchema":{{"schema":"simple","table":"new_user","tableID":148,"version":447984074911121426,
      "columns":[{_doc_columns(False)}],"indexes":{_DOC_INDEXES}}}
}}"""

DOC_INSERT = """{"version":1,"database":"simple","table":"user","tableID":148,"type":"INSERT",
   "commitTs":447984084414103554,"buildTs":1708923662983,"schemaVersion":447984074911121426,
   "data":{"age":"25","id":"1","name":"John Doe","score":"90.5"}}"""

DOC_UPDATE = """{"version":1,"database":"simple","table":"user","tableID":148,"type":"UPDATE",
   "commitTs":447984099186180098,"buildTs":1708923719184,"schemaVersion":447984074911121426,
   "data":{"age":"25","id":"1","name":"John Doe","score":"95"},
   "old":{"age":"25","id":"1","name":"John Doe","score":"90.5"}}"""

DOC_DELETE = """{"version":1,"database":"simple","table":"user","tableID":148,"type":"DELETE",
   "commitTs":447984114259722243,"buildTs":1708923776484,"schemaVersion":447984074911121426,
   "old":{"age":"25","id":"1","name":"John Doe","score":"95"}}"""

DOC_WATERMARK = """{"version":1,"type":"WATERMARK","commitTs":447984124732375041,"buildTs":1708923816911}"""


def _doc_user(table: str = "user", version: int = 447984074911121426, create_time: bool = False) -> TableSchema:
    cols = [
        column("id", "int", nullable=False),
        column("name", "varchar", length=255),
        column("age", "int"),
        column("score", "float"),
    ]
    if create_time:
        cols.append(column("createTime", "timestamp"))
    return TableSchema(
        "simple",
        table,
        tuple(cols),
        (IndexSchema("primary", ("id",), primary=True, unique=True),),
        table_id=148,
        version=version,
    )


DOC_ROW: dict[str, Value] = {"id": 1, "name": "John Doe", "age": 25, "score": 90.5}


def test_ddl_matches_the_protocol_document() -> None:
    ddl = DdlChange(
        "ALTER",
        "ALTER TABLE `user` ADD COLUMN `createTime` TIMESTAMP",
        "simple",
        "user",
        _doc_user(version=447987408682614791, create_time=True),
        _doc_user(),
    )
    encoded = SimpleJsonEncoder().encode_ddl(ddl, 447987408682614795, 1708936343598)
    assert encoded.key is None
    assert encoded.value == _compact(DOC_ALTER)


def test_bootstrap_matches_the_protocol_document() -> None:
    encoded = SimpleJsonEncoder().encode_bootstrap(_doc_user("new_user"), 1708924603278)
    assert encoded.key is None
    assert encoded.value == _compact(DOC_BOOTSTRAP)


def test_dml_matches_the_protocol_document() -> None:
    encoder, schema = SimpleJsonEncoder(), _doc_user()
    updated: dict[str, Value] = {**DOC_ROW, "score": 95.0}
    insert = encoder.encode_row(
        RowChange(DmlOp.INSERT, "simple", "user", None, DOC_ROW), schema, 447984084414103554, 1708923662983
    )
    update = encoder.encode_row(
        RowChange(DmlOp.UPDATE, "simple", "user", DOC_ROW, updated), schema, 447984099186180098, 1708923719184
    )
    delete = encoder.encode_row(
        RowChange(DmlOp.DELETE, "simple", "user", updated, None), schema, 447984114259722243, 1708923776484
    )
    assert [insert.key, update.key, delete.key] == [None, None, None]
    assert insert.value == _compact(DOC_INSERT)
    assert update.value == _compact(DOC_UPDATE)
    assert delete.value == _compact(DOC_DELETE)


def test_watermark_matches_the_protocol_document() -> None:
    encoded = SimpleJsonEncoder().encode_watermark(447984124732375041, 1708923816911)
    assert encoded.key is None
    assert encoded.value == _compact(DOC_WATERMARK)


# ---------------------------------------------------------------------------------------------
# Hand-written messages for every type (tiflow's ``simple/message.go``, ``encodeValue``).


def _all_types() -> TableSchema:
    cols = (
        column("id", "bigint", nullable=False),
        column("Zeta", "int"),
        column("u64", "bigint", unsigned=True),
        column("price", "decimal", length=10, scale=3, default="0.000"),
        column("name", "varchar", length=32),
        column("body", "text"),
        column("raw", "varbinary", length=16),
        column("fixed", "binary", length=4),
        column("born", "date"),
        column("dt0", "datetime", fsp=0),
        column("dt6", "datetime", fsp=6),
        column("ts0", "timestamp", fsp=0),
        column("ts3", "timestamp", fsp=3),
        column("doc", "json"),
        column("state", "enum", elements=("new", "paid", "shipped"), default="new"),
        column("tags", "set", elements=("a", "b", "c")),
        column("flags", "bit", length=8),
        column("f32", "float"),
        column("f64", "double"),
        column("yr", "year"),
        column("small", "tinyint", unsigned=True),
    )
    indexes = (
        IndexSchema("idx_name", ("name",), nullable=True),
        IndexSchema("primary", ("id",), primary=True, unique=True),
    )
    return TableSchema("shop", "all_types", cols, indexes, table_id=112, version=455000000000000001)


ALL_TYPES_ROW: dict[str, Value] = {
    "id": 1,
    "Zeta": None,
    "u64": 18446744073709551615,
    "price": Decimal("-12.500"),
    "name": "Zürich 東京 🚀",
    "body": '<a href="x">&</a>\n\ttab\\',
    "raw": b"\xff\xfe\x00\x80",
    "fixed": b"ab\x00\x00",
    "born": date(1969, 7, 20),
    "dt0": datetime(2024, 2, 29, 23, 59, 59),
    "dt6": datetime(2024, 1, 1, 0, 0, 0, 123456),
    "ts0": datetime(2024, 1, 1, 0, 0, 0, tzinfo=UTC),
    "ts3": datetime(2023, 12, 31, 16, 30, 0, 120000, tzinfo=UTC),
    "doc": '{"a": [1, 2], "b": "東京"}',
    "state": "shipped",
    "tags": "a,c",
    "flags": 161,
    "f32": 3.140000104904175,
    "f64": 1e20,
    "yr": 2024,
    "small": 255,
}

ALL_TYPES_DATA = (
    '{"Zeta":null,'
    '"body":"\\u003ca href=\\"x\\"\\u003e\\u0026\\u003c/a\\u003e\\n\\ttab\\\\",'
    '"born":"1969-07-20",'
    '"doc":"{\\"a\\": [1, 2], \\"b\\": \\"東京\\"}",'
    '"dt0":"2024-02-29 23:59:59",'
    '"dt6":"2024-01-01 00:00:00.123456",'
    '"f32":"3.14",'
    '"f64":"100000000000000000000",'
    '"fixed":"YWIAAA==",'
    '"flags":"161",'
    '"id":"1",'
    '"name":"Zürich 東京 🚀",'
    '"price":"-12.500",'
    '"raw":"//4AgA==",'
    '"small":"255",'
    '"state":"3",'
    '"tags":"5",'
    '"ts0":{"location":"Asia/Shanghai","value":"2024-01-01 08:00:00"},'
    '"ts3":{"location":"Asia/Shanghai","value":"2024-01-01 00:30:00.120"},'
    '"u64":"18446744073709551615",'
    '"yr":"2024"}'
)


def test_insert_of_every_type_in_asia_shanghai() -> None:
    encoded = SimpleJsonEncoder("Asia/Shanghai").encode_row(
        RowChange(DmlOp.INSERT, "shop", "all_types", None, ALL_TYPES_ROW),
        _all_types(),
        455000000000000010,
        1736154000536,
    )
    expected = (
        '{"version":1,"database":"shop","table":"all_types","tableID":112,"type":"INSERT",'
        '"commitTs":455000000000000010,"buildTs":1736154000536,"schemaVersion":455000000000000001,'
        f'"data":{ALL_TYPES_DATA}}}'
    )
    assert encoded.value.decode("utf-8") == expected
    assert encoded.key is None


def test_timestamp_uses_the_server_zone_and_the_column_fsp() -> None:
    utc = SimpleJsonEncoder("UTC")
    ny = SimpleJsonEncoder("America/New_York")
    ts3 = column("ts3", "timestamp", fsp=3)
    moment = datetime(2024, 7, 1, 12, 0, 0, 5000, tzinfo=UTC)
    assert utc.encode_value(ts3, moment) == {"location": "UTC", "value": "2024-07-01 12:00:00.005"}
    assert ny.encode_value(ts3, moment) == {
        "location": "America/New_York",
        "value": "2024-07-01 08:00:00.005",
    }
    assert ny.encode_value(column("t", "timestamp"), datetime(2024, 1, 1, 12, tzinfo=UTC)) == {
        "location": "America/New_York",
        "value": "2024-01-01 07:00:00",
    }


def test_update_and_delete_carry_full_images() -> None:
    schema = _all_types()
    encoder = SimpleJsonEncoder("Asia/Shanghai")
    after = {**ALL_TYPES_ROW, "Zeta": -5, "state": "new", "raw": None}
    update = encoder.encode_row(
        RowChange(DmlOp.UPDATE, "shop", "all_types", ALL_TYPES_ROW, after),
        schema,
        455000000000000011,
        1736154000600,
    )
    new_data = ALL_TYPES_DATA.replace('"Zeta":null', '"Zeta":"-5"').replace('"state":"3"', '"state":"1"')
    new_data = new_data.replace('"raw":"//4AgA=="', '"raw":null')
    assert update.value.decode() == (
        '{"version":1,"database":"shop","table":"all_types","tableID":112,"type":"UPDATE",'
        '"commitTs":455000000000000011,"buildTs":1736154000600,"schemaVersion":455000000000000001,'
        f'"data":{new_data},"old":{ALL_TYPES_DATA}}}'
    )
    delete = encoder.encode_row(
        RowChange(DmlOp.DELETE, "shop", "all_types", after, None),
        schema,
        455000000000000012,
        1736154000700,
    )
    assert delete.value.decode() == (
        '{"version":1,"database":"shop","table":"all_types","tableID":112,"type":"DELETE",'
        '"commitTs":455000000000000012,"buildTs":1736154000700,"schemaVersion":455000000000000001,'
        f'"old":{new_data}}}'
    )


def test_create_table_ddl_and_table_schema_of_every_type() -> None:
    schema = _all_types()
    ddl = DdlChange("CREATE", "CREATE TABLE `shop`.`all_types` (...)", "shop", "all_types", schema)
    value = SimpleJsonEncoder().encode_ddl(ddl, 455000000000000005, 1736154000000).value.decode()
    binary = '"charset":"binary","collate":"binary"'
    utf8 = '"charset":"utf8mb4","collate":"utf8mb4_bin"'

    def col(name: str, data_type: str, nullable: bool = True, default: str = "null") -> str:
        flag = str(nullable).lower()
        return f'{{"name":"{name}","dataType":{{{data_type}}},"nullable":{flag},"default":{default}}}'

    columns = ",".join(
        [
            col("id", f'"mysqlType":"bigint",{binary},"length":20', nullable=False),
            col("Zeta", f'"mysqlType":"int",{binary},"length":11'),
            col("u64", f'"mysqlType":"bigint",{binary},"length":20,"unsigned":true'),
            col("price", f'"mysqlType":"decimal",{binary},"length":10,"decimal":3', default='"0.000"'),
            col("name", f'"mysqlType":"varchar",{utf8},"length":32'),
            col("body", f'"mysqlType":"text",{utf8},"length":65535'),
            col("raw", f'"mysqlType":"varbinary",{binary},"length":16'),
            col("fixed", f'"mysqlType":"binary",{binary},"length":4'),
            col("born", f'"mysqlType":"date",{binary},"length":10'),
            col("dt0", f'"mysqlType":"datetime",{binary},"length":19'),
            col("dt6", f'"mysqlType":"datetime",{binary},"length":26,"decimal":6'),
            col("ts0", f'"mysqlType":"timestamp",{binary},"length":19'),
            col("ts3", f'"mysqlType":"timestamp",{binary},"length":23,"decimal":3'),
            col("doc", f'"mysqlType":"json",{binary},"length":4294967295'),
            col(
                "state",
                f'"mysqlType":"enum",{utf8},"length":7,"elements":["new","paid","shipped"]',
                default='"new"',
            ),
            col("tags", f'"mysqlType":"set",{utf8},"length":5,"elements":["a","b","c"]'),
            col("flags", f'"mysqlType":"bit",{binary},"length":8'),
            col("f32", f'"mysqlType":"float",{binary},"length":12'),
            col("f64", f'"mysqlType":"double",{binary},"length":22'),
            col("yr", f'"mysqlType":"year",{binary},"length":4'),
            col("small", f'"mysqlType":"tinyint",{binary},"length":3,"unsigned":true'),
        ]
    )
    indexes = (
        '[{"name":"idx_name","unique":false,"primary":false,"nullable":true,"columns":["name"]},'
        '{"name":"primary","unique":true,"primary":true,"nullable":false,"columns":["id"]}]'
    )
    assert value == (
        '{"version":1,"type":"CREATE","sql":"CREATE TABLE `shop`.`all_types` (...)",'
        '"commitTs":455000000000000005,"buildTs":1736154000000,'
        '"tableSchema":{"schema":"shop","table":"all_types","tableID":112,"version":455000000000000001,'
        f'"columns":[{columns}],"indexes":{indexes}}}}}'
    )
    assert "database" not in json.loads(value)
    assert "preTableSchema" not in json.loads(value)


def test_schema_level_ddl_has_no_table_schema() -> None:
    ddl = DdlChange("QUERY", "CREATE DATABASE `shop`", "shop", None, None)
    value = SimpleJsonEncoder().encode_ddl(ddl, 7, 8).value
    assert value == b'{"version":1,"type":"QUERY","sql":"CREATE DATABASE `shop`","commitTs":7,"buildTs":8}'


@pytest.mark.parametrize(
    ("value", "bits", "text"),
    [
        (0.1, 64, "0.1"),
        (95.0, 64, "95"),
        (-0.0, 64, "-0"),
        (1e20, 64, "100000000000000000000"),
        (1e-7, 64, "0.0000001"),
        (123456789.125, 64, "123456789.125"),
        (3.140000104904175, 32, "3.14"),
        (0.1, 32, "0.1"),
        (16777217.0, 32, "16777216"),
        (1e-10, 32, "0.0000000001"),
    ],
)
def test_floats_use_go_shortest_fixed_notation(value: float, bits: int, text: str) -> None:
    assert go_json.format_float(value, bits) == text


def test_go_json_escapes_like_encoding_json() -> None:
    text = '<>&\u2028\u2029\x01\x1f\x7f\b\f\n\r\t"\\é😀'
    assert (
        go_json.marshal({"k": text, "n": None, "b": True, "i": 2**64 - 1})
        == (
            '{"k":"\\u003c\\u003e\\u0026\\u2028\\u2029\\u0001\\u001f\x7f\\b\\f\\n\\r\\t\\"\\\\é😀",'
            '"n":null,"b":true,"i":18446744073709551615}'
        ).encode()
    )
