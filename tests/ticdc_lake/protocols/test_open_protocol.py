"""OpenProtocolDecoder on the real encoder's golden files and on hand-built messages.

Hand-built messages follow docs/protocols.md ("Open Protocol") and TiCDC's
``internal.Column``/``MessageKey`` JSON, written here by hand (never with a project encoder) so
that the two cannot share a mistake.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import cramjam
import pytest

from tests import tiflow_vectors
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventFacts, EventKind, Op, RawMessage, SourcePosition
from ticdc_lake.protocols.common import DDL_ACTIONS, ddl_type_for
from ticdc_lake.protocols.open_framing import frame_batch, split_batch
from ticdc_lake.protocols.open_protocol import OpenProtocolDecoder
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.schema.lookup import MemorySchemaLookup

VECTORS = tiflow_vectors.OPEN_DATA
TS = 447984084414103554
NO_SCHEMAS = MemorySchemaLookup()


def pos(index: int, offset: int = 42) -> SourcePosition:
    return SourcePosition("cdc", 3, offset, index)


def golden(name: str) -> RawMessage:
    tiflow_vectors.require()
    kind, number = name.rsplit("_", 1)
    key = (VECTORS / "key" / f"{kind}_key_{number}").read_bytes()
    value = (VECTORS / "value" / f"{kind}_value_{number}").read_bytes()
    return RawMessage("cdc", 3, 42, 1700000000000, key, value)


def decode(message: RawMessage, **options: Any) -> list[ChangeEvent]:
    return OpenProtocolDecoder(CodecOptions(**options)).decode(message, NO_SCHEMAS)


def message(*events: tuple[dict[str, Any], dict[str, Any] | None]) -> RawMessage:
    keys = [json.dumps(k, separators=(",", ":")).encode() for k, _ in events]
    values = [b"" if v is None else json.dumps(v, separators=(",", ":")).encode() for _, v in events]
    key, value = frame_batch(keys, values)
    return RawMessage("cdc", 3, 42, 1700000000000, key, value)


def row_key(**extra: Any) -> dict[str, Any]:
    return {"ts": TS, "scm": "shop", "tbl": "orders", **extra, "t": 1}


def decode_error(raw: RawMessage, **options: Any) -> str:
    with pytest.raises(DecodeError) as info:
        decode(raw, **options)
    assert info.value.protocol == "open"
    return str(info.value)


# --- golden files -------------------------------------------------------------------------------


def ddl(index: int, ts: int, query: str, action: int, ddl_type: str) -> ChangeEvent:
    return ChangeEvent(
        kind=EventKind.DDL,
        position=pos(index),
        commit_ts=ts,
        database="a",
        table="b",
        ddl_type=ddl_type,
        ddl_query=query,
        facts=EventFacts(ddl_action=action),
    )


def watermark(index: int, ts: int) -> ChangeEvent:
    return ChangeEvent(kind=EventKind.WATERMARK, position=pos(index), commit_ts=ts)


GOLDEN_EVENTS = {
    "ddl_0": [ddl(0, 1, "create table a", 1, "QUERY")],
    "ddl_1": [
        ddl(0, 1, "create table a", 1, "QUERY"),
        ddl(1, 2, "create table b", 2, "QUERY"),
        ddl(2, 3, "create table c", 3, "CREATE"),
    ],
    "ddl_2": [],
    "row_2": [],
    "rts_0": [watermark(0, 1)],
    "rts_1": [watermark(0, 1), watermark(1, 2), watermark(2, 3)],
    "rts_2": [],
}


@pytest.mark.parametrize("name", sorted(GOLDEN_EVENTS))
def test_golden_events(name: str) -> None:
    assert decode(golden(name)) == GOLDEN_EVENTS[name]


@pytest.mark.parametrize(("name", "schema"), [(n, n.startswith("ddl_") and n != "ddl_2") for n in GOLDEN_EVENTS])
def test_golden_may_carry_schema(name: str, schema: bool) -> None:
    decoder = OpenProtocolDecoder(CodecOptions())
    assert decoder.may_carry_schema(golden(name)) is schema
    assert decoder.may_carry_schema(golden("row_1")) is False


@pytest.mark.parametrize("name", ["row_0", "row_1"])
def test_golden_rows_carry_synthetic_values(name: str) -> None:
    """The golden rows are synthetic: type code 1 (TINYINT) holding strings; strict decoding refuses."""
    assert decode_error(golden(name)) == (
        "open: column 'col1' in 'u' of event 0 (key item at byte offset 8, table a.b, commit ts 1) "
        '(type code 1, flags 0): expected a JSON integer, got string "aa"'
    )


def retyped(raw: RawMessage) -> RawMessage:
    """The golden row batch with col1 declared VARCHAR (code 15), framed again."""
    pairs = split_batch(raw.key, raw.value)
    values = [v.data.replace(b'"t":1,', b'"t":15,') for _, v in pairs]
    key, value = frame_batch([k.data for k, _ in pairs], values)
    return RawMessage(raw.topic, raw.partition, raw.offset, raw.timestamp_ms, key, value)


def golden_insert(index: int, ts: int, table: str, value: str, table_id: int | None = None) -> ChangeEvent:
    return ChangeEvent(
        kind=EventKind.DML,
        position=pos(index),
        commit_ts=ts,
        database="a",
        table=table,
        table_id=table_id,
        op=Op.INSERT,
        after={"col1": value},
        column_types={"col1": "varchar"},
        facts=EventFacts(handle_key=(), primary_key=(), column_flags={"col1": 0}, unresolved_enum_set=()),
    )


def test_golden_rows_retyped_as_varchar() -> None:
    assert decode(retyped(golden("row_0"))) == [golden_insert(0, 1, "b", "aa")]
    assert decode(retyped(golden("row_1"))) == [
        golden_insert(0, 1, "b", "aa"),
        golden_insert(1, 2, "b", "bb"),
        golden_insert(2, 3, "b", "bb"),
        golden_insert(3, 4, "c", "cc", table_id=6),
    ]


def test_registry_and_pickle() -> None:
    decoder = decoder_for("open", CodecOptions())
    assert isinstance(decoder, OpenProtocolDecoder)
    assert pickle.loads(pickle.dumps(decoder)).decode(golden("rts_0"), NO_SCHEMAS) == [watermark(0, 1)]


# --- hand-built rows ----------------------------------------------------------------------------

ALL_TYPES: dict[str, tuple[dict[str, Any], str | None, str]] = {
    # column: (codec column, canonical text, type text)
    "id": ({"t": 8, "h": True, "f": 11 | 128, "v": 18446744073709551615}, "18446744073709551615", "bigint unsigned"),
    "t_tiny": ({"t": 1, "f": 65, "v": -128}, "-128", "tinyint"),
    "t_small": ({"t": 2, "f": 1, "v": 32767}, "32767", "smallint"),
    "t_medium": ({"t": 9, "f": 129, "v": 16777215}, "16777215", "mediumint unsigned"),
    "t_int": ({"t": 3, "f": 1, "v": -2147483648}, "-2147483648", "int"),
    "t_big": ({"t": 8, "f": 1, "v": -9223372036854775808}, "-9223372036854775808", "bigint"),
    "t_year": ({"t": 13, "f": 129, "v": 2023}, "2023", "year"),
    "t_bit": ({"t": 16, "f": 129, "v": 1023}, "1023", "bit"),
    "t_float": ({"t": 4, "f": 1, "v": 3.14}, "3.14", "float"),
    "t_float_tiny": ({"t": 4, "f": 1, "v": 1e-07}, "1e-07", "float"),
    "t_double": ({"t": 5, "f": 1, "v": 2.718281828459045}, "2.718281828459045", "double"),
    "t_double_whole": ({"t": 5, "f": 1, "v": 90}, "90", "double"),
    "t_dec": ({"t": 246, "f": 1, "v": "179394.233300"}, "179394.233300", "decimal"),
    "t_char": ({"t": 254, "f": 0, "v": "abc"}, "abc", "char"),
    "t_varchar": ({"t": 15, "f": 64, "v": "日本語 \\x00"}, "日本語 \\x00", "varchar"),
    "t_binary": ({"t": 254, "f": 1, "v": 'a\\x00\\"\\\\\\xff'}, "YQAiXP8=", "binary"),
    "t_varbinary": ({"t": 15, "f": 65, "v": "\\xfe\\xff\\x00\\x80"}, "/v8AgA==", "varbinary"),
    "t_text": ({"t": 252, "f": 64, "v": "5pel5pys6Kqe8J+Zgg=="}, "日本語🙂", "text"),
    "t_tinytext": ({"t": 249, "f": 0, "v": "YWJj"}, "abc", "tinytext"),
    "t_blob": ({"t": 252, "f": 65, "v": "//4AgA=="}, "//4AgA==", "blob"),
    "t_longblob": ({"t": 251, "f": 1, "v": "QR=="}, "QQ==", "longblob"),
    "t_date": ({"t": 10, "f": 1, "v": "2023-11-30"}, "2023-11-30", "date"),
    "t_datetime": ({"t": 12, "f": 1, "v": "2023-11-30 12:34:56.123"}, "2023-11-30 12:34:56.123", "datetime"),
    "t_time": ({"t": 11, "f": 1, "v": "-12:34:56.123456"}, "-12:34:56.123456", "time"),
    "t_ts": ({"t": 7, "f": 1, "v": "2024-01-01 08:00:00.250"}, "2024-01-01T00:00:00.250Z", "timestamp"),
    "t_json": ({"t": 245, "f": 1, "v": '{"k": "v"}'}, '{"k": "v"}', "json"),
    "t_enum": ({"t": 247, "f": 64, "v": 2}, "2", "enum"),
    "t_set": ({"t": 248, "f": 64, "v": 5}, "5", "set"),
    "t_null": ({"t": 3, "f": 65, "v": None}, None, "int"),
    "t_enum_null": ({"t": 247, "f": 64, "v": None}, None, "enum"),
}


def test_insert_of_every_type_in_shanghai() -> None:
    raw = message((row_key(rid=7), {"u": {name: col for name, (col, _, _) in ALL_TYPES.items()}}))
    [event] = decode(raw, server_time_zone="Asia/Shanghai")
    assert event == ChangeEvent(
        kind=EventKind.DML,
        position=pos(0),
        commit_ts=TS,
        database="shop",
        table="orders",
        op=Op.INSERT,
        after={name: text for name, (_, text, _) in ALL_TYPES.items()},
        column_types={name: type_text for name, (_, _, type_text) in ALL_TYPES.items()},
        facts=EventFacts(
            handle_key=("id",),
            primary_key=("id",),
            column_flags={name: col["f"] for name, (col, _, _) in ALL_TYPES.items()},
            unresolved_enum_set=("t_enum", "t_set"),
            row_id=7,
        ),
    )


def test_update_delete_and_partition_in_one_batch() -> None:
    id_col = {"t": 3, "h": True, "f": 11, "v": 1}
    raw = message(
        (row_key(ptn=106), {"u": {"id": id_col, "s": {"t": 248, "f": 0, "v": 3}}, "p": {"id": id_col}}),
        (row_key(), {"d": {"id": {"t": 3, "f": 2, "v": 2}, "name": {"t": 15, "f": 64, "v": None}}}),
        ({"ts": TS + 1, "t": 3}, None),
    )
    assert decode(raw) == [
        ChangeEvent(
            kind=EventKind.DML,
            position=pos(0),
            commit_ts=TS,
            database="shop",
            table="orders",
            table_id=106,
            op=Op.UPDATE,
            before={"id": "1"},
            after={"id": "1", "s": "3"},
            column_types={"id": "int", "s": "set"},
            facts=EventFacts(
                handle_key=("id",), primary_key=("id",), column_flags={"id": 11, "s": 0}, unresolved_enum_set=("s",)
            ),
        ),
        ChangeEvent(
            kind=EventKind.DML,
            position=pos(1),
            commit_ts=TS,
            database="shop",
            table="orders",
            op=Op.DELETE,
            before={"id": "2", "name": None},
            column_types={"id": "int", "name": "varchar"},
            facts=EventFacts(
                handle_key=("id",), primary_key=(), column_flags={"id": 2, "name": 64}, unresolved_enum_set=()
            ),
        ),
        ChangeEvent(kind=EventKind.WATERMARK, position=pos(2), commit_ts=TS + 1),
    ]


def test_schema_level_ddl_without_table() -> None:
    raw = message(({"ts": TS, "scm": "shop", "t": 2}, {"q": "CREATE DATABASE `shop`", "t": 1}))
    decoder = OpenProtocolDecoder(CodecOptions())
    assert decoder.may_carry_schema(raw) is True
    assert decoder.decode(raw, NO_SCHEMAS) == [
        ChangeEvent(
            kind=EventKind.DDL,
            position=pos(0),
            commit_ts=TS,
            database="shop",
            ddl_type="QUERY",
            ddl_query="CREATE DATABASE `shop`",
            facts=EventFacts(ddl_action=1),
        )
    ]


@pytest.mark.parametrize(
    ("action", "ddl_type"),
    [(3, "CREATE"), (4, "ERASE"), (5, "ALTER"), (6, "ALTER"), (7, "CINDEX"), (8, "DINDEX"), (11, "TRUNCATE"),
     (12, "ALTER"), (14, "RENAME"), (47, "RENAME"), (32, "CINDEX"), (33, "DINDEX"), (61, "ALTER"), (1, "QUERY"),
     (2, "QUERY"), (21, "QUERY"), (42, "QUERY"), (60, "QUERY"), (255, "QUERY")],
)  # fmt: skip
def test_ddl_types(action: int, ddl_type: str) -> None:
    assert ddl_type_for(action) == ddl_type
    raw = message(({"ts": TS, "scm": "shop", "tbl": "t", "t": 2}, {"q": "x", "t": action}))
    assert decode(raw)[0].ddl_type == ddl_type


def test_ddl_action_out_of_range() -> None:
    raw = message(({"ts": TS, "t": 2}, {"q": "x", "t": 256}))
    assert decode_error(raw) == (
        "open: field 't' of the DDL value of event 0 (key item at byte offset 8) must be an integer in 0..255, "
        "got number 256"
    )


def test_ddl_mapping_values() -> None:
    assert set(DDL_ACTIONS.values()) == {"CREATE", "RENAME", "CINDEX", "DINDEX", "ERASE", "TRUNCATE", "ALTER"}


# --- refusals and malformed content -------------------------------------------------------------

INSERT = {"u": {"id": {"t": 3, "h": True, "f": 11, "v": 1}}}
WHERE = "event 0 (key item at byte offset 8, table shop.orders, commit ts 447984084414103554)"


def test_handle_key_only() -> None:
    assert decode_error(message((row_key(ohk=True), INSERT))) == (
        f"open: handle-key-only message for shop.orders at commit ts {TS}: "
        "the full row must be read from the upstream TiDB, which is not configured; TiCDC sent only the "
        "handle-key columns (key 'ohk' of event 0 (key item at byte offset 8)) because the row was larger than "
        "max-message-bytes. Set the "
        "changefeed's large-message-handle-option to claim-check (and the pipeline's "
        "codec.claim_check_storage_uri) or raise its max-message-bytes; this row must be recovered from TiDB at "
        "that commit ts"
    )
    assert decode_error(message((row_key(ohk=1), INSERT))) == (
        f"open: field 'ohk' of the key of {WHERE} must be true or false, got number 1"
    )
    assert decode(message((row_key(ohk=False), INSERT)))[0].after == {"id": "1"}


def test_claim_check() -> None:
    assert decode_error(message((row_key(ccl="s3://bucket/x/abc.json"), {}))) == (
        f"open: {WHERE} is a claim-check reference (ccl 's3://bucket/x/abc.json'), "
        "but codec.claim_check_storage_uri is not set: set it to where the changefeed's "
        "claim-check-storage-uri can be read (file:///abs/path or s3://bucket/prefix) so the original message "
        "can be fetched"
    )


@pytest.mark.parametrize("compression", [Compression.SNAPPY, Compression.LZ4])
def test_compression(compression: Compression) -> None:
    error = decode_error(message((row_key(), INSERT)), compression=compression)
    assert error.startswith(f"open: the value of {WHERE} could not be decompressed as {compression.value} (")
    assert error.endswith(
        f"); it looks like uncompressed JSON. Set the pipeline's codec.compression to none (now {compression.value}): "
        "it must match the changefeed's large-message-handle-compression"
    )
    # Each value item is compressed on its own; keys never are.
    plain = message((row_key(), INSERT), ({"ts": TS, "scm": "shop", "t": 2}, {"q": "x", "t": 1}))
    pairs = split_batch(plain.key, plain.value)

    def pack(data: bytes) -> bytes:
        return bytes(
            cramjam.snappy.compress_raw(data) if compression is Compression.SNAPPY else cramjam.lz4.compress(data)
        )

    key_bytes, value_bytes = frame_batch([k.data for k, _ in pairs], [pack(v.data) for _, v in pairs])
    packed = RawMessage(plain.topic, plain.partition, plain.offset, plain.timestamp_ms, key_bytes, value_bytes)
    assert OpenProtocolDecoder(CodecOptions(compression=compression)).decode(packed, MemorySchemaLookup()) == (
        OpenProtocolDecoder(CodecOptions()).decode(plain, MemorySchemaLookup())
    )
    # Resolved events have no value to decompress.
    assert decode(message(({"ts": TS, "t": 3}, None)), compression=compression) == [
        ChangeEvent(kind=EventKind.WATERMARK, position=pos(0), commit_ts=TS)
    ]


BAD_CONTENT: list[tuple[tuple[dict[str, Any], dict[str, Any] | None], str]] = [
    (({"ts": TS, "t": 4}, None),
     "open: unknown message type 4 in field 't' of key item 0 at byte offset 8; Open Protocol keys have t = 1 "
     "(row), 2 (DDL) or 3 (resolved)"),
    (({"ts": TS}, None), "open: event 0 (key item at byte offset 8) has no field 't'"),
    (({"ts": -1, "t": 3}, None),
     "open: field 'ts' of event 0 (key item at byte offset 8) must be an integer in 0..18446744073709551615, "
     "got number -1"),
    (({"ts": TS, "tbl": "orders", "t": 1}, INSERT),
     "open: the row key of event 0 (key item at byte offset 8) must name the database 'scm' and table 'tbl'"),
    (({"ts": TS, "scm": 5, "t": 2}, {"q": "x", "t": 1}),
     "open: field 'scm' of the key of event 0 (key item at byte offset 8) must be a string, got number 5"),
    (({"ts": TS, "t": 2}, {"t": 1}),
     "open: field 'q' of the DDL value of event 0 (key item at byte offset 8) must be a string, got null"),
    ((row_key(ptn="6"), INSERT), f'open: field \'ptn\' of {WHERE} must be an integer in 0..18446744073709551615, '
     'got string "6"'),
    ((row_key(), {}), f"open: the row value of {WHERE} has neither 'u' (insert/update) nor 'd' (delete), or both "
     "are empty"),
    ((row_key(), {"u": {}, "d": {}}), f"open: the row value of {WHERE} has neither 'u' (insert/update) nor 'd' "
     "(delete), or both are empty"),
    ((row_key(), {**INSERT, "d": INSERT["u"]}), f"open: the row value of {WHERE} mixes 'd' with 'u' or 'p'"),
    ((row_key(), {"u": [1]}), f"open: field 'u' of the row value of {WHERE} must be a JSON object, got an array"),
    ((row_key(), {"u": {"id": 1}}), f"open: column 'id' in 'u' of {WHERE} must be a JSON object {{t, f, v}}, "
     "got number 1"),
    ((row_key(), {"u": {"id": {"t": 3, "f": 0}}}), f"open: column 'id' in 'u' of {WHERE} has no field 'v'"),
    ((row_key(), {"u": {"id": {"f": 0, "v": 1}}}), f"open: column 'id' in 'u' of {WHERE} has no field 't'"),
    ((row_key(), {"u": {"id": {"t": 3, "h": 1, "v": 1}}}), f"open: field 'h' of column 'id' in 'u' of {WHERE} "
     "must be true or false, got number 1"),
    ((row_key(), {"u": {"g": {"t": 255, "f": 0, "v": "x"}}}), f"open: column 'g' in 'u' of {WHERE} (type code "
     "255, flags 0): MySQL type code 255 (geometry) is not supported by the decoder; exclude the table from the "
     "pipeline (target.exclude) or ask for the type to be supported"),
    ((row_key(), {"u": {"id": {"t": 1, "f": 0, "v": 300}}, "p": {"id": {"t": 1, "f": 0, "v": 1}}}),
     f"open: column 'id' in 'u' of {WHERE} (type code 1, flags 0): 300 is outside the range -128..127"),
    ((row_key(), {"d": {"b": {"t": 15, "f": 1, "v": "\\q"}}}), f"open: column 'b' in 'd' of {WHERE} (type code "
     "15, flags 1): invalid escape \\q at character 0 in Go-quoted string"),
    ((row_key(), {"u": INSERT["u"], "p": {"ts": {"t": 7, "f": 1, "v": "2024-13-01 00:00:00"}}}),
     f"open: column 'ts' in 'p' of {WHERE} (type code 7, flags 1): '2024-13-01 00:00:00' is not a valid time "
     "in UTC (month must be in 1..12)"),
]  # fmt: skip


@pytest.mark.parametrize(("event", "error"), BAD_CONTENT)
def test_bad_content(event: tuple[dict[str, Any], dict[str, Any] | None], error: str) -> None:
    assert decode_error(message(event)) == error


def test_malformed_batch_errors_reach_the_caller() -> None:
    key, value = frame_batch([b'{"ts":1,"t":3}', b'{"ts":2,"t":3}'], [b"", b""])
    value = value[:8]
    assert decode_error(RawMessage("cdc", 3, 42, 0, key, value)) == (
        "open: the key holds 2 items but the value holds 1; key item i pairs with value item i, so the message "
        "is truncated or corrupted"
    )
    key, value = frame_batch([b'{"ts":1,"t":3}', b'{"ts":2,"t":'], [b"", b""])
    assert decode_error(RawMessage("cdc", 3, 42, 0, key, value)) == (
        "open: key item 1 at byte offset 30 is not valid JSON: Expecting value: line 1 column 13 (char 12)"
    )
    key, value = frame_batch([b'{"ts":1,"scm":"a","tbl":"b","t":1}'], [b'{"u":'])
    assert decode_error(RawMessage("cdc", 3, 42, 0, key, value)) == (
        "open: value item 0 at byte offset 0 is not valid JSON: Expecting value: line 1 column 6 (char 5) (if the "
        "changefeed compresses messages, set the pipeline's codec.compression to match)"
    )
    assert decode_error(RawMessage("cdc", 3, 42, 0, (2).to_bytes(8, "big"), b"")) == (
        "open: unsupported batch version 2 in the first 8 bytes of the key; this decoder reads Open Protocol "
        "batch version 1 (check that the pipeline's protocol matches the changefeed)"
    )


def test_compressed_value_read_without_compression() -> None:
    plain = message((row_key(), INSERT))
    pairs = split_batch(plain.key, plain.value)
    key, value = frame_batch([k.data for k, _ in pairs], [bytes(cramjam.lz4.compress(v.data)) for _, v in pairs])
    assert decode_error(RawMessage("cdc", 3, 42, 0, key, value)) == (
        f"open: the value of {WHERE} is an LZ4 frame, but codec.compression is none: the changefeed compresses "
        "its messages (large-message-handle-compression=lz4); set the pipeline's codec.compression to lz4"
    )
