"""The Canal-JSON encoder against TiCDC's output and source (``pkg/sink/codec/canal``).

The golden lines of ``canal_json_txn_event_decoder_test.go`` (no TiDB extension) fix values,
types and most of the field order; the rest comes from ``newJSONMessageForDML`` (``old`` before
``data``), ``JSONMessage`` (DDL, watermark) and ``type_test.go`` (``mysqlType`` strings).
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from tests import tiflow_vectors
from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.canal_json_encoder import CanalJsonEncoder, bare_mysql_type, java_sql_type
from ticdc_sim.catalog import TEMPLATES, column
from ticdc_sim.ddl_sql import create_database_sql, create_table_sql
from ticdc_sim.encoding import EncodedMessage
from ticdc_sim.model import DdlChange, DmlOp, Row, RowChange
from ticdc_sim.tidb_columns import type_desc

GOLDEN = tiflow_vectors.EXTRACTED / "canal_json_txn_event_decoder_test_L98_insert_update_delete.jsonl"


def _json(message: EncodedMessage) -> Any:
    """The message value parsed (TiCDC's Debezium and Canal-JSON values are never tombstones)."""
    assert message.value is not None
    return json.loads(message.value)


def _employee() -> TableSchema:
    columns = (
        column("FirstName", "varchar", length=64),
        column("HireDate", "date"),
        column("LastName", "varchar", length=64),
        column("OfficeLocation", "varchar", length=64),
        column("id", "int", nullable=False),
    )
    return TableSchema("test", "employee", columns, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))


@tiflow_vectors.needs_vectors
def test_rows_equal_the_golden_lines() -> None:
    """Same content; the bytes differ only in where ``old`` goes (the current encoder writes it before ``data``)."""
    first: Row = {"FirstName": "Bob", "HireDate": date(2014, 6, 4), "LastName": "Smith", "OfficeLocation": "New York"}
    first["id"] = 101
    second: Row = {**first, "HireDate": date(2015, 10, 8), "OfficeLocation": "Los Angeles"}
    changes = [
        (RowChange(DmlOp.INSERT, "test", "employee", None, first), 1668067205238, 1668067206650),
        (RowChange(DmlOp.UPDATE, "test", "employee", first, second), 1668067229137, 1668067230720),
        (RowChange(DmlOp.DELETE, "test", "employee", second, None), 1668067230388, 1668067231725),
    ]
    encoder = CanalJsonEncoder(enable_tidb_extension=False)
    for line, (change, es, ts) in zip(GOLDEN.read_bytes().splitlines(), changes, strict=True):
        message = encoder.encode_row(change, _employee(), es << 18, ts)
        assert message.key is None
        assert _json(message) == json.loads(line)
        golden = json.loads(line)
        old, data = json.dumps(golden["old"], separators=(",", ":")), json.dumps(golden["data"], separators=(",", ":"))
        reordered = line.replace(f',"data":{data},"old":{old}'.encode(), f',"old":{old},"data":{data}'.encode())
        assert message.value == reordered


def test_insert_with_the_tidb_extension_exact_bytes() -> None:
    columns = (
        column("id", "bigint", unsigned=True, nullable=False),
        column("b", "varbinary", length=8),
        column("s", "varchar", length=20),
        column("e", "enum", elements=("x", "y")),
        column("st", "set", elements=("p", "q", "r")),
        column("f", "float"),
        column("ts", "timestamp", fsp=3),
        column("y", "year"),
        column("bits", "bit", length=4),
    )
    schema = TableSchema("db", "t", columns, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))
    row: Row = {
        "id": (1 << 64) - 1,
        "b": b"\x00<\xff\n",
        "s": 'a<&>"\u2028',
        "e": "y",
        "st": "p,r",
        "f": 0.5,
        "ts": datetime(2024, 1, 1, 0, 0, 0, 250000, tzinfo=UTC),
        "y": 2024,
        "bits": 9,
    }
    commit_ts = (1700000000000 << 18) + 3
    message = CanalJsonEncoder("Asia/Shanghai").encode_row(
        RowChange(DmlOp.INSERT, "db", "t", None, row), schema, commit_ts, 1700000000123
    )
    expected = (
        '{"id":0,"database":"db","table":"t","pkNames":["id"],"isDdl":false,"type":"INSERT",'
        '"es":1700000000000,"ts":1700000000123,"sql":"",'
        '"sqlType":{"id":3,"b":2004,"s":12,"e":4,"st":-7,"f":7,"ts":93,"y":12,"bits":-7},'
        '"mysqlType":{"id":"bigint unsigned","b":"varbinary","s":"varchar","e":"enum","st":"set","f":"float",'
        '"ts":"timestamp","y":"year","bits":"bit"},"old":null,'
        '"data":[{"id":"18446744073709551615","b":"\\u0000\\u003c\u00ff\\n","s":"a\\u003c\\u0026\\u003e\\"\\u2028",'
        '"e":"2","st":"5","f":"0.5","ts":"2024-01-01 08:00:00.250","y":"2024","bits":"9"}],'
        f'"_tidb":{{"commitTs":{commit_ts}}}}}'
    )
    assert message.value == expected.encode()


