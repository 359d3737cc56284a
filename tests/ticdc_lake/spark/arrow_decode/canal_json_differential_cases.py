r"""Messages for ``test_canal_json_differential``: the simulator's Canal-JSON encoder over a table of
every column type under each option set, two schema versions, tables the lookup does not hold,
other message types, and malformed or unusual mutations of a valid message.

What the vector path must take is stated here from the documented rule
(``canal_batch``'s docstring), not from its code: with the TiDB extension and no compression, a
DML (INSERT/UPDATE/DELETE) as TiCDC writes it (``_tidb`` holding only a ``commitTs`` below 9e18),
of a table whose version at the row's commit TSO
the lookup holds with every column the row names, but not

* an UPDATE whose ``old`` holds only the changed columns (``only-output-updated-columns``, which
  ``content-compatible`` implies) one of which is null (a null member cannot be told from a
  left-out one as ``pyarrow.json`` reads them);
* a row with the zero TIMESTAMP (kept as sent by the Python decoder) or a TIMESTAMP wall time from
  2038 on (the server's zone has daylight saving rules, which Arrow's zone database stops
  applying): :func:`takes`.

Without the TiDB extension (the pipeline's option false too, no compression) the same DMLs with no
``_tidb`` member after ``data`` are taken (:class:`UntimedCase`), with the same exceptions, where
the row binds as docs/offset-ordered-apply.md says (:func:`untimed_version`): in an offset-ordered
run to the newest version of its table that has all its columns and is not a dropped table's, in
partition 0 not after its offset; otherwise to the version at TSO 0; unbound where its table has
no version (or, without the offset rule, none at TSO 0), but not where the lookup infers a schema
for an unknown table, and not an unbound row holding a bare ENUM/SET number. A row no such version
binds in a known table (PENDING) is never taken.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import localcontext
from typing import Any

from tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases import Case, Pair
from tests.ticdc_lake.spark.arrow_decode.simple_json_differential_cases import (
    _evo_row,
    evolving_schemas,
    plain_row,
    plain_schema,
)
from tests.ticdc_lake.spark.type_cases import SERVER_ZONE, ZERO_DATE, ZERO_DATETIME, ZERO_TIMESTAMP, wide_schema
from ticdc_lake.schema.ddl_facts import DROPPED
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim.canal_json_encoder import CanalJsonEncoder
from ticdc_sim.model import DdlChange, DmlOp, RowChange

ZONE = SERVER_ZONE
DB = "diffdb"
EVO_V1, EVO_V2 = 7_000, 8_000
#: The option sets of the simulator's encoder (``content_compatible`` implies only the changed columns in ``old``).
OPTION_SETS: dict[str, dict[str, bool]] = {
    "bare types": {},
    "only updated columns": {"only_output_updated_columns": True},
    "content compatible": {"content_compatible": True},
}


class ZeroDateEncoder(CanalJsonEncoder):
    """Canal-JSON as TiCDC writes MySQL zero dates, which the reference model cannot hold."""

    def format_value(self, column: ColumnSchema, value: Any) -> str | None:
        zero = "0000-00-00 00:00:00" + ("." + "0" * column.fsp if column.fsp else "")
        if column.mysql_type == "date" and value == ZERO_DATE:
            return "0000-00-00"
        if column.mysql_type == "datetime" and value == ZERO_DATETIME:
            return zero
        if column.mysql_type == "timestamp" and value == ZERO_TIMESTAMP:
            return zero
        return super().format_value(column, value)


def encoder(*, enable_tidb_extension: bool = True, **options: bool) -> CanalJsonEncoder:
    return ZeroDateEncoder(ZONE, enable_tidb_extension=enable_tidb_extension, **options)


def every_type_schema() -> TableSchema:
    """The wide table of ``type_cases`` (a column of every type), version 1000."""
    return replace(wide_schema(DB), version=1_000, table_id=11, source="canal-json-ddl")


def encode(enc: CanalJsonEncoder, change: RowChange, schema: TableSchema, commit_ts: int) -> Pair:
    with localcontext() as context:
        context.prec = 100  # DECIMAL(65,30) has 65 digits; Python's default context keeps 28
        message = enc.encode_row(change, schema, commit_ts, commit_ts)
    return message.key, message.value


def takes(value: bytes) -> bool:
    """The exceptions of the rule above, for a DML message of a table version the lookup holds."""
    doc = json.loads(value)
    types, data = doc["mysqlType"], doc["data"][0]
    images = [data] if doc["old"] is None else [data, doc["old"][0]]
    if doc["type"] == "UPDATE":
        old = doc["old"][0]
        if list(old) != [name for name in data if name in old]:
            return False  # the columns in another order than data's (TiCDC never writes that)
        if list(old) != list(data) and None in old.values():
            return False  # only the changed columns, one of them null: cannot be told from one left out
    for image in images:
        for name, text in image.items():
            if types[name].startswith("timestamp") and text is not None and (text.startswith("0000") or text >= "2038"):
                return False
    return True


def dml_case(
    name: str, schema: TableSchema, rows: Sequence[Mapping[str, Any]], enc: CanalJsonEncoder, *, commit_ts: int
) -> Case:
    """Each row inserted, then updated to the next row, then deleted (one message each); taken by
    :func:`takes` where the encoder writes the TiDB extension."""
    case = Case(name)
    db, table = schema.database, schema.table
    changes = [RowChange(DmlOp.INSERT, db, table, after=row) for row in rows]
    for old, new in zip(rows, [*rows[1:], rows[0]], strict=True):
        changes.append(RowChange(DmlOp.UPDATE, db, table, before=old, after={**new, "id": old["id"]}))
    changes += [RowChange(DmlOp.DELETE, db, table, before=row) for row in rows]
    for n, change in enumerate(changes):
        pair = encode(enc, change, schema, commit_ts + n)
        case.add(pair, enc.enable_tidb_extension and takes(pair[1] or b""))
    return case


# ----------------------------------------------------------------------------- two versions
def evolving_case(enc: CanalJsonEncoder) -> Case:
    """Table ``evo``: version 1 (``id, a, b``) at :data:`EVO_V1`, version 2 adds ``c`` at
    :data:`EVO_V2`. Taken: rows with version 1's columns committed in either version (version 2
    has them all), rows with ``c`` after version 2. Not taken: rows with ``c`` before version 2
    (PENDING in the reference: version 1 lacks ``c``), rows before version 1 and rows of a table
    the lookup does not know (no schema: the reference leaves them unbound), the ALTER, a
    watermark."""
    v1, v2 = evolving_schemas()
    case = Case("evolving")
    plans = [(v1, 7_500, True), (v1, 8_500, True), (v2, 8_600, True), (v2, 7_600, False), (v1, 6_000, False)]
    for n in range(30):
        schema, at, take = plans[n % len(plans)]
        row = _evo_row(n, with_c=schema is v2)
        op = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)[n % 3]
        change = RowChange(
            op, DB, "evo", before=row if op is not DmlOp.INSERT else None, after=None if op is DmlOp.DELETE else row
        )
        case.add(encode(enc, change, schema, at + n), take)
    stranger = replace(v1, table="stranger")
    for n in range(3):
        case.add(
            encode(enc, RowChange(DmlOp.INSERT, DB, "stranger", after=_evo_row(n, False)), stranger, 7_700 + n), False
        )
    ddl = enc.encode_ddl(DdlChange("ALTER", "ALTER TABLE diffdb.evo ADD COLUMN c DATE", DB, "evo", v2, v1), EVO_V2, 1)
    case.add((ddl.key, ddl.value), False)
    watermark = enc.encode_watermark(9_999, 9_999)
    case.add((watermark.key, watermark.value), False)
    return case


def lookup_schemas() -> list[TableSchema]:
    """Every table version the cases' lookup knows."""
    v1, v2 = evolving_schemas()
    return [every_type_schema(), replace(v1, version=EVO_V1), replace(v2, version=EVO_V2), plain_schema()]


