r"""Messages for ``test_simple_json_differential``: the simulator's Simple JSON encoder over a table
of every column type, two schema versions, unknown versions, other message types, and malformed or
unusual mutations of a valid message.

Each builder returns :class:`Case` objects: (key, value) pairs plus the indexes of the messages the
vector path must take. What it must take is stated here from the documented rule, not from the
vector path's code: a DML (INSERT/UPDATE/DELETE) of a table version the lookup holds exactly
(``schemaVersion`` not 0), sent uncompressed, without a ``\u`` escape in its text (TiCDC's Go
writer makes one for ``<``, ``>``, ``&``, U+2028/9 and control characters), without a ``\b`` or
``\f`` escape (only ``\"``, ``\\``, ``\n``, ``\r`` and ``\t`` are written as jsoniter writes them),
without the zero TIMESTAMP (``0000-00-00 00:00:00``, kept as sent by the Python decoder).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal, localcontext
from typing import Any

from tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases import Case, Pair
from tests.ticdc_lake.spark.type_cases import SERVER_ZONE, ZeroDateEncoder, wide_schema
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder

ZONE = SERVER_ZONE
DB = "diffdb"
EVO_V1, EVO_V2, EVO_UNKNOWN = 7_000, 8_000, 9_000
#: Control characters Python's json writes as ``\b`` and ``\f`` (the vector path writes ``\u0008``, ``\u000c``).
_SHORT_ESCAPED = ("\b", "\f")


def encoder() -> SimpleJsonEncoder:
    """The simulator's encoder, sending MySQL zero dates as TiCDC does."""
    return ZeroDateEncoder(ZONE)


def _primary(*names: str) -> tuple[IndexSchema, ...]:
    return (IndexSchema("PRIMARY", names, primary=True, unique=True),)


def every_type_schema() -> TableSchema:
    """The wide table of ``type_cases`` (a column of every type), version 1000."""
    return replace(wide_schema(DB), version=1_000, table_id=11)


def encode(enc: SimpleJsonEncoder, change: RowChange, schema: TableSchema, commit_ts: int) -> Pair:
    with localcontext() as context:
        context.prec = 100  # DECIMAL(65,30) has 65 digits; Python's default context keeps 28
        message = enc.encode_row(change, schema, commit_ts, commit_ts)
    return message.key, message.value


def takes(value: bytes, change: RowChange) -> bool:
    """The rule above, for a DML message of a version the lookup holds, all of whose columns have a twin."""
    texts = [v for image in (change.before, change.after) if image for v in image.values() if isinstance(v, str)]
    short = any(c in text for text in texts for c in _SHORT_ESCAPED)
    return b"\\u" not in value and not short and b'"value":"0000-00-00 00:00:00' not in value


