"""Messages for ``test_simple_avro_differential``: the simulator's Simple Avro encoder over a table of
every column type (per server zone, with and without row checksums), two schema versions, unknown
versions, other message types, and malformed or unusual mutations of a valid message, written as
fastavro writes the message schema or edited byte by byte where the schema cannot express them.

Each builder returns :class:`Case` objects: (key, value) pairs plus the indexes of the messages the
vector path must take. What it must take is stated here from the documented rule
(``simple_avro_batch``), not from the vector path's code: a DML (INSERT/UPDATE/DELETE, no
claim-check, not handle-key-only) of a table version the lookup holds exactly, sent uncompressed,
whose every value is of the branch TiCDC writes for its column, but those holding the zero
TIMESTAMP or a TIMESTAMP whose wall time is from 2038 on in a zone other than UTC (the twins'
documented declines).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from decimal import localcontext
from typing import Any
from zoneinfo import ZoneInfo

import fastavro

from tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases import Case, Pair
from tests.ticdc_lake.spark.arrow_decode.simple_json_differential_cases import (
    DB,
    EVO_UNKNOWN,
    every_type_schema,
    evolving_schemas,
    plain_row,
    plain_schema,
)
from tests.ticdc_lake.spark.type_cases import SERVER_ZONE, ZERO_DATE, ZERO_DATETIME, ZERO_TIMESTAMP
from ticdc_lake.protocols.simple_avro import message_schema
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.simple_avro_encoder import SimpleAvroEncoder

ZONE = SERVER_ZONE
NS = "com.pingcap.simple.avro."
#: TIMESTAMP wall times from here on are declined outside UTC (``simple_columns.timestamp_twin``).
_RULES_END = datetime(2038, 1, 1)


class ZeroDateAvroEncoder(SimpleAvroEncoder):
    """Simple Avro as TiCDC writes MySQL zero dates, which the reference model cannot hold."""

    def encode_value(self, column: ColumnSchema, value: Any) -> tuple[str, Any] | None:
        zero = "0000-00-00 00:00:00" + ("." + "0" * column.fsp if column.fsp else "")
        if column.mysql_type == "date" and value == ZERO_DATE:
            return ("string", "0000-00-00")
        if column.mysql_type == "datetime" and value == ZERO_DATETIME:
            return ("string", zero)
        if column.mysql_type == "timestamp" and value == ZERO_TIMESTAMP:
            return (NS + "Timestamp", {"location": self.server_time_zone, "value": zero})
        return super().encode_value(column, value)


class ChecksumEncoder(ZeroDateAvroEncoder):
    """As TiCDC writes rows with the row checksum on (``integrity.integrity-check-level=correctness``):
    the ``checksum`` record spliced in where the null branch was (a fastavro round trip of the whole
    payload would write DOUBLE values in the ``float`` branch)."""

    def encode_row(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> Any:
        message = super().encode_row(change, schema, commit_ts, build_ts)
        payload = read_payload(message.value)
        head = write({**payload, "data": None, "old": None})[:-3]  # up to the checksum's null branch
        assert message.value.startswith(head + b"\x00")
        checksum = b"\x02" + _varint(1) + b"\x00" + _varint(123456789) + _varint(-5)
        return replace(message, value=head + checksum + message.value[len(head) + 1 :])


def encoder(zone: str = ZONE, *, checksum: bool = False) -> SimpleAvroEncoder:
    return ChecksumEncoder(zone) if checksum else ZeroDateAvroEncoder(zone)


def write(payload: Mapping[str, Any], kind: str = "DML", record: str = "DML") -> bytes:
    """A ``Message`` of ``kind`` holding ``payload`` as the ``record`` branch, as fastavro writes it."""
    buffer = io.BytesIO()
    fastavro.schemaless_writer(
        buffer, message_schema(), (NS + "Message", {"type": kind, "payload": (NS + record, payload)})
    )
    return buffer.getvalue()


def read_payload(value: bytes | None) -> dict[str, Any]:
    """The payload record of a valid message (record names kept, as ``write`` takes them)."""
    decoded: Any = fastavro.schemaless_reader(
        io.BytesIO(value or b""), message_schema(), return_record_name=True, return_record_name_override=True
    )
    return dict(decoded[1]["payload"][1])


def encode(enc: SimpleAvroEncoder, change: RowChange, schema: TableSchema, commit_ts: int) -> Pair:
    with localcontext() as context:
        context.prec = 100  # DECIMAL(65,30) has 65 digits; Python's default context keeps 28
        message = enc.encode_row(change, schema, commit_ts, commit_ts)
    return message.key, message.value


def takes(change: RowChange, schema: TableSchema, zone: str) -> bool:
    """The rule above, for a DML of a version the lookup holds whose every column has a twin."""
    local = ZoneInfo(zone)
    for image in (change.before, change.after):
        for name, value in (image or {}).items():
            column = schema.column(name)
            if column is None or column.mysql_type != "timestamp" or not isinstance(value, datetime):
                continue
            if value == ZERO_TIMESTAMP:
                return False
            if zone != "UTC" and value.astimezone(local).replace(tzinfo=None) >= _RULES_END:
                return False
    return True


def dml_case(
    name: str,
    schema: TableSchema,
    rows: Sequence[Mapping[str, Any]],
    enc: SimpleAvroEncoder,
    *,
    commit_ts: int,
    take: bool,
) -> Case:
    """Each row inserted, then updated to the next row, then deleted (one message each)."""
    case = Case(name)
    db, table = schema.database, schema.table
    changes = [RowChange(DmlOp.INSERT, db, table, after=row) for row in rows]
    for old, new in zip(rows, [*rows[1:], rows[0]], strict=True):
        changes.append(RowChange(DmlOp.UPDATE, db, table, before=old, after={**new, "id": old["id"]}))
    changes += [RowChange(DmlOp.DELETE, db, table, before=row) for row in rows]
    for n, change in enumerate(changes):
        case.add(encode(enc, change, schema, commit_ts + n), take and takes(change, schema, enc.server_time_zone))
    return case


# ----------------------------------------------------------------------------- two versions
def evolving_case(enc: SimpleAvroEncoder) -> Case:
    """Rows of both versions (taken), the ALTER between them, a BOOTSTRAP and a WATERMARK (never
    taken), rows of a version the lookup does not hold and of version 0 (PENDING in the reference),
    and version-1 rows carrying version 2's column (quarantined by the reference)."""
    v1, v2 = evolving_schemas()
    unknown = replace(v2, version=EVO_UNKNOWN)
    unversioned = replace(v1, version=None)
    case = Case("evolving")
    for n in range(24):
        schema = (v1, v2, unknown, unversioned)[n % 4]
        row: dict[str, Any] = {"id": n, "a": n * 7 - 50, "b": f"row {n} é"}
        if schema in (v2, unknown):
            row["c"] = datetime(2024, 1, 1 + n % 28).date()
        op = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)[n % 3]
        before = row if op is not DmlOp.INSERT else None
        change = RowChange(op, DB, "evo", before=before, after=None if op is DmlOp.DELETE else row)
        case.add(encode(enc, change, schema, 7_500 + n), schema in (v1, v2))
    for n in range(3):  # version 2's rows sent as version 1
        row = {"id": 100 + n, "a": 1, "b": "x", "c": datetime(2024, 1, 1).date()}
        _, value = encode(enc, RowChange(DmlOp.INSERT, DB, "evo", after=row), v2, 7_600 + n)
        payload = read_payload(value)
        payload["schemaVersion"] = v1.version
        case.add((None, write(payload)), False)
    ddl = enc.encode_ddl(DdlChange("ALTER", "ALTER TABLE diffdb.evo ADD COLUMN c DATE", DB, "evo", v2, v1), 8_000, 1)
    case.add((ddl.key, ddl.value), False)
    bootstrap = enc.encode_bootstrap(v1, 2)
    case.add((bootstrap.key, bootstrap.value), False)
    watermark = enc.encode_watermark(9_999, 9_999)
    case.add((watermark.key, watermark.value), False)
    return case


