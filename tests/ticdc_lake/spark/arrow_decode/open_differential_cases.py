r"""Messages for ``test_open_differential``: the simulator's Open Protocol encoder over a table of
every column type (under each of its option sets), several events per message, two schema
versions, DDL and resolved events, and malformed or unusual mutations of a valid message.

Each builder returns :class:`Case` objects: (key, value) pairs plus the indexes of the messages the
vector path must take. What it must take is stated here from the documented rule
(``open_batch``), not from the vector path's code: a message all of whose events are row changes
(key ``t`` 1, no ``ohk``/``ccl``) each of which the lookup binds to a version holding all its
columns, sent uncompressed, whose value items hold no ``\u`` escape but Go's escapes of ``<``,
``>``, ``&``, U+2028 and U+2029, no FLOAT/DOUBLE written
otherwise than pyarrow writes its double (nor ``-0``), no binary CHAR/VARCHAR whose Go-quoted text
has an escape other than ``\xNN``, ``\uNNNN`` (not a surrogate) and the one-letter ones, no zero
TIMESTAMP nor one at or after 2038-01-01 in a zone other than UTC.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import localcontext
from typing import Any

import pyarrow as pa

from tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases import Case, Pair
from tests.ticdc_lake.spark.type_cases import SERVER_ZONE, wide_schema
from ticdc_lake.protocols.open_framing import frame_batch, split_batch
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.open_encoder import OpenEncoder

ZONE = SERVER_ZONE
DB = "diffdb"
EVERY_TYPE_VERSION = 1_000
EVO_V1, EVO_V2 = 7_000, 8_000
_QUOTED = (15, 253, 254)
_ZERO_TIMESTAMP = "0000-00-00 00:00:00"


def encoder(**options: Any) -> OpenEncoder:
    return OpenEncoder(ZONE, **options)


def _primary(*names: str) -> tuple[IndexSchema, ...]:
    return (IndexSchema("PRIMARY", names, primary=True, unique=True),)


def every_type_schema() -> TableSchema:
    """The wide table of ``type_cases`` (a column of every type), version 1000."""
    return replace(wide_schema(DB), version=EVERY_TYPE_VERSION, table_id=11)


def encode(enc: OpenEncoder, change: RowChange, schema: TableSchema, commit_ts: int) -> Pair:
    with localcontext() as context:
        context.prec = 100  # DECIMAL(65,30) has 65 digits; Python's default context keeps 28
        message = enc.encode_row(change, schema, commit_ts, commit_ts)
    return message.key, message.value


def events(pair: Pair) -> list[tuple[bytes, bytes]]:
    """The (key item, value item) bytes of one message."""
    return [(k.data, v.data) for k, v in split_batch(pair[0], pair[1])]


def item_takes(value: bytes) -> bool:
    """The rule above for one row value item of a bound version all of whose columns have a twin."""
    rest = value.replace(b"\\\\", b"")  # escaped backslashes, paired left to right as JSON reads them
    for escape in (b"003c", b"003e", b"0026", b"2028", b"2029"):  # Go's escapes of characters JSON writes raw
        rest = rest.replace(b"\\u" + escape, b"")
    if b"\\u" in rest:
        return False
    doc = json.loads(value, parse_float=str, parse_int=str)
    for image in doc.values():
        for item in image.values():
            code, flags, v = int(item["t"]), int(item.get("f", 0)), item["v"]
            if v is None:
                continue
            if code in (4, 5):
                text = str(v)
                if text == "-0" or pa.scalar(float(text), pa.float64()).cast(pa.string()).as_py() != text:
                    return False
            if code in _QUOTED and flags & 1 and not _byte_escapes(v):
                return False
            if code == 7 and (v.startswith(_ZERO_TIMESTAMP) or (ZONE != "UTC" and v >= "2038-01-01")):
                return False
    return True


def _byte_escapes(text: str) -> bool:
    """Whether every escape of a Go-quoted text is one ``strconv.Quote`` writes (``\\xNN``, ``\\uNNNN``,
    ``\\n``, ``\\\\``, ...), not ``\\U`` or octal."""
    for escape in re.findall(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|[abfnrtv\\\"]|.?)", text):
        if len(escape) == 3 or (len(escape) == 5 and not 0xD800 <= int(escape[1:], 16) <= 0xDFFF):
            continue
        if len(escape) != 1 or escape not in 'abfnrtv\\"':
            return False
    return True


def takes(pair: Pair) -> bool:
    return all(item_takes(value) for _, value in events(pair))


def dml_case(
    name: str, schema: TableSchema, rows: Sequence[Mapping[str, Any]], enc: OpenEncoder, *, commit_ts: int, take: bool
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
        case.add(pair, take and takes(pair))
    return case


def printable(value: object) -> object:
    """Bytes as printable ASCII letters (the same length), other values as they are."""
    if not isinstance(value, bytes):
        return value
    return bytes(0x41 + b % 26 for b in value)


def batched(case: Case, sizes: Sequence[int]) -> Case:
    """The case's messages joined into batches of the given sizes in turn (TiCDC's ``max-batch-size``):
    a batch is taken when each of its events would be alone."""
    out = Case(f"{case.name} batched")
    n, turn = 0, 0
    while n < len(case.pairs):
        size = sizes[turn % len(sizes)]
        turn += 1
        part = range(n, min(n + size, len(case.pairs)))
        items = [item for i in part for item in events(case.pairs[i])]
        out.add(frame_batch([k for k, _ in items], [v for _, v in items]), all(i in case.taken for i in part))
        n = part.stop
    return out


# ----------------------------------------------------------------------------- two versions
def evolving_schemas() -> tuple[TableSchema, TableSchema]:
    """Version :data:`EVO_V1` of table ``evo``; version :data:`EVO_V2` adds the DATE column ``c``."""
    columns = (column("id", "bigint", nullable=False), column("a", "int"), column("b", "varchar", length=20))
    v1 = TableSchema(DB, "evo", columns, _primary("id"), table_id=21, version=EVO_V1, source="open-ddl")
    return v1, replace(v1, columns=(*columns, column("c", "date")), version=EVO_V2)


def _evo_row(n: int, with_c: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"id": n, "a": n * 7 - 50, "b": f"row {n} é"}
    if with_c:
        row["c"] = date(2024, 1, 1 + n % 28)
    return row


def evolving_case(enc: OpenEncoder) -> Case:
    """Rows of version 1 and of version 2 (taken), the ALTER between them and a resolved event
    (never taken), rows before the first version (unbound in the reference, whose lookup infers no
    schema: taken), version 2's rows before version 2 (PENDING there: a column version 1 lacks)."""
    v1, v2 = evolving_schemas()
    case = Case("evolving")
    for n in range(24):
        op = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)[n % 3]
        kind = n % 4
        row = _evo_row(n, with_c=kind in (1, 3))
        change = RowChange(
            op, DB, "evo", before=row if op is not DmlOp.INSERT else None, after=None if op is DmlOp.DELETE else row
        )
        if kind == 0:  # version 1's columns, version 1
            case.add(encode(enc, change, v1, EVO_V1 + 100 + n), True)
        elif kind == 1:  # version 2's columns, version 2
            case.add(encode(enc, change, v2, EVO_V2 + 100 + n), True)
        elif kind == 2:  # before any version: unbound (the lookup infers no schema), taken
            case.add(encode(enc, change, v1, EVO_V1 - 100 - n), True)
        else:  # version 2's columns before version 2: PENDING
            case.add(encode(enc, change, v2, EVO_V1 + 200 + n), False)
    ddl = DdlChange("ALTER", "ALTER TABLE evo ADD COLUMN c DATE", DB, "evo", v2, v1)
    message = enc.encode_ddl(ddl, EVO_V2, EVO_V2)
    case.add((message.key, message.value), False)
    message = enc.encode_watermark(EVO_V2 + 500, EVO_V2 + 500)
    case.add((message.key, message.value), False)
    return case