def dml_case(
    name: str,
    schema: TableSchema,
    rows: Sequence[Mapping[str, Any]],
    enc: SimpleJsonEncoder,
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
        pair = encode(enc, change, schema, commit_ts + n)
        case.add(pair, take and takes(pair[1] or b"", change))
    return case


# ----------------------------------------------------------------------------- two versions
def evolving_schemas() -> tuple[TableSchema, TableSchema]:
    """Version :data:`EVO_V1` of table ``evo``; version :data:`EVO_V2` adds the DATE column ``c``."""
    columns = (column("id", "bigint", nullable=False), column("a", "int"), column("b", "varchar", length=20))
    v1 = TableSchema(DB, "evo", columns, _primary("id"), table_id=21, version=EVO_V1, source="simple-bootstrap")
    return v1, replace(v1, columns=(*columns, column("c", "date")), version=EVO_V2)


def _evo_row(n: int, with_c: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"id": n, "a": n * 7 - 50, "b": f"row {n} é"}
    if with_c:
        row["c"] = date(2024, 1, 1 + n % 28)
    return row


def evolving_case(enc: SimpleJsonEncoder) -> Case:
    """Rows of both versions (taken), the ALTER between them, a BOOTSTRAP and a WATERMARK (never
    taken), rows of a version the lookup does not hold and of version 0 (PENDING in the reference),
    and version-1 rows carrying version 2's column (quarantined by the reference)."""
    v1, v2 = evolving_schemas()
    unknown = replace(v2, version=EVO_UNKNOWN)
    unversioned = replace(v1, version=None)
    case = Case("evolving")
    for n in range(24):
        schema = (v1, v2, unknown, unversioned)[n % 4]
        row = _evo_row(n, with_c=schema in (v2, unknown))
        op = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)[n % 3]
        change = RowChange(
            op, DB, "evo", before=row if op is not DmlOp.INSERT else None, after=None if op is DmlOp.DELETE else row
        )
        case.add(encode(enc, change, schema, 7_500 + n), schema in (v1, v2))
    for n in range(3):  # version 2's rows sent as version 1
        change = RowChange(DmlOp.INSERT, DB, "evo", after=_evo_row(100 + n, with_c=True))
        key, value = encode(enc, change, v2, 7_600 + n)
        case.add((key, (value or b"").replace(b'"schemaVersion":8000', b'"schemaVersion":7000')), False)
    ddl = enc.encode_ddl(DdlChange("ALTER", "ALTER TABLE diffdb.evo ADD COLUMN c DATE", DB, "evo", v2, v1), EVO_V2, 1)
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
def plain_schema() -> TableSchema:
    """A small table of the usual types: the template of the mutations."""
    columns = (
        column("id", "bigint", nullable=False),
        column("n", "int"),
        column("u", "bigint", unsigned=True),
        column("ti", "tinyint"),
        column("s", "varchar", length=40),
        column("d", "date"),
        column("dt", "datetime", fsp=6),
        column("ts", "timestamp", fsp=3),
        column("tm", "time", fsp=2),
        column("f", "double"),
        column("dc", "decimal", length=10, scale=2),
        column("e", "enum", elements=("lo", "hi")),
        column("st", "set", elements=("a", "b")),
        column("y", "year"),
        column("vb", "varbinary", length=16),
    )
    return TableSchema(DB, "plain", columns, _primary("id"), table_id=31, version=1_000, source="simple-bootstrap")


def plain_row(n: int) -> dict[str, Any]:
    return {
        "id": n,
        "n": 5,
        "u": 18446744073709551615,
        "ti": -3,
        "s": "abc",
        "d": date(2024, 2, 29),
        "dt": datetime(2024, 2, 29, 12, 34, 56, 123456),
        "ts": datetime(2023, 11, 30, 12, 34, 56, 123000, tzinfo=UTC),
        "tm": "-12:34:56.12",
        "f": 1.5,
        "dc": Decimal("12.50"),
        "e": "hi",
        "st": "a,b",
        "y": 2024,
        "vb": b"\x00\xffab",
    }


def plain_pair(enc: SimpleJsonEncoder, n: int, op: DmlOp = DmlOp.INSERT, commit_ts: int = 6_000) -> Pair:
    row = plain_row(n)
    before = None if op is DmlOp.INSERT else row
    after = None if op is DmlOp.DELETE else row
    return encode(enc, RowChange(op, DB, "plain", before=before, after=after), plain_schema(), commit_ts + n)


def _sub(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) >= 1, (old, data[:400])
    return data.replace(old, new, 1)


