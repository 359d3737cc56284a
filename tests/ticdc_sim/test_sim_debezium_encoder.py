"""The Debezium encoder against TiCDC's own expected output (``pkg/sink/codec/debezium``).

The vectors are the JSON documents of ``codec_test.go`` (compared there with ``require.JSONEq``,
so here too by content) and the real Debezium 2.4 value of ``debezium_test.go`` ``TestDataTypes``.
Exact bytes are checked on hand-derived messages: field order as ``codec.go`` writes it,
jsoniter's escaping and float formatting.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from tests import tiflow_vectors
from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.catalog import TEMPLATES, column
from ticdc_sim.column_types import float32
from ticdc_sim.ddl_sql import create_database_sql, create_table_sql
from ticdc_sim.debezium_encoder import DebeziumEncoder, sanitize_name, sanitize_topic_name
from ticdc_sim.encoding import EncodedMessage
from ticdc_sim.model import DdlChange, DmlOp, Row, RowChange

EXTRACTED = tiflow_vectors.EXTRACTED
TESTDATA = tiflow_vectors.DEBEZIUM_DATA
NOW_MS = 1701326309000
pytestmark = tiflow_vectors.needs_vectors


def _sent(message: EncodedMessage | None) -> EncodedMessage:
    """The message a DDL must produce (``encode_ddl`` returns None when TiCDC sends nothing)."""
    assert message is not None
    return message


def _vector(name: str) -> Any:
    return json.loads((EXTRACTED / f"debezium_codec_test_{name}.json").read_text())


def _json(message: EncodedMessage) -> Any:
    """The message value parsed (TiCDC's Debezium and Canal-JSON values are never tombstones)."""
    assert message.value is not None
    return json.loads(message.value)


def _tiny_table() -> TableSchema:
    """``codec_test.go``'s table: one nullable TINYINT that is primary and handle key."""
    columns = (ColumnSchema("tiny", "tinyint", length=4, nullable=True),)
    return TableSchema("test", "table1", columns, (IndexSchema("PRIMARY", ("tiny",), primary=True, unique=True),))


def _codec_test_encoder(disable_schema: bool, output_old_value: bool = True) -> DebeziumEncoder:
    """``common.NewConfig(ProtocolDebezium)``: extension off; cluster ``test_cluster``."""
    return DebeziumEncoder(
        "UTC",
        disable_schema=disable_schema,
        enable_tidb_extension=False,
        output_old_value=output_old_value,
        cluster_id="test_cluster",
    )


ROW_CASES = [
    ("insert", "L749", "L758", True, True, None, 1),
    ("insert", "L794", "L816", False, True, None, 1),
    ("update", "L948", "L958", True, True, 2, 1),
    ("update", "L996", "L1019", False, True, 2, 1),
    ("update", "L1126", "L1137", True, False, 2, 1),
    ("delete", "L1194", "L1204", True, True, 2, None),
    ("delete", "L1241", "L1264", False, True, 2, None),
]


@pytest.mark.parametrize(("op", "key_line", "value_line", "no_schema", "old_value", "before", "after"), ROW_CASES)
def test_rows_equal_codec_test_vectors(
    op: str, key_line: str, value_line: str, no_schema: bool, old_value: bool, before: int | None, after: int | None
) -> None:
    encoder = _codec_test_encoder(no_schema, old_value)
    change = RowChange(
        DmlOp(op.upper()),
        "test",
        "table1",
        None if before is None else {"tiny": before},
        None if after is None else {"tiny": after},
    )
    message = encoder.encode_row(change, _tiny_table(), 1, NOW_MS)
    assert message.key is not None
    suffix = "schema-off" if no_schema else "schema-on"
    key_name = f"{key_line}_{op}{'_no_before' if not old_value else ''}_key_{suffix}"
    value_kind = f"{op}_with_before" if op == "update" and old_value else f"{op}_no_before" if op == "update" else op
    assert json.loads(message.key) == _vector(key_name)
    assert _json(message) == _vector(f"{value_line}_{value_kind}_value_{suffix}")


def test_watermark_equals_codec_test_vector() -> None:
    encoder = DebeziumEncoder(cluster_id="test_cluster")
    message = encoder.encode_watermark(3, NOW_MS)
    assert message.key is not None
    assert json.loads(message.key) == _vector("L553_watermark_ts3_key_schema-on")
    assert _json(message) == _vector("L563_watermark_ts3_value_schema-on")
    assert (
        message.key
        == b'{"payload":{},"schema":{"type":"struct","name":"test_cluster.watermark.Key","optional":false,"fields":[]}}'
    )


def test_no_watermark_without_the_extension() -> None:
    encoder = DebeziumEncoder(enable_tidb_extension=False)
    assert encoder.has_watermark is False
    assert DebeziumEncoder.has_watermark is True
    with pytest.raises(SchemaError, match="enable-tidb-extension"):
        encoder.encode_watermark(3, NOW_MS)


def _id_table(table: str) -> TableSchema:
    """``codec_test.go``'s DDL table: ``id INT`` (flen 0 from ``BuildTableInfo``), no table charset."""
    columns = (ColumnSchema("id", "int", length=0, nullable=False),)
    primary = (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
    return TableSchema("test", table, columns, primary, extra={"default_charset": ""})


def test_ddl_events_equal_codec_test_vectors() -> None:
    encoder = _codec_test_encoder(disable_schema=False)
    rename = DdlChange(
        "RENAME",
        "RENAME TABLE test.table1 to test.table2",
        "test",
        "table1",
        _id_table("table1"),
        pre_table_schema=_id_table("table2"),
    )
    message = _sent(encoder.encode_ddl(rename, 1, NOW_MS))
    assert message.key is not None
    assert json.loads(message.key) == _vector("L72_rename_table_key_schema-on")
    assert _json(message) == _vector("L91_rename_table_value_schema-on")

    encoder = _codec_test_encoder(disable_schema=True)
    create = DdlChange("CREATE", "CREATE TABLE test.table1", "test", "table1", _id_table("table1"))
    message = _sent(encoder.encode_ddl(create, 1, NOW_MS))
    assert (json.loads(message.key or b""), _json(message)) == (
        _vector("L422_create_table_key_schema-off"),
        _vector("L428_create_table_value_schema-off"),
    )
    drop = DdlChange("ERASE", "DROP TABLE test.table2", "test", "table2", None)
    message = _sent(encoder.encode_ddl(drop, 1, NOW_MS))
    assert message is not None
    # codec_test.go builds the DDLEvent by hand; a real one comes from DDLEvent.FromJobWithArgs,
    # which rebuilds every DROP TABLE query as DROP TABLE `db`.`t`. Everything else is the vector.
    expected = _vector("L504_drop_table_value_schema-off")
    assert expected["payload"]["ddl"] == "DROP TABLE test.table2"
    expected["payload"]["ddl"] = "DROP TABLE `test`.`table2`"
    assert (json.loads(message.key or b""), _json(message)) == (_vector("L498_drop_table_key_schema-off"), expected)


def _datatype_table() -> tuple[TableSchema, dict[str, Any]]:
    """``datatype.ddl.sql``/``.dml.sql`` minus what the model cannot hold (zero dates, invalid
    ENUM/SET values, NUMERIC), with the values TiDB stores after rounding to each fsp."""
    dt = datetime(2023, 11, 30, 12, 34, 56)
    spec: list[tuple[ColumnSchema, Any]] = [
        (column("pk", "int", nullable=False), 1),
        (column("col_d_2023", "date"), date(2023, 11, 30)),
        (column("col_d_1000", "date"), date(1000, 1, 1)),
        (column("col_d_9999", "date"), date(9999, 12, 31)),
        (column("col_dt", "datetime"), dt),
        (column("col_dt_fsp_0", "datetime", fsp=0), dt),
        (column("col_dt_fsp_1", "datetime", fsp=1), dt.replace(microsecond=100000)),
        (column("col_dt_fsp_4", "datetime", fsp=4), dt.replace(microsecond=123500)),
        (column("col_dt_fsp_6", "datetime", fsp=6), dt.replace(microsecond=123456)),
        (column("col_t", "time"), "12:34:56"),
        (column("col_t_fsp_0", "time", fsp=0), "12:34:56"),
        (column("col_t_fsp_1", "time", fsp=1), "12:34:56.1"),
        (column("col_t_fsp_4", "time", fsp=4), "12:34:56.1235"),
        (column("col_t_fsp_6", "time", fsp=6), "12:34:56.123456"),
        (column("col_t_neg", "time", fsp=6), "-12:34:56.123456"),
        (column("col_ts", "timestamp"), dt.replace(tzinfo=UTC)),
        (column("col_ts_fsp_0", "timestamp", fsp=0), dt.replace(tzinfo=UTC)),
        (column("col_ts_fsp_1", "timestamp", fsp=1), dt.replace(microsecond=100000, tzinfo=UTC)),
        (column("col_ts_fsp_5", "timestamp", fsp=5), dt.replace(microsecond=123460, tzinfo=UTC)),
        (column("col_ts_fsp_6", "timestamp", fsp=6), dt.replace(microsecond=123456, tzinfo=UTC)),
        (column("col_y", "year"), 2023),
        (column("col_bit_1", "bit", length=1), 1),
        (column("col_bit_5", "bit", length=5), 16),
        (column("col_bit_6", "bit", length=6), 16),
        (column("col_bit_60", "bit", length=60), 16),
        (column("col_varchar", "varchar", length=100), "foo"),
        (column("col_char", "char", length=100), "foo"),
        (column("col_varbinary", "varbinary", length=100), b"foo"),
        (column("col_binary", "binary", length=100), b"foo".ljust(100, b"\0")),
        (column("col_blob", "blob"), b"foo"),
        (column("col_decimal", "decimal", length=10, scale=5), Decimal("12345.12345")),
        (column("col_float", "float"), float32(12345.12345)),
        (column("col_double", "double"), 12345.12345),
        (column("col_int", "int"), -2147483648),
        (column("col_int_unsigned", "int", unsigned=True), 4294967295),
        (column("col_tinyint", "tinyint"), -128),
        (column("col_tinyint_unsigned", "tinyint", unsigned=True), 255),
        (column("col_smallint", "smallint"), -32768),
        (column("col_smallint_unsigned", "smallint", unsigned=True), 65535),
        (column("col_mediumint", "mediumint"), -8388608),
        (column("col_mediumint_unsigned", "mediumint", unsigned=True), 16777215),
        (column("col_bigint", "bigint"), -9223372036854775808),
        (column("col_bigint_unsigned", "bigint", unsigned=True), 18446744073709551615),
        (column("col_enum", "enum", elements=("a", "b", "c")), "a"),
        (column("col_set", "set", elements=("a", "b", "c")), "a,b"),
        (column("col_json", "json"), '["foo"]'),
    ]
    primary = (IndexSchema("PRIMARY", ("pk",), primary=True, unique=True),)
    schema = TableSchema("test", "foo", tuple(c for c, _ in spec), primary)
    return schema, {c.name: v for c, v in spec}


def test_datatype_row_equals_the_debezium_vector() -> None:
    """Every value and field schema the model can express equals real Debezium's (TestDataTypes)."""
    schema, row = _datatype_table()
    encoder = DebeziumEncoder(enable_tidb_extension=False, cluster_id="dbserver1")
    message = encoder.encode_row(RowChange(DmlOp.INSERT, "test", "foo", None, row), schema, 1, NOW_MS)
    expected = json.loads((TESTDATA / "datatype.dbz.json").read_text())
    got = _json(message)
    want_after = {k: v for k, v in expected["payload"]["after"].items() if k in row}
    assert got["payload"]["after"] == want_after
    assert len(want_after) == len(row)
    fields = {f["field"]: f for f in expected["schema"]["fields"][1]["fields"]}
    assert got["schema"]["fields"][1]["fields"] == [fields[name] for name in row]
    assert json.loads(message.key or b"") == json.loads((TESTDATA / "datatype.dbz.key.json").read_text())


def test_row_bytes_follow_codec_go_field_order_and_jsoniter() -> None:
    columns = (
        column("id", "bigint", unsigned=True, nullable=False),
        column("s", "varchar", length=40),
        column("d", "double"),
        column("f", "float"),
        column("y", "year"),
        column("n", "int", default="7"),
    )
    schema = TableSchema("db", "t-1", columns, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))
    row: Row = {"id": (1 << 64) - 2, "s": 'a<b>&"\\\n\x08\u2028', "d": 1e-7, "f": float32(1.5e21), "y": 2024, "n": None}
    encoder = DebeziumEncoder(disable_schema=True, cluster_id="c1")
    message = encoder.encode_row(RowChange(DmlOp.INSERT, "db", "t-1", None, row), schema, 5 << 18, NOW_MS)
    assert message.key == b'{"payload":{"id":-2}}'
    source = (
        '{"version":"2.4.0.Final","connector":"TiCDC","name":"c1","ts_ms":5,"snapshot":"false","db":"db",'
        '"table":"t-1","server_id":0,"gtid":null,"file":"","pos":0,"row":0,"thread":0,"query":null,'
        f'"commit_ts":{5 << 18},"cluster_id":"c1"}}'
    )
    after = '{"id":-2,"s":"a<b>&\\"\\\\\\n\\u0008\u2028","d":1e-07,"f":1.5e+21,"y":2024,"n":7}'
    payload = f'"source":{source},"ts_ms":{NOW_MS},"transaction":null,"op":"c","before":null,"after":{after}'
    expected = f'{{"payload":{{{payload}}}}}'
    assert message.value == expected.encode()


def test_field_schemas_with_the_tidb_extension() -> None:
    columns = (
        column("id", "bigint", unsigned=True, nullable=False),
        column("small", "smallint", unsigned=True, default="3"),
        column("y", "year", default="99"),
        column("b", "bit", length=3, default="5"),
        column("e", "enum", elements=("a,b", "c"), default="c"),
        column("dt", "datetime", fsp=4),
        column("amount", "decimal", length=12, scale=2, default="0.00"),
        column("vb", "varbinary", length=4),
    )
    schema = TableSchema("shop", "t", columns, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))
    message = DebeziumEncoder().encode_row(
        RowChange(DmlOp.DELETE, "shop", "t", {c.name: None for c in columns} | {"id": 1}, None), schema, 1, NOW_MS
    )
    fields = _json(message)["schema"]["fields"][0]["fields"]
    assert fields == [
        {"tidb_type": "bigint unsigned", "type": "int64", "optional": False, "field": "id"},
        {"tidb_type": "smallint unsigned", "type": "int32", "optional": True, "field": "small", "default": 3},
        {"tidb_type": "year", "type": "int32", "optional": True, "name": "io.debezium.time.Year", "version": 1}
        | {"field": "y", "default": 1999},
        {"tidb_type": "bit", "type": "bytes", "optional": True, "name": "io.debezium.data.Bits", "version": 1}
        | {"parameters": {"length": "3"}, "field": "b", "default": "BQ=="},
        {"tidb_type": "enum", "type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1}
        | {"parameters": {"allowed": "a\\,b,c"}, "field": "e", "default": "c"},
        {"tidb_type": "datetime", "type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp"}
        | {"version": 1, "field": "dt"},
        {"tidb_type": "decimal", "type": "double", "optional": True, "field": "amount", "default": 0},
        {"tidb_type": "varbinary", "type": "string", "optional": True, "field": "vb"},
    ]
    # NULL is written as the column default (codec.go writeDebeziumFieldValue).
    before = _json(message)["payload"]["before"]
    assert before == {"id": 1, "small": 3, "y": "99", "b": "BQ==", "e": "c", "dt": None, "amount": 0, "vb": None}


def test_null_binary_with_default_writes_the_field_twice() -> None:
    """codec.go writes a binary default as base64 and then again as the plain string."""
    columns = (column("id", "int", nullable=False), column("vb", "varbinary", length=4, default="ab"))
    schema = TableSchema("shop", "t", columns, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))
    message = DebeziumEncoder(disable_schema=True).encode_row(
        RowChange(DmlOp.INSERT, "shop", "t", None, {"id": 1, "vb": None}), schema, 1, NOW_MS
    )
    assert message.value is not None
    assert message.value.endswith(b'"after":{"id":1,"vb":"YWI=","vb":"ab"}}}')


