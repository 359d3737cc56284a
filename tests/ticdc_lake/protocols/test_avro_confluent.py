"""AvroDecoder (TiCDC ``avro`` + Confluent registry) against hand-built messages (docs/protocols.md).

Writer schemas are written here as TiCDC's ``avro.go`` marshals them and passed in through
:class:`DecodeResources`, the way the decode job passes the landed schemas; bodies are written
with fastavro and the Confluent header by hand, never with the simulator encoder. No registry.
"""

from __future__ import annotations

import io
import json
import pickle
from typing import Any

import fastavro
import pytest

from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import EventFacts, EventKind, Op, RawMessage, SourcePosition
from ticdc_lake.protocols.avro_confluent import AvroDecoder
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.lookup import MemorySchemaLookup

COMMIT_TS = 447984084414103554
MAX_U64 = (1 << 64) - 1
TOPIC = "shop.all"
LOOKUP = MemorySchemaLookup()


# ---------------------------------------------------------------------------- schema builders
def column_type(tidb_type: str, avro: str, **parameters: str) -> dict[str, Any]:
    """A column's type object as ``columnToAvroSchema`` marshals it."""
    spec: dict[str, Any] = {
        "type": avro,
        "connect.parameters": dict(sorted({"tidb_type": tidb_type, **parameters}.items())),
    }
    return spec


def decimal_type(precision: int, scale: int) -> dict[str, Any]:
    return {
        "type": "bytes",
        "connect.parameters": {"tidb_type": "DECIMAL"},
        "logicalType": "decimal",
        "precision": precision,
        "scale": scale,
    }


def field(name: str, spec: dict[str, Any], *, nullable: str | None = None, default: Any = None) -> dict[str, Any]:
    """``nullable``: None (NOT NULL), ``"null-first"`` (default NULL) or ``"null-last"`` (with a default)."""
    if nullable == "null-first":
        return {"default": None, "name": name, "type": ["null", spec]}
    if nullable == "null-last":
        return {"default": default, "name": name, "type": [spec, "null"]}
    return {"name": name, "type": spec}


EXTENSION: list[dict[str, Any]] = [
    {"default": "", "name": "_tidb_op", "type": "string"},
    {"default": 0, "name": "_tidb_commit_ts", "type": "long"},
    {"default": 0, "name": "_tidb_commit_physical_time", "type": "long"},
]
CHECKSUM: list[dict[str, Any]] = [
    {"default": "", "name": "_tidb_row_level_checksum", "type": "string"},
    {"default": False, "name": "_tidb_corrupted", "type": "boolean"},
    {"default": 0, "name": "_tidb_checksum_version", "type": "int"},
]


def record(
    fields: list[dict[str, Any]], *, table: str = "all_types", namespace: str = "default.shop"
) -> dict[str, Any]:
    return {"type": "record", "name": table, "namespace": namespace, "fields": fields}


KEY_FIELDS = [field("id", column_type("BIGINT", "long"))]
VALUE_FIELDS = [
    field("id", column_type("BIGINT", "long")),
    field("t_tiny", column_type("INT", "int"), nullable="null-first"),
    field("t_int_u", column_type("INT UNSIGNED", "long"), nullable="null-first"),
    field("t_small_u", column_type("INT UNSIGNED", "int"), nullable="null-first"),
    field("t_big", column_type("BIGINT", "long"), nullable="null-first"),
    field("t_big_u", column_type("BIGINT UNSIGNED", "long"), nullable="null-first"),
    field("t_float", column_type("FLOAT", "float"), nullable="null-first"),
    field("t_double", column_type("DOUBLE", "double"), nullable="null-first"),
    field("t_dec", decimal_type(12, 2), nullable="null-first"),
    field("t_varchar", column_type("TEXT", "string"), nullable="null-last", default="x"),
    field("t_blob", column_type("BLOB", "bytes"), nullable="null-first"),
    field("t_enum", column_type("ENUM", "string", allowed="a,b\\,c"), nullable="null-last", default="a"),
    field("t_set", column_type("SET", "string", allowed="a,b,c"), nullable="null-first"),
    field("t_bit", column_type("BIT", "bytes", length="12"), nullable="null-first"),
    field("t_json", column_type("JSON", "string"), nullable="null-first"),
    field("t_date", column_type("DATE", "string"), nullable="null-first"),
    field("t_datetime", column_type("DATETIME", "string"), nullable="null-first"),
    field("t_timestamp", column_type("TIMESTAMP", "string"), nullable="null-first"),
    field("t_time", column_type("TIME", "string"), nullable="null-first"),
    field("t_year", column_type("YEAR", "int"), nullable="null-first"),
    field("t_vector", column_type("TiDBVECTORFloat32", "string"), nullable="null-first"),
    field("__", column_type("TEXT", "string"), nullable="null-first"),
]
KEY_SCHEMA = record(KEY_FIELDS)
VALUE_SCHEMA = record(VALUE_FIELDS + EXTENSION)
KEY_ID, VALUE_ID = 11, 12

