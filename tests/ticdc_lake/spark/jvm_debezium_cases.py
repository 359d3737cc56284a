r"""Messages for the JVM Debezium decoder's tests (``test_jvm_decode_debezium``): a table of the column
types it decodes, and malformed or unusual mutations of one valid message of it.

Which messages the JVM must take is stated here from its documented rule (docs/jvm-decoder.md), not
from its code: a row change (op c/r/u/d) of a table version the lookup knows, whose columns are all
integers (BIGINT UNSIGNED aside, whose values are carried as decimals) or non-binary strings, sent
uncompressed with its Connect schema as TiCDC writes the envelope, valid strict JSON and UTF-8 without
a ``\u`` escape, each image naming exactly the schema's columns in order.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.debezium_encoder import DebeziumEncoder
from ticdc_sim.model import DmlOp, RowChange

DB = "jvmdb"
#: Version of the lean tables; their rows commit after it.
VERSION = 1_000
Pair = tuple[bytes | None, bytes | None]


def lean_schema(table: str = "lean", version: int = VERSION) -> TableSchema:
    """Every integer type the JVM decoder writes (INT UNSIGNED is carried as ``long``) and the text types."""
    columns = (
        column("id", "bigint", nullable=False),
        column("n", "int"),
        column("iu", "int", unsigned=True),
        column("ti", "tinyint"),
        column("sm", "smallint", unsigned=True),
        column("m", "mediumint"),
        column("s", "varchar", length=40),
        column("t", "text"),
        column("c", "char", length=3),
    )
    primary = (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
    return TableSchema(DB, table, columns, primary, table_id=41, version=version, source="simulator")


def dated_schema(version: int = VERSION) -> TableSchema:
    """DATE, DATETIME sent in milliseconds (fsp 3) and in microseconds (fsp 6), and YEAR."""
    columns = (
        column("id", "int", nullable=False),
        column("d", "date"),
        column("dt3", "datetime", fsp=3),
        column("dt6", "datetime", fsp=6),
        column("y", "year"),
    )
    primary = (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
    return TableSchema(DB, "dated", columns, primary, table_id=43, version=version, source="simulator")


def mixed_schema(version: int = VERSION) -> TableSchema:
    """TIMESTAMP (fsp 0 and 6), BIT(1), JSON, ENUM (one member with a comma) and SET."""
    columns = (
        column("id", "int", nullable=False),
        column("ts0", "timestamp"),
        column("ts6", "timestamp", fsp=6),
        column("flag", "bit", length=1),
        column("doc", "json"),
        column("e", "enum", elements=("lo", "hi", "a,b")),
        column("st", "set", elements=("x", "y", "z")),
    )
    primary = (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
    return TableSchema(DB, "mixed", columns, primary, table_id=44, version=version, source="simulator")


def mixed_rows() -> list[dict[str, Any]]:
    return [
        {
            "id": 1,
            "ts0": datetime(2024, 2, 29, 1, 2, 3, tzinfo=UTC),
            "ts6": datetime(1970, 1, 1, 0, 0, 1, 100, tzinfo=UTC),
            "flag": 1,
            "doc": '{"a": [1, 2.5, "é"]}',
            "e": "hi",
            "st": "x,z",
        },
        {
            "id": 2,
            "ts0": datetime(2038, 1, 19, 3, 14, 7, tzinfo=UTC),
            "ts6": datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            "flag": 0,
            "doc": "null",
            "e": "a,b",
            "st": "",
        },
        {"id": 3, "ts0": None, "ts6": None, "flag": None, "doc": None, "e": None, "st": None},
    ]


def mixed_mutations(key: bytes | None, value: bytes) -> list[tuple[str, Pair, bool]]:
    """(name, message, taken by the JVM) for one ``mixed`` INSERT with other TIMESTAMP texts, BIT values,
    ENUM and SET texts."""

    def ts0(text: str) -> bytes:
        return _with_member(value, "ts0", _TEXT, text.encode())

    def text(name: str, new: str) -> bytes:
        return _with_member(value, name, _TEXT, new.encode())

    def flag(token: bytes) -> bytes:
        return _with_member(value, "flag", _BOOLEAN, token)

    out = [
        ("year 0", ts0("0000-01-01T00:00:00Z"), True),
        ("year 9999, six fraction digits", ts0("9999-12-31T23:59:59.999999Z"), True),
        ("one fraction digit", ts0("2020-01-01T00:00:00.5Z"), True),
        ("February 30 (kept as sent, no timestamptz)", ts0("2023-02-30T00:00:00Z"), True),
        ("February 29 of a common year", ts0("2023-02-29T12:00:00Z"), True),
        ("month 00", ts0("2023-00-10T00:00:00Z"), True),
        ("day 00", ts0("2023-01-00T00:00:00Z"), True),
        ("month 13", ts0("2023-13-01T00:00:00Z"), False),
        ("hour 24", ts0("2023-01-01T24:00:00Z"), False),
        ("seven fraction digits", ts0("2023-01-01T00:00:00.1234567Z"), False),
        ("an empty fraction", ts0("2023-01-01T00:00:00.Z"), False),
        ("no Z", ts0("2023-01-01T00:00:00"), False),
        ("an offset", ts0("2023-01-01T00:00:00+01:00"), False),
        ("a space for T", ts0("2023-01-01 00:00:00Z"), False),
        ("true", flag(b"true"), True),
        ("false", flag(b"false"), True),
        ("a number in a BIT(1)", flag(b"1"), False),
        ("a string in a BIT(1)", flag(b'"1"'), False),
        ("the empty ENUM text (MySQL's invalid value)", text("e", ""), True),
        ("an ENUM member with a comma", text("e", "a,b"), True),
        ("an ENUM text of no member", text("e", "mid"), False),
        ("half of the member with a comma", text("e", "a"), False),
        ("every SET member", text("st", "x,y,z"), True),
        ("a SET member twice", text("st", "x,x"), True),
        ("a SET text of no member", text("st", "x,w"), False),
        ("an empty SET part", text("st", "x,,y"), False),
    ]
    return [(name, (key, mutated), taken) for name, mutated, taken in out]


def dated_rows() -> list[dict[str, Any]]:
    """The edges of each type's range, fractions with trailing zeros, a leap day, NULLs."""
    return [
        {"id": 1, "d": date(1, 1, 1), "dt3": datetime(1, 1, 1), "dt6": datetime(1, 1, 1, 0, 0, 0, 1), "y": 0},
        {
            "id": 2,
            "d": date(9999, 12, 31),
            "dt3": datetime(9999, 12, 31, 23, 59, 59, 999000),
            "dt6": datetime(9999, 12, 31, 23, 59, 59, 999999),
            "y": 2155,
        },
        {
            "id": 3,
            "d": date(1969, 12, 31),
            "dt3": datetime(1969, 12, 31, 23, 59, 59, 120000),
            "dt6": datetime(1960, 2, 29, 1, 2, 3, 450000),
            "y": 1901,
        },
        {
            "id": 4,
            "d": date(2024, 2, 29),
            "dt3": datetime(1970, 1, 1),
            "dt6": datetime(2038, 1, 19, 3, 14, 8),
            "y": 2024,
        },
        {"id": 5, "d": None, "dt3": None, "dt6": None, "y": None},
    ]