def test_values_of_dates_times_and_bits() -> None:
    columns = (
        column("id", "int", nullable=False),
        column("d", "date"),
        column("dt3", "datetime", fsp=3),
        column("ts2", "timestamp", fsp=2),
        column("t", "time", fsp=1),
        column("b1", "bit", length=1),
        column("b9", "bit", length=9),
    )
    schema = TableSchema("shop", "t", columns, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))
    row: Row = {
        "id": 1,
        "d": date(18, 2, 3),  # two-digit year: 2018
        "dt3": datetime(1969, 12, 31, 23, 59, 59, 500000),
        "ts2": datetime(2024, 3, 10, 7, 30, 0, 120000, tzinfo=UTC),
        "t": "-838:59:59.0",
        "b1": 0,
        "b9": 257,
    }
    message = DebeziumEncoder("America/New_York", disable_schema=True).encode_row(
        RowChange(DmlOp.INSERT, "shop", "t", None, row), schema, 1, NOW_MS
    )
    after = _json(message)["payload"]["after"]
    assert after == {
        "id": 1,
        "d": (date(2018, 2, 3) - date(1970, 1, 1)).days,
        "dt3": -500,
        "ts2": "2024-03-10T07:30:00.12Z",
        "t": -3020399000000,
        "b1": False,
        "b9": "AQE=",
    }