FULL_ROW: dict[str, Any] = {
    "id": 7,
    "t_tiny": -128,
    "t_int_u": 4294967295,
    "t_small_u": 65535,
    "t_big": -(1 << 63),
    "t_big_u": -1,  # int64(18446744073709551615)
    "t_float": 1.100000023841858,  # float32(1.1)
    "t_double": 2.718281828459045,
    "t_dec": (-1230).to_bytes(2, "big", signed=True),  # -12.30
    "t_varchar": "日本語🎉",
    "t_blob": b"\xff\xfe\x00\x80",
    "t_enum": "b,c",
    "t_set": "a,c",
    "t_bit": (300).to_bytes(2, "big"),
    "t_json": '{"k": "v"}',
    "t_date": "2023-11-30",
    "t_datetime": "2023-11-30 12:34:56.123",
    "t_timestamp": "2024-01-01 08:00:00.250",
    "t_time": "-838:59:59.000000",
    "t_year": 2155,
    "t_vector": "[1,2.5,3]",
    "__": "renamed",
}
FULL_IMAGE = {
    "id": "7",
    "t_tiny": "-128",
    "t_int_u": "4294967295",
    "t_small_u": "65535",
    "t_big": "-9223372036854775808",
    "t_big_u": "18446744073709551615",
    "t_float": "1.1",
    "t_double": "2.718281828459045",
    "t_dec": "-12.30",
    "t_varchar": "日本語🎉",
    "t_blob": "//4AgA==",
    "t_enum": "b,c",
    "t_set": "a,c",
    "t_bit": "300",
    "t_json": '{"k": "v"}',
    "t_date": "2023-11-30",
    "t_datetime": "2023-11-30 12:34:56.123",
    "t_timestamp": "2024-01-01T00:00:00.250Z",  # Asia/Shanghai wall time
    "t_time": "-838:59:59.000000",
    "t_year": "2155",
    "t_vector": "[1,2.5,3]",
    "__": "renamed",
}


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def body(schema: dict[str, Any], datum: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(_strip(schema)), datum)
    return buffer.getvalue()


def framed(schema_id: int, schema: dict[str, Any], datum: dict[str, Any]) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body(schema, datum)


def extension(op: str = "c", commit_ts: int = COMMIT_TS) -> dict[str, Any]:
    return {"_tidb_op": op, "_tidb_commit_ts": commit_ts, "_tidb_commit_physical_time": commit_ts >> 18}


def decoder(schemas: dict[int, dict[str, Any]] | None = None, zone: str = "Asia/Shanghai") -> AvroDecoder:
    texts = {i: json.dumps(s, separators=(",", ":"), ensure_ascii=False) for i, s in (schemas or {}).items()}
    return AvroDecoder(CodecOptions(server_time_zone=zone), DecodeResources(writer_schemas=texts))


def message(key: bytes | None, value: bytes | None, offset: int = 5) -> RawMessage:
    return RawMessage(TOPIC, 1, offset, 1_700_000_000_000, key, value)


DEFAULT_DECODER = decoder({KEY_ID: KEY_SCHEMA, VALUE_ID: VALUE_SCHEMA})