def test_update_and_delete_shapes() -> None:
    schema = _employee()
    first: Row = {"FirstName": "A", "HireDate": None, "LastName": "B", "OfficeLocation": "C", "id": 1}
    second: Row = {**first, "OfficeLocation": "D"}
    encoder = CanalJsonEncoder()
    update = _json(encoder.encode_row(RowChange(DmlOp.UPDATE, "test", "employee", first, second), schema, 9, 1))
    assert (update["type"], update["old"], update["data"][0]["OfficeLocation"]) == ("UPDATE", [_texts(first)], "D")
    assert update["_tidb"] == {"commitTs": 9}
    delete = _json(encoder.encode_row(RowChange(DmlOp.DELETE, "test", "employee", second, None), schema, 10, 1))
    assert (delete["type"], delete["old"], delete["data"]) == ("DELETE", None, [_texts(second)])
    # content-compatible implies only-output-updated-columns: old keeps the changed columns only.
    cc = CanalJsonEncoder(content_compatible=True)
    update = _json(cc.encode_row(RowChange(DmlOp.UPDATE, "test", "employee", first, second), schema, 9, 1))
    assert update["old"] == [{"OfficeLocation": "C"}]
    assert update["mysqlType"] == {
        "FirstName": "varchar(64)",
        "HireDate": "date",
        "LastName": "varchar(64)",
        "OfficeLocation": "varchar(64)",
        "id": "int(11)",
    }


def _texts(row: Row) -> dict[str, str | None]:
    return {k: None if v is None else str(v) for k, v in row.items()}


def test_ddl_and_watermark_messages() -> None:
    orders = TEMPLATES[0].build("shop", "orders")
    encoder = CanalJsonEncoder()
    ddl = DdlChange("CREATE", create_table_sql(orders), "shop", "orders", orders)
    message = encoder.encode_ddl(ddl, 5 << 18, 77)
    sql = json.dumps(ddl.sql, ensure_ascii=False)
    assert (
        message.value
        == (
            '{"id":0,"database":"shop","table":"orders","pkNames":null,"isDdl":true,"type":"CREATE","es":5,"ts":77,'
            f'"sql":{sql},"sqlType":null,"mysqlType":null,"data":null,"old":null,"_tidb":{{"commitTs":{5 << 18}}}}}'
        ).encode()
    )
    schema_ddl = DdlChange("QUERY", create_database_sql("shop"), "shop", None, None)
    message = CanalJsonEncoder(enable_tidb_extension=False).encode_ddl(schema_ddl, 5 << 18, 77)
    assert message.value == (
        b'{"id":0,"database":"shop","table":"","pkNames":null,"isDdl":true,"type":"QUERY","es":5,"ts":77,'
        b'"sql":"CREATE DATABASE `shop`","sqlType":null,"mysqlType":null,"data":null,"old":null}'
    )
    watermark = encoder.encode_watermark(6 << 18, 78)
    assert watermark.value == (
        b'{"id":0,"database":"","table":"","pkNames":null,"isDdl":false,"type":"TIDB_WATERMARK","es":6,"ts":78,'
        b'"sql":"","sqlType":null,"mysqlType":null,"data":null,"old":null,"_tidb":{"watermarkTs":1572864}}'
    )
    assert (watermark.key, CanalJsonEncoder.ddl_to_all_partitions) == (None, False)


def test_no_watermark_without_the_extension() -> None:
    encoder = CanalJsonEncoder(enable_tidb_extension=False)
    assert encoder.has_watermark is False
    with pytest.raises(SchemaError, match="enable-tidb-extension"):
        encoder.encode_watermark(1, 1)


