"""SimpleJsonDecoder against hand-written messages that follow the Simple protocol document.

The messages are written here from TiCDC's Simple protocol document (docs.pingcap.com, "TiCDC
Simple Protocol"), never with the project's own encoder, so that the two cannot share a mistake.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import cramjam
import pytest

from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, RawMessage, SourcePosition
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.simple_json import SimpleJsonDecoder
from ticdc_lake.protocols.simple_rows import converter_for
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.schema.type_mapping import ATTRIBUTE_TYPES, FIXED_TYPES

VERSION = 447984074911121426
COMMIT_TS = 447984084414103554


def column(name: str, mysql_type: str, **data_type: Any) -> dict[str, Any]:
    charset = "utf8mb4" if mysql_type in {"char", "varchar", "text", "enum", "set", "json"} else "binary"
    return {
        "name": name,
        "dataType": {"mysqlType": mysql_type, "charset": charset, "collate": charset, **data_type},
        "nullable": name != "id",
        "default": None,
    }


ALL_TYPES_SCHEMA: dict[str, Any] = {
    "schema": "shop",
    "table": "all_types",
    "tableID": 112,
    "version": VERSION,
    "columns": [
        column("id", "bigint", length=20),
        column("t_tiny", "tinyint", length=4),
        column("t_tiny_u", "tinyint", length=3, unsigned=True),
        column("t_small", "smallint", length=6),
        column("t_medium", "mediumint", length=9),
        column("t_int", "int", length=11),
        column("t_int_u", "int", length=10, unsigned=True),
        column("t_big", "bigint", length=20),
        column("t_big_u", "bigint", length=20, unsigned=True),
        column("t_year", "year", length=4, unsigned=True),
        column("t_bit", "bit", length=10, unsigned=True),
        column("t_float", "float", length=12),
        column("t_double", "double", length=22),
        column("t_dec", "decimal", length=12, decimal=6),
        column("t_dec0", "decimal", length=10),
        column("t_char", "char", length=10),
        column("t_varchar", "varchar", length=255),
        column("t_text", "text", length=65535),
        column("t_json", "json"),
        column("t_vector", "vector"),
        column("t_binary", "binary", length=4),
        column("t_varbinary", "varbinary", length=64),
        column("t_blob", "blob", length=65535),
        column("t_date", "date", length=10),
        column("t_dt0", "datetime", length=19),
        column("t_dt6", "datetime", length=26, decimal=6),
        column("t_time", "time", length=17, decimal=6),
        column("t_ts", "timestamp", length=23, decimal=3),
        column("t_enum", "enum", length=6, elements=["small", "medium", "large"]),
        column("t_set", "set", length=7, elements=["a", "b", "c", "d"]),
        column("t_virtual", "int", length=11),
    ],
    "indexes": [{"name": "primary", "unique": True, "primary": True, "nullable": False, "columns": ["id"]}],
}

ALL_VALUES: dict[str, Any] = {
    "id": "1",
    "t_tiny": "-128",
    "t_tiny_u": "255",
    "t_small": "-32768",
    "t_medium": "8388607",
    "t_int": "-2147483648",
    "t_int_u": "4294967295",
    "t_big": "-9223372036854775808",
    "t_big_u": "18446744073709551615",
    "t_year": "2023",
    "t_bit": "1023",
    "t_float": "3.14",
    "t_double": "2.718281828459045",
    "t_dec": "179394.233300",
    "t_dec0": "-10",
    "t_char": "abc",
    "t_varchar": "日本語 🍣 Grüße",
    "t_text": "line one\nline two",
    "t_json": '{"k": "v", "n": [1, 2]}',
    "t_vector": "[1,2.5,3]",
    "t_binary": "//4AgA==",
    "t_varbinary": "AAECAwQ=",
    "t_blob": "",
    "t_date": "2023-11-30",
    "t_dt0": "2023-11-30 12:34:56",
    "t_dt6": "2023-11-30 12:34:56.123456",
    "t_time": "-12:34:56.123456",
    "t_ts": {"location": "Asia/Shanghai", "value": "2024-01-01 08:00:00.250"},
    "t_enum": "2",
    "t_set": "5",
}

ALL_CANONICAL: dict[str, str | None] = {
    **{k: v for k, v in ALL_VALUES.items() if isinstance(v, str)},
    "t_ts": "2024-01-01T00:00:00.250Z",
    "t_enum": "medium",
    "t_set": "a,c",
}


def raw(value: bytes | str | dict[str, Any] | None, offset: int = 7) -> RawMessage:
    if isinstance(value, dict):
        value = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        value = value.encode("utf-8")
    return RawMessage(topic="cdc", partition=2, offset=offset, timestamp_ms=1708923662983, key=None, value=value)


def dml(
    kind: str, data: dict[str, Any] | None = None, old: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "version": 1,
        "database": "shop",
        "table": "all_types",
        "tableID": 112,
        "type": kind,
        "commitTs": COMMIT_TS,
        "buildTs": 1708923662983,
        "schemaVersion": VERSION,
    }
    if data is not None:
        message["data"] = data
    if old is not None:
        message["old"] = old
    message.update(fields)
    return message


def bootstrap_message(schema: dict[str, Any] = ALL_TYPES_SCHEMA) -> dict[str, Any]:
    return {"version": 1, "type": "BOOTSTRAP", "commitTs": 0, "buildTs": 1708924603278, "tableSchema": schema}


@pytest.fixture
def decoder() -> SimpleJsonDecoder:
    return SimpleJsonDecoder(CodecOptions())


@pytest.fixture
def schemas(decoder: SimpleJsonDecoder) -> MemorySchemaLookup:
    (event,) = decoder.decode(raw(bootstrap_message()), MemorySchemaLookup())
    assert event.table_schema is not None
    return MemorySchemaLookup([event.table_schema])


def decode_one(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup, message: Any) -> ChangeEvent:
    events = decoder.decode(raw(message), schemas)
    assert len(events) == 1
    return events[0]


def decode_error(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup, message: Any) -> str:
    with pytest.raises(DecodeError) as caught:
        decoder.decode(raw(message), schemas)
    assert caught.value.protocol == "simple-json"
    return str(caught.value)


# --- event kinds ---------------------------------------------------------------------------


def test_registry_builds_this_decoder() -> None:
    assert isinstance(decoder_for("simple-json", CodecOptions()), SimpleJsonDecoder)


def test_watermark(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    message = {"version": 1, "type": "WATERMARK", "commitTs": 447984124732375041, "buildTs": 1708923816911}
    assert decode_one(decoder, schemas, message) == ChangeEvent(
        kind=EventKind.WATERMARK, position=SourcePosition("cdc", 2, 7, 0), commit_ts=447984124732375041
    )


def test_bootstrap(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    event = decode_one(decoder, schemas, bootstrap_message())
    assert event.kind is EventKind.BOOTSTRAP
    assert (event.commit_ts, event.database, event.table, event.table_id) == (0, "shop", "all_types", 112)
    assert event.schema_version == VERSION
    assert event.table_schema is not None
    assert event.table_schema.source == "simple-bootstrap"
    assert event.table_schema.version == VERSION
    assert [c.name for c in event.table_schema.columns] == [c["name"] for c in ALL_TYPES_SCHEMA["columns"]]
    assert event.pre_table_schema is None
    assert event.ddl_query is None


def test_alter_ddl_carries_both_schemas(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    before = {**ALL_TYPES_SCHEMA, "version": VERSION - 5, "columns": ALL_TYPES_SCHEMA["columns"][:-1]}
    message = {
        "version": 1,
        "type": "ALTER",
        "sql": "ALTER TABLE `all_types` ADD COLUMN `t_virtual` INT",
        "commitTs": 447987408682614795,
        "buildTs": 1708936343598,
        "tableSchema": ALL_TYPES_SCHEMA,
        "preTableSchema": before,
    }
    event = decode_one(decoder, schemas, message)
    assert event.kind is EventKind.DDL
    assert (event.ddl_type, event.ddl_query) == (
        "ALTER",
        "ALTER TABLE `all_types` ADD COLUMN `t_virtual` INT",
    )
    assert (event.commit_ts, event.database, event.table, event.table_id) == (
        447987408682614795,
        "shop",
        "all_types",
        112,
    )
    assert event.schema_version == VERSION
    assert event.table_schema is not None
    assert event.pre_table_schema is not None
    assert (event.table_schema.version, event.table_schema.source) == (VERSION, "simple-ddl")
    assert (event.pre_table_schema.version, event.pre_table_schema.source) == (VERSION - 5, "simple-ddl")
    assert len(event.pre_table_schema.columns) == len(event.table_schema.columns) - 1


def test_rename_ddl_names_the_new_table(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    message = {
        "version": 1,
        "type": "RENAME",
        "sql": "RENAME TABLE `shop`.`all_types` TO `shop`.`every_type`",
        "commitTs": 447987408682614800,
        "buildTs": 1,
        "tableSchema": {**ALL_TYPES_SCHEMA, "table": "every_type"},
        "preTableSchema": ALL_TYPES_SCHEMA,
    }
    event = decode_one(decoder, schemas, message)
    assert (event.ddl_type, event.database, event.table) == ("RENAME", "shop", "every_type")
    assert event.pre_table_schema is not None
    assert event.pre_table_schema.table == "all_types"


def test_ddl_with_only_the_pre_schema_takes_names_from_it(
    decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup
) -> None:
    message = {
        "version": 1,
        "type": "ERASE",
        "sql": "DROP TABLE `shop`.`all_types`",
        "commitTs": 5,
        "buildTs": 1,
        "preTableSchema": ALL_TYPES_SCHEMA,
    }
    event = decode_one(decoder, schemas, message)
    assert (event.ddl_type, event.database, event.table, event.table_id) == (
        "ERASE",
        "shop",
        "all_types",
        112,
    )
    assert event.table_schema is None
    assert event.schema_version is None


@pytest.mark.parametrize(
    ("sql", "database"),
    [
        ("CREATE DATABASE `shop`", "shop"),
        ("DROP DATABASE IF EXISTS `we``ird db`", "we`ird db"),
        ("CREATE SCHEMA IF NOT EXISTS plain", "plain"),
        ("CREATE VIEW `v` AS SELECT 1", None),
    ],
)
def test_schema_level_ddl_keeps_the_sql_without_a_table(
    decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup, sql: str, database: str | None
) -> None:
    """No tableSchema: the database is read from the statement (Simple sends no other name)."""
    message = {"version": 1, "type": "QUERY", "sql": sql, "commitTs": 9, "buildTs": 1}
    assert decode_one(decoder, schemas, message) == ChangeEvent(
        kind=EventKind.DDL,
        position=SourcePosition("cdc", 2, 7, 0),
        commit_ts=9,
        database=database,
        ddl_type="QUERY",
        ddl_query=sql,
    )


def test_ddl_without_sql_has_no_query(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    # Go's encoder omits an empty "sql" (omitempty).
    message = {"version": 1, "type": "ALTER", "commitTs": 3, "buildTs": 1, "tableSchema": ALL_TYPES_SCHEMA}
    event = decode_one(decoder, schemas, message)
    assert (event.kind, event.ddl_type, event.ddl_query, event.table) == (
        EventKind.DDL,
        "ALTER",
        None,
        "all_types",
    )


@pytest.mark.parametrize("ddl_type", ["CREATE", "RENAME", "CINDEX", "DINDEX", "ERASE", "TRUNCATE", "ALTER", "QUERY"])
def test_every_ddl_type_is_a_ddl_event(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup, ddl_type: str) -> None:
    message = {
        "version": 1,
        "type": ddl_type,
        "sql": "X",
        "commitTs": 3,
        "buildTs": 1,
        "tableSchema": ALL_TYPES_SCHEMA,
    }
    event = decode_one(decoder, schemas, message)
    assert (event.kind, event.ddl_type, event.table) == (EventKind.DDL, ddl_type, "all_types")


def test_insert_makes_every_type_canonical(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    event = decode_one(decoder, schemas, dml("INSERT", data=ALL_VALUES))
    assert event == ChangeEvent(
        kind=EventKind.DML,
        position=SourcePosition("cdc", 2, 7, 0),
        commit_ts=COMMIT_TS,
        database="shop",
        table="all_types",
        table_id=112,
        op=Op.INSERT,
        schema_version=VERSION,
        after=ALL_CANONICAL,
    )
    # t_virtual is in the schema but not in the row: absent, not NULL.
    assert event.after is not None
    assert "t_virtual" not in event.after


def test_update_has_both_images(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    event = decode_one(decoder, schemas, dml("UPDATE", data={"id": "1", "t_int": "5"}, old={"id": "1", "t_int": None}))
    assert (event.op, event.status) == (Op.UPDATE, EventStatus.READY)
    assert event.after == {"id": "1", "t_int": "5"}
    assert event.before == {"id": "1", "t_int": None}


def test_delete_has_the_old_image_only(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    event = decode_one(decoder, schemas, dml("DELETE", old={"id": "9", "t_varchar": "x"}))
    assert (event.op, event.after, event.before) == (Op.DELETE, None, {"id": "9", "t_varchar": "x"})


def test_null_of_every_type_is_none(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    nulls = dict.fromkeys(ALL_VALUES)
    nulls["id"] = "1"
    event = decode_one(decoder, schemas, dml("INSERT", data=nulls))
    assert event.after == {**dict.fromkeys(ALL_VALUES), "id": "1"}


def test_checksum_and_build_ts_are_ignored(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    checksum = {"version": 0, "corrupted": False, "current": 123, "previous": 0}
    event = decode_one(decoder, schemas, dml("INSERT", data={"id": "1"}, checksum=checksum))
    assert event.after == {"id": "1"}


@pytest.mark.parametrize(
    ("name", "sent", "canonical"),
    [
        ("t_big_u", "0", "0"),
        ("t_tiny", "127", "127"),
        ("t_int_u", "0", "0"),
        ("t_year", "0", "0"),
        ("t_bit", "0", "0"),
        ("t_float", "0.000001", "0.000001"),
        ("t_double", "-1797693134862315700000000000", "-1797693134862315700000000000"),
        ("t_dec", "-0.100000", "-0.100000"),
        ("t_varchar", "", ""),
        ("t_date", "0000-00-00", "0000-00-00"),
        ("t_dt0", "0000-00-00 00:00:00", "0000-00-00 00:00:00"),
        ("t_dt6", "2023-11-30 12:34:56.000000", "2023-11-30 12:34:56.000000"),
        ("t_time", "838:59:59.000000", "838:59:59.000000"),
        ("t_time", "100:00:00.500000", "100:00:00.500000"),
        ("t_time", "-838:59:59.000000", "-838:59:59.000000"),
        ("t_ts", {"location": "UTC", "value": "0000-00-00 00:00:00.000"}, "0000-00-00 00:00:00.000"),
        (
            "t_ts",
            {"location": "America/New_York", "value": "2024-11-03 01:30:00.000"},
            "2024-11-03T05:30:00.000Z",
        ),
        (
            "t_ts",
            {"location": "America/New_York", "value": "2024-07-01 20:00:00.999"},
            "2024-07-02T00:00:00.999Z",
        ),
        (
            "t_ts",
            {"location": "Asia/Shanghai", "value": "2024-01-01 00:00:00.000"},
            "2023-12-31T16:00:00.000Z",
        ),
        ("t_enum", "0", ""),
        ("t_enum", "3", "large"),
        ("t_set", "0", ""),
        ("t_set", "15", "a,b,c,d"),
        ("t_blob", "QR==", "QQ=="),
    ],
)
def test_edge_values(
    decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup, name: str, sent: Any, canonical: str
) -> None:
    event = decode_one(decoder, schemas, dml("INSERT", data={"id": "1", name: sent}))
    assert event.after == {"id": "1", name: canonical}


def test_local_timestamp_location_reads_as_the_server_zone(schemas: MemorySchemaLookup) -> None:
    decoder = SimpleJsonDecoder(CodecOptions(server_time_zone="Asia/Shanghai"))
    value = {"location": "Local", "value": "2024-01-01 08:00:00.000"}
    event = decode_one(decoder, schemas, dml("INSERT", data={"id": "1", "t_ts": value}))
    assert event.after == {"id": "1", "t_ts": "2024-01-01T00:00:00.000Z"}


def test_unknown_schema_version_is_pending(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    message = dml("UPDATE", data={"id": "1", "t_int": "nonsense"}, old={"id": "1"}, schemaVersion=VERSION + 1)
    event = decode_one(decoder, schemas, message)
    assert event == ChangeEvent(
        kind=EventKind.DML,
        position=SourcePosition("cdc", 2, 7, 0),
        commit_ts=COMMIT_TS,
        database="shop",
        table="all_types",
        table_id=112,
        op=Op.UPDATE,
        schema_version=VERSION + 1,
        status=EventStatus.PENDING,
        pending_payload=json.dumps(message, ensure_ascii=False),
    )


def test_missing_schema_version_means_version_zero(decoder: SimpleJsonDecoder) -> None:
    schema = TableSchema("shop", "old_t", (ColumnSchema("id", "int"),), version=0)
    message = dml("INSERT", data={"id": "4"}, table="old_t")
    del message["schemaVersion"], message["tableID"]
    event = decode_one(decoder, MemorySchemaLookup([schema]), message)
    assert (event.schema_version, event.table_id, event.after) == (0, None, {"id": "4"})


def test_converters_follow_a_replaced_schema(decoder: SimpleJsonDecoder) -> None:
    as_int = TableSchema("shop", "t", (ColumnSchema("c", "int"),), version=1)
    as_enum = TableSchema("shop", "t", (ColumnSchema("c", "enum", elements=("x", "y")),), version=1)
    message = {
        "version": 1,
        "database": "shop",
        "table": "t",
        "type": "INSERT",
        "commitTs": 1,
        "schemaVersion": 1,
    }
    message["data"] = {"c": "2"}
    assert decode_one(decoder, MemorySchemaLookup([as_int]), message).after == {"c": "2"}
    assert decode_one(decoder, MemorySchemaLookup([as_int]), message).after == {"c": "2"}
    assert decode_one(decoder, MemorySchemaLookup([as_enum]), message).after == {"c": "y"}


def test_decoder_pickles_without_its_cache(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    decoder.decode(raw(dml("INSERT", data={"id": "1"})), schemas)
    copy = pickle.loads(pickle.dumps(decoder))
    assert copy.options == decoder.options
    assert decode_one(copy, schemas, dml("INSERT", data={"id": "2"})).after == {"id": "2"}


def test_may_carry_schema_is_a_byte_test(decoder: SimpleJsonDecoder) -> None:
    assert decoder.may_carry_schema(raw(bootstrap_message()))
    assert decoder.may_carry_schema(raw({"version": 1, "type": "CREATE", "tableSchema": {}}))
    # every DDL is a schema fact, also one without tableSchema (DROP DATABASE drops the database's tables)
    assert decoder.may_carry_schema(raw({"version": 1, "type": "QUERY", "sql": "CREATE DATABASE d"}))
    assert not decoder.may_carry_schema(raw(dml("INSERT", data={"id": "1"})))
    assert not decoder.may_carry_schema(raw(None))
    compressed = SimpleJsonDecoder(CodecOptions(compression=Compression.SNAPPY))
    assert compressed.may_carry_schema(raw(b"\x00\x01"))


def test_every_mapped_type_has_a_converter() -> None:
    samples = {
        "tinyint": "1", "smallint": "1", "mediumint": "1", "int": "1", "bigint": "1", "year": "2024",
        "bit": "1", "float": "1.5", "double": "1.5", "decimal": "1.5", "numeric": "1.5", "char": "a",
        "varchar": "a", "var_string": "a", "tinytext": "a", "text": "a", "mediumtext": "a",
        "longtext": "a", "json": "{}", "vector": "[1]", "enum": "1", "set": "1", "time": "01:00:00",
        "date": "2024-01-01", "datetime": "2024-01-01 00:00:00",
        "timestamp": {"location": "UTC", "value": "2024-01-01 00:00:00"},
    }  # fmt: skip
    assert set(samples) == set(FIXED_TYPES) | ATTRIBUTE_TYPES
    for mysql_type, sample in samples.items():
        converter = converter_for(ColumnSchema("c", mysql_type, elements=("x",)), "UTC")
        assert isinstance(converter(sample), str), mysql_type
    for mysql_type in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
        assert converter_for(ColumnSchema("c", mysql_type), "UTC")("QQ==") == "QQ=="


# --- errors --------------------------------------------------------------------------------

COMPRESS_HINT = " (if the changefeed compresses messages, set the pipeline's codec.compression to match)"
WHERE = "table shop.all_types (schema version 447984074911121426)"


def test_invalid_json(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    assert decode_error(decoder, schemas, b'{"version":1,') == (
        "simple-json: value is not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 14 (char 13)" + COMPRESS_HINT
    )
    assert decode_error(decoder, schemas, b"\xff\x00garbage") == (
        "simple-json: value is not valid JSON: 'utf-8' codec can't decode byte 0xff in position 0: "
        "invalid start byte" + COMPRESS_HINT
    )
    assert decode_error(decoder, schemas, b'{"version":1,"type":"WATERMARK","commitTs":NaN}') == (
        "simple-json: value is not valid JSON: NaN is not allowed in JSON" + COMPRESS_HINT
    )


def test_value_must_be_an_object(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    assert decode_error(decoder, schemas, b"[1]") == "simple-json: value must be a JSON object, got an array"


def test_tombstone(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    assert decode_error(decoder, schemas, None) == (
        "simple-json: the message has no value (a Kafka tombstone); Simple never sends one"
    )


@pytest.mark.parametrize(
    ("version", "shown"), [(2, "number 2"), ("1", 'string "1"'), (1.0, "number 1.0"), (True, "true")]
)
def test_unknown_protocol_version(
    decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup, version: Any, shown: str
) -> None:
    message = {"version": version, "type": "WATERMARK", "commitTs": 1}
    assert decode_error(decoder, schemas, message) == (
        f"simple-json: unsupported protocol version {shown} in field 'version'; this decoder reads "
        "Simple protocol version 1"
    )


def test_missing_version(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    message = {"type": "WATERMARK", "commitTs": 1}
    assert decode_error(decoder, schemas, message) == "simple-json: the message has no field 'version'"


def test_unknown_message_type(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    assert decode_error(decoder, schemas, {"version": 1, "type": "DDL", "commitTs": 1}) == (
        "simple-json: unknown message type 'DDL' in field 'type'; Simple messages are one of WATERMARK, "
        "BOOTSTRAP, INSERT, UPDATE, DELETE, ALTER, CINDEX, CREATE, DINDEX, ERASE, QUERY, RENAME, TRUNCATE "
        "(check that the pipeline's protocol matches the changefeed)"
    )
    assert decode_error(decoder, schemas, {"version": 1, "commitTs": 1}) == (
        "simple-json: the message has no field 'type'"
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"commitTs": "447984084414103554"},
            "field 'commitTs' of the INSERT message for table shop.all_types must be an unsigned 64-bit "
            'integer, got string "447984084414103554"',
        ),
        (
            {"commitTs": 4.47984084414103554e17},
            "field 'commitTs' of the INSERT message for table shop.all_types must be an unsigned 64-bit "
            "integer, got number 4.4798408441410355E+17",
        ),
        (
            {"commitTs": -1},
            "field 'commitTs' of the INSERT message for table shop.all_types must be an unsigned 64-bit "
            "integer, got number -1",
        ),
        (
            {"commitTs": 18446744073709551616},
            "field 'commitTs' of the INSERT message for table shop.all_types must be an unsigned 64-bit "
            "integer, got number 18446744073709551616",
        ),
        (
            {"schemaVersion": "1"},
            "field 'schemaVersion' of the INSERT message for table shop.all_types must be an unsigned 64-bit "
            'integer, got string "1"',
        ),
        (
            {"tableID": None},
            "field 'tableID' of the INSERT message for table shop.all_types must be an unsigned 64-bit "
            "integer, got null",
        ),
        ({"database": 5}, "field 'database' of the INSERT message must be a string, got number 5"),
        ({"table": None}, "field 'table' of the INSERT message must be a string, got null"),
        (
            {"data": ["1"]},
            "field 'data' of the INSERT message for table shop.all_types must be a JSON object, got an array",
        ),
        (
            {"handleKeyOnly": "yes"},
            "field 'handleKeyOnly' of the INSERT message for table shop.all_types must be true or false, "
            'got string "yes"',
        ),
        (
            {"old": {"id": "1"}},
            "the INSERT message for table shop.all_types carries field 'old', which this message type never has",
        ),
    ],
)
def test_wrong_field_types(
    decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup, fields: dict[str, Any], message: str
) -> None:
    assert decode_error(decoder, schemas, {**dml("INSERT", data={"id": "1"}), **fields}) == "simple-json: " + message


def test_commit_ts_as_a_json_float_is_rejected(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    text = b'{"version":1,"type":"WATERMARK","commitTs":447984124732375041.0}'
    assert decode_error(decoder, schemas, text) == (
        "simple-json: field 'commitTs' of the WATERMARK message must be an unsigned 64-bit integer, "
        "got number 447984124732375041.0"
    )


@pytest.mark.parametrize(
    ("kind", "missing", "message"),
    [
        ("INSERT", "data", "the INSERT message for table shop.all_types has no field 'data'"),
        ("UPDATE", "old", "the UPDATE message for table shop.all_types has no field 'old'"),
        ("DELETE", "old", "the DELETE message for table shop.all_types has no field 'old'"),
        ("INSERT", "commitTs", "the INSERT message for table shop.all_types has no field 'commitTs'"),
        ("INSERT", "database", "the INSERT message has no field 'database'"),
    ],
)
def test_missing_required_fields(
    decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup, kind: str, missing: str, message: str
) -> None:
    full = dml(kind, data={"id": "1"} if kind != "DELETE" else None, old={"id": "1"} if kind != "INSERT" else None)
    del full[missing]
    assert decode_error(decoder, schemas, full) == "simple-json: " + message


def test_missing_fields_of_other_kinds(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    assert decode_error(decoder, schemas, {"version": 1, "type": "WATERMARK"}) == (
        "simple-json: the WATERMARK message has no field 'commitTs'"
    )
    assert decode_error(decoder, schemas, {"version": 1, "type": "BOOTSTRAP", "commitTs": 0}) == (
        "simple-json: the BOOTSTRAP message has no field 'tableSchema'"
    )
    assert decode_error(decoder, schemas, {"version": 1, "type": "ALTER", "sql": 5, "commitTs": 3}) == (
        "simple-json: field 'sql' of the ALTER DDL message must be a string, got number 5"
    )
    assert decode_error(decoder, schemas, {"version": 1, "type": "ALTER", "sql": "X"}) == (
        "simple-json: the ALTER DDL message has no field 'commitTs'"
    )
    bad_schema = {
        "version": 1,
        "type": "ALTER",
        "sql": "X",
        "commitTs": 3,
        "tableSchema": {**ALL_TYPES_SCHEMA, "columns": None},
    }
    assert decode_error(decoder, schemas, bad_schema) == (
        "simple-json: tableSchema.columns must be an array, got null (table shop.all_types)"
    )


def test_unknown_column(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    assert decode_error(decoder, schemas, dml("UPDATE", data={"id": "1"}, old={"id": "1", "ghost": "x"})) == (
        f"simple-json: column 'ghost' in 'old' is not in the schema of {WHERE}; the row and the table schema "
        "announced for its schemaVersion disagree (check this table's DDL and BOOTSTRAP messages)"
    )


TS_SHAPE = "2024-01-01 00:00:00"
BAD_VALUES: list[tuple[str, Any, str]] = [
    ("t_tiny", "128", "128 is outside the range -128..127"),
    ("t_tiny_u", "-1", "-1 is outside the range 0..255"),
    ("t_big_u", "18446744073709551616", "18446744073709551616 is outside the range 0..18446744073709551615"),
    ("t_int", "1.0", "'1.0' is not a base-10 integer"),
    ("t_int", 5, "expected a JSON string, got number 5"),
    ("t_year", "2156", "2156 is outside the range 0..2155"),
    ("t_bit", "1024", "1024 is outside the range 0..1023"),
    ("t_float", "NaN", "'NaN' is not a finite floating-point number"),
    ("t_double", "abc", "'abc' is not a floating-point number"),
    ("t_dec", "1.2.3", "'1.2.3' is not a decimal number"),
    ("t_dec", 1.5, "expected a JSON string, got number 1.5"),
    ("t_varchar", 12, "expected a JSON string, got number 12"),
    ("t_json", {"k": "v"}, "expected a JSON string, got an object"),
    ("t_blob", "not base64!", "'not base64!' is not standard padded base64 (Only base64 data is allowed)"),
    ("t_binary", "QQ", "'QQ' is not standard padded base64 (Incorrect padding)"),
    ("t_date", "2023-11-31 00:00:00", "'2023-11-31 00:00:00' is not a DATE value YYYY-MM-DD"),
    (
        "t_dt0",
        "2023-11-30T12:00:00",
        "'2023-11-30T12:00:00' is not a DATETIME value YYYY-MM-DD HH:MM:SS[.ffffff]",
    ),
    ("t_time", "12:61:00", "'12:61:00' is not a TIME value [-]HH:MM:SS[.ffffff] (hours up to 838)"),
    ("t_ts", TS_SHAPE, 'expected a JSON object {"location", "value"}, got string "' + TS_SHAPE + '"'),
    ("t_ts", {"location": "Mars/Olympus", "value": TS_SHAPE}, "'Mars/Olympus' is not a known IANA time zone"),
    ("t_ts", {"location": "UTC"}, "'value' must be a string, got null"),
    ("t_ts", {"location": 8, "value": TS_SHAPE}, "'location' must be a string, got number 8"),
    (
        "t_ts",
        {"location": "UTC", "value": "2023-02-29 00:00:00"},
        "'2023-02-29 00:00:00' is not a valid time in UTC (day is out of range for month)",
    ),
    ("t_enum", "4", "ENUM index 4 is beyond the 3 members ('small', 'medium', 'large')"),
    ("t_enum", "-1", "-1 is outside the range 0..18446744073709551615"),
    ("t_set", "16", "SET bitmask 16 has bits beyond the 4 members ('a', 'b', 'c', 'd')"),
]


@pytest.mark.parametrize(("name", "sent", "reason"), BAD_VALUES)
def test_bad_values_name_the_column_and_table(
    decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup, name: str, sent: Any, reason: str
) -> None:
    schema = schemas.get("shop", "all_types", VERSION)
    assert schema is not None
    column_schema = schema.column(name)
    assert column_schema is not None
    assert decode_error(decoder, schemas, dml("INSERT", data={"id": "1", name: sent})) == (
        f"simple-json: column {name!r} ({column_schema.type_text()}) of {WHERE} in 'data': {reason}"
    )


def test_bad_value_message_shows_the_column_type(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    assert decode_error(decoder, schemas, dml("INSERT", data={"id": "1", "t_enum": "9"})) == (
        f"simple-json: column 't_enum' (enum('small','medium','large')) of {WHERE} in 'data': "
        "ENUM index 9 is beyond the 3 members ('small', 'medium', 'large')"
    )


def test_unsupported_type(decoder: SimpleJsonDecoder) -> None:
    schema = TableSchema("shop", "geo", (ColumnSchema("g", "geometry"),), version=1)
    message = {
        "version": 1,
        "database": "shop",
        "table": "geo",
        "type": "INSERT",
        "commitTs": 1,
        "schemaVersion": 1,
    }
    lookup = MemorySchemaLookup([schema])
    assert decode_one(decoder, lookup, {**message, "data": {"g": None}}).after == {"g": None}
    assert decode_error(decoder, lookup, {**message, "data": {"g": "x"}}) == (
        "simple-json: column 'g' (geometry) of table shop.geo (schema version 1) in 'data': MySQL type "
        "'geometry' is not supported by the decoder; exclude the table from the pipeline (target.exclude) "
        "or ask for the type to be supported"
    )


def test_handle_key_only(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    message = dml("DELETE", old={"id": "1"}, handleKeyOnly=True)
    assert decode_error(decoder, schemas, message) == (
        f"simple-json: handle-key-only message for shop.all_types at commit ts {COMMIT_TS}: "
        "the full row must be read from the upstream TiDB, which is not configured; TiCDC sent only the "
        "handle-key columns (handleKeyOnly: true) because the row was larger than max-message-bytes. Set the "
        "changefeed's large-message-handle-option to claim-check (and the pipeline's "
        "codec.claim_check_storage_uri) or raise its max-message-bytes; this row must be recovered from TiDB at "
        "that commit ts"
    )


def test_claim_check(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    message = dml("INSERT", data={"id": "1"}, handleKeyOnly=True, claimCheckLocation="s3://bucket/cc/abc.json")
    assert decode_error(decoder, schemas, message) == (
        f"simple-json: the INSERT message for table shop.all_types at commit ts {COMMIT_TS} is a claim-check "
        "reference (claimCheckLocation 's3://bucket/cc/abc.json'), "
        "but codec.claim_check_storage_uri is not set: set it to where the changefeed's "
        "claim-check-storage-uri can be read (file:///abs/path or s3://bucket/prefix) so the original message "
        "can be fetched"
    )


def test_handle_key_only_false_is_a_normal_row(decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup) -> None:
    assert decode_one(decoder, schemas, dml("INSERT", data={"id": "1"}, handleKeyOnly=False)).after == {"id": "1"}


@pytest.mark.parametrize("compression", [Compression.SNAPPY, Compression.LZ4])
def test_compressed_values_decode_like_plain_ones(schemas: MemorySchemaLookup, compression: Compression) -> None:
    plain = json.dumps(dml("INSERT", data={"id": "1"})).encode()
    packed = bytes(
        cramjam.snappy.compress_raw(plain) if compression is Compression.SNAPPY else cramjam.lz4.compress(plain)
    )
    decoder = SimpleJsonDecoder(CodecOptions(compression=compression))
    assert decoder.decode(raw(packed), schemas) == SimpleJsonDecoder(CodecOptions()).decode(raw(plain), schemas)
    assert decoder.may_carry_schema(
        raw(
            bytes(cramjam.lz4.compress(json.dumps(bootstrap_message()).encode()))
            if compression is Compression.LZ4
            else bytes(cramjam.snappy.compress_raw(json.dumps(bootstrap_message()).encode()))
        )
    )
    assert not decoder.may_carry_schema(raw(packed))
    error = decode_error(decoder, schemas, dml("INSERT", data={"id": "1"}))
    assert error.startswith(f"simple-json: the value could not be decompressed as {compression.value} (")
    assert error.endswith(
        f"); it looks like uncompressed JSON. Set the pipeline's codec.compression to none (now {compression.value}): "
        "it must match the changefeed's large-message-handle-compression"
    )


@pytest.mark.parametrize(
    ("compression", "shape"), [(Compression.SNAPPY, "a snappy block"), (Compression.LZ4, "an LZ4 frame")]
)
def test_compressed_value_read_without_compression(
    decoder: SimpleJsonDecoder, schemas: MemorySchemaLookup, compression: Compression, shape: str
) -> None:
    plain = json.dumps(dml("INSERT", data={"id": "1"})).encode()
    packed = bytes(
        cramjam.snappy.compress_raw(plain) if compression is Compression.SNAPPY else cramjam.lz4.compress(plain)
    )
    assert decode_error(decoder, schemas, packed) == (
        f"simple-json: the value is {shape}, but codec.compression is none: the changefeed compresses its "
        f"messages (large-message-handle-compression={compression.value}); set the pipeline's codec.compression "
        f"to {compression.value}"
    )