def decode_one(value_datum: dict[str, Any], *, dec: AvroDecoder = DEFAULT_DECODER) -> Any:
    key = framed(KEY_ID, KEY_SCHEMA, {"id": value_datum["id"]})
    events = dec.decode(message(key, framed(VALUE_ID, VALUE_SCHEMA, value_datum)), LOOKUP)
    assert len(events) == 1
    return events[0]


def error_of(dec: AvroDecoder, key: bytes | None, value: bytes | None) -> str:
    with pytest.raises(DecodeError) as err:
        dec.decode(message(key, value), LOOKUP)
    return str(err.value)


# ---------------------------------------------------------------------------------- rows
def test_insert_with_every_value_type() -> None:
    event = decode_one({**FULL_ROW, **extension("c")})
    assert event.kind is EventKind.DML
    assert event.op is Op.INSERT
    assert event.commit_ts == COMMIT_TS
    assert (event.database, event.table) == ("shop", "all_types")
    assert event.position == SourcePosition(TOPIC, 1, 5, 0)
    assert event.before is None
    assert event.after == FULL_IMAGE
    assert event.column_types is not None
    assert event.column_types["t_int_u"] == "INT UNSIGNED"
    assert event.column_types["t_blob"] == "BLOB"
    assert event.facts == EventFacts(handle_key=("id",), key_schema_id=KEY_ID, value_schema_id=VALUE_ID)


def test_update_and_every_nullable_column_null() -> None:
    nulls = {name: None for name in FULL_ROW if name != "id"}
    event = decode_one({"id": 7, **nulls, **extension("u")})
    assert event.op is Op.UPDATE
    assert event.after == {"id": "7", **{name: None for name in nulls}}


@pytest.mark.parametrize("branch_order", ["null-first", "null-last"])
def test_nullable_unions_in_either_branch_order(branch_order: str) -> None:
    spec = column_type("TEXT", "string")
    value_schema = record([*KEY_FIELDS, field("v", spec, nullable=branch_order, default="d"), *EXTENSION])
    dec = decoder({KEY_ID: KEY_SCHEMA, 20: value_schema})
    key = framed(KEY_ID, KEY_SCHEMA, {"id": 1})
    for value, expected in (("text", "text"), (None, None), ("", "")):
        datum = {"id": 1, "v": value, **extension()}
        (event,) = dec.decode(message(key, framed(20, value_schema, datum)), LOOKUP)
        assert event.after == {"id": "1", "v": expected}


@pytest.mark.parametrize(
    ("avro", "value", "expected"),
    [("long", -1, "18446744073709551615"), ("long", 1 << 62, str(1 << 62)), ("string", str(MAX_U64), str(MAX_U64))],
)
def test_max_unsigned_bigint_in_both_handling_modes(avro: str, value: object, expected: str) -> None:
    value_schema = record([*KEY_FIELDS, field("u", column_type("BIGINT UNSIGNED", avro)), *EXTENSION])
    dec = decoder({KEY_ID: KEY_SCHEMA, 21: value_schema})
    datum = {"id": 1, "u": value, **extension()}
    (event,) = dec.decode(message(framed(KEY_ID, KEY_SCHEMA, {"id": 1}), framed(21, value_schema, datum)), LOOKUP)
    assert event.after == {"id": "1", "u": expected}
    assert event.column_types == {"id": "BIGINT", "u": "BIGINT UNSIGNED"}


@pytest.mark.parametrize(
    ("precision", "scale", "unscaled", "expected"),
    [
        (12, 2, -1230, "-12.30"),
        (12, 2, 5, "0.05"),
        (12, 2, -5, "-0.05"),
        (10, 0, 0, "0"),
        (10, 4, 0, "0.0000"),
        (65, 30, 10**65 - 1, "99999999999999999999999999999999999." + "9" * 30),
        (65, 30, -(10**65 - 1), "-99999999999999999999999999999999999." + "9" * 30),
    ],
)
def test_precise_decimals(precision: int, scale: int, unscaled: int, expected: str) -> None:
    value_schema = record([*KEY_FIELDS, field("d", decimal_type(precision, scale)), *EXTENSION])
    dec = decoder({KEY_ID: KEY_SCHEMA, 22: value_schema})
    size = ((unscaled if unscaled >= 0 else ~unscaled).bit_length() + 8) // 8
    datum = {"id": 1, "d": unscaled.to_bytes(size, "big", signed=True), **extension()}
    (event,) = dec.decode(message(framed(KEY_ID, KEY_SCHEMA, {"id": 1}), framed(22, value_schema, datum)), LOOKUP)
    assert event.after == {"id": "1", "d": expected}