def lookup_schemas() -> list[TableSchema]:
    """Every table version the cases' lookup knows (not :data:`EVO_UNKNOWN`)."""
    return [every_type_schema(), *evolving_schemas(), plain_schema()]


# ----------------------------------------------------------------------------- mutations
def plain_payload(enc: SimpleAvroEncoder, n: int, op: DmlOp = DmlOp.INSERT, commit_ts: int = 6_000) -> dict[str, Any]:
    row = plain_row(n)
    before = None if op is DmlOp.INSERT else row
    after = None if op is DmlOp.DELETE else row
    _, value = encode(enc, RowChange(op, DB, "plain", before=before, after=after), plain_schema(), commit_ts + n)
    return read_payload(value)


def plain_pair(enc: SimpleAvroEncoder, n: int, op: DmlOp = DmlOp.INSERT) -> Pair:
    return None, write(plain_payload(enc, n, op))


def _varint(value: int) -> bytes:
    """Avro's zig-zag varint of a long."""
    bits = (value << 1) ^ (value >> 63)
    bits &= (1 << 64) - 1
    out = bytearray()
    while bits >= 0x80:
        out.append((bits & 0x7F) | 0x80)
        bits >>= 7
    out.append(bits)
    return bytes(out)


def _with(payload: Mapping[str, Any], **changes: Any) -> bytes:
    return write({**payload, **changes})


