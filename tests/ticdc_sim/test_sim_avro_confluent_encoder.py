"""The TiCDC ``avro`` encoder against tiflow's ``avro.go`` (docs/protocols.md), with a real schema registry.

Schema texts and message bytes are checked by hand; registration goes to the local
Confluent-compatible registry (``include/scripts/registry.sh start``, fixture
``schema_registry_url``). Tests that do not register anything need no registry.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import SchemaError
from ticdc_lake.events import EventKind, Op, RawMessage
from ticdc_lake.protocols.avro_confluent import AvroDecoder
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.avro_confluent_encoder import (
    AvroConfluentEncoder,
    bit_bytes,
    go_json_float,
    sanitize_name,
    signed_bytes,
    unscaled_decimal,
)
from ticdc_sim.catalog import column
from ticdc_sim.column_types import Value
from ticdc_sim.encoding import EncodedMessage
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.simulator import MessageKind, TicdcSimulator

COMMIT_TS = 447984084414103554
VERSION = 447984074911121426

TABLE = TableSchema(
    database="shop",
    table="t",
    table_id=112,
    version=VERSION,
    columns=(
        column("id", "bigint", nullable=False),
        column("n", "int", unsigned=True, default="5"),
        column("dec", "decimal", length=12, scale=3),
        column("e", "enum", elements=("x", "y,z"), nullable=False, default="x"),
        column("raw", "varbinary", length=16),
        column("b", "bit", length=10),
        column("名字", "varchar", length=8),
        column("f", "float", default="1.1"),
    ),
    indexes=(IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
)
ROW: dict[str, Any] = {
    "id": 1,
    "n": 5,
    "dec": Decimal("-1.500"),
    "e": "y,z",
    "raw": b"\xff",
    "b": 3,
    "名字": "é",
    "f": 1.5,
}
KEY_SCHEMA_TEXT = (
    '{"type":"record","name":"t","namespace":"default.shop","fields":['
    '{"name":"id","type":{"type":"long","connect.parameters":{"tidb_type":"BIGINT"}}}]}'
)
VALUE_SCHEMA_TEXT = (
    '{"type":"record","name":"t","namespace":"default.shop","fields":['
    '{"name":"id","type":{"type":"long","connect.parameters":{"tidb_type":"BIGINT"}}},'
    '{"default":5,"name":"n","type":[{"type":"long","connect.parameters":{"tidb_type":"INT UNSIGNED"}},"null"]},'
    '{"default":null,"name":"dec","type":["null",{"type":"bytes","connect.parameters":{"tidb_type":"DECIMAL"},'
    '"logicalType":"decimal","precision":12,"scale":3}]},'
    '{"default":"x","name":"e","type":{"type":"string","connect.parameters":{"allowed":"x,y\\\\,z",'
    '"tidb_type":"ENUM"}}},'
    '{"default":null,"name":"raw","type":["null",{"type":"bytes","connect.parameters":{"tidb_type":"BLOB"}}]},'
    '{"default":null,"name":"b","type":["null",{"type":"bytes","connect.parameters":{"length":"10",'
    '"tidb_type":"BIT"}}]},'
    '{"default":null,"name":"__","type":["null",{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}]},'
    '{"default":1.100000023841858,"name":"f","type":[{"type":"float","connect.parameters":{"tidb_type":"FLOAT"}},'
    '"null"]},'
    '{"default":"","name":"_tidb_op","type":"string"},'
    '{"default":0,"name":"_tidb_commit_ts","type":"long"},'
    '{"default":0,"name":"_tidb_commit_physical_time","type":"long"}]}'
)


def _sent(message: EncodedMessage | None) -> EncodedMessage:
    """The message a DDL must produce (``encode_ddl`` returns None when TiCDC sends nothing)."""
    assert message is not None
    return message


def varint(number: int) -> bytes:
    """Avro ``long``: zig-zag, then base-128 little-endian groups."""
    zigzag = (number << 1) ^ (number >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _never(subject: str, text: str) -> int:
    raise AssertionError(f"nothing may be registered here ({subject})")


@pytest.fixture
def registry(schema_registry_url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": schema_registry_url})


@pytest.fixture
def register(registry: SchemaRegistryClient) -> Callable[[str, str], int]:
    def register(subject: str, text: str) -> int:
        schema_id: int = registry.register_schema(subject, Schema(text, "AVRO"))
        return schema_id

    return register


def unique_topic() -> str:
    return f"sim.avro-{uuid.uuid4().hex[:12]}"


# --------------------------------------------------------------------------- no registry
def test_sanitize_name_like_ticdc() -> None:
    # avro_test.go TestSanitizeName cases, and the multi-byte / leading-digit rules.
    assert sanitize_name("normalColumnName123") == "normalColumnName123"
    assert sanitize_name("9startWithNum") == "_9startWithNum"
    assert sanitize_name("_9startWithNum") == "_9startWithNum"
    assert sanitize_name("dash-and-dot.") == "dash_and_dot_"
    assert sanitize_name("中文") == "__"
    assert sanitize_name("表1") == "_1"
    assert sanitize_name("") == ""


def test_twos_complement_and_bit_bytes_like_goavro_and_tidb() -> None:
    assert [signed_bytes(n).hex() for n in (0, 1, 127, 128, 255, -1, -128, -129, -256, -32768)] == [
        "00",
        "01",
        "7f",
        "0080",
        "00ff",
        "ff",
        "80",
        "ff7f",
        "ff00",
        "8000",
    ]
    assert [bit_bytes(n).hex() for n in (0, 1, 300, (1 << 64) - 1)] == ["00", "01", "012c", "ff" * 8]
    assert unscaled_decimal(Decimal("-1.500"), 3) == -1500
    assert unscaled_decimal(Decimal("12"), 2) == 1200
    assert unscaled_decimal(Decimal("9" * 35 + "." + "9" * 30), 30) == 10**65 - 1


def test_go_json_floats() -> None:
    assert [go_json_float(v) for v in (1.0, 1.100000023841858, 1e21, 1e-7, 123456789.0, -0.5)] == [
        "1",
        "1.100000023841858",
        "1e+21",
        "1e-7",
        "123456789",
        "-0.5",
    ]


def test_schema_texts_are_what_avro_go_marshals() -> None:
    encoder = AvroConfluentEncoder(register=_never, topic="t")
    assert encoder.schema_text(TABLE, list(TABLE.columns[:1]), value=False) == KEY_SCHEMA_TEXT
    assert encoder.schema_text(TABLE, list(TABLE.columns), value=True) == VALUE_SCHEMA_TEXT
    json.loads(VALUE_SCHEMA_TEXT)


def test_schema_modes_without_extension_decimal_and_bigint_as_string() -> None:
    table = TableSchema(
        "d.b",
        "t-1",
        (column("u", "bigint", unsigned=True, nullable=False), column("d", "decimal", length=10, scale=2)),
        (IndexSchema("PRIMARY", ("u",), primary=True, unique=True),),
    )
    encoder = AvroConfluentEncoder(
        register=_never,
        topic="t",
        enable_tidb_extension=False,
        decimal_handling_mode="string",
        bigint_unsigned_handling_mode="string",
        changefeed_namespace="ns-1",
    )
    assert encoder.schema_text(table, list(table.columns), value=True) == (
        '{"type":"record","name":"t_1","namespace":"ns_1.d_b","fields":['
        '{"name":"u","type":{"type":"string","connect.parameters":{"tidb_type":"BIGINT UNSIGNED"}}},'
        '{"default":null,"name":"d","type":["null",{"type":"string","connect.parameters":{"tidb_type":"DECIMAL"}}]}]}'
    )
    assert encoder.datum(table.columns[0], (1 << 64) - 1) == "18446744073709551615"
    assert encoder.datum(table.columns[1], Decimal("1.50")) == "1.50"
    assert AvroConfluentEncoder(register=_never, topic="t").datum(table.columns[0], (1 << 64) - 1) == -1


def test_ddl_and_watermark_bytes() -> None:
    encoder = AvroConfluentEncoder(register=_never, topic="t")
    ddl = DdlChange("CREATE", "CREATE TABLE `shop`.`t` (`id` BIGINT PRIMARY KEY)", "shop", "t", TABLE)
    assert _sent(encoder.encode_ddl(ddl, COMMIT_TS, 0)).value == (
        b'\x01{"query":"CREATE TABLE `shop`.`t` (`id` BIGINT PRIMARY KEY)","type":3,"schema":"shop",'
        b'"table":"t","commitTs":447984084414103554}'
    )
    database = DdlChange("QUERY", "CREATE DATABASE `shop`", "shop", None, None)
    created = _sent(encoder.encode_ddl(database, 5, 0))
    assert (created.key, created.value) == (
        None,
        b'\x01{"query":"CREATE DATABASE `shop`","type":1,"schema":"shop","table":"","commitTs":5}',
    )
    watermark = encoder.encode_watermark(COMMIT_TS, 0)
    assert (watermark.key, watermark.value) == (None, b"\x02" + COMMIT_TS.to_bytes(8, "big"))


def test_no_ddl_or_watermark_without_the_watermark_option() -> None:
    encoder = AvroConfluentEncoder(register=_never, topic="t", enable_watermark=False)
    with pytest.raises(SchemaError, match="only with enable-tidb-extension=true and avro-enable-watermark=true"):
        encoder.encode_watermark(1, 0)
    no_extension = AvroConfluentEncoder(register=_never, topic="t", enable_tidb_extension=False)
    assert (no_extension.enable_watermark, no_extension.has_watermark, AvroConfluentEncoder.has_watermark) == (
        False,
        False,
        True,
    )
    # EncodeDDLEvent returns nil: TiCDC sends nothing, whatever the DDL.
    assert no_extension.encode_ddl(DdlChange("QUERY", "CREATE DATABASE `x`", "x", None, None), 1, 0) is None
    assert (
        encoder.encode_ddl(DdlChange("CREATE", "CREATE TABLE `shop`.`t` (`id` BIGINT)", "shop", "t", TABLE), 1, 0)
        is None
    )


def test_bad_options_and_tables_without_key() -> None:
    with pytest.raises(ValueError, match="avro-decimal-handling-mode is precise or string"):
        AvroConfluentEncoder(register=_never, topic="t", decimal_handling_mode="double")
    keyless = TableSchema("shop", "k", (column("a", "int"),))
    change = RowChange(DmlOp.INSERT, "shop", "k", after={"a": 1})
    with pytest.raises(SchemaError, match=r"^shop\.k has no handle key; TiCDC's avro needs one$"):
        AvroConfluentEncoder(register=_never, topic="t").encode_row(change, keyless, 1, 0)


# ------------------------------------------------------------------------- with the registry
def test_insert_bytes_and_registered_schemas(
    register: Callable[[str, str], int], registry: SchemaRegistryClient
) -> None:
    topic = unique_topic()
    encoder = AvroConfluentEncoder(register=register, topic=topic)
    message = encoder.encode_row(RowChange(DmlOp.INSERT, "shop", "t", after=ROW), TABLE, COMMIT_TS, 0)
    assert message.key is not None
    assert message.value is not None
    key_id = int.from_bytes(message.key[1:5], "big")
    value_id = int.from_bytes(message.value[1:5], "big")
    assert message.key == b"\x00" + key_id.to_bytes(4, "big") + b"\x02"
    assert message.value == (
        b"\x00"
        + value_id.to_bytes(4, "big")
        + b"\x02"  # id 1
        + b"\x00\x0a"  # n: branch 0 of [long, null], 5
        + b"\x02\x04\xfa\x24"  # dec: branch 1 of [null, decimal], 2 bytes of -1500
        + b"\x06y,z"  # e
        + b"\x02\x02\xff"  # raw
        + b"\x02\x02\x03"  # b
        + b"\x02\x04\xc3\xa9"  # 名字 → __
        + b"\x00\x00\x00\xc0\x3f"  # f: branch 0 of [float, null], 1.5
        + b"\x02c"
        + varint(COMMIT_TS)
        + varint(COMMIT_TS >> 18)
    )
    subject = topic.replace(".", "_")
    assert registry.get_schema(key_id).schema_str == KEY_SCHEMA_TEXT
    assert registry.get_schema(value_id).schema_str == VALUE_SCHEMA_TEXT
    # Looked up by name: a long-lived registry lists only its first 1000 subjects.
    assert registry.get_latest_version(f"{subject}-key").schema_id == key_id
    assert registry.get_latest_version(f"{subject}-value").schema_id == value_id


def test_update_delete_and_schema_cache(register: Callable[[str, str], int]) -> None:
    calls: list[str] = []

    def counting(subject: str, text: str) -> int:
        calls.append(subject)
        return register(subject, text)

    topic = unique_topic()
    encoder = AvroConfluentEncoder(register=counting, topic=topic)
    insert = encoder.encode_row(RowChange(DmlOp.INSERT, "shop", "t", after=ROW), TABLE, COMMIT_TS, 0)
    update = encoder.encode_row(RowChange(DmlOp.UPDATE, "shop", "t", ROW, {**ROW, "n": None}), TABLE, COMMIT_TS, 0)
    delete = encoder.encode_row(RowChange(DmlOp.DELETE, "shop", "t", before=ROW), TABLE, COMMIT_TS, 0)
    assert update.value is not None
    assert update.value[5:9] == b"\x02\x02\x02\x04"  # id 1, n: branch 1 (null), dec: branch 1, 2 bytes
    assert b"\x02u" in update.value
    assert delete.key == insert.key
    assert delete.value is None  # a tombstone
    subject = topic.replace(".", "_")
    assert calls == [f"{subject}-key", f"{subject}-value"]  # cached per subject and table version
    newer = TableSchema(TABLE.database, TABLE.table, TABLE.columns, TABLE.indexes, version=VERSION + 1)
    again = encoder.encode_row(RowChange(DmlOp.INSERT, "shop", "t", after=ROW), newer, COMMIT_TS, 0)
    assert calls[2:] == [f"{subject}-key", f"{subject}-value"]
    assert again == insert  # same schema text: the registry returns the same ids


def test_timestamps_in_the_server_zone(register: Callable[[str, str], int]) -> None:
    table = TableSchema(
        "shop",
        "times",
        (column("id", "int", nullable=False), column("ts", "timestamp", fsp=3), column("dt", "datetime", fsp=0)),
        (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
        version=1,
    )
    encoder = AvroConfluentEncoder("Asia/Shanghai", register=register, topic=unique_topic())
    row: dict[str, Value] = {
        "id": 1,
        "ts": datetime(2024, 1, 1, 0, 0, 0, 250000, tzinfo=UTC),
        "dt": datetime(2023, 11, 30, 12, 34, 56),
    }
    message = encoder.encode_row(RowChange(DmlOp.INSERT, "shop", "times", after=row), table, COMMIT_TS, 0)
    assert message.value is not None
    assert b"\x2e2024-01-01 08:00:00.250" in message.value
    assert b"\x262023-11-30 12:34:56" in message.value


def test_simulator_round_trip_through_the_registry_and_the_decoder(
    register: Callable[[str, str], int], registry: SchemaRegistryClient
) -> None:
    topic = unique_topic()
    simulator = TicdcSimulator(
        seed=5, topic=topic, partitions=2, encoder=AvroConfluentEncoder(register=register, topic=topic)
    )
    simulator.setup(create_databases=True)
    simulator.run_transactions(60)
    simulator.flush_watermark()
    messages = simulator.messages()
    assert {MessageKind.DDL, MessageKind.DML, MessageKind.WATERMARK} <= {m.kind for m in messages}
    ids = {
        int.from_bytes(data[1:5], "big")
        for m in messages
        for data in (m.key, m.value)
        if data is not None and data[:1] == b"\x00"
    }
    decoder = AvroDecoder(CodecOptions(), DecodeResources({i: registry.get_schema(i).schema_str or "" for i in ids}))
    live: dict[tuple[str | None, str | None], set[str]] = {}
    for partition in range(simulator.partitions):
        for offset, sent in enumerate(simulator.partition_log(partition)):
            (event,) = decoder.decode(
                RawMessage(topic, partition, offset, 0, sent.key, sent.value), MemorySchemaLookup()
            )
            if event.kind is not EventKind.DML:
                continue
            assert sent.kind == MessageKind.DML
            keys = live.setdefault((event.database, event.table), set())
            if event.op is Op.DELETE:
                assert event.before is not None
                keys.discard(json.dumps(event.before, sort_keys=True))
            else:
                assert event.commit_ts == sent.commit_ts
                assert event.after is not None
                assert event.facts.handle_key is not None
                key: dict[str, str | None] = {name: event.after[name] for name in event.facts.handle_key}
                keys.add(json.dumps(key, sort_keys=True))
    for database, table in simulator.model.tables():
        assert len(live.get((database, table), set())) == len(simulator.expected_iceberg_rows(database, table))