def test_decimals_in_string_mode_keep_the_text() -> None:
    value_schema = record(
        [*KEY_FIELDS, field("d", column_type("DECIMAL", "string"), nullable="null-first"), *EXTENSION]
    )
    dec = decoder({KEY_ID: KEY_SCHEMA, 23: value_schema})
    key = framed(KEY_ID, KEY_SCHEMA, {"id": 1})
    for text in ("1.500", "-0.10", "179394.233300"):
        (event,) = dec.decode(message(key, framed(23, value_schema, {"id": 1, "d": text, **extension()})), LOOKUP)
        assert event.after == {"id": "1", "d": text}
    bad = framed(23, value_schema, {"id": 1, "d": "1e5", **extension()})
    assert error_of(dec, key, bad) == (
        "avro: column 'd' (DECIMAL, Avro string) of shop.all_types in the value record (writer schema 23): "
        "'1e5' is not a decimal number"
    )


@pytest.mark.parametrize("fsp", range(7))
def test_fractional_seconds_zero_to_six(fsp: int) -> None:
    fraction = "" if fsp == 0 else "." + "123456"[:fsp]
    datum = {
        **FULL_ROW,
        "t_datetime": f"2023-11-30 12:34:56{fraction}",
        "t_timestamp": f"2024-01-01 08:00:00{fraction}",
        "t_time": f"12:34:56{fraction}",
        **extension(),
    }
    event = decode_one(datum)
    assert event.after["t_datetime"] == f"2023-11-30 12:34:56{fraction}"
    assert event.after["t_timestamp"] == f"2024-01-01T00:00:00{fraction}Z"
    assert event.after["t_time"] == f"12:34:56{fraction}"


def test_zero_dates_are_kept() -> None:
    event = decode_one(
        {**FULL_ROW, "t_date": "0000-00-00", "t_datetime": "0000-00-00 00:00:00", **extension()},
    )
    assert (event.after["t_date"], event.after["t_datetime"]) == ("0000-00-00", "0000-00-00 00:00:00")


def test_float_edges_and_enum_set_empty_values() -> None:
    event = decode_one(
        {**FULL_ROW, "t_float": 3.4028234663852886e38, "t_double": -0.0, "t_enum": "", "t_set": "", **extension()}
    )
    assert event.after["t_float"] == "340282350000000000000000000000000000000"
    assert event.after["t_double"] == "-0"
    assert (event.after["t_enum"], event.after["t_set"]) == ("", "")


def test_bit_values_zero_and_out_of_range() -> None:
    assert decode_one({**FULL_ROW, "t_bit": b"\x00", **extension()}).after["t_bit"] == "0"
    key = framed(KEY_ID, KEY_SCHEMA, {"id": 7})
    value = framed(VALUE_ID, VALUE_SCHEMA, {**FULL_ROW, "t_bit": b"\x10\x00", **extension()})
    assert error_of(DEFAULT_DECODER, key, value) == (
        "avro: column 't_bit' (BIT, Avro bytes) of shop.all_types in the value record (writer schema 12): "
        "4096 (bytes 1000) is outside BIT(12) range 0..4095"
    )


def test_row_without_tidb_extension_is_offset_ordered() -> None:
    value_schema = record([*KEY_FIELDS, field("v", column_type("TEXT", "string"))])
    dec = decoder({KEY_ID: KEY_SCHEMA, 24: value_schema})
    value = framed(24, value_schema, {"id": 3, "v": "x"})
    (event,) = dec.decode(message(framed(KEY_ID, KEY_SCHEMA, {"id": 3}), value), LOOKUP)
    assert (event.op, event.commit_ts) == (Op.INSERT, 0)
    assert event.after == {"id": "3", "v": "x"}
    assert event.facts == EventFacts(
        handle_key=("id",), key_schema_id=KEY_ID, value_schema_id=24, offset_ordered=True, upsert=True
    )