# type_test.go: GetMySQLType(col, false) and GetMySQLType(col, true).
MYSQL_TYPES = [
    (column("c", "int"), "int", "int(11)"),
    (column("c", "tinyint"), "tinyint", "tinyint(4)"),
    (column("c", "smallint"), "smallint", "smallint(6)"),
    (column("c", "mediumint"), "mediumint", "mediumint(9)"),
    (column("c", "bigint"), "bigint", "bigint(20)"),
    (column("c", "int", unsigned=True), "int unsigned", "int(10) unsigned"),
    (column("c", "tinyint", unsigned=True), "tinyint unsigned", "tinyint(3) unsigned"),
    (column("c", "smallint", unsigned=True), "smallint unsigned", "smallint(5) unsigned"),
    (column("c", "mediumint", unsigned=True), "mediumint unsigned", "mediumint(8) unsigned"),
    (column("c", "bigint", unsigned=True), "bigint unsigned", "bigint(20) unsigned"),
    (column("c", "bit", length=1), "bit", "bit(1)"),
    (column("c", "bit", length=3), "bit", "bit(3)"),
    (column("c", "float"), "float", "float"),
    (column("c", "double"), "double", "double"),
    (column("c", "decimal"), "decimal", "decimal(10,0)"),
    (column("c", "decimal", length=5, scale=2), "decimal", "decimal(5,2)"),
    (column("c", "time"), "time", "time"),
    (column("c", "time", fsp=3), "time", "time(3)"),
    (column("c", "datetime", fsp=3), "datetime", "datetime(3)"),
    (column("c", "timestamp", fsp=3), "timestamp", "timestamp(3)"),
    (column("c", "date"), "date", "date"),
    (column("c", "year"), "year", "year(4)"),
    (column("c", "char"), "char", "char(1)"),
    (column("c", "char", length=123), "char", "char(123)"),
    (column("c", "varchar", length=123), "varchar", "varchar(123)"),
    (column("c", "text"), "text", "text"),
    (column("c", "longtext"), "longtext", "longtext"),
    (column("c", "binary"), "binary", "binary(1)"),
    (column("c", "binary", length=10), "binary", "binary(10)"),
    (column("c", "varbinary", length=23), "varbinary", "varbinary(23)"),
    (column("c", "blob"), "blob", "blob"),
    (column("c", "mediumblob"), "mediumblob", "mediumblob"),
    (column("c", "enum", elements=("a", "b", "c")), "enum", "enum('a','b','c')"),
    (column("c", "set", elements=("a", "b", "c")), "set", "set('a','b','c')"),
    (column("c", "json"), "json", "json"),
]


@pytest.mark.parametrize(("col", "bare", "full"), MYSQL_TYPES)
def test_mysql_type_text(col: ColumnSchema, bare: str, full: str) -> None:
    assert (bare_mysql_type(col), type_desc(col)) == (bare, full)


def test_enum_members_are_escaped_like_tidb_output_format() -> None:
    col = column("c", "enum", elements=("it's", "a\nb"))
    assert type_desc(col) == "enum('it''s','a\\nb')"


def test_java_sql_types_promote_large_unsigned_values() -> None:
    """``getJavaSQLType`` (type_test.go): unsigned values above the signed maximum promote."""
    tiny, small = column("c", "tinyint", unsigned=True), column("c", "smallint", unsigned=True)
    medium, regular = column("c", "mediumint", unsigned=True), column("c", "int", unsigned=True)
    big = column("c", "bigint", unsigned=True)
    assert [java_sql_type(tiny, v) for v in (127, 128, None)] == [-6, 5, -6]
    assert [java_sql_type(small, v) for v in (32767, 32768)] == [5, 4]
    assert [java_sql_type(medium, v) for v in (8388607, 8388608)] == [4, 4]
    assert [java_sql_type(regular, v) for v in (2147483647, 2147483648)] == [4, -5]
    assert [java_sql_type(big, v) for v in ((1 << 63) - 1, 1 << 63)] == [-5, 3]
    assert [java_sql_type(column("c", t), None) for t in ("text", "blob", "char", "binary", "json")] == [
        2005,
        2004,
        1,
        2004,
        12,
    ]


def test_unknown_column_value_is_a_schema_error() -> None:
    schema = _employee()
    with pytest.raises(SchemaError, match="'id'"):
        CanalJsonEncoder().encode_row(
            RowChange(
                DmlOp.INSERT, "test", "employee", None, {**dict.fromkeys(c.name for c in schema.columns), "id": "x"}
            ),
            schema,
            1,
            1,
        )


def test_ddl_of_every_kind_names_the_table_it_leaves() -> None:
    """``newJSONMessageForDDL``: database/table of the event's table info, ``type`` per
    ``convertDdlEventType``, the query as TiCDC rebuilt it (DROP TABLE, each half of a RENAME)."""
    from tests.ticdc_lake.protocols.ddl_cases import CASES

    encoder = CanalJsonEncoder()
    got = [
        (d["database"], d["table"], d["type"], d["sql"], d["isDdl"], d["_tidb"]["commitTs"])
        for d in (_json(encoder.encode_ddl(c.ddl, c.commit_ts, 1)) for c in CASES)
    ]
    assert got == [(c.database, c.table or "", c.subtype, c.query, True, c.commit_ts) for c in CASES]
    drop = next(c for c in CASES if c.subtype == "ERASE")
    assert encoder.encode_ddl(drop.ddl, 5 << 18, 77).value == (
        b'{"id":0,"database":"shop","table":"events_old","pkNames":null,"isDdl":true,"type":"ERASE","es":5,'
        b'"ts":77,"sql":"DROP TABLE `shop`.`events_old`","sqlType":null,"mysqlType":null,"data":null,"old":null,'
        b'"_tidb":{"commitTs":' + str(5 << 18).encode() + b"}}"
    )