def mutations(value: bytes) -> list[tuple[str, bytes | None]]:
    """Malformed and unusual variants of one valid ``plain`` INSERT (id 1, ``"n":"5"``, ``"s":"abc"``)."""
    ts = b'"ts":{"location":"America/New_York","value":"2023-11-30 07:34:56.123"}'
    return [
        ("whitespace in the data", _sub(value, b'"n":"5"', b'"n": "5"')),
        ("whitespace between the members", _sub(value, b',"data":', b', "data":')),
        ("whitespace at the end", value + b" "),
        ("newline at the end", value + b"\n"),
        ("columns reordered", _sub(value, b'"d":"2024-02-29","dc":"12.50"', b'"dc":"12.50","d":"2024-02-29"')),
        ("members reordered", _sub(value, b'"version":1,"database":"diffdb"', b'"database":"diffdb","version":1')),
        ("duplicated column", _sub(value, b'"n":"5"', b'"n":"5","n":"6"')),
        ("duplicated type", _sub(value, b'"type":"INSERT"', b'"type":"INSERT","type":"DELETE"')),
        ("duplicated data", _sub(value, b',"data":', b',"data":{},"data":')),
        ("missing column", _sub(value, b'"n":"5",', b"")),
        ("extra column", _sub(value, b'"n":"5"', b'"n":"5","nn":"1"')),
        ("extra member", _sub(value, b',"data":', b',"extra":1,"data":')),
        ("leading zeros", _sub(value, b'"n":"5"', b'"n":"007"')),
        ("minus zero", _sub(value, b'"n":"5"', b'"n":"-0"')),
        ("INT above its range", _sub(value, b'"n":"5"', b'"n":"2147483648"')),
        ("INT below its range", _sub(value, b'"n":"5"', b'"n":"-2147483649"')),
        ("TINYINT above its range", _sub(value, b'"ti":"-3"', b'"ti":"128"')),
        ("BIGINT UNSIGNED above uint64", _sub(value, b'"u":"18446744073709551615"', b'"u":"18446744073709551616"')),
        ("an integer a JSON number", _sub(value, b'"n":"5"', b'"n":5')),
        ("a value an object", _sub(value, b'"s":"abc"', b'"s":{"a":"b"}')),
        ("a value true", _sub(value, b'"s":"abc"', b'"s":true')),
        ("YEAR out of range", _sub(value, b'"y":"2024"', b'"y":"2156"')),
        ("ENUM index beyond the members", _sub(value, b'"e":"2"', b'"e":"3"')),
        ("SET bits beyond the members", _sub(value, b'"st":"3"', b'"st":"4"')),
        ("invalid base64", _sub(value, b'"vb":"AP9hYg=="', b'"vb":"AP9hYg="')),
        ("base64 with padding bits set", _sub(value, b'"vb":"AP9hYg=="', b'"vb":"AP9hYh=="')),
        ("double NaN", _sub(value, b'"f":"1.5"', b'"f":"NaN"')),
        ("double beyond its range", _sub(value, b'"f":"1.5"', b'"f":"1e400"')),
        ("double with an exponent", _sub(value, b'"f":"1.5"', b'"f":"1.5e3"')),
        ("decimal with a trailing dot", _sub(value, b'"dc":"12.50"', b'"dc":"12."')),
        ("DATE month 13", _sub(value, b'"d":"2024-02-29"', b'"d":"2024-13-01"')),
        ("DATE zero", _sub(value, b'"d":"2024-02-29"', b'"d":"0000-00-00"')),
        ("DATETIME February 30", _sub(value, b'"dt":"2024-02-29 12', b'"dt":"2024-02-30 12')),
        ("TIME beyond 838 hours", _sub(value, b'"tm":"-12:34:56.12"', b'"tm":"-839:00:00"')),
        ("TIMESTAMP in another zone", _sub(value, ts, ts.replace(b"America/New_York", b"Asia/Shanghai"))),
        ("TIMESTAMP in the server zone by an empty name", _sub(value, ts, ts.replace(b"America/New_York", b""))),
        ("TIMESTAMP in an unknown zone", _sub(value, ts, ts.replace(b"America/New_York", b"Mars/Olympus"))),
        ("TIMESTAMP in a skipped hour", _sub(value, ts, ts.replace(b"2023-11-30 07:34", b"2024-03-10 02:30"))),
        ("TIMESTAMP members reordered", _sub(value, ts, b'"ts":{"value":"2023-11-30 07:34:56.123","location":"UTC"}')),
        ("TIMESTAMP a string", _sub(value, ts, b'"ts":"2023-11-30 07:34:56.123"')),
        ("TIMESTAMP zero", _sub(value, ts, ts.replace(b"2023-11-30 07:34:56.123", b"0000-00-00 00:00:00.000"))),
        ("escaped quote", _sub(value, b'"s":"abc"', b'"s":"a\\"b"')),
        ("escaped backslash before u", _sub(value, b'"s":"abc"', b'"s":"C:\\\\users\\\\u"')),
        ("escaped newline", _sub(value, b'"s":"abc"', b'"s":"a\\nb"')),
        ("escaped backspace", _sub(value, b'"s":"abc"', b'"s":"a\\bb"')),
        ("escaped slash", _sub(value, b'"s":"abc"', b'"s":"a\\/b"')),
        ("HTML-safe escape", _sub(value, b'"s":"abc"', b'"s":"a\\u003cb"')),
        ("lone surrogate escape", _sub(value, b'"s":"abc"', b'"s":"\\ud800"')),
        ("escaped key", _sub(value, b'"n":"5"', b'"\\u006e":"5"')),
        ("raw control character", _sub(value, b'"s":"abc"', b'"s":"a\x01b"')),
        ("raw U+2028", _sub(value, b'"s":"abc"', '"s":"a\u2028b"'.encode())),
        ("invalid UTF-8", _sub(value, b'"s":"abc"', b'"s":"ab\xff"')),
        ("overlong UTF-8", _sub(value, b'"s":"abc"', b'"s":"a\xc0\xafb"')),
        ("UTF-8 of a surrogate", _sub(value, b'"s":"abc"', b'"s":"a\xed\xa0\x80b"')),
        ("byte order mark", b"\xef\xbb\xbf" + value),
        ("truncated by one byte", value[:-1]),
        ("truncated in the data", value[: len(value) // 2]),
        ("tombstone", None),
        ("empty value", b""),
        ("data null", value[: value.index(b',"data":')] + b',"data":null}'),
        ("data not an object", value[: value.index(b',"data":')] + b',"data":["x"]}'),
        ("old in an INSERT", value[:-1] + b',"old":null}'),
        ("type lower case", _sub(value, b'"type":"INSERT"', b'"type":"insert"')),
        ("type UPDATE without old", _sub(value, b'"type":"INSERT"', b'"type":"UPDATE"')),
        ("type DELETE with data", _sub(value, b'"type":"INSERT"', b'"type":"DELETE"')),
        ("version 2", _sub(value, b'"version":1', b'"version":2')),
        ("schemaVersion 0", _sub(value, b'"schemaVersion":1000', b'"schemaVersion":0')),
        ("schemaVersion unknown", _sub(value, b'"schemaVersion":1000', b'"schemaVersion":1001')),
        ("schemaVersion absent", _sub(value, b',"schemaVersion":1000', b"")),
        ("commitTs negative", _sub(value, b'"commitTs":6001', b'"commitTs":-1')),
        ("commitTs a string", _sub(value, b'"commitTs":6001', b'"commitTs":"6001"')),
        ("commitTs 2**63", _sub(value, b'"commitTs":6001', b'"commitTs":9223372036854775808')),
        ("commitTs above 2**64-1", _sub(value, b'"commitTs":6001', b'"commitTs":18446744073709551616')),
        ("tableID negative", _sub(value, b'"tableID":31', b'"tableID":-31')),
        ("tableID absent", _sub(value, b',"tableID":31', b"")),
        ("tableID null", _sub(value, b'"tableID":31', b'"tableID":null')),
        ("commitTs null", _sub(value, b'"commitTs":6001', b'"commitTs":null')),
        ("database null", _sub(value, b'"database":"diffdb"', b'"database":null')),
        ("handleKeyOnly null", _sub(value, b',"data":', b',"handleKeyOnly":null,"data":')),
        ("buildTs a string", _sub(value, b'"buildTs":6001', b'"buildTs":"x"')),
        ("database of another table", _sub(value, b'"table":"plain"', b'"table":"evo"')),
        ("handleKeyOnly false", _sub(value, b',"data":', b',"handleKeyOnly":false,"data":')),
        ("handleKeyOnly true", _sub(value, b',"data":', b',"handleKeyOnly":true,"data":')),
        (
            "claim-check reference",
            _sub(value, b',"data":', b',"claimCheckLocation":"file:///nowhere/x.json","handleKeyOnly":true,"data":'),
        ),
    ]


def mutation_cases(enc: SimpleJsonEncoder) -> list[tuple[str, list[Pair]]]:
    """Per mutation of a valid ``plain`` INSERT: (its name, [a valid INSERT, the mutation, a valid DELETE])."""
    _, value = plain_pair(enc, 1)
    assert value is not None
    return [
        (name, [plain_pair(enc, 2), (None, mutated), plain_pair(enc, 3, DmlOp.DELETE)])
        for name, mutated in mutations(value)
    ]