def test_row_checksum_fields() -> None:
    value_schema = record([*KEY_FIELDS, *EXTENSION, *CHECKSUM])
    dec = decoder({KEY_ID: KEY_SCHEMA, 25: value_schema})
    key = framed(KEY_ID, KEY_SCHEMA, {"id": 1})
    checksum = {"_tidb_row_level_checksum": "3412341", "_tidb_corrupted": False, "_tidb_checksum_version": 1}
    (event,) = dec.decode(message(key, framed(25, value_schema, {"id": 1, **extension(), **checksum})), LOOKUP)
    assert event.after == {"id": "1"}
    assert (event.facts.row_checksum, event.facts.checksum_version) == ("3412341", 1)
    corrupted = framed(25, value_schema, {"id": 1, **extension(), **checksum, "_tidb_corrupted": True})
    assert error_of(dec, key, corrupted) == (
        f"avro: TiCDC marked the row of shop.all_types at commit ts {COMMIT_TS} as corrupted "
        "(field '_tidb_corrupted' true, checksum '3412341')"
    )


def test_tombstone_is_a_key_only_delete() -> None:
    key_schema = record([field("a", column_type("INT", "int")), field("b", column_type("TEXT", "string"))])
    dec = decoder({30: key_schema})
    key = framed(30, key_schema, {"a": -5, "b": "ü"})
    for value in (None, b""):
        (event,) = dec.decode(message(key, value), LOOKUP)
        assert event.op is Op.DELETE
        assert event.commit_ts == 0
        assert (event.database, event.table) == ("shop", "all_types")
        assert event.before == {"a": "-5", "b": "ü"}
        assert event.after is None
        assert event.column_types == {"a": "INT", "b": "TEXT"}
        assert event.facts == EventFacts(handle_key=("a", "b"), key_schema_id=30, offset_ordered=True)


def test_ddl_event() -> None:
    payload = {
        "query": "CREATE TABLE `shop`.`t` (`id` INT PRIMARY KEY)",
        "type": 3,
        "schema": "shop",
        "table": "t",
        "commitTs": MAX_U64,
    }
    (event,) = DEFAULT_DECODER.decode(message(None, b"\x01" + json.dumps(payload).encode()), LOOKUP)
    assert event.kind is EventKind.DDL
    assert (event.commit_ts, event.database, event.table) == (MAX_U64, "shop", "t")
    assert (event.ddl_type, event.ddl_query) == ("CREATE", payload["query"])
    assert event.facts == EventFacts(ddl_action=3)
    schema_level = {**payload, "query": "CREATE DATABASE `x`", "type": 1, "schema": "x", "table": ""}
    (event,) = DEFAULT_DECODER.decode(message(None, b"\x01" + json.dumps(schema_level).encode()), LOOKUP)
    assert (event.ddl_type, event.database, event.table) == ("QUERY", "x", None)


def test_watermark_event() -> None:
    (event,) = DEFAULT_DECODER.decode(message(None, b"\x02" + COMMIT_TS.to_bytes(8, "big")), LOOKUP)
    assert (event.kind, event.commit_ts, event.op) == (EventKind.WATERMARK, COMMIT_TS, None)


# ------------------------------------------------------------------------------ malformed
KEY = framed(KEY_ID, KEY_SCHEMA, {"id": 7})
VALUE = framed(VALUE_ID, VALUE_SCHEMA, {**FULL_ROW, **extension()})


def test_unknown_schema_id() -> None:
    value = b"\x00\x00\x00\x01\x00" + VALUE[5:]
    assert error_of(DEFAULT_DECODER, KEY, value) == (
        "avro: writer schema id 256 of the value (registry subject 'shop_all-value') is not among the landed "
        "writer schemas; the land task fetches writer schemas; re-run land or check the registry"
    )
    assert error_of(decoder(), KEY, None) == (
        "avro: writer schema id 11 of the key (registry subject 'shop_all-key') is not among the landed "
        "writer schemas; the land task fetches writer schemas; re-run land or check the registry"
    )


