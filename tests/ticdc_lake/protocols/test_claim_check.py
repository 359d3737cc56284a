"""Claim-check messages of every protocol that has them, resolved from a claim-check storage.

The stored objects are written here the way TiCDC writes them (``claimcheck.WriteMessage``:
``{"key": base64 | null, "value": base64}`` from Go ``json.Marshal``, or the raw value with
``claim-check-raw-value``), the value already compressed. The reference messages follow the
encoders (``simple/encoder.go``, ``open/open_protocol_encoder.go``,
``canal/canal_json_row_event_encoder.go``): the location is the producer's full URI, of which the
consumer keeps only the file name.
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
import pyarrow.fs as pafs
import pytest
from pydantic import ValidationError

from ticdc_lake import object_store
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, RawMessage, SourcePosition
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup
from ticdc_lake.protocols.canal_json import CanalJsonDecoder
from ticdc_lake.protocols.claim_check import ClaimCheckReader
from ticdc_lake.protocols.open_framing import frame_batch
from ticdc_lake.protocols.open_protocol import OpenProtocolDecoder
from ticdc_lake.protocols.simple_avro import SimpleAvroDecoder
from ticdc_lake.protocols.simple_json import SimpleJsonDecoder
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema

TS = 447984084414103554
VERSION = 447984074911121426
NAME = "6f2d0a5e-1c1b-4c55-9d1e-3b5f0f7f2a10.json"
LOCATION = f"s3://ticdc-claims/changefeed-1/{NAME}"
SCHEMA = TableSchema(
    "shop",
    "orders",
    (ColumnSchema("id", "bigint", nullable=False), ColumnSchema("note", "varchar")),
    (IndexSchema("primary", ("id",), primary=True, unique=True),),
    version=VERSION,
)
SCHEMAS = MemorySchemaLookup([SCHEMA])
BIG_NOTE = "x" * 5000


def at(value: bytes | None, key: bytes | None = None, offset: int = 9) -> RawMessage:
    return RawMessage("cdc", 1, offset, 1700000000000, key, value)


def pack(data: bytes, compression: Compression) -> bytes:
    if compression is Compression.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if compression is Compression.LZ4:
        return bytes(cramjam.lz4.compress(data))
    return data


def store(folder: Path, key: bytes | None, value: bytes, *, raw: bool = False, name: str = NAME) -> None:
    """Write the object as ``claimcheck.WriteMessage`` does."""
    if raw:
        (folder / name).write_bytes(value)
        return
    doc = {"key": None if key is None else base64.b64encode(key).decode(), "value": base64.b64encode(value).decode()}
    (folder / name).write_bytes(json.dumps(doc, separators=(",", ":")).encode())


def options(folder: Path, **extra: Any) -> CodecOptions:
    return CodecOptions(claim_check_storage_uri=f"file://{folder}", **extra)


def error_of(decoder: Decoder, message: RawMessage) -> str:
    with pytest.raises(DecodeError) as info:
        decoder.decode(message, SCHEMAS)
    return str(info.value)


def claimed(event: ChangeEvent, position: SourcePosition) -> ChangeEvent:
    event.position = position
    event.claim_check = True
    return event


# --- Simple (JSON) ---------------------------------------------------------------------------------


def simple_dml(data: dict[str, Any], **fields: Any) -> bytes:
    doc = {
        "version": 1,
        "database": "shop",
        "table": "orders",
        "tableID": 112,
        "type": "INSERT",
        "commitTs": TS,
        "buildTs": 1708923662983,
        "schemaVersion": VERSION,
        **fields,
        "data": data,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


@pytest.mark.parametrize("compression", list(Compression))
@pytest.mark.parametrize("raw", [False, True])
def test_simple_json_reference_is_replaced_by_the_stored_message(
    tmp_path: Path, compression: Compression, raw: bool
) -> None:
    original = pack(simple_dml({"id": "1", "note": BIG_NOTE}), compression)
    store(tmp_path, None, original, raw=raw)
    reference = pack(simple_dml({"id": "1"}, claimCheckLocation=LOCATION, handleKeyOnly=True), compression)
    decoder = SimpleJsonDecoder(options(tmp_path, compression=compression, claim_check_raw_value=raw))
    (event,) = decoder.decode(at(reference), SCHEMAS)
    (direct,) = decoder.decode(at(original, offset=3), SCHEMAS)
    assert event == claimed(direct, SourcePosition("cdc", 1, 9, 0))
    assert (event.after, event.claim_check, event.handle_key_only) == ({"id": "1", "note": BIG_NOTE}, True, False)


def test_a_claim_checked_row_without_its_schema_is_pending(tmp_path: Path) -> None:
    store(tmp_path, None, simple_dml({"id": "1", "note": "n"}))
    decoder = SimpleJsonDecoder(options(tmp_path))
    (event,) = decoder.decode(at(simple_dml({"id": "1"}, claimCheckLocation=LOCATION)), MemorySchemaLookup())
    assert (event.status, event.claim_check, event.position) == (
        EventStatus.PENDING,
        True,
        SourcePosition("cdc", 1, 9, 0),
    )
    assert event.pending_payload == simple_dml({"id": "1", "note": "n"}).decode()


# --- Simple (Avro) ---------------------------------------------------------------------------------

AVRO_SCHEMA_FILE = Path(__file__).parents[3] / "include" / "ticdc_lake" / "resources" / "simple_message.avsc.json"
NS = "com.pingcap.simple.avro."


def avro_dml(data: dict[str, Any], **fields: Any) -> bytes:
    payload = {
        "version": 1,
        "database": "shop",
        "table": "orders",
        "tableID": 112,
        "type": "INSERT",
        "commitTs": TS,
        "buildTs": 1708923662983,
        "schemaVersion": VERSION,
        "claimCheckLocation": None,
        "handleKeyOnly": None,
        "checksum": None,
        "data": data,
        "old": None,
        **fields,
    }
    schema = fastavro.parse_schema(json.loads(AVRO_SCHEMA_FILE.read_text(encoding="utf-8")))
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, schema, (NS + "Message", {"type": "DML", "payload": (NS + "DML", payload)}))
    return buffer.getvalue()


def test_simple_avro_reference_is_replaced_by_the_stored_message(tmp_path: Path) -> None:
    original = pack(avro_dml({"id": ("long", 1), "note": ("string", BIG_NOTE)}), Compression.LZ4)
    store(tmp_path, None, original)
    reference = avro_dml({"id": ("long", 1)}, claimCheckLocation=LOCATION, handleKeyOnly=True)
    decoder = SimpleAvroDecoder(options(tmp_path, compression=Compression.LZ4))
    (event,) = decoder.decode(at(pack(reference, Compression.LZ4)), SCHEMAS)
    assert (event.after, event.claim_check, event.commit_ts) == ({"id": "1", "note": BIG_NOTE}, True, TS)


# --- Open Protocol -------------------------------------------------------------------------------


def open_item(key: dict[str, Any], value: dict[str, Any]) -> tuple[bytes, bytes]:
    return json.dumps(key, separators=(",", ":")).encode(), json.dumps(value, separators=(",", ":")).encode()


OPEN_KEY = {"ts": TS, "scm": "shop", "tbl": "orders", "t": 1}
OPEN_ROW = {"u": {"id": {"t": 8, "h": True, "f": 11, "v": 1}, "note": {"t": 15, "f": 64, "v": BIG_NOTE}}}
OPEN_KEY_ONLY = {"u": {"id": {"t": 8, "h": True, "f": 11, "v": 1}}}


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.LZ4])
def test_open_reference_is_replaced_by_the_stored_batch(tmp_path: Path, compression: Compression) -> None:
    key, value = open_item(OPEN_KEY, OPEN_ROW)
    stored_key, stored_value = frame_batch([key], [pack(value, compression)])  # ``newMessage(key, value)``
    store(tmp_path, stored_key, stored_value)
    other_key, other_value = open_item({**OPEN_KEY, "tbl": "items"}, OPEN_KEY_ONLY)
    ref_key, ref_value = open_item({**OPEN_KEY, "ccl": LOCATION}, OPEN_KEY_ONLY)
    batch = frame_batch([other_key, ref_key], [pack(other_value, compression), pack(ref_value, compression)])
    decoder = OpenProtocolDecoder(options(tmp_path, compression=compression))
    first, second = decoder.decode(at(batch[1], key=batch[0]), SCHEMAS)
    (direct,) = decoder.decode(at(stored_value, key=stored_key), SCHEMAS)
    assert (first.table, first.claim_check) == ("items", False)
    assert second == claimed(direct, SourcePosition("cdc", 1, 9, 1))
    assert second.after == {"id": "1", "note": BIG_NOTE}


def test_open_refuses_raw_values(tmp_path: Path) -> None:
    ref_key, ref_value = open_item({**OPEN_KEY, "ccl": LOCATION}, OPEN_KEY_ONLY)
    key, value = frame_batch([ref_key], [ref_value])
    decoder = OpenProtocolDecoder(options(tmp_path, claim_check_raw_value=True))
    assert error_of(decoder, at(value, key=key)) == (
        f"open: event 0 (key item at byte offset 8, table shop.orders, commit ts {TS}) is a claim-check "
        "reference, but codec.claim_check_raw_value is true: TiCDC never writes raw values for the Open Protocol "
        "(the object holds both key and value); set it to false"
    )


# --- Canal-JSON ----------------------------------------------------------------------------------


def canal_dml(data: dict[str, Any], **tidb: Any) -> bytes:
    doc = {
        "id": 0,
        "database": "shop",
        "table": "orders",
        "pkNames": ["id"],
        "isDdl": False,
        "type": "INSERT",
        "es": TS >> 18,
        "ts": 1700000000123,
        "sql": "",
        "sqlType": {name: 4 for name in data},
        "mysqlType": {"id": "bigint", "note": "varchar"},
        "old": None,
        "data": [data],
        "_tidb": {"commitTs": TS, **tidb},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def test_canal_json_reference_is_replaced_by_the_stored_message(tmp_path: Path) -> None:
    original = pack(canal_dml({"id": "1", "note": BIG_NOTE}), Compression.SNAPPY)
    store(tmp_path, None, original)
    reference = pack(canal_dml({"id": "1"}, claimCheckLocation=LOCATION), Compression.SNAPPY)
    decoder = CanalJsonDecoder(options(tmp_path, compression=Compression.SNAPPY))
    (event,) = decoder.decode(at(reference), SCHEMAS)
    (direct,) = decoder.decode(at(original), SCHEMAS)
    assert event == claimed(direct, SourcePosition("cdc", 1, 9, 0))
    assert (event.op, event.after) == (Op.INSERT, {"id": "1", "note": BIG_NOTE})


# --- what goes wrong -----------------------------------------------------------------------------

SIMPLE_WHERE = f"the INSERT message for table shop.orders at commit ts {TS}"


def test_missing_object(tmp_path: Path) -> None:
    decoder = SimpleJsonDecoder(options(tmp_path))
    assert error_of(decoder, at(simple_dml({"id": "1"}, claimCheckLocation=LOCATION))) == (
        f"simple-json: claim-check object file://{tmp_path}/{NAME} does not exist (location '{LOCATION}' of "
        f"{SIMPLE_WHERE}); check that codec.claim_check_storage_uri names the changefeed's "
        "claim-check-storage-uri and that no lifecycle rule deleted the object"
    )


def test_object_of_another_row(tmp_path: Path) -> None:
    store(tmp_path, None, simple_dml({"id": "2", "note": "n"}, table="items", commitTs=TS - 1))
    decoder = SimpleJsonDecoder(options(tmp_path))
    assert error_of(decoder, at(simple_dml({"id": "1"}, claimCheckLocation=LOCATION))) == (
        f"simple-json: claim-check object file://{tmp_path}/{NAME} holds an INSERT of shop.items at commit ts "
        f"{TS - 1}, but the message refers to an INSERT of shop.orders at commit ts {TS}; "
        "codec.claim_check_storage_uri must name this changefeed's claim-check-storage-uri"
    )
    store(tmp_path, None, simple_dml({"id": "1"}, type="DELETE", old={"id": "1"}).replace(b',"data":{"id":"1"}', b""))
    assert error_of(decoder, at(simple_dml({"id": "1"}, claimCheckLocation=LOCATION))) == (
        f"simple-json: claim-check object file://{tmp_path}/{NAME} holds a DELETE of shop.orders at commit ts "
        f"{TS}, but the message refers to an INSERT of shop.orders at commit ts {TS}; "
        "codec.claim_check_storage_uri must name this changefeed's claim-check-storage-uri"
    )
    store(tmp_path, None, json.dumps({"version": 1, "type": "WATERMARK", "commitTs": TS}).encode())
    assert "holds a WATERMARK event, but the message refers to" in error_of(
        decoder, at(simple_dml({"id": "1"}, claimCheckLocation=LOCATION))
    )


def test_object_that_is_itself_a_reference(tmp_path: Path) -> None:
    store(tmp_path, None, simple_dml({"id": "1"}, claimCheckLocation=LOCATION))
    decoder = SimpleJsonDecoder(options(tmp_path))
    assert error_of(decoder, at(simple_dml({"id": "1"}, claimCheckLocation=LOCATION))) == (
        f"simple-json: claim-check object file://{tmp_path}/{NAME}: {SIMPLE_WHERE} is itself a claim-check "
        "reference; TiCDC stores only original messages there, so this object was not written by the changefeed"
    )


def test_errors_inside_the_object_name_it(tmp_path: Path) -> None:
    store(tmp_path, None, simple_dml({"id": "1", "note": 5}))
    decoder = SimpleJsonDecoder(options(tmp_path))
    assert error_of(decoder, at(simple_dml({"id": "1"}, claimCheckLocation=LOCATION))) == (
        f"simple-json: claim-check object file://{tmp_path}/{NAME}: column 'note' (varchar) of table shop.orders "
        f"(schema version {VERSION}) in 'data': expected a JSON string, got number 5"
    )
    # Compressed by the changefeed, but the pipeline says none.
    store(tmp_path, None, pack(simple_dml({"id": "1"}), Compression.LZ4))
    assert error_of(decoder, at(simple_dml({"id": "1"}, claimCheckLocation=LOCATION))) == (
        f"simple-json: claim-check object file://{tmp_path}/{NAME}: the value is an LZ4 frame, but "
        "codec.compression is none: the changefeed compresses its messages (large-message-handle-compression=lz4); "
        "set the pipeline's codec.compression to lz4"
    )


@pytest.mark.parametrize(
    ("content", "raw", "reason"),
    [
        (
            b"not json",
            False,
            'is not TiCDC\'s {"key", "value"} JSON (Expecting value: line 1 column 1 (char 0)); if the changefeed '
            "sets claim-check-raw-value=true, set the pipeline's codec.claim_check_raw_value: true",
        ),
        (
            b'{"key":null}',
            False,
            'is not TiCDC\'s {"key", "value"} JSON (no base64 string \'value\'); if the changefeed sets '
            "claim-check-raw-value=true, set the pipeline's codec.claim_check_raw_value: true",
        ),
        (b'{"key":1,"value":""}', False, "field 'key' of claim-check object {address} must be base64 or null"),
        (
            b'{"key":null,"value":"eyJ=!"}',
            False,
            "field 'value' of claim-check object {address} is not standard base64 (Excess data after padding)",
        ),
        (
            b'{"key":null,"value":"e30="}',
            True,
            'holds TiCDC\'s {"key", "value"} JSON, but codec.claim_check_raw_value is true; set it to false to '
            "match the changefeed's claim-check-raw-value",
        ),
    ],
)
def test_unreadable_objects(tmp_path: Path, content: bytes, raw: bool, reason: str) -> None:
    (tmp_path / NAME).write_bytes(content)
    reader = ClaimCheckReader("canal-json", options(tmp_path, claim_check_raw_value=raw))
    address = f"file://{tmp_path}/{NAME}"
    with pytest.raises(DecodeError) as info:
        reader.fetch(LOCATION, "the INSERT", "_tidb.claimCheckLocation")
    expected = reason.format(address=address) if "{address}" in reason else f"claim-check object {address} {reason}"
    assert info.value.reason == expected


def test_locations_that_name_no_file(tmp_path: Path) -> None:
    reader = ClaimCheckReader("open", options(tmp_path))
    for location, reason in [
        ("s3://bucket/dir/", "claim-check location 's3://bucket/dir/' in field 'ccl' of event 0 names no file"),
        ("", "field 'ccl' of event 0 must be a non-empty claim-check location, got ''"),
        (7, "field 'ccl' of event 0 must be a non-empty claim-check location, got 7"),
    ]:
        with pytest.raises(DecodeError) as info:
            reader.fetch(location, "event 0", "ccl")
        assert info.value.reason == reason


def test_reader_is_picklable_and_opens_lazily(tmp_path: Path) -> None:
    store(tmp_path, b"k", b"v")
    reader = ClaimCheckReader("simple-json", options(tmp_path))
    assert reader.fetch(LOCATION, "m", "claimCheckLocation").value == b"v"
    copy = pickle.loads(pickle.dumps(reader))
    assert copy.__getstate__() == reader.__getstate__()
    stored = copy.fetch(NAME, "m", "claimCheckLocation")  # a bare file name works too
    assert (stored.key, stored.value, stored.address) == (b"k", b"v", f"file://{tmp_path}/{NAME}")
    decoder = pickle.loads(pickle.dumps(SimpleJsonDecoder(options(tmp_path))))
    store(tmp_path, None, simple_dml({"id": "1", "note": "n"}))
    assert decoder.decode(at(simple_dml({"id": "1"}, claimCheckLocation=LOCATION)), SCHEMAS)[0].claim_check


def test_absolute_path_and_s3_uris(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store(tmp_path, None, b"v")
    reader = ClaimCheckReader("canal-json", CodecOptions(claim_check_storage_uri=f"{tmp_path}/"))
    assert reader.fetch(LOCATION, "m", "f").address == f"{tmp_path}/{NAME}"
    opened: list[str] = []

    def s3_standin(uri: str) -> tuple[pafs.FileSystem, str]:
        # The real S3 read: tests/ticdc_lake/landing/test_landing_store_s3.py (needs the S3 server).
        opened.append(uri)
        return pafs.LocalFileSystem(), str(tmp_path)

    monkeypatch.setattr(object_store, "open_uri", s3_standin)
    reader = ClaimCheckReader("canal-json", CodecOptions(claim_check_storage_uri="s3://lake-claims/cf1"))
    assert reader.fetch(LOCATION, "m", "f").address == f"s3://lake-claims/cf1/{NAME}"
    assert opened == ["s3://lake-claims/cf1"]


def test_storage_uri_is_validated() -> None:
    with pytest.raises(ValidationError, match=r"claim-check storage 'gcs://b/p' is not supported; use file:///abs"):
        CodecOptions(claim_check_storage_uri="gcs://b/p")


def test_kinds_other_than_rows_never_resolve(tmp_path: Path) -> None:
    decoder = SimpleJsonDecoder(options(tmp_path))
    (event,) = decoder.decode(at(json.dumps({"version": 1, "type": "WATERMARK", "commitTs": TS}).encode()), SCHEMAS)
    assert (event.kind, event.claim_check) == (EventKind.WATERMARK, False)