def test_create_table_ddl_carries_table_changes() -> None:
    orders = TEMPLATES[0].build("shop", "orders")
    ddl = DdlChange("CREATE", create_table_sql(orders), "shop", "orders", orders)
    message = _sent(DebeziumEncoder().encode_ddl(ddl, 7 << 18, NOW_MS))
    assert message.key == (
        b'{"payload":{"databaseName":"shop"},"schema":{"type":"struct","name":"io.debezium.connector.mysql.'
        b'SchemaChangeKey","optional":false,"version":1,"fields":[{"field":"databaseName","optional":false,'
        b'"type":"string"}]}}'
    )
    value = _json(message)
    payload = value["payload"]
    assert (payload["databaseName"], payload["schemaName"], payload["ddl"]) == ("shop", None, ddl.sql)
    assert (payload["source"]["db"], payload["source"]["table"], payload["source"]["ts_ms"]) == ("shop", "orders", 7)
    (change,) = payload["tableChanges"]
    assert (change["type"], change["id"]) == ("CREATE", '"shop"."orders"')
    table = change["table"]
    assert (table["defaultCharsetName"], table["primaryKeyColumnNames"], table["comment"]) == ("utf8mb4", ["id"], None)
    by_name = {c["name"]: c for c in table["columns"]}
    # helper.go getLen/getScale/getCharset/getExpressionAndName and java.go MySQLType2JdbcType.
    assert by_name["id"] == {
        "name": "id",
        "jdbcType": -5,
        "nativeType": None,
        "comment": None,
        "defaultValueExpression": None,
        "enumValues": None,
        "typeName": "BIGINT",
        "typeExpression": "BIGINT",
        "charsetName": None,
        "length": None,
        "scale": None,
        "position": 1,
        "optional": False,
        "autoIncremented": False,
        "generated": False,
    }
    summary = {
        name: (c["typeName"], c["jdbcType"], c["charsetName"], c["length"], c["scale"], c["defaultValueExpression"])
        for name, c in by_name.items()
    }
    assert summary["customer"] == ("VARCHAR", 12, "utf8mb4", 64, None, None)
    assert summary["amount"] == ("DECIMAL", 3, None, 12, 2, "0.00")
    assert summary["status"] == ("ENUM", 1, "utf8mb4", 1, None, "new")
    assert summary["created_at"] == ("DATETIME", 93, None, 0, None, None)
    assert summary["updated_at"] == ("TIMESTAMP", 2014, None, 3, None, None)
    assert summary["note"] == ("TEXT", 12, "utf8mb4", None, None, None)
    assert by_name["status"]["enumValues"] == ["'new'", "'paid'", "'shipped'", "'cancelled'"]
    assert value["schema"]["name"] == "io.debezium.connector.mysql.SchemaChangeValue"