def test_wrong_magic_byte() -> None:
    assert error_of(DEFAULT_DECODER, KEY, b"\x05" + VALUE[1:]) == (
        "avro: the value starts with byte 0x05, expected 0x00 (Confluent wire format: magic byte, 4-byte "
        "big-endian schema id, Avro body), 0x01 (DDL event) or 0x02 (watermark event); it looks like snappy data "
        "or another binary format. TiCDC never compresses avro messages: check that the pipeline's protocol "
        "matches the changefeed"
    )
    assert error_of(DEFAULT_DECODER, b"\x04\x22\x4d\x18" + KEY[4:], VALUE) == (
        "avro: the key starts with byte 0x04, expected 0x00 (Confluent wire format: magic byte, 4-byte "
        "big-endian schema id, Avro body); it looks like an LZ4 frame. TiCDC never compresses avro messages: "
        "check that the pipeline's protocol matches the changefeed"
    )
    assert error_of(DEFAULT_DECODER, KEY, b'{"id": 1}') == (
        "avro: the value starts with byte 0x7b, expected 0x00 (Confluent wire format: magic byte, 4-byte "
        "big-endian schema id, Avro body), 0x01 (DDL event) or 0x02 (watermark event); it looks like "
        "uncompressed JSON. TiCDC never compresses avro messages: check that the pipeline's protocol matches "
        "the changefeed"
    )
    assert error_of(DEFAULT_DECODER, KEY, b"\x03\x00" + bytes(16) + VALUE[5:]) == (
        "avro: the value starts with byte 0x03, the AWS Glue schema registry header; only the Confluent "
        "schema registry is supported"
    )


def test_compression_option_is_not_applied() -> None:
    dec = AvroDecoder(
        CodecOptions(compression=Compression.SNAPPY),
        DecodeResources({KEY_ID: json.dumps(KEY_SCHEMA), VALUE_ID: json.dumps(VALUE_SCHEMA)}),
    )
    (event,) = dec.decode(message(KEY, VALUE), LOOKUP)
    assert event.after is not None
    assert event.after["id"] == "7"


def test_truncated_header_and_body() -> None:
    assert error_of(DEFAULT_DECODER, KEY, VALUE[:3]) == (
        "avro: the value has 3 bytes, fewer than the 5-byte Confluent header (magic byte 0x00 and a 4-byte "
        "big-endian schema id)"
    )
    cut = len(VALUE) - 4
    assert error_of(DEFAULT_DECODER, KEY, VALUE[:cut]) == (
        f"avro: the value body (writer schema 12, record default.shop.all_types) is not valid Avro: the "
        f"{cut - 5}-byte body ends inside the record (truncated)"
    )
    assert error_of(DEFAULT_DECODER, KEY, VALUE + b"\x00\x00") == (
        "avro: the value body (writer schema 12, record default.shop.all_types) has 2 bytes after the end of the record"
    )


def test_other_malformed_messages() -> None:
    assert error_of(DEFAULT_DECODER, None, None) == (
        "avro: the message has neither key nor value; TiCDC's avro protocol never sends one"
    )
    assert error_of(DEFAULT_DECODER, None, VALUE) == (
        "avro: a row value without a key: TiCDC's avro protocol always sends the handle key (force-replicate "
        "is not allowed with avro)"
    )
    assert error_of(DEFAULT_DECODER, None, b"\x02\x00\x01") == (
        "avro: a watermark value is byte 0x02 and an 8-byte big-endian commit ts (9 bytes), got 3 bytes"
    )
    assert error_of(DEFAULT_DECODER, None, b"\x01{nope").startswith(
        "avro: the DDL value (byte 0x01) is not followed by JSON ("
    )
    assert error_of(DEFAULT_DECODER, None, b'\x01{"query": "x"}') == (
        "avro: the DDL event lacks field(s) 'type', 'schema', 'table', 'commitTs'"
    )
    assert error_of(DEFAULT_DECODER, KEY, framed(VALUE_ID, VALUE_SCHEMA, {**FULL_ROW, **extension("d")})) == (
        'avro: field \'_tidb_op\' of shop.all_types (writer schema 12) is string "d"; TiCDC writes "c" '
        '(insert) or "u" (update), and sends deletes as tombstones'
    )
    skewed = {**FULL_ROW, **extension(), "_tidb_commit_physical_time": 1}
    assert error_of(DEFAULT_DECODER, KEY, framed(VALUE_ID, VALUE_SCHEMA, skewed)) == (
        f"avro: field '_tidb_commit_physical_time' of shop.all_types (writer schema 12) is 1, but "
        f"'_tidb_commit_ts' {COMMIT_TS} has physical time {COMMIT_TS >> 18} ms"
    )
    other_key = framed(KEY_ID, KEY_SCHEMA, {"id": 8})
    assert error_of(DEFAULT_DECODER, other_key, VALUE) == (
        "avro: key column 'id' of shop.all_types is '8' in the key record but '7' in the value record"
    )