# ----------------------------------------------------------------------------- mutations
def plain_pair(enc: CanalJsonEncoder, n: int, op: DmlOp = DmlOp.INSERT, commit_ts: int = 6_000) -> Pair:
    row = plain_row(n)
    before = None if op is DmlOp.INSERT else row
    after = None if op is DmlOp.DELETE else row
    return encode(enc, RowChange(op, DB, "plain", before=before, after=after), plain_schema(), commit_ts + n)


def _sub(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) >= 1, (old, data[:400])
    return data.replace(old, new, 1)


#: Mutations the rule takes: escapes both writers make the same way, an HTML character or U+2028
#: escaped as easyjson does or raw as jsoniter writes it, a DOUBLE with an exponent (kept as
#: sent), out-of-calendar DATE and DATETIME fields (kept as sent), another ``id``/``es``/``ts``/
#: ``sql`` (the decoder ignores them), a ``sql`` with a short escape, ``pkNames`` and ``sqlType``
#: null, a TIMESTAMP in a repeated hour (read as its first occurrence by both), and the INSERT
#: made a DELETE (a valid DELETE of that row).
TAKEN = {
    "escaped quote",
    "escaped backslash before u",
    "escaped newline",
    "HTML escape as easyjson writes it",
    "U+2028 escaped as easyjson writes it",
    "double with an exponent",
    "DATETIME February 30",
    "DATE zero",
    "another id, es and ts",
    "sql with an escape",
    "pkNames null",
    "sqlType null",
    "TIMESTAMP in a repeated hour",
    "type DELETE",
    "HTML character raw",
    "raw U+2028",
}


