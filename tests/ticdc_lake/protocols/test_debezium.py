"""DebeziumDecoder against real encoder output (tiflow testdata and codec_test.go vectors).

The golden value ``datatype.dbz.json`` was produced by the Debezium MySQL connector (TiCDC's
encoder is asserted equal to it except ``payload.source``), so it has no ``commit_ts``: the tests
add the one TiDB-extension field TiCDC would write there. Everything else is decoded as stored.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import cramjam
import pytest

from tests import tiflow_vectors
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventFacts, EventKind, Op, RawMessage, SourcePosition
from ticdc_lake.protocols.debezium import DebeziumDecoder
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema

TESTDATA = tiflow_vectors.DEBEZIUM_DATA
EXTRACTED = tiflow_vectors.EXTRACTED
COMMIT_TS = 445815958939484161

pytestmark = tiflow_vectors.needs_vectors


def message(value: bytes | None, key: bytes | None = None, offset: int = 7) -> RawMessage:
    return RawMessage("dbz", 0, offset, 0, key, value)


def decode_one(value: bytes | None, key: bytes | None = None, **options: Any) -> ChangeEvent:
    events = DebeziumDecoder(CodecOptions(**options)).decode(message(value, key), MemorySchemaLookup())
    assert len(events) == 1
    return events[0]


def dumps(doc: Any) -> bytes:
    return json.dumps(doc).encode()


def golden() -> tuple[dict[str, Any], bytes]:
    doc = json.loads((TESTDATA / "datatype.dbz.json").read_bytes())
    doc["payload"]["source"]["commit_ts"] = COMMIT_TS
    return doc, (TESTDATA / "datatype.dbz.key.json").read_bytes()


# What datatype.dml.sql stores (sql_mode='', time_zone='UTC'), as canonical text.
TRUE_VALUES: dict[str, str] = {
    "pk": "1",
    "col_d_2023": "2023-11-30",
    "col_d_1000": "1000-01-01",
    "col_d_9999": "9999-12-31",
    "col_d_0000": "0000-00-00",
    "col_dt": "2023-11-30 12:34:56",
    "col_dt_fsp_0": "2023-11-30 12:34:56",
    "col_dt_fsp_1": "2023-11-30 12:34:56.1",
    "col_dt_fsp_4": "2023-11-30 12:34:56.1235",
    "col_dt_fsp_6": "2023-11-30 12:34:56.123456",
    "col_dt_0000": "0000-00-00 00:00:00.000000",
    "col_t": "12:34:56",
    "col_t_fsp_0": "12:34:56",
    "col_t_fsp_1": "12:34:56.1",
    "col_t_fsp_4": "12:34:56.1235",
    "col_t_fsp_6": "12:34:56.123456",
    "col_t_neg": "-12:34:56.123456",
    "col_ts": "2023-11-30T12:34:56Z",
    "col_ts_fsp_0": "2023-11-30T12:34:56Z",
    "col_ts_fsp_1": "2023-11-30T12:34:56.1Z",
    "col_ts_fsp_5": "2023-11-30T12:34:56.12346Z",
    "col_ts_fsp_6": "2023-11-30T12:34:56.123456Z",
    "col_y": "2023",
    "col_bit_1": "1",
    "col_bit_5": "16",
    "col_bit_6": "16",
    "col_bit_60": "16",
    "col_varchar": "foo",
    "col_char": "foo",
    "col_varbinary": base64.b64encode(b"foo").decode(),
    "col_binary": base64.b64encode(b"foo" + bytes(97)).decode(),
    "col_blob": base64.b64encode(b"foo").decode(),
    "col_decimal": "12345.12345",
    "col_numeric": "12345.12345",
    "col_float": "12345.123",  # FLOAT is float32: TiCDC's shortest rendering of the stored value
    "col_double": "12345.12345",
    "col_int": "-2147483648",
    "col_int_unsigned": "4294967295",
    "col_tinyint": "-128",
    "col_tinyint_unsigned": "255",
    "col_smallint": "-32768",
    "col_smallint_unsigned": "65535",
    "col_mediumint": "-8388608",
    "col_mediumint_unsigned": "16777215",
    "col_bigint": "-9223372036854775808",
    "col_bigint_unsigned": "18446744073709551615",
    "col_enum": "a",
    "col_enum_invalid": "",
    "col_set": "a,b",
    "col_set_invalid": "",
    "col_json": '["foo"]',
}

# The columns where Debezium (without tidb_type) cannot carry the stored value exactly.
LOSSY: dict[str, str | None] = {
    "col_d_0000": None,  # zero date → null
    "col_dt_0000": None,  # zero datetime → null
    "col_bigint_unsigned": "-1",  # unsigned max → -1; without tidb_type nothing says "unsigned"
}


def test_golden_datatype_row_every_column() -> None:
    doc, key = golden()
    event = decode_one(dumps(doc), key)
    assert (event.kind, event.op, event.commit_ts) == (EventKind.DML, Op.INSERT, COMMIT_TS)
    assert (event.database, event.table, event.before) == ("test", "foo", None)
    assert event.after is not None
    assert set(event.after) == set(TRUE_VALUES)
    for name, true_value in TRUE_VALUES.items():
        expected = LOSSY.get(name, true_value)
        assert event.after[name] == expected, name
    # DECIMAL travels as a double: the canonical text is the double's repr, which equals the
    # stored DECIMAL(10,5) text only because 12345.12345 survives the round trip (it is exact
    # here by luck; "0.10000" would come back as "0.1").
    assert event.after["col_decimal"] == repr(12345.12345) == TRUE_VALUES["col_decimal"]
    assert event.facts == EventFacts(key_columns=("pk",))


def test_golden_column_types_from_connect_schema() -> None:
    doc, key = golden()
    types = decode_one(dumps(doc), key).column_types
    assert types is not None
    assert types["pk"] == "connect:int32"
    assert types["col_d_2023"] == "date"
    assert types["col_dt_fsp_1"] == types["col_dt_fsp_6"] == "datetime"
    assert types["col_t_neg"] == "time"
    assert types["col_ts_fsp_5"] == "timestamp"
    assert types["col_y"] == "year"
    assert (types["col_bit_1"], types["col_bit_60"]) == ("bit(1)", "bit(60)")
    assert types["col_varbinary"] == types["col_varchar"] == "connect:string"
    assert types["col_decimal"] == types["col_double"] == "connect:double"
    assert types["col_float"] == "connect:float"
    assert types["col_bigint_unsigned"] == "connect:int64"
    assert (types["col_enum"], types["col_set"], types["col_json"]) == ("enum", "set", "json")
    assert len(types) == len(TRUE_VALUES)


def test_golden_with_tidb_extension_types_is_exact() -> None:
    doc, key = golden()
    tidb_types = {
        "col_bigint_unsigned": "bigint unsigned",
        "col_decimal": "decimal",
        "col_varbinary": "varbinary",
        "col_binary": "binary",
        "col_blob": "blob",
        "col_int_unsigned": "int unsigned",
    }
    for struct in doc["schema"]["fields"]:
        for spec in struct.get("fields", []) if struct["field"] in ("before", "after") else []:
            if spec["field"] in tidb_types:
                spec["tidb_type"] = tidb_types[spec["field"]]
    event = decode_one(dumps(doc), key)
    assert event.after is not None
    assert event.after["col_bigint_unsigned"] == "18446744073709551615"
    assert event.after["col_decimal"] == "12345.12345"
    assert event.after["col_binary"] == TRUE_VALUES["col_binary"]
    assert event.column_types is not None
    assert event.column_types["col_bigint_unsigned"] == "bigint unsigned"
    assert event.column_types["col_varbinary"] == "varbinary"


def test_golden_without_commit_ts_is_an_error() -> None:
    raw = (TESTDATA / "datatype.dbz.json").read_bytes()
    with pytest.raises(DecodeError) as info:
        decode_one(raw)
    assert info.value.reason == (
        "the row change (op 'c') has no field 'payload.source.commit_ts', which TiCDC's Debezium encoder "
        "always writes: the message comes from another producer (e.g. Debezium's own MySQL connector), "
        "and nothing else in a Debezium message orders events exactly"
    )


def vector(name: str) -> bytes:
    matches = list(EXTRACTED.glob(f"debezium_codec_test_{name}_*.json"))
    assert len(matches) == 1, name
    return matches[0].read_bytes()


POS = SourcePosition("dbz", 0, 7, 0)


def dml(
    op: Op, before: dict[str, str | None] | None, after: dict[str, str | None] | None, *, typed: bool, key: str
) -> ChangeEvent:
    return ChangeEvent(
        kind=EventKind.DML,
        position=POS,
        commit_ts=1,
        database="test",
        table="table1",
        op=op,
        before=before,
        after=after,
        column_types={"tiny": "connect:int16"} if typed else None,
        facts=EventFacts(key_columns=(key,)) if typed else EventFacts(untyped=True, key_columns=(key,)),
    )


@pytest.mark.parametrize(
    ("value", "key", "expected"),
    [
        ("L758", "L749", dml(Op.INSERT, None, {"tiny": "1"}, typed=False, key="tiny")),
        ("L816", "L794", dml(Op.INSERT, None, {"tiny": "1"}, typed=True, key="tiny")),
        ("L958", "L948", dml(Op.UPDATE, {"tiny": "2"}, {"tiny": "1"}, typed=False, key="tiny")),
        ("L1019", "L996", dml(Op.UPDATE, {"tiny": "2"}, {"tiny": "1"}, typed=True, key="tiny")),
        ("L1137", "L1126", dml(Op.UPDATE, None, {"tiny": "1"}, typed=False, key="tiny")),
        ("L1204", "L1194", dml(Op.DELETE, {"tiny": "2"}, None, typed=False, key="tiny")),
        ("L1264", "L1241", dml(Op.DELETE, {"tiny": "2"}, None, typed=True, key="tiny")),
    ],
)
def test_extracted_row_vectors(value: str, key: str, expected: ChangeEvent) -> None:
    assert decode_one(vector(value), vector(key)) == expected


def test_extracted_watermark() -> None:
    event = decode_one(vector("L563"), vector("L553"))
    assert event == ChangeEvent(kind=EventKind.WATERMARK, position=POS, commit_ts=3)


ID_TABLE = TableSchema(
    database="test",
    table="table1",
    columns=(ColumnSchema(name="id", mysql_type="int", length=0, nullable=False),),
    indexes=(IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
    source="debezium-table-changes",
)


def test_extracted_create_table_schema_off() -> None:
    event = decode_one(vector("L428"), vector("L422"))
    assert event == ChangeEvent(
        kind=EventKind.DDL,
        position=POS,
        commit_ts=1,
        database="test",
        table="table1",
        ddl_type="CREATE",
        ddl_query="CREATE TABLE test.table1",
        table_schema=ID_TABLE,
        facts=EventFacts(table_change_id='"test"."table1"'),
    )
    assert event.table_schema is not None
    assert event.table_schema.handle_key() == ("id",)


def test_extracted_rename_table_schema_on() -> None:
    # The Go test builds PreTableInfo test.table2 and TableInfo test.table1 (its query text says
    # the opposite); the id lists the old name first, then the new one (EncodeDDLEvent).
    event = decode_one(vector("L91"), vector("L72"))
    assert event == ChangeEvent(
        kind=EventKind.DDL,
        position=POS,
        commit_ts=1,
        database="test",
        table="table1",
        ddl_type="RENAME",
        ddl_query="RENAME TABLE test.table1 to test.table2",
        table_schema=ID_TABLE,
        facts=EventFacts(table_change_id='"test"."table2","test"."table1"', renamed_from=("test", "table2")),
    )


def test_extracted_drop_table() -> None:
    event = decode_one(vector("L504"), vector("L498"))
    assert event == ChangeEvent(
        kind=EventKind.DDL,
        position=POS,
        commit_ts=1,
        database="test",
        table="table2",
        ddl_type="ERASE",
        ddl_query="DROP TABLE test.table2",
        facts=EventFacts(table_change_id='"test"."table2"'),
    )


def ddl_value(query: str, changes: list[dict[str, Any]], db: str = "shop", table: str = "t") -> bytes:
    source = {"db": db, "table": table, "commit_ts": 9}
    return dumps({"payload": {"source": source, "databaseName": db, "ddl": query, "tableChanges": changes}})


@pytest.mark.parametrize(
    ("query", "changes", "ddl_type"),
    [
        ("TRUNCATE TABLE t", [], "TRUNCATE"),
        ("CREATE DATABASE shop", [], "QUERY"),
        ("ALTER TABLE t ADD COLUMN c INT", [{"type": "ALTER", "id": '"shop"."t"', "table": None}], "ALTER"),
        ("CREATE UNIQUE INDEX i ON t(c)", [{"type": "ALTER", "id": '"shop"."t"', "table": None}], "CINDEX"),
        ("DROP INDEX i ON t", [{"type": "DROP", "id": '"shop"."t"', "table": None}], "DINDEX"),
        # Views are QUERY in TiCDC's Simple mapping: no table of ours is dropped.
        ("DROP VIEW v", [{"type": "DROP", "id": '"shop"."v"', "table": None}], "QUERY"),
        ("DROP TABLE `shop`.`t`", [{"type": "DROP", "id": '"shop"."t"', "table": None}], "ERASE"),
        ("ALTER TABLE `t` ADD INDEX `i`(`c`)", [{"type": "ALTER", "id": '"shop"."t"', "table": None}], "CINDEX"),
        ("ALTER TABLE t ADD PRIMARY KEY (c) /*T![clustered_index] NONCLUSTERED */", [{"type": "ALTER"}], "CINDEX"),
        ("ALTER TABLE t DROP PRIMARY KEY", [{"type": "ALTER", "id": '"shop"."t"', "table": None}], "DINDEX"),
        ("ALTER TABLE t DROP INDEX i", [{"type": "DROP", "id": '"shop"."t"', "table": None}], "DINDEX"),
        ("ALTER TABLE t ADD COLUMN c INT, ADD INDEX i(c)", [{"type": "ALTER", "table": None}], "ALTER"),
        ("ALTER TABLE t RENAME COLUMN a TO b", [{"type": "ALTER", "id": '"shop"."t"', "table": None}], "ALTER"),
        ("RENAME TABLE `shop`.`a` TO `shop`.`t`", [{"type": "ALTER", "id": '"shop"."a","shop"."t"'}], "RENAME"),
        ("ALTER TABLE a RENAME TO t", [{"type": "ALTER", "id": '"shop"."a","shop"."t"', "table": None}], "RENAME"),
        ("DROP DATABASE shop", [], "QUERY"),
        ("SOMETHING NEW", [{"type": "CREATE", "id": '"shop"."t"', "table": None}], "CREATE"),
    ],
)
def test_ddl_types(query: str, changes: list[dict[str, Any]], ddl_type: str) -> None:
    assert decode_one(ddl_value(query, changes)).ddl_type == ddl_type


def test_table_changes_schema_all_attributes() -> None:
    columns = [
        {"name": "id", "typeName": "BIGINT UNSIGNED", "length": None, "scale": None, "optional": False},
        {
            "name": "price",
            "typeName": "DECIMAL",
            "length": 12,
            "scale": 6.0,
            "optional": True,
            "defaultValueExpression": "1.500000",
            "charsetName": None,
        },
        {
            "name": "at",
            "typeName": "DATETIME",
            "length": 3,
            "scale": None,
            "optional": True,
            "defaultValueExpression": "1970-01-01 00:00:00",
        },
        {"name": "size", "typeName": "ENUM", "length": 1, "enumValues": ["'s'", "'m'"], "charsetName": "utf8mb4"},
        {"name": "n", "typeName": "INT", "length": None, "defaultValueExpression": 5},
    ]
    change = {
        "type": "CREATE",
        "id": '"shop"."t"',
        "table": {"defaultCharsetName": "utf8mb4", "primaryKeyColumnNames": ["id"], "columns": columns},
    }
    schema = decode_one(ddl_value("CREATE TABLE t (...)", [change])).table_schema
    assert schema == TableSchema(
        database="shop",
        table="t",
        columns=(
            ColumnSchema("id", "bigint", unsigned=True, nullable=False),
            ColumnSchema("price", "decimal", length=12, scale=6, default="1.500000"),
            ColumnSchema("at", "datetime", fsp=3, default="1970-01-01 00:00:00"),
            ColumnSchema("size", "enum", length=1, charset="utf8mb4", elements=("s", "m")),
            ColumnSchema("n", "int", default="5"),
        ),
        indexes=(IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
        source="debezium-table-changes",
        extra={"default_charset": "utf8mb4"},
    )
    assert [c.type_text() for c in schema.columns] == [
        "bigint unsigned",
        "decimal(12,6)",
        "datetime(3)",
        "enum('s','m')",
        "int",
    ]


def test_may_carry_schema() -> None:
    decoder = DebeziumDecoder(CodecOptions())
    assert decoder.may_carry_schema(message(vector("L428")))
    assert decoder.may_carry_schema(message(b'{"payload":{"ddl":"x"}}'))
    assert not decoder.may_carry_schema(message(vector("L758")))
    assert not decoder.may_carry_schema(message(None))
    assert DebeziumDecoder(CodecOptions(compression=Compression.LZ4)).may_carry_schema(message(b"\x04\x22"))


def test_registry_returns_the_decoder() -> None:
    assert isinstance(decoder_for("debezium", CodecOptions()), DebeziumDecoder)


def row(op: str = "c", after: Any = None, before: Any = None, **source: Any) -> dict[str, Any]:
    src = {"db": "shop", "table": "t", "commit_ts": 5, **source}
    payload: dict[str, Any] = {"source": src, "op": op}
    if after is not None:
        payload["after"] = after
    if before is not None:
        payload["before"] = before
    return {"payload": payload}


def typed_row(spec: dict[str, Any], value: Any) -> bytes:
    fields = [{"field": "after", "type": "struct", "fields": [{"field": "c", **spec}]}]
    return dumps({**row(after={"c": value}), "schema": {"type": "struct", "fields": fields}})


MALFORMED: list[tuple[bytes | None, str]] = [
    (None, "the message has no value (a Kafka tombstone); TiCDC never sends one"),
    (b"[1]", "value must be a JSON object, got an array"),
    (b'{"schema": {}}', "value has no field 'payload'"),
    (
        dumps({"payload": {"source": {}}}),
        "the value payload has neither 'op' (row change, watermark) nor 'ddl' (DDL); check that the "
        "pipeline's protocol matches the changefeed",
    ),
    (
        dumps(row(op="x")),
        "unknown operation the string 'x' in field 'payload.op'; expected one of c, r, u, d (rows) or m (watermark)",
    ),
    (
        dumps(row(commit_ts=-1, after={"c": 1})),
        "field 'payload.source.commit_ts' of the row change (op 'c') must be an unsigned 64-bit integer, "
        "got the number -1",
    ),
    (dumps(row()), "the row change (op 'c') of table shop.t has no object 'payload.after'"),
    (
        dumps(row(op="d", after={"c": 1}, before={"c": 1})),
        "the row change (op 'd') of table shop.t carries a non-null 'payload.after', which this operation never has",
    ),
    (
        dumps(row(after={"c": [1]})),
        "column 'c' (no schema) of table shop.t in 'payload.after': expected a JSON scalar, got an array",
    ),
    (
        typed_row({"type": "int16"}, 40000),
        "column 'c' (connect:int16) of table shop.t in 'payload.after': 40000 is outside the range -32768..32767",
    ),
    (
        typed_row({"type": "int32", "name": "io.debezium.time.Date"}, "2020-01-01"),
        "column 'c' (date) of table shop.t in 'payload.after': expected a JSON integer, got the string '2020-01-01'",
    ),
    (
        typed_row({"type": "string", "tidb_type": "varbinary"}, "Zm9v!"),
        "column 'c' (varbinary) of table shop.t in 'payload.after': 'Zm9v!' is not standard padded base64 "
        "(Only base64 data is allowed)",
    ),
    (
        dumps(
            {
                **row(after={"c": 1, "d": 2}),
                "schema": {"fields": [{"field": "after", "fields": [{"field": "c", "type": "int32"}]}]},
            }
        ),
        "column 'd' in 'payload.after' is not in the value schema of table shop.t",
    ),
    (
        ddl_value("X", [{"type": "RENAME", "id": "x"}]),
        "unknown table change type the string 'RENAME' in 'payload.tableChanges[0].type'; "
        "expected CREATE, ALTER or DROP",
    ),
]


@pytest.mark.parametrize(("value", "reason"), MALFORMED)
def test_malformed_messages(value: bytes | None, reason: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_one(value)
    assert info.value.reason == reason
    assert str(info.value) == f"debezium: {reason}"


def test_invalid_json_and_compression() -> None:
    with pytest.raises(DecodeError, match=r"^debezium: value is not valid JSON: Expecting value: line 1 column 1"):
        decode_one(b"\x00\x22M\x18")
    with pytest.raises(DecodeError) as info:
        decode_one(vector("L758"), compression=Compression.SNAPPY)
    assert info.value.reason.startswith("the value could not be decompressed as snappy (")
    assert info.value.reason.endswith(
        "); it looks like uncompressed JSON. Set the pipeline's codec.compression to none (now snappy): it must "
        "match the changefeed's large-message-handle-compression"
    )


@pytest.mark.parametrize("compression", [Compression.SNAPPY, Compression.LZ4])
def test_key_and_value_are_both_decompressed(compression: Compression) -> None:
    def pack(data: bytes) -> bytes:
        return bytes(
            cramjam.snappy.compress_raw(data) if compression is Compression.SNAPPY else cramjam.lz4.compress(data)
        )

    key, value = vector("L749"), vector("L758")
    plain = DebeziumDecoder(CodecOptions()).decode(message(value, key=key), MemorySchemaLookup())
    packed = DebeziumDecoder(CodecOptions(compression=compression)).decode(
        message(pack(value), key=pack(key)), MemorySchemaLookup()
    )
    assert packed == plain
    assert packed[0].facts.key_columns == plain[0].facts.key_columns


def test_null_replaced_by_default_cannot_be_told_apart() -> None:
    # TiCDC writes a column's DEFAULT where the row holds NULL (docs/reference-notes.md). The schema's
    # "default" equals the value, so the decoder can only report the value as sent.
    spec = {"type": "int32", "optional": True, "default": 7}
    event = decode_one(typed_row(spec, 7))
    assert event.after == {"c": "7"}
    assert decode_one(typed_row(spec, None)).after == {"c": None}


def test_snapshot_read_is_an_insert_and_null_before_on_update_is_no_old_image() -> None:
    assert decode_one(dumps(row(op="r", after={"c": 1}))).op is Op.INSERT
    doc = row(op="u", after={"c": 1})
    doc["payload"]["before"] = None
    event = decode_one(dumps(doc))
    assert (event.op, event.before, event.after) == (Op.UPDATE, None, {"c": "1"})


def test_compressed_key_or_value_read_without_compression() -> None:
    key, value = vector("L749"), vector("L758")
    with pytest.raises(DecodeError) as info:
        decode_one(bytes(cramjam.lz4.compress(value)), key=key)
    assert str(info.value) == (
        "debezium: the value is an LZ4 frame, but codec.compression is none: the changefeed compresses its "
        "messages (large-message-handle-compression=lz4); set the pipeline's codec.compression to lz4"
    )
    with pytest.raises(DecodeError) as info:
        decode_one(value, key=bytes(cramjam.snappy.compress_raw(key)))
    assert str(info.value) == (
        "debezium: the key is a snappy block, but codec.compression is none: the changefeed compresses its "
        "messages (large-message-handle-compression=snappy); set the pipeline's codec.compression to snappy"
    )


_SHAPES: list[tuple[str, dict[str, Any]]] = [
    (op, {**({"after": image} if image is not None else {}), **({"before": old} if old is not None else {})})
    for op in ("c", "r", "u", "d")
    for image in (None, {"c": 1}, [1], "x")
    for old in (None, {"c": 2}, 3)
]
_SOURCES: list[dict[str, Any]] = [
    {},
    {"commit_ts": True},
    {"commit_ts": -1},
    {"commit_ts": 2**64},
    {"commit_ts": 2**64 - 1},
    {"commit_ts": 1.5},
    {"db": None},
    {"db": 1.5},
    {"table": 7},
]


@pytest.mark.parametrize("source", _SOURCES)
def test_the_usual_row_reading_agrees_with_the_checks(source: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """``_usual_row`` (no error contexts built) answers only where the checks accept, with their values:
    every shape of images per operation and odd ``source`` members, decoded with it and with the
    checks alone."""
    from ticdc_lake.protocols import debezium

    def decoded(value: RawMessage) -> str:
        try:
            return repr(DebeziumDecoder(CodecOptions()).decode(value, MemorySchemaLookup()))
        except DecodeError as exc:
            return str(exc)

    for op, images in _SHAPES:
        doc = row(op=op, **source)
        doc["payload"].update(images)
        value = message(dumps(doc))
        usual = decoded(value)
        monkeypatch.setattr(debezium, "_usual_row", lambda payload, op: None)
        assert decoded(value) == usual, (op, images, source)
        monkeypatch.undo()
