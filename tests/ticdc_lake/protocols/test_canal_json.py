"""CanalJsonDecoder on the real encoder's output and on hand-built messages.

Hand-built messages follow docs/protocols.md ("Canal-JSON") and TiCDC's ``canal_json_row_event_encoder.go`` /
``canal_json_message.go``, written here by hand so that no project encoder can share a mistake.
"""

from __future__ import annotations

import json
from typing import Any

import cramjam
import pytest

from tests import tiflow_vectors
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventFacts, EventKind, Op, RawMessage, RowImage, SourcePosition
from ticdc_lake.protocols.canal_json import CanalJsonDecoder
from ticdc_lake.protocols.ddl_text import ddl_type_from_sql
from ticdc_lake.schema.lookup import MemorySchemaLookup

GOLDEN = tiflow_vectors.EXTRACTED / "canal_json_txn_event_decoder_test_L98_insert_update_delete.jsonl"
TS = 447984084414103554
NO_SCHEMAS = MemorySchemaLookup()
POS = SourcePosition("cdc", 0, 42, 0)


def raw(value: bytes | None) -> RawMessage:
    return RawMessage("cdc", 0, 42, 1700000000000, None, value)


def encode(doc: dict[str, Any]) -> RawMessage:
    # Go writes JSON without spaces and with non-ASCII characters as UTF-8.
    return raw(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def decode(message: RawMessage, **options: Any) -> list[ChangeEvent]:
    return CanalJsonDecoder(CodecOptions(**options)).decode(message, NO_SCHEMAS)


def decode_error(message: RawMessage, **options: Any) -> str:
    with pytest.raises(DecodeError) as info:
        decode(message, **options)
    assert info.value.protocol == "canal-json"
    return str(info.value)


def dml(kind: str, data: dict[str, Any] | None, old: dict[str, Any] | None = None, /, **extra: Any) -> dict[str, Any]:
    """A DML message in the encoder's key order, with the TiDB extension."""
    mysql_types = extra.pop("mysql_types", {"id": "int", "name": "varchar"})
    doc: dict[str, Any] = {
        "id": 0,
        "database": "shop",
        "table": "orders",
        "pkNames": ["id"],
        "isDdl": False,
        "type": kind,
        "es": TS >> 18,
        "ts": 1700000000123,
        "sql": "",
        "sqlType": {name: 4 for name in mysql_types},
        "mysqlType": mysql_types,
        "old": None if old is None else [old],
        "data": None if data is None else [data],
        "_tidb": {"commitTs": TS},
    }
    doc.update(extra)
    return doc


# --- golden file (no TiDB extension) ------------------------------------------------------------

GOLDEN_TYPES = {
    "FirstName": "varchar",
    "HireDate": "date",
    "LastName": "varchar",
    "OfficeLocation": "varchar",
    "id": "int",
}
GOLDEN_SQL_TYPES = {"FirstName": 12, "HireDate": 91, "LastName": 12, "OfficeLocation": 12, "id": 4}
ROW_2014: RowImage = {
    "FirstName": "Bob",
    "HireDate": "2014-06-04",
    "LastName": "Smith",
    "OfficeLocation": "New York",
    "id": "101",
}
ROW_2015: RowImage = {
    "FirstName": "Bob",
    "HireDate": "2015-10-08",
    "LastName": "Smith",
    "OfficeLocation": "Los Angeles",
    "id": "101",
}


def golden_event(op: Op, before: RowImage | None, after: RowImage | None) -> ChangeEvent:
    facts = EventFacts(
        handle_key=("id",),
        primary_key=("id",),
        unresolved_enum_set=(),
        sql_types=GOLDEN_SQL_TYPES,
        offset_ordered=True,
        old_columns=tuple(sorted(ROW_2014)) if op is Op.UPDATE else None,
    )
    return ChangeEvent(
        kind=EventKind.DML,
        position=POS,
        commit_ts=0,
        database="test",
        table="employee",
        op=op,
        before=before,
        after=after,
        column_types=GOLDEN_TYPES,
        facts=facts,
    )


GOLDEN_EVENTS = [
    golden_event(Op.INSERT, None, ROW_2014),
    golden_event(Op.UPDATE, ROW_2014, ROW_2015),
    golden_event(Op.DELETE, ROW_2015, None),
]


@tiflow_vectors.needs_vectors
@pytest.mark.parametrize("line", [0, 1, 2])
def test_golden_lines(line: int) -> None:
    value = GOLDEN.read_bytes().splitlines()[line]
    assert decode(raw(value), enable_tidb_extension=False) == [GOLDEN_EVENTS[line]]
    assert CanalJsonDecoder(CodecOptions()).may_carry_schema(raw(value)) is False


@tiflow_vectors.needs_vectors
def test_golden_line_needs_the_extension_setting_to_match() -> None:
    value = GOLDEN.read_bytes().splitlines()[0]
    assert decode_error(raw(value)) == (
        "canal-json: the message has no '_tidb' field but codec.enable_tidb_extension is true; set it "
        "to match the changefeed's enable-tidb-extension"
    )


# --- every type, with the TiDB extension ---------------------------------------------------------

ALL_TYPES = {
    "id": "bigint unsigned",
    "t": "tinyint",
    "i": "int(11)",
    "y": "year",
    "b": "bit(10)",
    "f": "float",
    "d": "double",
    "dec": "decimal(10,2)",
    "c": "char(4)",
    "txt": "longtext",
    "j": "json",
    "bin": "varbinary(8)",
    "blb": "blob",
    "dt": "date",
    "dtm": "datetime(3)",
    "tm": "time",
    "ts": "timestamp(3)",
    "e": "enum",
    "s": "set",
    "e2": "enum('small','medium','large')",
    "s2": "set('a','b','c')",
    "n": "varchar(10)",
}
ALL_VALUES = {
    "id": "18446744073709551615",
    "t": "-128",
    "i": "-2147483648",
    "y": "2023",
    "b": "1023",
    "f": "3.14",
    "d": "0.000001",
    "dec": "-0.10",
    "c": "日本語🙂",
    "txt": 'line1\nline2 "quoted"',
    "j": '{"k": "v"}',
    "bin": "\x00\xff\x80A",
    "blb": "\xff\x00",
    "dt": "2023-11-30",
    "dtm": "2023-11-30 12:34:56.123",
    "tm": "-12:34:56",
    "ts": "2024-01-01 08:00:00.250",
    "e": "2",
    "s": "5",
    "e2": "2",
    "s2": "5",
    "n": None,
}
ALL_CANONICAL = {
    **ALL_VALUES,
    "bin": "AP+AQQ==",
    "blb": "/wA=",
    "ts": "2024-01-01T00:00:00.250Z",
    "e2": "medium",
    "s2": "a,c",
}


def test_insert_of_every_type() -> None:
    doc = dml("INSERT", ALL_VALUES, mysql_types=ALL_TYPES)
    doc["sqlType"] = {"id": 3, "n": 12}
    [event] = decode(encode(doc), server_time_zone="Asia/Shanghai")
    assert event == ChangeEvent(
        kind=EventKind.DML,
        position=POS,
        commit_ts=TS,
        database="shop",
        table="orders",
        op=Op.INSERT,
        after=ALL_CANONICAL,
        column_types=ALL_TYPES,
        facts=EventFacts(
            handle_key=("id",), primary_key=("id",), unresolved_enum_set=("e", "s"), sql_types={"id": 3, "n": 12}
        ),
    )


def test_commit_ts_is_exact_uint64() -> None:
    doc = dml("INSERT", {"id": "1", "name": "x"})
    doc["_tidb"] = {"commitTs": (1 << 64) - 1}
    [event] = decode(encode(doc))
    assert event.commit_ts == 18446744073709551615


def test_update_with_partial_old_overlays_data() -> None:
    doc = dml(
        "UPDATE",
        {"id": "1", "name": "new", "e": "1"},
        {"name": "old", "e": "2"},
        mysql_types={"id": "int", "name": "varchar(20)", "e": "enum"},
    )
    [event] = decode(encode(doc))
    assert (event.op, event.before, event.after) == (
        Op.UPDATE,
        {"id": "1", "name": "old", "e": "2"},
        {"id": "1", "name": "new", "e": "1"},
    )
    assert event.facts.old_columns == ("e", "name")
    assert event.facts.unresolved_enum_set == ("e",)


def test_update_with_empty_old_has_before_equal_to_data() -> None:
    [event] = decode(encode(dml("UPDATE", {"id": "1", "name": "x"}, {})))
    assert event.before == event.after == {"id": "1", "name": "x"}
    assert event.facts.old_columns == ()


def test_delete_carries_its_row_in_data_and_null_stays_null() -> None:
    [event] = decode(encode(dml("DELETE", {"id": "1", "name": None})))
    assert (event.op, event.before, event.after) == (Op.DELETE, {"id": "1", "name": None}, None)


def test_table_without_primary_key() -> None:
    doc = dml("INSERT", {"id": "1", "name": "x"}, pkNames=None)
    [event] = decode(encode(doc))
    assert (event.facts.handle_key, event.facts.primary_key) == ((), ())


def test_ddl_with_extension() -> None:
    doc = {
        "id": 0,
        "database": "shop",
        "table": "orders",
        "pkNames": None,
        "isDdl": True,
        "type": "CINDEX",
        "es": TS >> 18,
        "ts": 1700000000123,
        "sql": "ALTER TABLE `shop`.`orders` ADD INDEX `k`(`name`)",
        "sqlType": None,
        "mysqlType": None,
        "data": None,
        "old": None,
        "_tidb": {"commitTs": TS},
    }
    message = encode(doc)
    assert CanalJsonDecoder(CodecOptions()).may_carry_schema(message) is True
    assert decode(message) == [
        ChangeEvent(
            kind=EventKind.DDL,
            position=POS,
            commit_ts=TS,
            database="shop",
            table="orders",
            ddl_type="CINDEX",
            ddl_query="ALTER TABLE `shop`.`orders` ADD INDEX `k`(`name`)",
            facts=EventFacts(ddl_type_from="type"),
        )
    ]


def test_schema_level_ddl_without_extension_guesses_type_from_sql() -> None:
    doc = {"id": 0, "database": "shop", "table": "", "isDdl": True, "type": "", "sql": "CREATE DATABASE shop"}
    assert decode(encode(doc), enable_tidb_extension=False) == [
        ChangeEvent(
            kind=EventKind.DDL,
            position=POS,
            commit_ts=0,
            database="shop",
            table=None,
            ddl_type="QUERY",
            ddl_query="CREATE DATABASE shop",
            facts=EventFacts(ddl_type_from="sql", offset_ordered=True),
        )
    ]


@pytest.mark.parametrize(
    ("query", "ddl_type"),
    [
        ("CREATE TABLE t (a int)", "CREATE"),
        ("create table `t`(a int)", "CREATE"),
        ("CREATE UNIQUE INDEX k ON t(a)", "CINDEX"),
        ("CREATE INDEX k ON t(a)", "CINDEX"),
        ("DROP TABLE `db`.`t`", "ERASE"),
        ("DROP INDEX k ON t", "DINDEX"),
        ("TRUNCATE TABLE t", "TRUNCATE"),
        ("RENAME TABLE `a`.`b` TO `c`.`d`", "RENAME"),
        ("ALTER TABLE t ADD COLUMN c int", "ALTER"),
        ("CREATE DATABASE d", "QUERY"),
        ("DROP DATABASE d", "QUERY"),
        ("CREATE VIEW v AS SELECT 1", "QUERY"),
        ("CREATE TABLES", "QUERY"),
    ],
)
def test_ddl_type_from_sql(query: str, ddl_type: str) -> None:
    assert ddl_type_from_sql(query) == ddl_type


def test_watermark() -> None:
    doc = {
        "id": 0,
        "database": "",
        "table": "",
        "pkNames": None,
        "isDdl": False,
        "type": "TIDB_WATERMARK",
        "es": TS >> 18,
        "ts": 1700000000123,
        "sql": "",
        "sqlType": None,
        "mysqlType": None,
        "data": None,
        "old": None,
        "_tidb": {"watermarkTs": TS},
    }
    assert decode(encode(doc)) == [ChangeEvent(kind=EventKind.WATERMARK, position=POS, commit_ts=TS)]


# --- malformed and unsupported input ---------------------------------------------------------------


def with_tidb(**fields: Any) -> dict[str, Any]:
    return dml("INSERT", {"id": "1", "name": "x"}, _tidb={"commitTs": TS, **fields})


WHERE = f"the INSERT of shop.orders at commit ts {TS}"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            with_tidb(onlyHandleKey=True),
            f"handle-key-only message for shop.orders at commit ts {TS}: the full row must be read from the "
            "upstream TiDB, which is not configured; TiCDC sent only the handle-key columns "
            "(_tidb.onlyHandleKey: true) because the row was larger than max-message-bytes. Set the changefeed's "
            "large-message-handle-option to claim-check (and the pipeline's codec.claim_check_storage_uri) or "
            "raise its max-message-bytes; this row must be recovered from TiDB at that commit ts",
        ),
        (
            with_tidb(onlyHandleKey="yes"),
            f"field '_tidb.onlyHandleKey' of {WHERE} must be true or false, got string \"yes\"",
        ),
        (
            with_tidb(claimCheckLocation="s3://bucket/cc/abc.json"),
            f"{WHERE} is a claim-check reference (_tidb.claimCheckLocation 's3://bucket/cc/abc.json'), but "
            "codec.claim_check_storage_uri is not set: set it to where the changefeed's claim-check-storage-uri "
            "can be read (file:///abs/path or s3://bucket/prefix) so the original message can be fetched",
        ),
        (
            dml("INSERT", {"id": "1", "name": "x"}, _tidb={}),
            "field 'commitTs' of field '_tidb' of the INSERT of shop.orders must be an integer in "
            "0..18446744073709551615, got null",
        ),
        (
            dml("INSERT", {"id": "1", "name": "x"}, _tidb={"commitTs": -1}),
            "field 'commitTs' of field '_tidb' of the INSERT of shop.orders must be an integer in "
            "0..18446744073709551615, got number -1",
        ),
        (dml("INSERT", {"id": "1", "name": "x"}, _tidb=[]), "field '_tidb' must be a JSON object, got an array"),
        (
            dml("UPSERT", {"id": "1"}),
            "field 'type' of a DML message (isDdl false) must be INSERT, UPDATE, DELETE or "
            'TIDB_WATERMARK, got string "UPSERT"',
        ),
        (dml("INSERT", {"id": "1"}, isDdl=None), "field 'isDdl' must be true or false, got null"),
        (dml("INSERT", {"id": "1"}, table=""), "the INSERT message must name its 'database' and 'table'"),
        (
            dml("INSERT", {"id": "1"}, database=5),
            "field 'database' of the INSERT message must be a string, got number 5",
        ),
        (dml("INSERT", None), f"field 'data' of {WHERE} must be an array with one row, got null"),
        (
            dml("INSERT", None, data=[{"id": "1"}, {"id": "2"}]),
            f"field 'data' of {WHERE} must be an array with one row object, got an array of 2",
        ),
        (
            dml("INSERT", None, data={"id": "1"}),
            f"field 'data' of {WHERE} must be an array with one row object, got an object",
        ),
        (dml("INSERT", {"id": "1"}, {"id": "0"}), f"field 'old' of {WHERE} must be null (only an UPDATE has 'old')"),
        (
            dml("UPDATE", {"id": "1"}),
            f"field 'old' of the UPDATE of shop.orders at commit ts {TS} must be an array with one row, got null",
        ),
        (dml("INSERT", {"id": "1"}, mysqlType=None), f"field 'mysqlType' of {WHERE} must be a JSON object, got null"),
        (
            dml("INSERT", {"id": "1", "extra": "x"}),
            f"column 'extra' in 'data' of {WHERE} has no entry in 'mysqlType'",
        ),
        (
            dml("INSERT", {"id": "1"}, mysql_types={"id": "geometry"}),
            f"field 'mysqlType' of {WHERE}: column 'id': type 'geometry' is not supported by the decoder; "
            "exclude the table from the pipeline (target.exclude) or ask for the type to be supported",
        ),
        (
            dml("INSERT", {"id": "1"}, mysql_types={"id": 3}),
            f"field 'mysqlType' of {WHERE}: column 'id' must have a type string, got number 3",
        ),
        (
            dml("INSERT", {"id": 1, "name": "x"}),
            f"column 'id' (int) in 'data' of {WHERE}: expected a JSON string, got number 1",
        ),
        (
            dml("INSERT", {"id": "4294967296"}, mysql_types={"id": "int unsigned"}),
            f"column 'id' (int unsigned) in 'data' of {WHERE}: 4294967296 is outside the range 0..4294967295",
        ),
        (
            dml("UPDATE", {"id": "1", "e": "1"}, {"e": "3"}, mysql_types={"id": "int", "e": "enum('a','b')"}),
            f"column 'e' (enum('a','b')) in 'old' of the UPDATE of shop.orders at commit ts {TS}: "
            "ENUM index 3 is beyond the 2 members ('a', 'b')",
        ),
        (
            dml("INSERT", {"id": "1"}, pkNames="id"),
            f"field 'pkNames' of {WHERE} must be an array of column names, got string \"id\"",
        ),
        (
            dml("INSERT", {"id": "1"}, sqlType={"id": "4"}),
            f"field 'sqlType' of {WHERE} must map columns to integer java.sql.Types codes",
        ),
        (
            {"isDdl": False, "type": "TIDB_WATERMARK", "_tidb": {"watermarkTs": "1"}},
            "field 'watermarkTs' of field '_tidb' of the TIDB_WATERMARK message must be an integer in "
            '0..18446744073709551615, got string "1"',
        ),
        (
            {"isDdl": True, "type": "QUERY", "sql": None, "_tidb": {"commitTs": TS}},
            "field 'sql' of a DDL message (isDdl true) must be the query, got null",
        ),
    ],
)
def test_malformed_messages(doc: dict[str, Any], message: str) -> None:
    assert decode_error(encode(doc)) == "canal-json: " + message


