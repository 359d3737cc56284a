"""SimpleAvroDecoder against hand-built Avro messages (docs/protocols.md, "Simple (Avro)"; schema message.json).

Messages are written here with fastavro straight from the schema (and the first bytes by hand),
never with the project's simulator encoder, so that the two cannot share a mistake.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
from pathlib import Path
from typing import Any

import cramjam
import fastavro
import pytest

from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, RawMessage, SourcePosition
from ticdc_lake.protocols.common import go_float_text
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.simple_avro import SimpleAvroDecoder
from ticdc_lake.schema.lookup import MemorySchemaLookup

NS = "com.pingcap.simple.avro."
VERSION = 447984074911121426
COMMIT_TS = 447984084414103554
MAX_U64 = (1 << 64) - 1
SCHEMA_FILE = Path(__file__).parents[3] / "include" / "ticdc_lake" / "resources" / "simple_message.avsc.json"
SCHEMA = fastavro.parse_schema(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def data_type(mysql_type: str, length: int, **extra: Any) -> dict[str, Any]:
    textual = mysql_type in {"char", "varchar", "text", "enum", "set", "json"}
    charset = "utf8mb4" if textual else "binary"
    return {
        "mysqlType": mysql_type,
        "charset": charset,
        "collate": charset,
        "length": length,
        "decimal": extra.get("decimal"),
        "elements": extra.get("elements"),
        "unsigned": extra.get("unsigned"),
        "zerofill": extra.get("zerofill"),
    }


def col(name: str, mysql_type: str, length: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "dataType": data_type(mysql_type, length, **extra), "nullable": name != "id", "default": None}


def numeric(name: str, mysql_type: str, length: int, unsigned: bool = False) -> dict[str, Any]:
    return col(name, mysql_type, length, unsigned=unsigned, zerofill=False)


TABLE_SCHEMA: dict[str, Any] = {
    "database": "shop",
    "table": "all_types",
    "tableID": 112,
    "version": VERSION,
    "columns": [
        numeric("id", "bigint", 20),
        numeric("t_tiny", "tinyint", 4),
        numeric("t_tiny_u", "tinyint", 3, unsigned=True),
        numeric("t_int_u", "int", 10, unsigned=True),
        numeric("t_big", "bigint", 20),
        numeric("t_big_u", "bigint", 20, unsigned=True),
        numeric("t_year", "year", 4, unsigned=True),
        numeric("t_bit", "bit", 10, unsigned=True),
        numeric("t_bit64", "bit", 64, unsigned=True),
        numeric("t_float", "float", 12),
        numeric("t_double", "double", 22),
        col("t_dec", "decimal", 12, decimal=6, unsigned=False, zerofill=False),
        col("t_char", "char", 10),
        col("t_varchar", "varchar", 255),
        col("t_text", "text", 65535),
        col("t_json", "json", 4294967295),
        col("t_binary", "binary", 4),
        col("t_varbinary", "varbinary", 64),
        col("t_blob", "blob", 65535),
        col("t_date", "date", 10),
        col("t_dt0", "datetime", 19),
        col("t_dt6", "datetime", 26),
        col("t_time", "time", 17),
        col("t_ts", "timestamp", 23),
        col("t_enum", "enum", 6, elements=["small", "medium", "large"]),
        col("t_set", "set", 7, elements=["a", "b", "c", "d"]),
    ],
    "indexes": [{"name": "primary", "unique": True, "primary": True, "nullable": False, "columns": ["id"]}],
}


def ubig(value: int) -> tuple[str, dict[str, int]]:
    return (NS + "UnsignedBigint", {"value": value - (1 << 64) if value >= 1 << 63 else value})


ALL_VALUES: dict[str, Any] = {
    "id": ("long", 1),
    "t_tiny": ("long", -128),
    "t_tiny_u": ("long", 255),
    "t_int_u": ("long", 4294967295),
    "t_big": ("long", -9223372036854775808),
    "t_big_u": ubig(MAX_U64),
    "t_year": ("long", 2023),
    "t_bit": ("long", 1023),
    "t_bit64": ("long", -1),
    "t_float": ("float", 3.14),
    "t_double": ("double", 2.718281828459045),
    "t_dec": ("string", "179394.233300"),
    "t_char": ("string", "abc"),
    "t_varchar": ("string", "日本語 🍣 Grüße"),
    "t_text": ("string", "line one\nline two"),
    "t_json": ("string", '{"k": "v", "n": [1, 2]}'),
    "t_binary": ("bytes", b"\xff\xfe\x00\x80"),
    "t_varbinary": ("bytes", b"\x00\x01\x02\x03\x04"),
    "t_blob": ("bytes", b""),
    "t_date": ("string", "2023-11-30"),
    "t_dt0": ("string", "2023-11-30 12:34:56"),
    "t_dt6": ("string", "2023-11-30 12:34:56.123456"),
    "t_time": ("string", "-12:34:56.123456"),
    "t_ts": (NS + "Timestamp", {"location": "Asia/Shanghai", "value": "2024-01-01 08:00:00.250"}),
    "t_enum": ("long", 2),
    "t_set": ("long", 5),
}

ALL_CANONICAL: dict[str, str | None] = {
    "id": "1",
    "t_tiny": "-128",
    "t_tiny_u": "255",
    "t_int_u": "4294967295",
    "t_big": "-9223372036854775808",
    "t_big_u": "18446744073709551615",
    "t_year": "2023",
    "t_bit": "1023",
    "t_bit64": "18446744073709551615",
    "t_float": "3.14",
    "t_double": "2.718281828459045",
    "t_dec": "179394.233300",
    "t_char": "abc",
    "t_varchar": "日本語 🍣 Grüße",
    "t_text": "line one\nline two",
    "t_json": '{"k": "v", "n": [1, 2]}',
    "t_binary": "//4AgA==",
    "t_varbinary": "AAECAwQ=",
    "t_blob": "",
    "t_date": "2023-11-30",
    "t_dt0": "2023-11-30 12:34:56",
    "t_dt6": "2023-11-30 12:34:56.123456",
    "t_time": "-12:34:56.123456",
    "t_ts": "2024-01-01T00:00:00.250Z",
    "t_enum": "medium",
    "t_set": "a,c",
}


def avro(kind: str, record: str, payload: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, SCHEMA, (NS + "Message", {"type": kind, "payload": (NS + record, payload)}))
    return buffer.getvalue()


def dml(kind: str, data: dict[str, Any] | None = None, old: dict[str, Any] | None = None, **fields: Any) -> bytes:
    payload: dict[str, Any] = {
        "version": 1,
        "database": "shop",
        "table": "all_types",
        "tableID": 112,
        "type": kind,
        "commitTs": COMMIT_TS,
        "buildTs": 1708923662983,
        "schemaVersion": VERSION,
        "claimCheckLocation": None,
        "handleKeyOnly": None,
        "checksum": None,
        "data": data,
        "old": old,
    }
    payload.update(fields)
    return avro("DML", "DML", payload)


def bootstrap(schema: dict[str, Any] = TABLE_SCHEMA) -> bytes:
    return avro("BOOTSTRAP", "Bootstrap", {"version": 1, "buildTs": 1708924603278, "tableSchema": schema})


def ddl(kind: str, sql: str, after: dict[str, Any] | None, before: dict[str, Any] | None = None) -> bytes:
    payload = {
        "version": 1,
        "type": kind,
        "sql": sql,
        "commitTs": COMMIT_TS,
        "buildTs": 1708936343598,
        "tableSchema": after,
        "preTableSchema": before,
    }
    return avro("DDL", "DDL", payload)


def raw(value: bytes | None, offset: int = 7) -> RawMessage:
    return RawMessage(topic="cdc", partition=2, offset=offset, timestamp_ms=1708923662983, key=None, value=value)


@pytest.fixture
def decoder() -> SimpleAvroDecoder:
    return SimpleAvroDecoder(CodecOptions())


@pytest.fixture
def schemas(decoder: SimpleAvroDecoder) -> MemorySchemaLookup:
    (event,) = decoder.decode(raw(bootstrap()), MemorySchemaLookup())
    assert event.table_schema is not None
    return MemorySchemaLookup([event.table_schema])


def decode_one(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup, value: bytes) -> ChangeEvent:
    events = decoder.decode(raw(value), schemas)
    assert len(events) == 1
    return events[0]


def decode_error(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup, value: bytes | None) -> str:
    with pytest.raises(DecodeError) as caught:
        decoder.decode(raw(value), schemas)
    assert caught.value.protocol == "simple-avro"
    return str(caught.value)


def zigzag(value: int) -> bytes:
    number = (value << 1) ^ (value >> 63)
    out = bytearray()
    while number > 0x7F:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


# --- event kinds ---------------------------------------------------------------------------


def test_registry_builds_this_decoder() -> None:
    assert isinstance(decoder_for("simple-avro", CodecOptions()), SimpleAvroDecoder)


def test_watermark_from_hand_written_bytes(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    # Message union 11, type WATERMARK (0), payload union 0, version 1, commitTs, buildTs.
    value = b"\x16\x00\x00\x02" + zigzag(447984124732375041) + zigzag(1708923816911)
    assert value == avro(
        "WATERMARK", "Watermark", {"version": 1, "commitTs": 447984124732375041, "buildTs": 1708923816911}
    )
    assert decode_one(decoder, schemas, value) == ChangeEvent(
        kind=EventKind.WATERMARK, position=SourcePosition("cdc", 2, 7, 0), commit_ts=447984124732375041
    )


def test_commit_ts_above_2_63_is_read_back_as_unsigned(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    value = avro("WATERMARK", "Watermark", {"version": 1, "commitTs": -2, "buildTs": 0})
    assert decode_one(decoder, schemas, value).commit_ts == MAX_U64 - 1


def test_bootstrap(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    event = decode_one(decoder, schemas, bootstrap())
    assert event.kind is EventKind.BOOTSTRAP
    assert (event.commit_ts, event.database, event.table, event.table_id) == (0, "shop", "all_types", 112)
    assert event.schema_version == VERSION
    schema = event.table_schema
    assert schema is not None
    assert (schema.source, schema.database, schema.version) == ("simple-bootstrap", "shop", VERSION)
    assert [c.name for c in schema.columns] == [c["name"] for c in TABLE_SCHEMA["columns"]]
    by_name = {c.name: c for c in schema.columns}
    assert (by_name["t_dec"].length, by_name["t_dec"].scale) == (12, 6)
    assert by_name["t_big_u"].unsigned
    assert not by_name["t_big"].unsigned
    assert by_name["t_enum"].elements == ("small", "medium", "large")
    # The fsp is not sent: recovered from the display length (19 / 20 + fsp, TIME 10 / 11 + fsp).
    assert [by_name[n].fsp for n in ("t_dt0", "t_dt6", "t_time", "t_ts")] == [0, 6, 6, 3]
    assert schema.indexes[0].columns == ("id",)


def test_fsp_is_unknown_when_the_length_does_not_follow_tidb(decoder: SimpleAvroDecoder) -> None:
    odd = {
        **TABLE_SCHEMA,
        "columns": [numeric("id", "bigint", 20), col("t_dt", "datetime", 0), col("t_tm", "time", 99)],
    }
    event = decode_one(decoder, MemorySchemaLookup(), bootstrap(odd))
    assert event.table_schema is not None
    assert [c.fsp for c in event.table_schema.columns] == [None, None, None]


def test_ddl_with_pre_and_post_schema(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    after = {**TABLE_SCHEMA, "version": VERSION + 5}
    event = decode_one(decoder, schemas, ddl("ALTER", "ALTER TABLE t ADD COLUMN x INT", after, TABLE_SCHEMA))
    assert event.kind is EventKind.DDL
    assert (event.ddl_type, event.ddl_query, event.commit_ts) == ("ALTER", "ALTER TABLE t ADD COLUMN x INT", COMMIT_TS)
    assert (event.database, event.table, event.table_id, event.schema_version) == (
        "shop",
        "all_types",
        112,
        VERSION + 5,
    )
    assert event.table_schema is not None
    assert event.table_schema.source == "simple-ddl"
    assert event.pre_table_schema is not None
    assert event.pre_table_schema.version == VERSION


def test_schema_level_ddl_has_no_table(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    event = decode_one(decoder, schemas, ddl("QUERY", "CREATE DATABASE `shop`", None))
    assert (event.ddl_type, event.ddl_query, event.database, event.table) == (
        "QUERY",
        "CREATE DATABASE `shop`",
        "shop",  # from the statement: Simple sends no name for schema-level DDL
        None,
    )
    assert event.table_schema is None
    assert event.pre_table_schema is None
    assert decode_one(decoder, schemas, ddl("QUERY", "", None)).ddl_query is None


def test_insert_every_type(decoder: SimpleAvroDecoder) -> None:
    schemas = MemorySchemaLookup()
    (boot,) = SimpleAvroDecoder(CodecOptions()).decode(raw(bootstrap()), schemas)
    assert boot.table_schema is not None
    schemas.add(boot.table_schema)
    event = decode_one(decoder, schemas, dml("INSERT", data=ALL_VALUES))
    assert (event.kind, event.op, event.status) == (EventKind.DML, Op.INSERT, EventStatus.READY)
    assert (event.database, event.table, event.table_id, event.schema_version) == ("shop", "all_types", 112, VERSION)
    assert event.commit_ts == COMMIT_TS
    assert event.after == ALL_CANONICAL
    assert event.before is None


def test_update_and_delete_with_nulls(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    nulls = {name: None for name in ALL_VALUES if name != "id"}
    update = decode_one(decoder, schemas, dml("UPDATE", data={"id": ("long", 1), **nulls}, old=ALL_VALUES))
    assert update.op is Op.UPDATE
    assert update.after == {"id": "1", **nulls}
    assert update.before == ALL_CANONICAL
    delete = decode_one(decoder, schemas, dml("DELETE", old={"id": ("long", 1), "t_set": ("long", 0)}))
    assert (delete.op, delete.after, delete.before) == (Op.DELETE, None, {"id": "1", "t_set": ""})


@pytest.mark.parametrize(
    ("name", "value", "canonical"),
    [
        ("t_big_u", ubig(1 << 63), "9223372036854775808"),
        ("t_big_u", ubig(0), "0"),
        ("t_big_u", ("string", "18446744073709551615"), "18446744073709551615"),
        ("t_float", ("float", 1e30), "1000000000000000000000000000000"),
        ("t_float", ("float", -0.0), "-0"),
        ("t_float", ("float", 16777216.0), "16777216"),
        ("t_double", ("double", 1e-7), "0.0000001"),
        ("t_double", ("double", 0.1), "0.1"),
        ("t_enum", ("long", 0), ""),
        ("t_set", ("long", 15), "a,b,c,d"),
        ("t_bit64", ("long", -(1 << 63)), "9223372036854775808"),
        (
            "t_ts",
            (NS + "Timestamp", {"location": "America/New_York", "value": "2024-11-03 01:30:00"}),
            "2024-11-03T05:30:00Z",
        ),
        ("t_ts", (NS + "Timestamp", {"location": "UTC", "value": "0000-00-00 00:00:00"}), "0000-00-00 00:00:00"),
        ("t_dt0", ("string", "0000-00-00 00:00:00"), "0000-00-00 00:00:00"),
        ("t_varchar", ("string", ""), ""),
    ],
)
def test_value_edges(
    decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup, name: str, value: Any, canonical: str
) -> None:
    event = decode_one(decoder, schemas, dml("INSERT", data={"id": ("long", 1), name: value}))
    assert event.after == {"id": "1", name: canonical}


def test_float_text_matches_go_format_float() -> None:
    # strconv.FormatFloat(v, 'f', -1, 32|64): shortest round-trip digits, fixed notation.
    assert go_float_text(1105524.75, 32) == "1105524.8"  # a tie between 7 and 8: Go rounds to even
    assert go_float_text(3.4028234663852886e38, 32) == "340282350000000000000000000000000000000"
    assert go_float_text(1.401298464324817e-45, 32) == "0.000000000000000000000000000000000000000000001"
    assert go_float_text(0.30000001192092896, 32) == "0.3"
    assert go_float_text(0.30000001192092896, 64) == "0.30000001192092896"
    with pytest.raises(ValueError, match="not a finite number"):
        go_float_text(float("nan"), 64)


def test_timestamp_local_location_uses_the_server_zone() -> None:
    decoder = SimpleAvroDecoder(CodecOptions(server_time_zone="Asia/Tokyo"))
    schemas = MemorySchemaLookup()
    (boot,) = decoder.decode(raw(bootstrap()), schemas)
    assert boot.table_schema is not None
    schemas.add(boot.table_schema)
    value = (NS + "Timestamp", {"location": "Local", "value": "2024-01-01 09:00:00"})
    event = decode_one(decoder, schemas, dml("INSERT", data={"id": ("long", 1), "t_ts": value}))
    assert event.after == {"id": "1", "t_ts": "2024-01-01T00:00:00Z"}


# --- PENDING -------------------------------------------------------------------------------


def test_unknown_schema_version_is_pending(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    value = dml("INSERT", data=ALL_VALUES, schemaVersion=VERSION + 1)
    event = decode_one(decoder, schemas, value)
    assert (event.status, event.schema_version, event.after, event.before) == (
        EventStatus.PENDING,
        VERSION + 1,
        None,
        None,
    )
    assert event.pending_payload == base64.b64encode(value).decode("ascii")
    schemas.add(decode_one(decoder, schemas, bootstrap({**TABLE_SCHEMA, "version": VERSION + 1})).table_schema)  # type: ignore[arg-type]
    assert decode_one(decoder, schemas, value).after == ALL_CANONICAL


def test_decoder_pickles_without_its_cache(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    decode_one(decoder, schemas, dml("INSERT", data=ALL_VALUES))
    copy = pickle.loads(pickle.dumps(decoder))
    assert copy.options == decoder.options
    assert decode_one(copy, schemas, dml("INSERT", data=ALL_VALUES)).after == ALL_CANONICAL


# --- may_carry_schema ----------------------------------------------------------------------


def test_may_carry_schema_reads_the_type_byte(decoder: SimpleAvroDecoder) -> None:
    assert decoder.may_carry_schema(raw(bootstrap()))
    assert decoder.may_carry_schema(raw(ddl("QUERY", "CREATE DATABASE d", None)))
    assert not decoder.may_carry_schema(raw(dml("INSERT", data=ALL_VALUES)))
    assert not decoder.may_carry_schema(raw(b"\x16\x00\x00\x02\x02\x02"))
    assert not decoder.may_carry_schema(raw(None))
    assert not decoder.may_carry_schema(raw(b"\x16"))
    assert not decoder.may_carry_schema(raw(b'{"type":"BOOTSTRAP"}'))
    assert SimpleAvroDecoder(CodecOptions(compression=Compression.LZ4)).may_carry_schema(raw(b"\x00"))


# --- malformed input -----------------------------------------------------------------------


def test_tombstone(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    assert decode_error(decoder, schemas, None) == (
        "simple-avro: the message has no value (a Kafka tombstone); Simple never sends one"
    )


@pytest.mark.parametrize(
    ("value", "got"),
    [
        (b"", "an empty value"),
        (b"\x00\x00\x00\x00\x01", "byte 0x00"),
        (b'{"version":1}', "byte 0x7b"),
        (b"\x14\x00", "byte 0x14"),
    ],
)
def test_wrong_union_index(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup, value: bytes, got: str) -> None:
    assert decode_error(decoder, schemas, value) == (
        "simple-avro: the value must start with union index 11 (byte 0x16, record "
        f"com.pingcap.simple.avro.Message), got {got}; Simple Avro values have no Confluent header "
        "(check that the pipeline's protocol and codec.compression match the changefeed)"
    )


def test_truncated_value(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    full = dml("INSERT", data=ALL_VALUES)
    for size in (2, 3, 40, len(full) // 2, len(full) - 1):
        assert decode_error(decoder, schemas, full[:size]) == (
            f"simple-avro: value is not a valid com.pingcap.simple.avro.Message: the {size}-byte value "
            "ends inside the record (truncated)"
        )


def test_trailing_bytes(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    value = avro("WATERMARK", "Watermark", {"version": 1, "commitTs": 5, "buildTs": 6}) + b"\x00\x00"
    assert decode_error(decoder, schemas, value) == (
        "simple-avro: value has 2 bytes after the end of the com.pingcap.simple.avro.Message record"
    )


def test_bad_enum_index(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    # MessageType has 4 symbols; index 5 (byte 0x0a) does not exist.
    assert decode_error(decoder, schemas, b"\x16\x0a\x00") == (
        "simple-avro: value is not a valid com.pingcap.simple.avro.Message: corrupt Avro data before "
        "byte 2 of 3 (IndexError: list index out of range)"
    )


def test_payload_that_does_not_match_the_type(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    value = b"\x16\x06\x00\x02" + zigzag(5) + zigzag(6)  # type DML, payload Watermark
    assert decode_error(decoder, schemas, value) == (
        "simple-avro: field 'type' says DML but field 'payload' holds a com.pingcap.simple.avro.Watermark record"
    )


def test_unsupported_version(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    value = avro("WATERMARK", "Watermark", {"version": 2, "commitTs": 5, "buildTs": 6})
    assert decode_error(decoder, schemas, value) == (
        "simple-avro: unsupported protocol version 2 in field 'payload.version' of the WATERMARK message; "
        "this decoder reads Simple protocol version 1"
    )


@pytest.mark.parametrize("compression", [Compression.SNAPPY, Compression.LZ4])
def test_compressed_values_decode_like_plain_ones(schemas: MemorySchemaLookup, compression: Compression) -> None:
    plain = bootstrap()
    packed = bytes(
        cramjam.snappy.compress_raw(plain) if compression is Compression.SNAPPY else cramjam.lz4.compress(plain)
    )
    decoder = SimpleAvroDecoder(CodecOptions(compression=compression))
    assert decoder.decode(raw(packed), schemas) == SimpleAvroDecoder(CodecOptions()).decode(raw(plain), schemas)
    assert decoder.may_carry_schema(raw(packed))
    error = decode_error(decoder, schemas, plain)
    assert error.startswith(f"simple-avro: the value could not be decompressed as {compression.value} (")
    assert error.endswith(
        "); it looks like an uncompressed Simple Avro message. Set the pipeline's codec.compression to none "
        f"(now {compression.value}): it must match the changefeed's large-message-handle-compression"
    )


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("t_int_u", ("string", "5"), 'expected Avro long, got string "5"'),
        ("t_big_u", ("long", 5), "expected Avro record com.pingcap.simple.avro.UnsignedBigint, got long 5"),
        ("t_float", ("long", 3), "expected Avro float, got long 3"),
        ("t_binary", ("string", "//4AgA=="), 'expected Avro bytes, got string "//4AgA=="'),
        ("t_varchar", ("bytes", b"\xff"), "expected Avro string, got bytes of length 1"),
        (
            "t_ts",
            ("string", "2024-01-01 00:00:00"),
            'expected Avro record com.pingcap.simple.avro.Timestamp, got string "2024-01-01 00:00:00"',
        ),
        (
            "t_dec",
            (NS + "Timestamp", {"location": "UTC", "value": "1"}),
            "expected Avro string, got a com.pingcap.simple.avro.Timestamp record",
        ),
        ("t_tiny_u", ("long", 256), "256 is outside the range 0..255"),
        ("t_enum", ("long", 4), "ENUM index 4 is beyond the 3 members ('small', 'medium', 'large')"),
        ("t_set", ("long", 16), "SET bitmask 16 has bits beyond the 4 members ('a', 'b', 'c', 'd')"),
        ("t_float", ("float", float("inf")), "inf is not a finite number (TiCDC sends 0 for NaN and infinities)"),
        ("t_date", ("string", "2023-13-01"), "'2023-13-01' is not a DATE value YYYY-MM-DD"),
    ],
)
def test_value_of_the_wrong_branch_or_out_of_range(
    decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup, name: str, value: Any, problem: str
) -> None:
    message = decode_error(decoder, schemas, dml("INSERT", data={"id": ("long", 1), name: value}))
    assert message.startswith(f"simple-avro: column {name!r} (")
    assert message.endswith(f") of table shop.all_types (schema version {VERSION}) in 'data': {problem}")


def test_unknown_column(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    assert decode_error(decoder, schemas, dml("INSERT", data={"id": ("long", 1), "nope": ("long", 1)})) == (
        "simple-avro: column 'nope' in 'data' is not in the schema of table shop.all_types "
        f"(schema version {VERSION}); "
        "the row and the table schema announced for its schemaVersion disagree (check this table's DDL and "
        "BOOTSTRAP messages)"
    )


def test_row_images_must_match_the_operation(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    context = "the {} message for table shop.all_types"
    assert decode_error(decoder, schemas, dml("INSERT")) == (
        f"simple-avro: {context.format('INSERT')} has no field 'data' (it is null)"
    )
    assert decode_error(decoder, schemas, dml("DELETE", data={"id": ("long", 1)}, old={"id": ("long", 1)})) == (
        f"simple-avro: {context.format('DELETE')} carries field 'data', which this message type never has"
    )
    assert decode_error(decoder, schemas, dml("UPDATE", data={"id": ("long", 1)})) == (
        f"simple-avro: {context.format('UPDATE')} has no field 'old' (it is null)"
    )


def test_claim_check_and_handle_key_only_are_refused(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    claim = dml("INSERT", data={"id": ("long", 1)}, claimCheckLocation="s3://bucket/x", handleKeyOnly=True)
    assert decode_error(decoder, schemas, claim) == (
        f"simple-avro: the INSERT message for table shop.all_types at commit ts {COMMIT_TS} is a claim-check "
        "reference (claimCheckLocation 's3://bucket/x'), "
        "but codec.claim_check_storage_uri is not set: set it to where the changefeed's "
        "claim-check-storage-uri can be read (file:///abs/path or s3://bucket/prefix) so the original message "
        "can be fetched"
    )
    key_only = dml("INSERT", data={"id": ("long", 1)}, handleKeyOnly=True)
    assert decode_error(decoder, schemas, key_only) == (
        f"simple-avro: handle-key-only message for shop.all_types at commit ts {COMMIT_TS}: "
        "the full row must be read from the upstream TiDB, which is not configured; TiCDC sent only the "
        "handle-key columns (handleKeyOnly: true) because the row was larger than max-message-bytes. Set the "
        "changefeed's large-message-handle-option to claim-check (and the pipeline's "
        "codec.claim_check_storage_uri) or raise its max-message-bytes; this row must be recovered from TiDB at "
        "that commit ts"
    )


def test_bad_table_schema_names_the_field(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    broken = {
        **TABLE_SCHEMA,
        "indexes": [{"name": "k", "unique": True, "primary": False, "nullable": False, "columns": ["zz"]}],
    }
    assert decode_error(decoder, schemas, bootstrap(broken)) == (
        "simple-avro: tableSchema.indexes[0].columns names column 'zz', which the table does not have "
        "(table shop.all_types)"
    )


def test_compressed_value_read_without_compression(decoder: SimpleAvroDecoder, schemas: MemorySchemaLookup) -> None:
    packed = bytes(cramjam.snappy.compress_raw(dml("INSERT", data={"id": ("long", 1)})))
    assert decode_error(decoder, schemas, packed) == (
        "simple-avro: the value is a snappy block, but codec.compression is none: the changefeed compresses its "
        "messages (large-message-handle-compression=snappy); set the pipeline's codec.compression to snappy"
    )