def composite_schema() -> TableSchema:
    """A two-column key, text first."""
    columns = (
        column("k", "varchar", length=10, nullable=False),
        column("j", "int", nullable=False),
        column("v", "int"),
    )
    primary = (IndexSchema("PRIMARY", ("k", "j"), primary=True, unique=True),)
    return TableSchema(DB, "composite", columns, primary, table_id=42, version=VERSION, source="simulator")


def lean_row(n: int) -> dict[str, Any]:
    return {
        "id": n,
        "n": 5,
        "iu": 4294967295,
        "ti": -3,
        "sm": 65535,
        "m": -8388608,
        "s": "abc",
        "t": 'say "hi" é \\ tab\there',
        "c": "xyz",
    }


def encode(encoder: DebeziumEncoder, change: RowChange, schema: TableSchema, commit_ts: int) -> Pair:
    message = encoder.encode_row(change, schema, commit_ts, commit_ts)
    return message.key, message.value


def lean_pair(encoder: DebeziumEncoder, n: int, op: DmlOp = DmlOp.INSERT, commit_ts: int = 6_000) -> Pair:
    row = lean_row(n)
    before = None if op is DmlOp.INSERT else row
    after = None if op is DmlOp.DELETE else row
    return encode(encoder, RowChange(op, DB, "lean", before=before, after=after), lean_schema(), commit_ts + n)