def mutations(value: bytes) -> list[tuple[str, bytes | None]]:
    """Malformed and unusual variants of one valid ``plain`` INSERT (id 1, ``"n":"5"``, ``"s":"abc"``)."""
    ts = b'"ts":"2023-11-30 07:34:56.123"'
    head = value[: value.index(b',"old":')]
    return [
        ("whitespace in the data", _sub(value, b'"n":"5"', b'"n": "5"')),
        ("whitespace between the members", _sub(value, b',"data":', b', "data":')),
        ("whitespace at the end", value + b" "),
        ("newline at the end", value + b"\n"),
        ("columns reordered", _sub(value, b'"id":"1","n":"5"', b'"n":"5","id":"1"')),
        (
            "members reordered",
            head
            + b',"data":'
            + value.split(b',"data":')[1][:-1].rsplit(b',"_tidb"', 1)[0]
            + b',"old":null,"_tidb":{"commitTs":6001}}',
        ),
        ("duplicated column", _sub(value, b'"n":"5"', b'"n":"5","n":"6"')),
        ("duplicated type", _sub(value, b'"type":"INSERT"', b'"type":"INSERT","type":"DELETE"')),
        ("duplicated data", _sub(value, b',"data":', b',"data":[{}],"data":')),
        ("duplicated _tidb", value[:-1] + b',"_tidb":{"commitTs":1}}'),
        ("missing column", _sub(value, b'"n":"5",', b"")),
        ("extra column", _sub(value, b'"n":"5"', b'"n":"5","nn":"1"')),
        ("extra member", _sub(value, b',"data":', b',"extra":1,"data":')),
        ("leading zeros", _sub(value, b'"n":"5"', b'"n":"007"')),
        ("minus zero", _sub(value, b'"n":"5"', b'"n":"-0"')),
        ("INT above its range", _sub(value, b'"n":"5"', b'"n":"2147483648"')),
        ("TINYINT below its range", _sub(value, b'"ti":"-3"', b'"ti":"-129"')),
        ("BIGINT UNSIGNED above uint64", _sub(value, b'"u":"18446744073709551615"', b'"u":"18446744073709551616"')),
        ("an integer a JSON number", _sub(value, b'"n":"5"', b'"n":5')),
        ("a value an object", _sub(value, b'"s":"abc"', b'"s":{"a":"b"}')),
        ("a value true", _sub(value, b'"s":"abc"', b'"s":true')),
        ("YEAR out of range", _sub(value, b'"y":"2024"', b'"y":"2156"')),
        ("ENUM index beyond the members", _sub(value, b'"e":"2"', b'"e":"3"')),
        ("ENUM index beyond 65535", _sub(value, b'"e":"2"', b'"e":"65536"')),
        ("SET bits beyond the members", _sub(value, b'"st":"3"', b'"st":"4"')),
        ("binary beyond U+00FF", _sub(value, b'ab"}]', 'a\u0100"}]'.encode())),
        ("double NaN", _sub(value, b'"f":"1.5"', b'"f":"NaN"')),
        ("double beyond its range", _sub(value, b'"f":"1.5"', b'"f":"1e400"')),
        ("double with an exponent", _sub(value, b'"f":"1.5"', b'"f":"1.5e3"')),
        ("decimal with a trailing dot", _sub(value, b'"dc":"12.50"', b'"dc":"12."')),
        ("DATE month 13", _sub(value, b'"d":"2024-02-29"', b'"d":"2024-13-01"')),
        ("DATE zero", _sub(value, b'"d":"2024-02-29"', b'"d":"0000-00-00"')),
        ("DATETIME February 30", _sub(value, b'"dt":"2024-02-29 12', b'"dt":"2024-02-30 12')),
        ("TIME beyond 838 hours", _sub(value, b'"tm":"-12:34:56.12"', b'"tm":"-839:00:00"')),
        ("TIMESTAMP in a skipped hour", _sub(value, ts, b'"ts":"2024-03-10 02:30:00.000"')),
        ("TIMESTAMP in a repeated hour", _sub(value, ts, b'"ts":"2024-11-03 01:30:00.000"')),
        ("TIMESTAMP zero", _sub(value, ts, b'"ts":"0000-00-00 00:00:00.000"')),
        ("TIMESTAMP in 2040", _sub(value, ts, b'"ts":"2040-07-01 12:00:00.000"')),
        ("escaped quote", _sub(value, b'"s":"abc"', b'"s":"a\\"b"')),
        ("escaped backslash before u", _sub(value, b'"s":"abc"', b'"s":"C:\\\\users\\\\u"')),
        ("escaped newline", _sub(value, b'"s":"abc"', b'"s":"a\\nb"')),
        ("escaped backspace", _sub(value, b'"s":"abc"', b'"s":"a\\bb"')),
        ("escaped slash", _sub(value, b'"s":"abc"', b'"s":"a\\/b"')),
        ("HTML escape as easyjson writes it", _sub(value, b'"s":"abc"', b'"s":"a\\u003cb"')),
        ("HTML character raw", _sub(value, b'"s":"abc"', b'"s":"a<b"')),
        ("HTML escape upper case", _sub(value, b'"s":"abc"', b'"s":"a\\u003Cb"')),
        ("U+2028 escaped as easyjson writes it", _sub(value, b'"s":"abc"', b'"s":"a\\u2028b"')),
        ("raw U+2028", _sub(value, b'"s":"abc"', '"s":"a\u2028b"'.encode())),
        ("letter escaped", _sub(value, b'"s":"abc"', b'"s":"a\\u0062c"')),
        ("lone surrogate escape", _sub(value, b'"s":"abc"', b'"s":"\\ud800"')),
        ("surrogate pair escape", _sub(value, b'"s":"abc"', b'"s":"\\ud83d\\ude00"')),
        ("escaped key", _sub(value, b'"n":"5"', b'"\\u006e":"5"')),
        ("raw control character", _sub(value, b'"s":"abc"', b'"s":"a\x01b"')),
        ("invalid UTF-8", _sub(value, b'"s":"abc"', b'"s":"ab\xff"')),
        ("overlong UTF-8", _sub(value, b'"s":"abc"', b'"s":"a\xc0\xafb"')),
        ("UTF-8 of a surrogate", _sub(value, b'"s":"abc"', b'"s":"a\xed\xa0\x80b"')),
        ("byte order mark", b"\xef\xbb\xbf" + value),
        ("truncated by one byte", value[:-1]),
        ("truncated in the data", value[: len(value) * 3 // 4]),
        ("tombstone", None),
        ("empty value", b""),
        ("data null", _sub(value, b'"data":[{', b'"data":null,"x":[{')),
        ("data empty", _sub(value, b'"data":[{', b'"data":[],"x":[{')),
        ("data two rows", _sub(value, b'}],"_tidb"', b'},{"id":"9"}],"_tidb"')),
        ("data not an object", _sub(value, b'"data":[{', b'"data":["x",{')),
        ("data [null]", _sub(value, b'"data":[{', b'"data":[null],"x":[{')),
        ("old in an INSERT", _sub(value, b'"old":null', b'"old":[{"id":"1"}]')),
        ("type lower case", _sub(value, b'"type":"INSERT"', b'"type":"insert"')),
        ("type UPDATE without old", _sub(value, b'"type":"INSERT"', b'"type":"UPDATE"')),
        ("type DELETE", _sub(value, b'"type":"INSERT"', b'"type":"DELETE"')),
        ("type TIDB_WATERMARK", _sub(value, b'"type":"INSERT"', b'"type":"TIDB_WATERMARK"')),
        ("isDdl true", _sub(value, b'"isDdl":false', b'"isDdl":true')),
        ("isDdl a string", _sub(value, b'"isDdl":false', b'"isDdl":"false"')),
        ("database empty", _sub(value, b'"database":"diffdb"', b'"database":""')),
        ("database null", _sub(value, b'"database":"diffdb"', b'"database":null')),
        ("database of another table", _sub(value, b'"table":"plain"', b'"table":"evo"')),
        ("another id, es and ts", _sub(value, b'"id":0,', b'"id":7,').replace(b'"ts":6001', b'"ts":-5', 1)),
        ("id a float", _sub(value, b'"id":0,', b'"id":0.5,')),
        ("sql with an escape", _sub(value, b'"sql":""', b'"sql":"a\\tb"')),
        ("pkNames null", _sub(value, b'"pkNames":["id"]', b'"pkNames":null')),
        ("pkNames a number", _sub(value, b'"pkNames":["id"]', b'"pkNames":[1]')),
        (
            "sqlType null",
            value[: value.index(b'"sqlType":')] + b'"sqlType":null' + value[value.index(b',"mysqlType":') :],
        ),
        ("sqlType a boolean", _sub(value, b'"sqlType":{"id":-5', b'"sqlType":{"id":true')),
        ("sqlType a float", _sub(value, b'"sqlType":{"id":-5', b'"sqlType":{"id":-5.5')),
        ("mysqlType unknown type", _sub(value, b'"n":"int"', b'"n":"integer"')),
        ("mysqlType geometry", _sub(value, b'"n":"int"', b'"n":"geometry"')),
        ("mysqlType duplicated column", _sub(value, b'"n":"int"', b'"n":"int","n":"int"')),
        ("mysqlType lacks a column", _sub(value, b'"n":"int",', b"")),
        ("mysqlType with an extra column", _sub(value, b'"n":"int"', b'"n":"int","z":"int"')),
        ("mysqlType a number", _sub(value, b'"n":"int"', b'"n":4')),
        ("commitTs negative", _sub(value, b'"commitTs":6001', b'"commitTs":-1')),
        ("commitTs a string", _sub(value, b'"commitTs":6001', b'"commitTs":"6001"')),
        ("commitTs 2**63", _sub(value, b'"commitTs":6001', b'"commitTs":9223372036854775808')),
        ("commitTs 2**64-1", _sub(value, b'"commitTs":6001', b'"commitTs":18446744073709551615')),
        ("commitTs above 2**64-1", _sub(value, b'"commitTs":6001', b'"commitTs":18446744073709551616')),
        ("commitTs null", _sub(value, b'"commitTs":6001', b'"commitTs":null')),
        ("commitTs before every version", _sub(value, b'"commitTs":6001', b'"commitTs":5')),
        ("_tidb absent", value[: value.index(b',"_tidb"')] + b"}"),
        ("_tidb null", _sub(value, b'"_tidb":{"commitTs":6001}', b'"_tidb":null')),
        ("onlyHandleKey true", _sub(value, b'"commitTs":6001}', b'"commitTs":6001,"onlyHandleKey":true}')),
        ("onlyHandleKey false", _sub(value, b'"commitTs":6001}', b'"commitTs":6001,"onlyHandleKey":false}')),
        (
            "claim-check reference",
            _sub(value, b'"commitTs":6001}', b'"commitTs":6001,"claimCheckLocation":"file:///nowhere/x.json"}'),
        ),
    ]


def mutation_cases(enc: CanalJsonEncoder) -> list[tuple[str, list[Pair]]]:
    """Per mutation of a valid ``plain`` INSERT: (its name, [a valid INSERT, the mutation, a valid DELETE])."""
    _, value = plain_pair(enc, 1)
    assert value is not None
    return [
        (name, [plain_pair(enc, 2), (None, mutated), plain_pair(enc, 3, DmlOp.DELETE)])
        for name, mutated in mutations(value)
    ]


# ----------------------------------------------------------------------------- without the extension
#: Table versions of the lookup of the pipelines without the TiDB extension, numbered as the decode
#: driver numbers them there (the offset in partition 0 of the DDL that made them, + 1); ``plain``
#: has a start schema (version 0), ``evo`` three versions (version 3; 12 adds ``c``; 20 marks the
#: table dropped), ``stranger`` none.
UNTIMED_VERSIONS = {"all_types": 1, "plain": 0}
EVO_UNTIMED_V1, EVO_UNTIMED_V2, EVO_UNTIMED_DROPPED = 3, 12, 20


def untimed_schemas(
    evo: tuple[int, int, int] = (EVO_UNTIMED_V1, EVO_UNTIMED_V2, EVO_UNTIMED_DROPPED),
) -> list[TableSchema]:
    """Every table version the lookup of the cases without the extension knows; ``evo``: the versions
    of ``evo`` (version 1, version 2, dropped)."""
    v1, v2 = evolving_schemas()
    return [
        replace(every_type_schema(), version=UNTIMED_VERSIONS["all_types"]),
        replace(plain_schema(), version=UNTIMED_VERSIONS["plain"]),
        replace(v1, version=evo[0]),
        replace(v2, version=evo[1]),
        replace(v2, version=evo[2], extra={DROPPED: True}),
    ]


@dataclass
class UntimedCase:
    """Messages without commit TSO and what decides whether the vector path takes each: whether the
    rule takes its text (:func:`takes`, a mutation the rule takes), and the table and columns it binds by."""

    name: str
    pairs: list[Pair] = field(default_factory=list)
    takeable: list[bool] = field(default_factory=list)
    #: (table, ``mysqlType`` columns, whether a bare ENUM/SET number is sent) of a DML, else None.
    binds: list[tuple[str, frozenset[str], bool] | None] = field(default_factory=list)

    def add(self, pair: Pair, takeable: bool) -> None:
        self.pairs.append(pair)
        self.takeable.append(takeable)
        self.binds.append(_binds(pair[1]))

    def extend(self, other: UntimedCase) -> None:
        self.pairs += other.pairs
        self.takeable += other.takeable
        self.binds += other.binds

    def shuffled(self, rng: random.Random) -> UntimedCase:
        order = list(range(len(self.pairs)))
        rng.shuffle(order)
        mixed = UntimedCase(self.name)
        mixed.pairs = [self.pairs[n] for n in order]
        mixed.takeable = [self.takeable[n] for n in order]
        mixed.binds = [self.binds[n] for n in order]
        return mixed

    def taken(
        self,
        partitions: int,
        *,
        ordered: bool,
        infer_missing: bool = False,
        schemas: Sequence[TableSchema] | None = None,
    ) -> set[int]:
        """The messages the vector path takes when dealt over ``partitions`` as ``differential_support.raw``
        deals them (message n at partition n % partitions, offset n // partitions): the takeable
        DMLs with the version :func:`untimed_version` gives them (in ``schemas``, by default
        :func:`untimed_schemas`), or unbound where the rule says."""
        schemas = untimed_schemas() if schemas is None else schemas
        known = {s.table for s in schemas}
        found = set()
        for n, (takeable, binds) in enumerate(zip(self.takeable, self.binds, strict=True)):
            if not takeable or binds is None:
                continue
            table, columns, numbers = binds
            version = untimed_version(table, columns, n % partitions, n // partitions, schemas, ordered=ordered)
            if version == PENDING or (version is None and (numbers or (infer_missing and table not in known))):
                continue
            found.add(n)
        return found


PENDING = -1


def untimed_version(
    table: str, columns: frozenset[str], partition: int, offset: int, schemas: Sequence[TableSchema], *, ordered: bool
) -> int | None:
    """The version a row without commit TSO binds to (docs/offset-ordered-apply.md, "Schema versions
    without commit TSO"), None (unbound) or :data:`PENDING`: in an offset-ordered run the newest
    version that has all its columns and is not a dropped table's, starting in partition 0 from the
    version in effect at its offset, in other partitions from the newest (none: PENDING where the
    table is known, else unbound); otherwise the version in effect at commit TSO 0."""
    versions = [s for s in schemas if s.table == table]
    if not ordered:
        at_zero = [s.version for s in versions if s.version == 0]
        return at_zero[0] if at_zero else None
    if not versions:
        return None
    fits = [
        s.version
        for s in versions
        if s.version is not None
        and not s.extra.get(DROPPED)
        and columns <= {c.name for c in s.columns}
        and (partition != 0 or s.version <= offset)
    ]
    return max(fits) if fits else PENDING


def _binds(value: bytes | None) -> tuple[str, frozenset[str], bool] | None:
    try:
        doc = json.loads(value or b"")
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("isDdl") is not False or not isinstance(doc.get("mysqlType"), dict):
        return None
    types = doc["mysqlType"]
    images = [*(doc.get("data") or []), *(doc.get("old") or [])]
    numbers = any(
        types.get(name) in ("enum", "set") and text is not None
        for image in images
        if isinstance(image, dict)
        for name, text in image.items()
    )
    table = doc.get("table")
    return (table, frozenset(types), numbers) if isinstance(table, str) else None


def untimed_dml_case(
    name: str, schema: TableSchema, rows: Sequence[Mapping[str, Any]], enc: CanalJsonEncoder
) -> UntimedCase:
    """:func:`dml_case` without the extension: each row inserted, updated to the next row, deleted."""
    assert not enc.enable_tidb_extension
    case = UntimedCase(name)
    for pair in dml_case(name, schema, rows, enc, commit_ts=5_000).pairs:
        case.add(pair, takes(pair[1] or b""))
    return case


def untimed_evolving_case(enc: CanalJsonEncoder, count: int = 90) -> UntimedCase:
    """Table ``evo`` without the extension: rows with version 1's columns and rows with ``c``, an
    ALTER (partition 0 only, never taken) and rows of ``stranger`` (no version: unbound)."""
    assert not enc.enable_tidb_extension
    v1, v2 = evolving_schemas()
    case = UntimedCase("evolving without the extension")
    for n in range(count):
        schema = (v1, v2)[n % 2]
        row = _evo_row(n, with_c=schema is v2)
        op = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)[n % 3]
        change = RowChange(
            op, DB, "evo", before=row if op is not DmlOp.INSERT else None, after=None if op is DmlOp.DELETE else row
        )
        case.add(encode(enc, change, schema, 7_000 + n), True)
    stranger = replace(v1, table="stranger")
    for n in range(3):
        case.add(
            encode(enc, RowChange(DmlOp.INSERT, DB, "stranger", after=_evo_row(n, False)), stranger, 7_700 + n), True
        )
    ddl = enc.encode_ddl(DdlChange("ALTER", "ALTER TABLE diffdb.evo ADD COLUMN c DATE", DB, "evo", v2, v1), 0, 1)
    case.add((ddl.key, ddl.value), False)
    return case


#: The mutations the rule takes without the extension: those it takes with it, and the message with
#: its ``_tidb`` member cut off (which is then the valid message).
UNTIMED_TAKEN = TAKEN | {"_tidb absent"}
_TIDB_MEMBER = b',"_tidb":{"commitTs":6001}'


def untimed_mutation_cases(enc: CanalJsonEncoder) -> list[tuple[str, list[Pair]]]:
    """Each mutation of :func:`mutations` without its ``_tidb`` member (those that changed that member
    keep it: a message with ``_tidb`` is quarantined where the pipeline has no extension), between a
    valid INSERT and a valid DELETE encoded without the extension."""
    assert not enc.enable_tidb_extension
    _, value = plain_pair(encoder(), 1)
    _, plain = plain_pair(enc, 1)
    assert value is not None
    assert value.replace(_TIDB_MEMBER, b"", 1) == plain  # the valid message as the encoder writes it
    found = []
    for name, mutated in mutations(value):
        if mutated is not None and mutated.count(_TIDB_MEMBER) == 1:
            mutated = mutated.replace(_TIDB_MEMBER, b"", 1)
        found.append((name, [plain_pair(enc, 2), (None, mutated), plain_pair(enc, 3, DmlOp.DELETE)]))
    assert plain is not None
    for name, mutated in (
        ("_tidb empty", plain[:-1] + b',"_tidb":{}}'),
        ("_tidb null after data", plain[:-1] + b',"_tidb":null}'),
        ("_tidb before old", _sub(plain, b',"old":', b',"_tidb":{"commitTs":1},"old":')),
        ("a member after data", plain[:-1] + b',"x":[{"a":"b"}]}'),
        ("data twice", plain[:-1] + b',"data":[{"id":"1"}]}'),
    ):
        found.append((name, [plain_pair(enc, 2), (None, mutated), plain_pair(enc, 3, DmlOp.DELETE)]))
    return found