def straddling_case(enc: OpenEncoder) -> Case:
    """Rows of version 1's columns on both sides of version 2 (one shape, two bound versions): taken."""
    v1, _ = evolving_schemas()
    case = Case("straddling")
    for n, commit_ts in enumerate((EVO_V2 - 50, EVO_V2 + 50)):
        case.add(encode(enc, RowChange(DmlOp.INSERT, DB, "evo", after=_evo_row(200 + n, False)), v1, commit_ts), True)
    return case


# ----------------------------------------------------------------------------- a small table
def plain_schema() -> TableSchema:
    """Version 1000 of ``plain``: a few common types, for the mutations."""
    columns = (
        column("id", "bigint", nullable=False),
        column("n", "int"),
        column("s", "varchar", length=40),
        column("d", "double"),
        column("ts", "timestamp"),
        column("e", "enum", elements=("lo", "hi")),
        column("vb", "varbinary", length=20),
        column("tx", "text"),
    )
    return TableSchema(DB, "plain", columns, _primary("id"), table_id=31, version=EVERY_TYPE_VERSION, source="open-ddl")


def plain_row(n: int) -> dict[str, Any]:
    return {
        "id": n,
        "n": 5,
        "s": "abc",
        "d": 1.5,
        "ts": datetime(2024, 3, 1, 17, tzinfo=UTC),
        "e": "hi",
        "vb": b"ab",
        "tx": "xyz",
    }