#: The shape of a member's value the type cases change, its one group what they replace: a JSON
#: string's content, an integer (or null), a boolean (or null).
_TEXT, _NUMBER, _BOOLEAN = rb'"([^"]*)"', rb"(-?[0-9]+|null)", rb"(true|false|null)"


def _with_member(value: bytes, name: str, shape: bytes, new: bytes) -> bytes:
    """``value`` with the first value of the member ``name`` (of ``shape``) replaced by ``new``."""
    found = re.search(b'"' + name.encode() + b'":' + shape, value)
    assert found is not None, name
    return value[: found.start(1)] + new + value[found.end(1) :]


def _sub(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) >= 1, (old, data[:300])
    return data.replace(old, new, 1)


def mutations(key: bytes, value: bytes) -> list[tuple[str, Pair, bool]]:
    """(name, message, taken by the JVM) for variants of one valid ``lean`` INSERT (id 1, ``"n":5``)."""
    head = value[: value.index(b',"schema":')]
    commit = re.search(rb'"commit_ts":[0-9]+', value)
    assert commit is not None
    tso = commit.group()
    schema_text = value[len(head) + len(b',"schema":') : -1]
    out: list[tuple[str, bytes | None, bytes | None, bool]] = [
        ("as sent", key, value, True),
        ("whitespace in the payload (the same document)", key, _sub(value, b'"n":5', b'"n": 5'), True),
        ("whitespace before the schema", key, _sub(value, b',"schema":', b', "schema":'), False),
        ("whitespace at the end", key, value + b" ", False),
        ("members of the image reordered", key, _sub(value, b'{"id":1,"n":5', b'{"n":5,"id":1'), False),
        (
            "schema member first",
            key,
            b'{"schema":' + schema_text + b',"payload":' + head[len(b'{"payload":') :] + b"}",
            False,
        ),
        ("duplicated column", key, _sub(value, b'"n":5', b'"n":5,"n":6'), False),
        ("duplicated op", key, _sub(value, b'"op":"c"', b'"op":"c","op":"d"'), False),
        ("duplicated source", key, _sub(value, b',"transaction":', b',"source":{},"transaction":'), False),
        ("a member named source inside the source", key, _sub(value, b'"ts_ms":', b'"source":{},"ts_ms":'), True),
        ("duplicated db in the source", key, _sub(value, b'"db":"jvmdb"', b'"db":"jvmdb","db":"other"'), False),
        ("duplicated key column", _sub(key, b'{"id":1}', b'{"id":1,"id":2}'), value, True),
        ("duplicated payload of the envelope", key, _sub(value, b',"schema":', b',"payload":{},"schema":'), False),
        ("extra column", key, _sub(value, b'"n":5', b'"n":5,"zz":1'), False),
        ("extra payload member", key, _sub(value, b'"op":"c"', b'"op":"c","extra":{"a":[1,2]}'), True),
        ("extra envelope member", key, _sub(value, b'{"payload":', b'{"x":1,"payload":'), False),
        ("missing column", key, _sub(value, b'"n":5,', b""), False),
        ("minus zero", key, _sub(value, b'"n":5', b'"n":-0'), True),
        ("a fraction in an INT", key, _sub(value, b'"n":5', b'"n":1.0'), False),
        ("an exponent in an INT", key, _sub(value, b'"n":5', b'"n":1e2'), False),
        ("a string in an INT", key, _sub(value, b'"n":5', b'"n":"5"'), False),
        ("a number in a VARCHAR", key, _sub(value, b'"s":"abc"', b'"s":5'), False),
        ("an object in a VARCHAR", key, _sub(value, b'"s":"abc"', b'"s":{"a":1}'), False),
        ("true in an INT", key, _sub(value, b'"n":5', b'"n":true'), False),
        ("INT at its top", key, _sub(value, b'"n":5', b'"n":2147483647'), True),
        ("INT above its range", key, _sub(value, b'"n":5', b'"n":2147483648'), False),
        ("INT below its range", key, _sub(value, b'"n":5', b'"n":-2147483649'), False),
        ("INT UNSIGNED above its range", key, _sub(value, b'"iu":4294967295', b'"iu":4294967296'), False),
        ("INT UNSIGNED negative", key, _sub(value, b'"iu":4294967295', b'"iu":-1'), False),
        ("TINYINT above its range", key, _sub(value, b'"ti":-3', b'"ti":128'), False),
        ("MEDIUMINT below its range", key, _sub(value, b'"m":-8388608', b'"m":-8388609'), False),
        ("BIGINT above int64", key, _sub(value, b'"id":1,', b'"id":9223372036854775808,'), False),
        ("BIGINT at int64's bottom", key, _sub(value, b'"id":1,', b'"id":-9223372036854775808,'), True),
        ("null in the NOT NULL id", key, _sub(value, b'"id":1,', b'"id":null,'), True),
        ("null text", key, _sub(value, b'"s":"abc"', b'"s":null'), True),
        ("empty text", key, _sub(value, b'"s":"abc"', b'"s":""'), True),
        ("invalid UTF-8 in a value", key, _sub(value, b'"s":"abc"', b'"s":"ab\xff"'), False),
        ("invalid UTF-8 in the schema", key, _sub(value, b'"field":"s"', b'"field":"s\xff"'), False),
        ("raw control character", key, _sub(value, b'"s":"abc"', b'"s":"a\x01b"'), False),
        ("escaped quote", key, _sub(value, b'"s":"abc"', b'"s":"a\\"b"'), True),
        ("escaped newline and solidus", key, _sub(value, b'"s":"abc"', b'"s":"a\\nb\\/c"'), True),
        ("escaped backslash before u", key, _sub(value, b'"s":"abc"', b'"s":"C:\\\\users\\\\u"'), False),
        ("unicode escape", key, _sub(value, b'"s":"abc"', b'"s":"\\u00e9"'), False),
        ("lone surrogate escape", key, _sub(value, b'"s":"abc"', b'"s":"\\ud800"'), False),
        ("escaped key", key, _sub(value, b'"n":5', b'"\\u006e":5'), False),
        (
            "raw U+2028 and a 4-byte character",
            key,
            _sub(value, b'"s":"abc"', '"s":"a\u2028b\U0001f600"'.encode()),
            True,
        ),
        ("byte order mark", key, b"\xef\xbb\xbf" + value, False),
        ("overlong UTF-8", key, _sub(value, b'"s":"abc"', b'"s":"a\xc0\xafb"'), False),
        ("UTF-8 of a surrogate in a value", key, _sub(value, b'"s":"abc"', b'"s":"a\xed\xa0\x80b"'), False),
        ("UTF-8 of a surrogate in the key", _sub(key, b'"id":1', b'"id":"\xed\xa0\x80"'), value, False),
        ("invalid UTF-8 in the key", _sub(key, b'"id":1', b'"id":"\xff"'), value, False),
        ("a leading zero", key, _sub(value, b'"n":5', b'"n":05'), False),
        ("a plus sign", key, _sub(value, b'"n":5', b'"n":+5'), False),
        ("NaN in an INT", key, _sub(value, b'"n":5', b'"n":NaN'), False),
        (
            "deep nesting in a skipped member",
            key,
            _sub(value, b'"op":"c"', b'"op":"c","deep":' + b"[" * 100 + b"]" * 100),
            False,
        ),
        ("truncated by one byte", key, value[:-1], False),
        ("truncated in the payload", key, value[: len(head) // 2], False),
        ("truncated key", key[:-3], value, False),
        ("malformed key", b"not json", value, False),
        ("key payload not an object", _sub(key, b'{"id":1}', b"[1]"), value, False),
        ("key with a nested member", _sub(key, b'{"id":1}', b'{"id":{"x":1}}'), value, True),
        ("key schema a string", _sub(key, key[key.index(b'"schema":') + 9 :], b'"s"}'), value, False),
        ("null key", None, value, True),
        ("tombstone", key, None, False),
        ("empty value", key, b"", False),
        ("schema not an object", key, head + b',"schema":[1]}', False),
        ("schema null", key, head + b',"schema":null}', False),
        ("no schema member", key, head + b"}", False),
        ("schema without fields", key, head + b',"schema":{"type":"struct"}}', False),
        ("op m with a row", key, _sub(value, b'"op":"c"', b'"op":"m"'), False),
        ("op x", key, _sub(value, b'"op":"c"', b'"op":"x"'), False),
        ("op a number", key, _sub(value, b'"op":"c"', b'"op":1'), False),
        ("op r (snapshot read)", key, _sub(value, b'"op":"c"', b'"op":"r"'), True),
        ("op u without before", key, _sub(value, b'"op":"c"', b'"op":"u"'), True),
        ("op d with an after image", key, _sub(value, b'"op":"c"', b'"op":"d"'), False),
        ("op c with a before image", key, _sub(value, b'"before":null', b'"before":{}'), False),
        ("commit_ts 2**63", key, _sub(value, tso, b'"commit_ts":9223372036854775808'), False),
        ("commit_ts negative", key, _sub(value, tso, b'"commit_ts":-1'), False),
        ("commit_ts a string", key, _sub(value, tso, b'"commit_ts":"6001"'), False),
        ("commit_ts missing", key, _sub(value, b"," + tso, b""), False),
        (
            "commit_ts before the table's first version",
            key,
            _sub(value, tso, b'"commit_ts":999'),
            False,
        ),
        ("another table of the lookup", key, _sub(value, b'"table":"lean"', b'"table":"composite"'), False),
        ("a table nobody knows", key, _sub(value, b'"table":"lean"', b'"table":"stranger"'), False),
        ("source table a number", key, _sub(value, b'"table":"lean"', b'"table":7'), False),
        ("payload not an object", key, b'{"payload":[1],"schema":' + schema_text + b"}", False),
    ]
    return [(name, (k, v), taken) for name, k, v, taken in out]


#: Days and microseconds since 1970-01-01 of 0001-01-01 and of 9999-12-31 (23:59:59.999999).
MIN_DAYS, MAX_DAYS = -719_162, 2_932_896
MIN_MICROS, MAX_MICROS = MIN_DAYS * 86_400_000_000, (MAX_DAYS + 1) * 86_400_000_000 - 1


def dated_mutations(key: bytes | None, value: bytes) -> list[tuple[str, Pair, bool]]:
    """(name, message, taken by the JVM) for one ``dated`` INSERT with other numbers in its columns."""

    def member(name: str, number: object) -> bytes:
        return _with_member(value, name, _NUMBER, str(number).encode())

    out = [
        ("first day", member("d", MIN_DAYS), True),
        ("last day", member("d", MAX_DAYS), True),
        ("a day before year 1", member("d", MIN_DAYS - 1), False),
        ("a day after year 9999", member("d", MAX_DAYS + 1), False),
        ("a day as a string", member("d", '"5"'), False),
        ("first microsecond", member("dt6", MIN_MICROS), True),
        ("last microsecond", member("dt6", MAX_MICROS), True),
        ("a microsecond before year 1", member("dt6", MIN_MICROS - 1), False),
        ("a microsecond after year 9999", member("dt6", MAX_MICROS + 1), False),
        ("a negative fraction", member("dt6", -1), True),
        ("a trailing-zero fraction", member("dt6", 1_100_000), True),
        ("first millisecond", member("dt3", MIN_MICROS // 1000), True),
        ("a millisecond before year 1", member("dt3", MIN_MICROS // 1000 - 1), False),
        ("milliseconds beyond a long in microseconds", member("dt3", 2**62), False),
        ("a negative millisecond", member("dt3", -1), True),
        ("YEAR 0", member("y", 0), True),
        ("YEAR above 2155", member("y", 2156), False),
        ("YEAR as a string (a NULL with a DEFAULT)", member("y", '"2024"'), False),
        ("YEAR negative", member("y", -1), False),
    ]
    return [(name, (key, mutated), taken) for name, mutated, taken in out]


def binary_schema(version: int = VERSION) -> TableSchema:
    """VARBINARY, BLOB and BINARY (base64 texts with the TiDB extension) and TIME."""
    columns = (
        column("id", "int", nullable=False),
        column("vb", "varbinary", length=16),
        column("bl", "blob"),
        column("bn", "binary", length=4),
        column("tm", "time", fsp=3),
    )
    primary = (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
    return TableSchema(DB, "blobby", columns, primary, table_id=45, version=version, source="simulator")


def binary_rows() -> list[dict[str, Any]]:
    return [
        {"id": 1, "vb": b"\x00\xffab", "bl": b"", "bn": b"abcd", "tm": "-838:59:59.000"},
        {"id": 2, "vb": b"a", "bl": bytes(range(256)), "bn": b"ab\x00\x00", "tm": "12:34:56.120"},
        {"id": 3, "vb": None, "bl": None, "bn": None, "tm": None},
    ]


#: The largest TIME, 838:59:59.999999, in microseconds.
MAX_TIME = 839 * 3_600_000_000 - 1


def binary_mutations(key: bytes | None, value: bytes) -> list[tuple[str, Pair, bool]]:
    """(name, message, taken by the JVM) for one ``blobby`` INSERT with other base64 texts and TIMEs."""

    def text(name: str, new: str) -> bytes:
        return _with_member(value, name, _TEXT, new.encode())

    def micros(number: object) -> bytes:
        return _with_member(value, "tm", _NUMBER, str(number).encode())

    out = [
        ("one byte", text("vb", "QQ=="), True),
        ("two bytes", text("vb", "QUI="), True),
        ("padding bits set (Python writes QQ==)", text("vb", "QR=="), False),
        ("padding bits set, one pad", text("vb", "QUJ="), False),
        ("no padding", text("vb", "QQ"), False),
        ("a character outside base64", text("vb", "QQ!="), False),
        ("URL-safe base64", text("vb", "-_-_"), False),
        ("the largest TIME", micros(MAX_TIME), True),
        ("the smallest TIME", micros(-MAX_TIME), True),
        ("a TIME beyond 838 hours", micros(MAX_TIME + 1), False),
        ("a TIME of 100 hours", micros(100 * 3_600_000_000), True),
        ("a negative TIME under a second", micros(-500_000), True),
        ("a TIME of one microsecond", micros(1), True),
    ]
    return [(name, (key, mutated), taken) for name, mutated, taken in out]