def test_schema_level_ddl_has_no_table_changes() -> None:
    ddl = DdlChange("QUERY", create_database_sql("shop"), "shop", None, None)
    message = _sent(DebeziumEncoder(disable_schema=True).encode_ddl(ddl, 1, NOW_MS))
    payload = _json(message)["payload"]
    assert (payload["source"]["db"], payload["source"]["table"], payload["tableChanges"]) == ("shop", "", [])
    assert payload["databaseName"] == "shop"


def test_unsupported_ddl_is_refused() -> None:
    ddl = DdlChange("QUERY", "CREATE SEQUENCE s", "shop", None, None)
    with pytest.raises(SchemaError, match="CREATE SEQUENCE"):
        DebeziumEncoder().encode_ddl(ddl, 1, NOW_MS)


def test_names_are_sanitized_like_common_sanitize_name() -> None:
    assert sanitize_name("9shop-db") == "_9shop_db"
    assert sanitize_name("東京") == "__"
    assert sanitize_topic_name("t.1-x") == "t.1_x"
    schema = TableSchema(
        "9db", "a-b", (column("id", "int", nullable=False),), (IndexSchema("p", ("id",), primary=True),)
    )
    message = DebeziumEncoder(cluster_id="my-cluster").encode_row(
        RowChange(DmlOp.INSERT, "9db", "a-b", None, {"id": 1}), schema, 1, NOW_MS
    )
    assert json.loads(message.key or b"")["schema"]["name"] == "my_cluster._9db.a_b.Key"