def plain_pair(enc: OpenEncoder, n: int, op: DmlOp = DmlOp.INSERT, commit_ts: int = 6_000) -> Pair:
    row = plain_row(n)
    change = RowChange(
        op, DB, "plain", before=row if op is DmlOp.DELETE else None, after=None if op is DmlOp.DELETE else row
    )
    return encode(enc, change, plain_schema(), commit_ts)


def lookup_schemas() -> list[TableSchema]:
    return [every_type_schema(), *evolving_schemas(), plain_schema()]


# ----------------------------------------------------------------------------- mutations
def _sub(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) >= 1, (old, data[:300])
    return data.replace(old, new, 1)


def _framed(key: bytes, value: bytes) -> Pair:
    return frame_batch([key], [value])


def _n(v: bytes) -> tuple[bytes, bytes]:
    """Column ``n``'s value 5 replaced by ``v``."""
    return b'"n":{"t":3,"f":65,"v":5}', b'"n":{"t":3,"f":65,"v":' + v + b"}"


def mutations(enc: OpenEncoder) -> list[tuple[str, str, Pair]]:
    """(name, what the rule takes, message) for malformed and unusual variants of one valid INSERT
    of ``plain`` (id 1). What is taken: ``"spoils"``: nothing of its group either (a value of
    another JSON type than the one its column reads as, so the read of the INSERT group fails);
    ``"taken"``: the message itself; ``"left"``: the message goes to Python."""
    pair = plain_pair(enc, 1)
    [(key, value)] = events(pair)
    other_key, other_value = events(plain_pair(enc, 9))[0]
    keyed: list[tuple[str, str, bytes]] = [
        ("key members reordered", "left", b'{"scm":"diffdb","ts":6000,"tbl":"plain","rid":1,"t":1}'),
        ("key with ohk false", "left", _sub(key, b',"t":1}', b',"t":1,"ohk":false}')),
        ("key with ohk true", "left", _sub(key, b',"t":1}', b',"t":1,"ohk":true}')),
        ("key with ccl", "left", _sub(key, b',"t":1}', b',"t":1,"ccl":"x.json"}')),
        ("key t 2", "left", _sub(key, b',"t":1}', b',"t":2}')),
        ("key t 3", "left", _sub(key, b',"t":1}', b',"t":3}')),
        ("key t 4", "left", _sub(key, b',"t":1}', b',"t":4}')),
        ("key without scm", "left", _sub(key, b'"scm":"diffdb",', b"")),
        ("key with an empty tbl", "left", _sub(key, b'"tbl":"plain"', b'"tbl":""')),
        ("key ts negative", "left", _sub(key, b'"ts":6000', b'"ts":-1')),
        ("key ts 2**64", "left", _sub(key, b'"ts":6000', b'"ts":18446744073709551616')),
        ("key ts with a leading zero", "left", _sub(key, b'"ts":6000', b'"ts":06000')),
        ("key ts 0", "left", _sub(key, b'"ts":6000', b'"ts":0')),
        ("key with ptn", "taken", _sub(key, b',"t":1}', b',"ptn":77,"t":1}')),
        ("key rid beyond int64", "left", _sub(key, b'"rid":1', b'"rid":9223372036854775808')),
        ("key whitespace", "left", _sub(key, b'"ts":6000', b'"ts": 6000')),
        ("key escape in the table name", "left", _sub(key, b'"tbl":"plain"', b'"tbl":"pl\\u0061in"')),
        ("key t twice", "left", _sub(key, b',"t":1}', b',"t":1,"t":1}')),
        ("key not JSON", "left", key[:-1]),
        ("key invalid UTF-8", "left", _sub(key, b'"scm":"diffdb"', b'"scm":"diff\xffdb"')),
    ]
    n_column, s_column = b'"n":{"t":3,"f":65,"v":5}', b'"s":{"t":15,"f":64,"v":"abc"}'
    valued: list[tuple[str, str, bytes]] = [
        ("whitespace in the value", "left", _sub(value, b'"n":{', b'"n": {')),
        ("columns reordered", "taken", _sub(value, n_column + b"," + s_column, s_column + b"," + n_column)),
        ("duplicated column", "left", _sub(value, n_column, n_column + b"," + n_column)),
        ("extra column member", "left", _sub(value, n_column, b'"n":{"t":3,"f":65,"x":1,"v":5}')),
        ("h false", "taken", _sub(value, n_column, b'"n":{"t":3,"h":false,"f":65,"v":5}')),
        ("f missing", "taken", _sub(value, n_column, b'"n":{"t":3,"v":5}')),
        ("t missing", "left", _sub(value, n_column, b'"n":{"f":65,"v":5}')),
        ("v missing", "left", _sub(value, n_column, b'"n":{"t":3,"f":65}')),
        ("t 256", "left", _sub(value, n_column, b'"n":{"t":256,"f":65,"v":5}')),
        ("t 6 (NULL)", "left", _sub(value, n_column, b'"n":{"t":6,"f":65,"v":null}')),
        ("t 255 (geometry)", "left", _sub(value, n_column, b'"n":{"t":255,"f":65,"v":null}')),
        ("t 99", "left", _sub(value, n_column, b'"n":{"t":99,"f":65,"v":5}')),
        ("f negative", "left", _sub(value, n_column, b'"n":{"t":3,"f":-1,"v":5}')),
        ("h a number", "left", _sub(value, n_column, b'"n":{"t":3,"h":1,"f":65,"v":5}')),
        ("an INT a string", "spoils", _sub(value, *_n(b'"5"'))),
        ("an INT with a fraction", "spoils", _sub(value, *_n(b"1.0"))),
        ("an INT with an exponent", "spoils", _sub(value, *_n(b"1e2"))),
        ("an INT true", "spoils", _sub(value, *_n(b"true"))),
        ("an INT with a leading zero", "spoils", _sub(value, *_n(b"05"))),
        ("an INT an object", "left", _sub(value, *_n(b'{"a":1}'))),
        ("an INT -0", "left", _sub(value, *_n(b"-0"))),
        ("an INT above its range", "left", _sub(value, *_n(b"2147483648"))),
        ("an INT null", "taken", _sub(value, *_n(b"null"))),
        ("a VARCHAR a number", "spoils", _sub(value, b'"v":"abc"', b'"v":5')),
        ("escaped quote", "taken", _sub(value, b'"v":"abc"', b'"v":"a\\"b"')),
        ("escaped backslash before u", "taken", _sub(value, b'"v":"abc"', b'"v":"C:\\\\users\\\\u"')),
        ("escaped newline", "taken", _sub(value, b'"v":"abc"', b'"v":"a\\nb"')),
        ("unicode escape", "left", _sub(value, b'"v":"abc"', b'"v":"\\u00e9"')),
        ("lone surrogate escape", "left", _sub(value, b'"v":"abc"', b'"v":"\\ud800"')),
        ("Go's escape of <", "taken", _sub(value, b'"v":"abc"', b'"v":"a\\u003cb\\u0026"')),
        ("escaped backslash before u003c", "taken", _sub(value, b'"v":"abc"', b'"v":"a\\\\u003cb"')),
        ("Go's escape after an escaped backslash", "taken", _sub(value, b'"v":"abc"', b'"v":"a\\\\\\u003cb"')),
        ("raw control character", "left", _sub(value, b'"v":"abc"', b'"v":"a\x01b"')),
        ("invalid UTF-8 in a value", "left", _sub(value, b'"v":"abc"', b'"v":"a\xffb"')),
        ("raw U+2028", "taken", _sub(value, b'"v":"abc"', '"v":"a\u2028b"'.encode())),
        ("DOUBLE with an exponent", "taken", _sub(value, b'"v":1.5', b'"v":1e+16')),
        ("DOUBLE a long whole number", "left", _sub(value, b'"v":1.5', b'"v":10000000000000000')),
        ("DOUBLE a whole number", "taken", _sub(value, b'"v":1.5', b'"v":2')),
        ("DOUBLE -0", "left", _sub(value, b'"v":1.5', b'"v":-0')),
        ("DOUBLE a trailing zero", "left", _sub(value, b'"v":1.5', b'"v":1.50')),
        ("DOUBLE a string", "spoils", _sub(value, b'"v":1.5', b'"v":"1.5"')),
        ("zero TIMESTAMP", "left", _sub(value, b'"v":"2024-03-01 12:00:00"', b'"v":"0000-00-00 00:00:00"')),
        ("TIMESTAMP month 13", "left", _sub(value, b'"v":"2024-03-01 12:00:00"', b'"v":"2024-13-01 12:00:00"')),
        (
            "TIMESTAMP in a skipped hour",
            "left",
            _sub(value, b'"v":"2024-03-01 12:00:00"', b'"v":"2024-03-10 02:30:00"'),
        ),
        (
            "TIMESTAMP with a fraction",
            "taken",
            _sub(value, b'"v":"2024-03-01 12:00:00"', b'"v":"2024-03-01 12:00:00.25"'),
        ),
        ("ENUM index beyond its members", "left", _sub(value, b'"t":247,"f":64,"v":2', b'"t":247,"f":64,"v":3')),
        ("ENUM index 0", "taken", _sub(value, b'"t":247,"f":64,"v":2', b'"t":247,"f":64,"v":0')),
        ("ENUM index negative", "spoils", _sub(value, b'"t":247,"f":64,"v":2', b'"t":247,"f":64,"v":-1')),
        ("VARBINARY with a Go escape", "taken", _sub(value, b'"v":"ab"', b'"v":"a\\\\x00b"')),
        ("VARBINARY with an invalid Go escape", "left", _sub(value, b'"v":"ab"', b'"v":"a\\\\qb"')),
        ("VARBINARY with a Go rune escape", "taken", _sub(value, b'"v":"ab"', b'"v":"a\\\\u00adb"')),
        ("VARBINARY with a Go octal escape", "left", _sub(value, b'"v":"ab"', b'"v":"a\\\\377b"')),
        ("TEXT base64 not UTF-8", "left", _sub(value, b'"v":"eHl6"', b'"v":"/w=="')),
        ("TEXT base64 with padding bits set", "left", _sub(value, b'"v":"eHl6"', b'"v":"eB=="')),
        ("TEXT not base64", "left", _sub(value, b'"v":"eHl6"', b'"v":"eHl"')),
        ("u empty", "left", b'{"u":{}}'),
        ("u and d", "left", value[:-1] + b',"d":' + value[len(b'{"u":') : -1] + b"}"),
        ("p before u", "left", b'{"p":' + value[len(b'{"u":') : -1] + b',"u":' + value[len(b'{"u":') :]),
        ("p empty", "left", value[:-1] + b',"p":{}}'),
        ("p null", "left", value[:-1] + b',"p":null}'),
        ("value an array", "left", b"[1]"),
        ("value truncated", "left", value[:-1]),
        ("value empty", "left", b""),
        ("extra value member", "left", value[:-1] + b',"x":1}'),
        ("a column the schema lacks", "left", _sub(value, n_column, n_column + b',"zz":{"t":3,"f":65,"v":1}')),
        ("a column missing", "taken", _sub(value, n_column + b",", b"")),
    ]
    out = [(name, rule, _framed(k, value)) for name, rule, k in keyed]
    out += [(name, rule, _framed(key, v)) for name, rule, v in valued]
    key_bytes, value_bytes = pair
    assert key_bytes is not None
    assert value_bytes is not None
    out += [
        ("batch version 2", "left", (b"\x00" * 7 + b"\x02" + key_bytes[8:], value_bytes)),
        ("key shorter than 8 bytes", "left", (key_bytes[:5], value_bytes)),
        ("key item longer than the key", "left", (key_bytes[:-1], value_bytes)),
        ("value item longer than the value", "left", (key_bytes, value_bytes[:-1])),
        ("a stray byte after the value item", "left", (key_bytes, value_bytes + b"\x00")),
        ("two key items, one value item", "left", (key_bytes + key_bytes[8:], value_bytes)),
        ("no key", "left", (None, value_bytes)),
        ("no value", "left", (key_bytes, None)),
        ("empty batch", "left", (key_bytes[:8], b"")),
        ("two rows", "taken", frame_batch([key, other_key], [value, other_value])),
        ("a row and a resolved event", "left", frame_batch([key, b'{"ts":6001,"t":3}'], [value, b""])),
        ("a row and a DDL", "left", frame_batch([key, key.replace(b'"t":1', b'"t":2')], [value, b'{"q":"x","t":1}'])),
        ("a row and a broken row", "left", frame_batch([key, other_key], [value, other_value[:-1]])),
    ]
    return out


def mutation_cases(enc: OpenEncoder) -> list[tuple[str, str, list[Pair]]]:
    """Each mutation between a valid INSERT (its group) and a valid DELETE of ``plain``."""
    return [
        (name, rule, [plain_pair(enc, 2), pair, plain_pair(enc, 3, DmlOp.DELETE)])
        for name, rule, pair in mutations(enc)
    ]