def _data(payload: Mapping[str, Any], name: str, value: Any) -> bytes:
    return write({**payload, "data": {**payload["data"], name: value}})


def _entries(payload: Mapping[str, Any]) -> tuple[bytes, list[bytes]]:
    """(the value up to the ``data`` map, each entry of ``data`` as bytes) of an INSERT."""
    head = write({**payload, "data": None, "old": None})[:-2]  # data and old null: one byte each
    entries = []
    for name, value in payload["data"].items():
        single = write({**payload, "data": {name: value}, "old": None})
        assert single.startswith(head + b"\x02\x02")
        assert single.endswith(b"\x00\x00")
        entries.append(single[len(head) + 2 : -2])
    return head, entries


def _map(head: bytes, blocks: Sequence[bytes]) -> bytes:
    """An INSERT with ``data`` written as the given blocks (count and size already in each), ``old`` null."""
    return head + b"\x02" + b"".join(blocks) + b"\x00" + b"\x00"


def _key(n: int) -> bytes:
    """The map key ``k<n>`` as Avro writes a string."""
    text = f"k{n}".encode()
    return _varint(len(text)) + text


def _sub(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1, (old, data[:400])
    return data.replace(old, new, 1)


def mutations(enc: SimpleAvroEncoder) -> list[tuple[str, bytes | None]]:
    """Malformed and unusual variants of one valid ``plain`` INSERT (id 1)."""
    payload = plain_payload(enc, 1)
    value = write(payload)
    head, entries = _entries(payload)
    count = len(entries)
    body = b"".join(entries)
    stamp = payload["data"]["ts"][1]
    ts = (NS + "Timestamp", stamp)
    assert stamp["location"] == ZONE
    return [
        # values
        ("INT above its range", _data(payload, "n", ("long", 1 << 31))),
        ("INT below its range", _data(payload, "n", ("long", -(1 << 31) - 1))),
        ("TINYINT above its range", _data(payload, "ti", ("long", 128))),
        ("an integer a string", _data(payload, "n", ("string", "5"))),
        ("an integer a double", _data(payload, "n", ("double", 5.0))),
        ("an integer an UnsignedBigint", _data(payload, "n", (NS + "UnsignedBigint", {"value": 5}))),
        ("a string a long", _data(payload, "s", ("long", 5))),
        ("a string bytes", _data(payload, "s", ("bytes", b"abc"))),
        ("bytes a string", _data(payload, "vb", ("string", "AP9hYg=="))),
        ("BIGINT UNSIGNED a canonical string", _data(payload, "u", ("string", "18446744073709551615"))),
        ("BIGINT UNSIGNED a string with leading zeros", _data(payload, "u", ("string", "007"))),
        ("BIGINT UNSIGNED a string above uint64", _data(payload, "u", ("string", "18446744073709551616"))),
        ("BIGINT UNSIGNED a long", _data(payload, "u", ("long", 5))),
        ("BIGINT UNSIGNED zero", _data(payload, "u", (NS + "UnsignedBigint", {"value": 0}))),
        ("YEAR out of range", _data(payload, "y", ("long", 2156))),
        ("ENUM index beyond the members", _data(payload, "e", ("long", 3))),
        ("ENUM index 0", _data(payload, "e", ("long", 0))),
        ("ENUM index negative", _data(payload, "e", ("long", -1))),
        ("SET bits beyond the members", _data(payload, "st", ("long", 4))),
        ("double NaN", _data(payload, "f", ("double", float("nan")))),
        ("double infinity", _data(payload, "f", ("double", float("inf")))),
        ("double minus zero", _data(payload, "f", ("double", -0.0))),
        ("double large", _data(payload, "f", ("double", 1.5e300))),
        ("double tiny", _data(payload, "f", ("double", 5e-324))),
        ("double a float", _data(payload, "f", ("float", 1.5))),
        ("decimal with a trailing dot", _data(payload, "dc", ("string", "12."))),
        ("decimal with an exponent", _data(payload, "dc", ("string", "1e3"))),
        ("DATE month 13", _data(payload, "d", ("string", "2024-13-01"))),
        ("DATE zero", _data(payload, "d", ("string", "0000-00-00"))),
        ("DATETIME February 30", _data(payload, "dt", ("string", "2024-02-30 12:34:56.123456"))),
        ("TIME beyond 838 hours", _data(payload, "tm", ("string", "-839:00:00"))),
        ("TIMESTAMP in another zone", _data(payload, "ts", (ts[0], {**stamp, "location": "Asia/Shanghai"}))),
        ("TIMESTAMP in the server zone by an empty name", _data(payload, "ts", (ts[0], {**stamp, "location": ""}))),
        ("TIMESTAMP in the server zone by Local", _data(payload, "ts", (ts[0], {**stamp, "location": "Local"}))),
        ("TIMESTAMP in an unknown zone", _data(payload, "ts", (ts[0], {**stamp, "location": "Mars/Olympus"}))),
        ("TIMESTAMP in a skipped hour", _data(payload, "ts", (ts[0], {**stamp, "value": "2024-03-10 02:30:00.000"}))),
        ("TIMESTAMP zero", _data(payload, "ts", (ts[0], {**stamp, "value": "0000-00-00 00:00:00.000"}))),
        ("TIMESTAMP a string", _data(payload, "ts", ("string", stamp["value"]))),
        ("a string with NUL and U+2028", _data(payload, "s", ("string", "a\x00\u2028b"))),
        ("a value null", _data(payload, "n", None)),
        # images
        ("missing column", _with(payload, data={k: v for k, v in payload["data"].items() if k != "n"})),
        ("extra column", _data(payload, "nn", ("long", 1))),
        ("columns reordered", _with(payload, data=dict(reversed(payload["data"].items())))),
        ("data empty", _with(payload, data={})),
        ("data null", _with(payload, data=None)),
        ("old in an INSERT", _with(payload, old=payload["data"])),
        ("type UPDATE without old", _with(payload, type="UPDATE")),
        ("type DELETE with data", _with(payload, type="DELETE")),
        # fixed fields
        ("version 2", _with(payload, version=2)),
        ("schemaVersion 0", _with(payload, schemaVersion=0)),
        ("schemaVersion unknown", _with(payload, schemaVersion=1001)),
        ("schemaVersion negative", _with(payload, schemaVersion=-1)),
        ("commitTs negative", _with(payload, commitTs=-1)),
        ("commitTs 0", _with(payload, commitTs=0)),
        ("tableID negative", _with(payload, tableID=-31)),
        ("database of another table", _with(payload, table="evo")),
        ("handleKeyOnly false", _with(payload, handleKeyOnly=False)),
        ("handleKeyOnly true", _with(payload, handleKeyOnly=True)),
        ("claim-check reference", _with(payload, claimCheckLocation="file:///nowhere/x.avro", handleKeyOnly=True)),
        ("checksum", _with(payload, checksum={"version": 1, "corrupted": False, "current": 1, "previous": -1})),
        ("checksum corrupted", _with(payload, checksum={"version": 1, "corrupted": True, "current": 1, "previous": 2})),
        # bytes
        (
            "map in two blocks",
            _map(head, [_varint(2) + b"".join(entries[:2]), _varint(count - 2) + b"".join(entries[2:])]),
        ),
        ("map with a negative block count", _map(head, [_varint(-count) + _varint(len(body)) + body])),
        ("map with a wrong block size", _map(head, [_varint(-count) + _varint(3) + body])),
        ("duplicated key", _map(head, [_varint(count + 1) + body + entries[1]])),
        ("map count beyond its entries", _map(head, [_varint(count + 1) + body])),
        ("map count short of its entries", _map(head, [_varint(count - 1) + body])),
        ("a map of 5,000 entries", _map(head, [_varint(5_000) + b"".join(_key(n) + b"\x00" for n in range(5_000))])),
        ("map value branch 8", _sub(value, b"\x02n\x02\x0a", b"\x02n\x10\x0a")),
        ("map value branch negative", _sub(value, b"\x02n\x02\x0a", b"\x02n\x01\x0a")),
        ("key not UTF-8", _sub(value, b"\x04dc", b"\x04d\xff")),
        ("string not UTF-8", _sub(value, b"\x06abc", b"\x06ab\xff")),
        ("Timestamp location not UTF-8", _sub(value, b"America/New_York", b"America/New_Yor\xff")),
        ("database not UTF-8", _sub(value, b"\x0cdiffdb", b"\x0cdiffd\xff")),
        ("version as a two-byte varint", _sub(value, b"\x16\x06\x06\x02", b"\x16\x06\x06\x82\x00")),
        ("an 11-byte varint", _sub(value, b"\x16\x06\x06\x02", b"\x16\x06\x06" + b"\x82" + b"\x80" * 9 + b"\x00")),
        (
            "handleKeyOnly a boolean 2",
            _sub(_with(payload, handleKeyOnly=False), b"\x02\x00\x00\x02", b"\x02\x02\x00\x02"),
        ),
        ("DML type 3", _sub(value, b"\x0aplain\x3e\x00", b"\x0aplain\x3e\x06")),
        ("DML type -1", _sub(value, b"\x0aplain\x3e\x00", b"\x0aplain\x3e\x01")),
        ("message type WATERMARK", b"\x16\x00" + value[2:]),
        ("payload union negative", b"\x16\x06\x05" + value[3:]),
        ("first byte 0x00", b"\x00" + value[1:]),
        ("a Confluent header", b"\x00\x00\x00\x00\x01" + value),
        ("a byte after the end", value + b"\x00"),
        ("truncated by one byte", value[:-1]),
        ("truncated by two bytes", value[:-2]),
        ("truncated in the data", value[: len(value) // 2]),
        ("three bytes", value[:3]),
        ("tombstone", None),
        ("empty value", b""),
    ]


def mutation_cases(enc: SimpleAvroEncoder) -> list[tuple[str, list[Pair]]]:
    """Per mutation of a valid ``plain`` INSERT: (its name, [a valid INSERT, the mutation, a valid DELETE])."""
    return [
        (name, [plain_pair(enc, 2), (None, mutated), plain_pair(enc, 3, DmlOp.DELETE)])
        for name, mutated in mutations(enc)
    ]