def test_key_and_value_of_different_tables() -> None:
    other = record(KEY_FIELDS, table="other")
    dec = decoder({KEY_ID: KEY_SCHEMA, VALUE_ID: VALUE_SCHEMA, 40: other})
    assert error_of(dec, framed(40, other, {"id": 7}), VALUE) == (
        "avro: the key record is default.shop.other (writer schema 40) but the value record is "
        "default.shop.all_types (writer schema 12); both must name the same table"
    )


def test_writer_schemas_that_are_not_ticdc_records() -> None:
    plain = record([{"name": "id", "type": "long"}])
    dec = decoder({50: plain, 51: record(KEY_FIELDS, namespace="default"), 52: {"type": "string"}})
    assert error_of(dec, framed(50, plain, {"id": 1}), None) == (
        "avro: writer schema 50 (of the key) is not a TiCDC avro record schema: field 'id': type 'long' carries "
        'no "connect.parameters" with a tidb_type, so it is not a TiCDC column'
    )
    assert error_of(dec, b"\x00\x00\x00\x003\x02", None) == (
        "avro: writer schema 51 (of the key) is not a TiCDC avro record schema: record namespace 'default' "
        "does not name a database (TiCDC writes <changefeed namespace>.<database>)"
    )
    assert error_of(dec, b"\x00\x00\x00\x004\x02", None) == (
        "avro: writer schema 52 (of the key) is not a TiCDC avro record schema: the top level is not an Avro record"
    )
    wrong = record([field("id", column_type("INT", "string"))])
    assert error_of(decoder({53: wrong}), b"\x00\x00\x00\x005\x00", None) == (
        "avro: writer schema 53 (of the key) is not a TiCDC avro record schema: field 'id': tidb_type INT is "
        "never written as Avro string (TiCDC writes int)"
    )


def test_invalid_utf8_in_a_string_is_a_decode_error() -> None:
    key_schema = record([field("s", column_type("TEXT", "string"))])
    dec = decoder({60: key_schema})
    key = b"\x00\x00\x00\x00\x3c" + b"\x04\xff\xfe"
    assert error_of(dec, key, None) == (
        "avro: the key body (writer schema 60, record default.shop.all_types) is not valid Avro: a string before "
        "byte 3 of 3 is not valid UTF-8 (invalid start byte)"
    )


# ------------------------------------------------------------------------------ decoder API
def test_registry_pickling_and_schema_flag() -> None:
    dec = decoder_for("avro", CodecOptions(), DecodeResources({KEY_ID: json.dumps(KEY_SCHEMA)}))
    assert isinstance(dec, AvroDecoder)
    assert dec.may_carry_schema(message(KEY, VALUE)) is False
    assert dec.may_carry_schema(message(None, b"\x01{}")) is True  # a DDL event (TiDB extension)
    assert dec.may_carry_schema(message(KEY, None)) is False
    restored = pickle.loads(pickle.dumps(DEFAULT_DECODER))
    assert restored.decode(message(KEY, VALUE), LOOKUP) == DEFAULT_DECODER.decode(message(KEY, VALUE), LOOKUP)
