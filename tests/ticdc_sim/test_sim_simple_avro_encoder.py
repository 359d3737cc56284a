"""The Simple Avro encoder against tiflow's ``simple/avro.go``, checked with fastavro and by hand."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.simple_avro_encoder import SimpleAvroEncoder, int64
from ticdc_sim.simulator import MessageKind, TicdcSimulator

NS = "com.pingcap.simple.avro."
SCHEMA_FILE = Path(__file__).parents[2] / "include" / "ticdc_lake" / "resources" / "simple_message.avsc.json"
SCHEMA = fastavro.parse_schema(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
VERSION = 447984074911121426
COMMIT_TS = 447984084414103554

TABLE = TableSchema(
    database="shop",
    table="t",
    table_id=112,
    version=VERSION,
    columns=(
        column("id", "bigint", nullable=False),
        column("u", "bigint", unsigned=True),
        column("tiny_u", "tinyint", unsigned=True),
        column("bits", "bit", length=64),
        column("y", "year"),
        column("f", "float"),
        column("d", "double"),
        column("dec", "decimal", length=12, scale=3),
        column("name", "varchar", length=32),
        column("raw", "varbinary", length=16),
        column("day", "date"),
        column("dt", "datetime", fsp=3),
        column("ts", "timestamp", fsp=6),
        column("tm", "time", fsp=2),
        column("doc", "json"),
        column("e", "enum", elements=("x", "y", "z")),
        column("s", "set", elements=("a", "b", "c")),
    ),
    indexes=(IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
)

ROW: dict[str, Any] = {
    "id": 1,
    "u": (1 << 64) - 1,
    "tiny_u": 255,
    "bits": (1 << 63) + 5,
    "y": 2024,
    "f": 3.140000104904175,
    "d": 2.718281828459045,
    "dec": Decimal("-1.500"),
    "name": "日本語 🍣",
    "raw": b"\xff\x00\xfe",
    "day": date(2024, 2, 29),
    "dt": datetime(2024, 1, 2, 3, 4, 5, 120000),
    "ts": datetime(2024, 1, 1, 0, 0, 0, 250000, tzinfo=UTC),
    "tm": "-12:34:56.78",
    "doc": '{"k": "v"}',
    "e": "z",
    "s": "a,c",
}


def read(value: bytes) -> Any:
    buffer = io.BytesIO(value)
    message = fastavro.schemaless_reader(buffer, SCHEMA, return_record_name=True, return_record_name_override=True)
    assert buffer.tell() == len(value)
    return message


def zigzag(value: int) -> bytes:
    number = (value << 1) ^ (value >> 63)
    out = bytearray()
    while number > 0x7F:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def test_int64_is_go_two_complement() -> None:
    assert [int64(0), int64((1 << 63) - 1), int64(1 << 63), int64((1 << 64) - 1)] == [
        0,
        (1 << 63) - 1,
        -(1 << 63),
        -1,
    ]
    with pytest.raises(ValueError, match="is not an unsigned 64-bit integer"):
        int64(1 << 64)


def test_watermark_bytes_by_hand() -> None:
    encoded = SimpleAvroEncoder().encode_watermark(COMMIT_TS, 1708923816911)
    assert encoded.key is None
    assert encoded.value == b"\x16\x00\x00\x02" + zigzag(COMMIT_TS) + zigzag(1708923816911)


def test_watermark_above_2_63_is_cast_to_long() -> None:
    encoded = SimpleAvroEncoder().encode_watermark((1 << 64) - 2, 0)
    assert encoded.value == b"\x16\x00\x00\x02" + zigzag(-2) + b"\x00"


def test_bootstrap_table_schema() -> None:
    value = SimpleAvroEncoder().encode_bootstrap(TABLE, 1708924603278).value
    assert value[:3] == b"\x16\x02\x02"
    name, message = read(value)
    assert (name, message["type"]) == (NS + "Message", "BOOTSTRAP")
    payload_name, payload = message["payload"]
    assert payload_name == NS + "Bootstrap"
    assert (payload["version"], payload["buildTs"]) == (1, 1708924603278)
    schema = payload["tableSchema"]
    assert (schema["database"], schema["table"], schema["tableID"], schema["version"]) == ("shop", "t", 112, VERSION)
    types = {c["name"]: c["dataType"] for c in schema["columns"]}
    assert [c["name"] for c in schema["columns"]] == [c.name for c in TABLE.columns]
    assert types["dec"] == {
        "mysqlType": "decimal",
        "charset": "binary",
        "collate": "binary",
        "length": 12,
        "decimal": 3,
        "elements": None,
        "unsigned": False,
        "zerofill": False,
    }
    # fsp is not sent for DATETIME/TIMESTAMP/TIME: only the display length shows it.
    assert (types["dt"]["decimal"], types["dt"]["length"], types["dt"]["unsigned"]) == (None, 23, None)
    assert (types["ts"]["length"], types["tm"]["length"]) == (26, 13)
    assert (types["u"]["unsigned"], types["u"]["zerofill"], types["u"]["length"]) == (True, False, 20)
    assert (types["y"]["unsigned"], types["bits"]["unsigned"], types["f"]["unsigned"]) == (False, False, False)
    assert types["e"]["elements"] == ["x", "y", "z"]
    assert types["e"]["unsigned"] is None
    assert types["name"] == {
        "mysqlType": "varchar",
        "charset": "utf8mb4",
        "collate": "utf8mb4_bin",
        "length": 32,
        "decimal": None,
        "elements": None,
        "unsigned": None,
        "zerofill": None,
    }
    assert schema["indexes"] == [
        {"name": "PRIMARY", "unique": True, "primary": True, "nullable": False, "columns": ["id"]}
    ]


def test_ddl_messages() -> None:
    encoder = SimpleAvroEncoder()
    create = encoder.encode_ddl(DdlChange("CREATE", "CREATE TABLE t (id BIGINT)", "shop", "t", TABLE), COMMIT_TS, 9)
    assert create.value[:3] == b"\x16\x04\x04"
    _, message = read(create.value)
    payload = message["payload"][1]
    assert (payload["type"], payload["sql"], payload["commitTs"], payload["buildTs"]) == (
        "CREATE",
        "CREATE TABLE t (id BIGINT)",
        COMMIT_TS,
        9,
    )
    assert payload["tableSchema"]["table"] == "t"
    assert payload["preTableSchema"] is None
    database = encoder.encode_ddl(DdlChange("QUERY", "CREATE DATABASE `shop`", "shop", None, None), COMMIT_TS, 9)
    payload = read(database.value)[1]["payload"][1]
    assert (payload["type"], payload["tableSchema"], payload["preTableSchema"]) == ("QUERY", None, None)


def test_insert_every_value_branch() -> None:
    encoder = SimpleAvroEncoder("Asia/Shanghai")
    change = RowChange(DmlOp.INSERT, "shop", "t", after={**ROW, "name": None})
    value = encoder.encode_row(change, TABLE, COMMIT_TS, 1708923662983).value
    assert value[:3] == b"\x16\x06\x06"
    _, message = read(value)
    payload = message["payload"][1]
    assert {
        k: payload[k] for k in ("version", "database", "table", "tableID", "type", "commitTs", "schemaVersion")
    } == {
        "version": 1,
        "database": "shop",
        "table": "t",
        "tableID": 112,
        "type": "INSERT",
        "commitTs": COMMIT_TS,
        "schemaVersion": VERSION,
    }
    assert (payload["claimCheckLocation"], payload["handleKeyOnly"], payload["checksum"], payload["old"]) == (
        None,
        None,
        None,
        None,
    )
    assert payload["data"] == {
        "id": 1,
        "u": (NS + "UnsignedBigint", {"value": -1}),
        "tiny_u": 255,
        "bits": -(1 << 63) + 5,
        "y": 2024,
        "f": 3.140000104904175,
        "d": 2.718281828459045,
        "dec": "-1.500",
        "name": None,
        "raw": b"\xff\x00\xfe",
        "day": "2024-02-29",
        "dt": "2024-01-02 03:04:05.120",
        "ts": (NS + "Timestamp", {"location": "Asia/Shanghai", "value": "2024-01-01 08:00:00.250000"}),
        "tm": "-12:34:56.78",
        "doc": '{"k": "v"}',
        "e": 3,
        "s": 5,
    }


def test_float_is_four_bytes_and_double_eight() -> None:
    encoder = SimpleAvroEncoder()
    one = RowChange(DmlOp.INSERT, "shop", "t", after={"f": 1.5})
    two = RowChange(DmlOp.INSERT, "shop", "t", after={"d": 1.5})
    f_value = encoder.encode_row(one, TABLE, 1, 1).value
    d_value = encoder.encode_row(two, TABLE, 1, 1).value
    # map block: count 1, key "f", union index 2 (float) + 4 bytes; "d": index 3 (double) + 8 bytes.
    assert f_value.endswith(b"\x02\x02f\x04\x00\x00\xc0\x3f\x00\x00")
    assert d_value.endswith(b"\x02\x02d\x06\x00\x00\x00\x00\x00\x00\xf8\x3f\x00\x00")


def test_update_and_delete_carry_full_old_images() -> None:
    encoder = SimpleAvroEncoder()
    update = RowChange(DmlOp.UPDATE, "shop", "t", before={"id": 1, "y": 2023}, after={"id": 1, "y": 2024})
    payload = read(encoder.encode_row(update, TABLE, COMMIT_TS, 1).value)[1]["payload"][1]
    assert (payload["type"], payload["data"], payload["old"]) == ("UPDATE", {"id": 1, "y": 2024}, {"id": 1, "y": 2023})
    delete = RowChange(DmlOp.DELETE, "shop", "t", before={"id": 1})
    payload = read(encoder.encode_row(delete, TABLE, COMMIT_TS, 1).value)[1]["payload"][1]
    assert (payload["type"], payload["data"], payload["old"]) == ("DELETE", None, {"id": 1})


def test_map_keys_are_written_sorted() -> None:
    change = RowChange(DmlOp.INSERT, "shop", "t", after={"y": 1, "id": 2, "e": "x"})
    value = SimpleAvroEncoder().encode_row(change, TABLE, 1, 1).value
    assert value.index(b"\x02e") < value.index(b"\x04id") < value.index(b"\x02y")


def test_wrong_python_value_is_a_schema_error() -> None:
    change = RowChange(DmlOp.INSERT, "shop", "t", after={"id": "1"})
    with pytest.raises(SchemaError, match=r"^column 'id' \(bigint\): cannot encode '1', expected int$"):
        SimpleAvroEncoder().encode_row(change, TABLE, 1, 1)
    unknown = RowChange(DmlOp.INSERT, "shop", "t", after={"nope": 1})
    with pytest.raises(SchemaError, match=r"^shop\.t: row has unknown column 'nope'$"):
        SimpleAvroEncoder().encode_row(unknown, TABLE, 1, 1)


def test_simulator_runs_with_this_encoder() -> None:
    simulator = TicdcSimulator(seed=3, partitions=2, encoder=SimpleAvroEncoder())
    simulator.run_transactions(20)
    messages = simulator.messages()
    kinds = {m.kind for m in messages}
    assert {MessageKind.DDL, MessageKind.BOOTSTRAP, MessageKind.DML, MessageKind.WATERMARK} <= kinds
    first_bytes = {
        MessageKind.WATERMARK: 0x00,
        MessageKind.BOOTSTRAP: 0x02,
        MessageKind.DDL: 0x04,
        MessageKind.DML: 0x06,
    }
    for message in messages:
        assert message.key is None
        assert message.value[0] == 0x16
        assert message.value[1] == first_bytes[MessageKind(message.kind)]
        read(message.value)