@pytest.mark.parametrize(
    ("length", "default", "expression"),
    [(5, "5", "00101"), (16, "5", "101"), (10, "5", "101"), (12, "300", "000100101100"), (1, "1", "1")],
)
def test_bit_default_expression_is_parse_bit_of_the_minimal_literal(length: int, default: str, expression: str) -> None:
    """helper.go ``parseBit``: first byte ``n % 8`` binary digits wide (0 = as short as possible)."""
    schema = TableSchema(
        "d",
        "t",
        (column("id", "int", nullable=False), column("b", "bit", length=length, default=default)),
        (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
    )
    message = _sent(DebeziumEncoder().encode_ddl(DdlChange("CREATE", create_table_sql(schema), "d", "t", schema), 1, 1))
    columns = _json(message)["payload"]["tableChanges"][0]["table"]["columns"]
    assert columns[1]["defaultValueExpression"] == expression


def test_ddl_of_every_kind_as_encode_ddl_event_writes_it() -> None:
    """Names, change type, id and which DDLs carry a table definition (``EncodeDDLEvent``)."""
    from tests.ticdc_lake.protocols.ddl_cases import CASES

    encoder = DebeziumEncoder(disable_schema=True)
    got = []
    for case in CASES:
        message = _sent(encoder.encode_ddl(case.ddl, case.commit_ts, NOW_MS))
        assert message is not None
        payload = _json(message)["payload"]
        changes = [(c["type"], c["id"], c["table"] is not None) for c in payload["tableChanges"]]
        key = json.loads(message.key or b"")["payload"]["databaseName"]
        got.append(
            (key, payload["databaseName"], payload["source"]["db"], payload["source"]["table"], payload["ddl"], changes)
        )
    kinds = {"CREATE": "CREATE", "ERASE": "DROP", "DINDEX": "DROP", "TRUNCATE": "DROP"}
    expected = []
    for case in CASES:
        changes = []
        if case.table and case.subtype != "TRUNCATE":
            change_id = f'"{case.database}"."{case.table}"'
            if case.subtype == "RENAME":
                assert case.before is not None
                change_id = f'"{case.before.database}"."{case.before.table}",{change_id}'
            if case.subtype == "DINDEX" and "PRIMARY KEY" in case.query:
                kind = "ALTER"  # DROP PRIMARY KEY is an ALTER, DROP INDEX a DROP
            else:
                kind = kinds.get(case.subtype, "ALTER")
            changes.append((kind, change_id, case.subtype != "ERASE"))
        db = case.database
        expected.append((db, db, db, case.table or "", case.query, changes))
    assert got == expected