def test_extension_setting_mismatch() -> None:
    assert decode_error(encode(with_tidb()), enable_tidb_extension=False) == (
        "canal-json: the message has a '_tidb' field but codec.enable_tidb_extension is false; set it to "
        "true to match the changefeed (the extension carries the commit ts)"
    )
    doc = {"isDdl": False, "type": "TIDB_WATERMARK"}
    assert decode_error(encode(doc), enable_tidb_extension=False) == (
        "canal-json: a TIDB_WATERMARK message has no '_tidb' field with 'watermarkTs'"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "the message has no value (a Kafka tombstone); TiCDC never sends one"),
        (b"[1]", "the value must be a JSON object, got an array"),
        (
            b'{"a": NaN}',
            "the value is not valid JSON: NaN is not allowed in JSON (if the changefeed compresses "
            "messages, set the pipeline's codec.compression to match)",
        ),
        (
            b"\xff",
            "the value is not valid JSON: 'utf-8' codec can't decode byte 0xff in position 0: invalid start "
            "byte (if the changefeed compresses messages, set the pipeline's codec.compression to match)",
        ),
    ],
)
def test_unreadable_values(value: bytes | None, message: str) -> None:
    assert decode_error(raw(value)) == "canal-json: " + message


@pytest.mark.parametrize(
    ("compression", "compress"),
    [(Compression.SNAPPY, cramjam.snappy.compress_raw), (Compression.LZ4, cramjam.lz4.compress)],
)
def test_compressed_values_are_decompressed_first(compression: Compression, compress: Any) -> None:
    plain = encode(with_tidb())
    assert plain.value is not None
    packed = raw(bytes(compress(plain.value)))
    decoder = CanalJsonDecoder(CodecOptions(compression=compression))
    assert decoder.decode(packed, NO_SCHEMAS) == decode(plain)
    assert decoder.may_carry_schema(packed) is False
    ddl = encode({"isDdl": True, "type": "QUERY", "sql": "CREATE DATABASE d", "_tidb": {"commitTs": TS}})
    assert ddl.value is not None
    assert decoder.may_carry_schema(raw(bytes(compress(ddl.value)))) is True


def test_compression_mismatch() -> None:
    message = encode(with_tidb())
    decoder = CanalJsonDecoder(CodecOptions(compression=Compression.LZ4))
    assert decoder.may_carry_schema(message) is True  # undecodable: the main pass quarantines it
    assert decoder.may_carry_schema(raw(None)) is False
    reason = decode_error(message, compression=Compression.LZ4)
    assert reason.startswith("canal-json: the value could not be decompressed as lz4 (")
    assert reason.endswith(
        "; it looks like uncompressed JSON. Set the pipeline's codec.compression to none (now lz4): it must "
        "match the changefeed's large-message-handle-compression"
    )


def test_compressed_value_read_without_compression() -> None:
    plain = encode(with_tidb())
    assert plain.value is not None
    assert decode_error(raw(bytes(cramjam.snappy.compress_raw(plain.value)))) == (
        "canal-json: the value is a snappy block, but codec.compression is none: the changefeed compresses its "
        "messages (large-message-handle-compression=snappy); set the pipeline's codec.compression to snappy"
    )
