r"""Messages for ``test_debezium_differential``: the simulator's Debezium encoder over tables of every
column type, and malformed or unusual mutations of a valid message.

Each builder returns :class:`Case` objects: (key, value) pairs plus the indexes of the messages the
vector path must take. What it must take is stated here from the documented rule, not from the
vector path's code: a row change (op c/u/d) of a table version the lookup knows, of columns that
all have a vector twin (no BIT(n>1)), whose value holds no ``\u`` escape (TiCDC's writer makes one
only for a control character other than tab, newline and carriage return; the short escapes are
taken), whose doubles are sent as the text pyarrow writes for them (a DECIMAL without an
exponent), sent uncompressed with its Connect schema.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from decimal import localcontext
from typing import Any

import pyarrow as pa

from tests.ticdc_lake.spark.type_cases import CASES, wide_rows
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.debezium_encoder import DebeziumEncoder
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.random_values import ValueGenerator

ZONE = "America/New_York"
DB = "diffdb"
#: Types sent as JSON doubles: their rows are taken where the double's text is pyarrow's (``_doubles_as_pyarrow``).
DOUBLES = ("float", "double", "decimal")
_MAX_TIME_US = (838 * 3600 + 59 * 60 + 59) * 1_000_000
Pair = tuple[bytes | None, bytes | None]


@dataclass
class Case:
    """Messages and the indexes (into :attr:`pairs`) the vector path must take."""

    name: str
    pairs: list[Pair] = field(default_factory=list)
    taken: set[int] = field(default_factory=set)

    def add(self, pair: Pair, take: bool) -> None:
        if take:
            self.taken.add(len(self.pairs))
        self.pairs.append(pair)

    def extend(self, other: Case) -> None:
        base = len(self.pairs)
        self.pairs.extend(other.pairs)
        self.taken.update(base + n for n in other.taken)


def _primary(*names: str) -> tuple[IndexSchema, ...]:
    return (IndexSchema("PRIMARY", names, primary=True, unique=True),)


def _covered(c: ColumnSchema) -> bool:
    return c.mysql_type not in DOUBLES and not _no_twin(c)


def _no_twin(c: ColumnSchema) -> bool:
    return c.mysql_type == "bit" and (c.length or 1) > 1


def covered_schema(table: str = "covered", version: int = 1000) -> TableSchema:
    """Every column of the wide table (``type_cases``) whose type has a vector twin, but JSON
    (whose documents are sent escaped, so a table with one is rarely taken: :func:`json_schema`)."""
    picked = (c.column for c in CASES.values() if _covered(c.column) and c.column.mysql_type != "json")
    return TableSchema(DB, table, (ColumnSchema("id", "int", nullable=False), *picked), _primary("id"), version=version)


def json_schema() -> TableSchema:
    """The wide table's JSON column with an id and an INT."""
    columns = (ColumnSchema("id", "int", nullable=False), ColumnSchema("i", "int"), CASES["js"].column)
    return TableSchema(DB, "json_doc", columns, _primary("id"), version=1000, source="simulator")


def uncovered_schemas(version: int = 1000) -> list[TableSchema]:
    """One table per type without a twin (BIT(n>1)): id plus that one column."""
    return _one_column_tables([c.column for c in CASES.values() if _no_twin(c.column)], version)


def double_schemas(version: int = 1000) -> list[TableSchema]:
    """One table per type sent as a JSON double (FLOAT, DOUBLE, DECIMAL): id plus that one column."""
    return _one_column_tables([c.column for c in CASES.values() if c.column.mysql_type in DOUBLES], version)


def _one_column_tables(picked: list[ColumnSchema], version: int) -> list[TableSchema]:
    return [
        TableSchema(
            DB, f"only_{c.name}", (ColumnSchema("id", "int", nullable=False), c), _primary("id"), version=version
        )
        for c in picked
    ]


def _rows_for(schema: TableSchema, rng: random.Random, count: int) -> list[dict[str, Any]]:
    """The wide table's edge rows (cut to the schema's columns), then ``count`` random rows."""
    names = [c.name for c in schema.columns]
    rows = [{n: row[n] for n in names} for row in wide_rows()] if set(names) <= {"id", *CASES} else []
    generator = ValueGenerator(rng, null_probability=0.1, edge_probability=0.2, server_time_zone=ZONE)
    for n in range(count):
        row = {c.name: _time(rng, c) if c.mysql_type == "time" else generator.value(c) for c in schema.columns}
        rows.append({**row, "id": 1000 + n})
    return rows


def _time(rng: random.Random, c: ColumnSchema) -> str | None:
    """A random TIME (the generator has none) as TiDB text, ``fsp`` fraction digits, NULL one time in ten."""
    if rng.random() < 0.1:
        return None
    fsp = c.fsp or 0
    micros = rng.randint(-_MAX_TIME_US, _MAX_TIME_US)
    micros -= micros % 10 ** (6 - fsp) if micros >= 0 else -(-micros % 10 ** (6 - fsp))
    sign, rest = ("-" if micros < 0 else ""), abs(micros)
    seconds, fraction = divmod(rest, 1_000_000)
    text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return text + (f".{fraction:06d}"[: fsp + 1] if fsp else "")


def encode(encoder: DebeziumEncoder, change: RowChange, schema: TableSchema, commit_ts: int) -> Pair:
    with localcontext() as context:
        context.prec = 100  # DECIMAL(65,30) has 65 digits; Python's default context keeps 28
        message = encoder.encode_row(change, schema, commit_ts, commit_ts)
    return message.key, message.value


def dml_case(
    name: str,
    schema: TableSchema,
    rows: Sequence[Mapping[str, Any]],
    encoder: DebeziumEncoder,
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
        pair = encode(encoder, change, schema, commit_ts + n)
        value = pair[1] or b""
        case.add(pair, take and b"\\u" not in value and _doubles_as_pyarrow(schema, value))
    return case


def _doubles_as_pyarrow(schema: TableSchema, value: bytes) -> bool:
    """Whether every FLOAT/DOUBLE/DECIMAL of the row is sent as the text pyarrow writes for its double
    (so the vector path can show it read the text as sent; ``-0`` too, the JSON integer 0 to both
    decoders), a DECIMAL without exponent."""
    payload = json.loads(value, parse_float=str, parse_int=str).get("payload") or {}
    kinds = {c.name: c.mysql_type for c in schema.columns if c.mysql_type in DOUBLES}
    for image in (payload.get("before"), payload.get("after")):
        for name, text in (image or {}).items():
            if name not in kinds or text is None:
                continue
            written = pa.scalar(float(text), pa.float64()).cast(pa.string()).as_py()
            if text != written or (kinds[name] == "decimal" and "e" in text):
                return False
    return True


def covered_case(encoder: DebeziumEncoder, rng: random.Random, random_rows: int, *, plain: bool = False) -> Case:
    """The covered table's edge rows and ``random_rows`` random rows, inserted, updated, deleted;
    ``plain``: with ``"``, ``\\`` and control characters in texts replaced by ``_`` (the simulator's
    words include them)."""
    rows = _rows_for(covered_schema(), rng, random_rows)
    if plain:
        rows = [{k: v.translate(_PLAIN) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
    return dml_case("covered", covered_schema(), rows, encoder, commit_ts=5_000, take=True)


#: Characters a JSON writer escapes, to ``_``.
_PLAIN = {ord('"'): "_", ord("\\"): "_", **{code: "_" for code in range(0x20)}}


def json_case(encoder: DebeziumEncoder, rng: random.Random) -> Case:
    """Rows of :func:`json_schema`: documents are strings sent with their quotes escaped (``\\"``),
    taken like any other string."""
    rows = _rows_for(json_schema(), rng, 30)
    rows += [{"id": 2000 + n, "i": n, "js": js} for n, js in enumerate(("[]", "{}", "null", "[1, 2.5]", "-0.5"))]
    return dml_case("json", json_schema(), rows, encoder, commit_ts=5_000, take=True)


def double_case(encoder: DebeziumEncoder, rng: random.Random) -> Case:
    """Each double type's table (``double_schemas``): rows whose doubles are sent as pyarrow writes them taken."""
    case = Case("doubles")
    for schema in double_schemas():
        case.extend(dml_case(schema.table, schema, _rows_for(schema, rng, 40), encoder, commit_ts=5_000, take=True))
    return case


def uncovered_case(encoder: DebeziumEncoder, rng: random.Random) -> Case:
    """Each uncovered type's table (``uncovered_schemas``): none taken."""
    case = Case("uncovered")
    for schema in uncovered_schemas():
        case.extend(dml_case(schema.table, schema, _rows_for(schema, rng, 20), encoder, commit_ts=5_000, take=False))
    return case


# ----------------------------------------------------------------------------- two versions
EVO_DDL_TS = 8_000
#: (name, value) columns of version 1 of a table; version 2 (at EVO_DDL_TS) adds ``c``.
_EVO_V1 = (column("id", "bigint", nullable=False), column("a", "int"), column("b", "varchar", length=20))
_EVO_V2 = (*_EVO_V1, column("c", "date"))


def evolving_schemas(table: str) -> tuple[TableSchema, TableSchema]:
    v1 = TableSchema(DB, table, _EVO_V1, _primary("id"), table_id=21, version=7_000, source="debezium-table-changes")
    return v1, replace(v1, columns=_EVO_V2, version=EVO_DDL_TS)


def _evo_row(n: int, with_c: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"id": n, "a": n * 7 - 50, "b": f"row {n} é"}
    if with_c:
        row["c"] = date(2024, 1, 1 + n % 28)
    return row


def evolving_cases(encoder: DebeziumEncoder) -> dict[str, Case]:
    """Rows of a table that gains a column at :data:`EVO_DDL_TS`, each situation its own table
    (``evo_*``, so that in a mixed batch no two situations share a Connect schema text):

    * ``split``: version-1 rows before the DDL and version-2 rows after it: all taken;
    * ``spanning``: rows sent with the version-1 Connect schema on both sides of the DDL (one
      schema text, two versions): none taken;
    * ``pending``: rows sent with the column ``c`` before the DDL (the version they bind to lacks
      it: PENDING in the reference): none taken.
    """
    cases: dict[str, Case] = {}
    for name in ("split", "spanning", "pending"):
        v1, v2 = evolving_schemas(f"evo_{name}")
        case = cases[name] = Case(f"evo {name}")
        for n in range(12):
            early = n % 2 == 0 if name != "pending" else True
            ts = EVO_DDL_TS - 100 + n if early else EVO_DDL_TS + 100 + n
            schema = v2 if (name == "split" and not early) or name == "pending" else v1
            row = _evo_row(n, with_c=schema is v2)
            case.add(encode(encoder, RowChange(DmlOp.INSERT, DB, schema.table, after=row), schema, ts), name == "split")
        query = f"ALTER TABLE {DB}.{v1.table} ADD COLUMN c DATE"
        ddl = encoder.encode_ddl(DdlChange("ALTER", query, DB, v1.table, v2, pre_table_schema=v1), EVO_DDL_TS, 1)
        assert ddl is not None
        case.add((ddl.key, ddl.value), False)
    return cases


def unknown_table_case(encoder: DebeziumEncoder) -> Case:
    """Rows of a table no lookup knows (unbound, or inferred with ``infer_missing``): none taken."""
    schema = TableSchema(DB, "stranger", _EVO_V1, _primary("id"), version=1)
    case = Case("unknown table")
    for n in range(6):
        change = RowChange(DmlOp.INSERT, DB, "stranger", after=_evo_row(n, with_c=False))
        case.add(encode(encoder, change, schema, 9_000 + n), False)
    return case


def lookup_schemas() -> list[TableSchema]:
    """Every table version the cases' lookup knows (not ``stranger``)."""
    found = [
        covered_schema(),
        json_schema(),
        *double_schemas(),
        *uncovered_schemas(),
        plain_schema(),
        schema_column_schema(),
    ]
    for name in ("split", "spanning", "pending"):
        found.extend(evolving_schemas(f"evo_{name}"))
    return found


# ----------------------------------------------------------------------------- mutations
def plain_schema() -> TableSchema:
    """A small table of the usual covered types: the template of the mutations."""
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
        column("flag", "bit", length=1),
        column("e", "enum", elements=("lo", "hi")),
        column("y", "year"),
        column("vb", "varbinary", length=16),
    )
    return TableSchema(DB, "plain", columns, _primary("id"), table_id=31, version=1_000, source="simulator")


def schema_column_schema() -> TableSchema:
    """A table with a column named ``schema`` (its row image then holds ``,"schema":``)."""
    columns = (column("id", "bigint", nullable=False), column("schema", "varchar", length=20), column("n", "int"))
    return TableSchema(DB, "has_schema_column", columns, _primary("id"), version=1_000, source="simulator")


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
        "flag": 1,
        "e": "hi",
        "y": 2024,
        "vb": b"\x00\xffab",
    }


def plain_pair(encoder: DebeziumEncoder, n: int, op: DmlOp = DmlOp.INSERT, commit_ts: int = 6_000) -> Pair:
    schema = plain_schema()
    row = plain_row(n)
    before = None if op is DmlOp.INSERT else row
    after = None if op is DmlOp.DELETE else row
    return encode(encoder, RowChange(op, DB, "plain", before=before, after=after), schema, commit_ts + n)


def _sub(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) >= 1, (old, data[:300])
    return data.replace(old, new, 1)


def mutations(key: bytes, value: bytes) -> list[tuple[str, Pair]]:
    """Malformed and unusual variants of one valid ``plain`` INSERT (id 1, ``"n":5``, ``"s":"abc"``)."""
    head, payload_end = value[: value.index(b',"schema":')], value[value.index(b',"schema":') :]
    schema_text = payload_end[len(b',"schema":') : -1]
    out: list[tuple[str, bytes | None, bytes | None]] = [
        ("whitespace in the payload", key, _sub(value, b'"n":5', b'"n": 5')),
        ("whitespace between the members", key, _sub(value, b',"schema":', b', "schema":')),
        ("whitespace at the end", key, value + b" "),
        ("members of the image reordered", key, _sub(value, b'{"id":1,"n":5', b'{"n":5,"id":1')),
        ("members of the payload reordered", key, _sub(value, b'"ts_ms":', b'"ts_ms2":')),
        ("schema member first", key, b'{"schema":' + schema_text + b',"payload":' + head[len(b'{"payload":') :] + b"}"),
        ("duplicated column", key, _sub(value, b'"n":5', b'"n":5,"n":6')),
        ("duplicated op", key, _sub(value, b'"op":"c"', b'"op":"c","op":"d"')),
        ("duplicated source", key, _sub(value, b'"ts_ms":', b'"source":{},"ts_ms":')),
        ("duplicated key column", _sub(key, b'{"id":1}', b'{"id":1,"id":2}'), value),
        ("duplicated payload member of the envelope", key, _sub(value, b',"schema":', b',"payload":{},"schema":')),
        ("extra column", key, _sub(value, b'"n":5', b'"n":5,"zz":1')),
        ("extra payload member", key, _sub(value, b'"op":"c"', b'"op":"c","extra":1')),
        ("extra envelope member", key, _sub(value, b'{"payload":', b'{"x":1,"payload":')),
        ("missing column", key, _sub(value, b'"n":5,', b"")),
        ("minus zero", key, _sub(value, b'"n":5', b'"n":-0')),
        ("a fraction in an INT", key, _sub(value, b'"n":5', b'"n":1.0')),
        ("an exponent in an INT", key, _sub(value, b'"n":5', b'"n":1e2')),
        ("a string in an INT", key, _sub(value, b'"n":5', b'"n":"5"')),
        ("a number in a VARCHAR", key, _sub(value, b'"s":"abc"', b'"s":5')),
        ("an object in a VARCHAR", key, _sub(value, b'"s":"abc"', b'"s":{"a":1}')),
        ("a number in a BIT(1)", key, _sub(value, b'"flag":true', b'"flag":1')),
        ("INT above its range", key, _sub(value, b'"n":5', b'"n":2147483648')),
        ("INT below its range", key, _sub(value, b'"n":5', b'"n":-2147483649')),
        ("TINYINT above its range", key, _sub(value, b'"ti":-3', b'"ti":128')),
        ("BIGINT above int64", key, _sub(value, b'"id":1,', b'"id":9223372036854775808,')),
        ("BIGINT UNSIGNED above uint64", key, _sub(value, b'"u":-1', b'"u":18446744073709551616')),
        ("YEAR out of range", key, _sub(value, b'"y":2024', b'"y":2156')),
        ("null in the NOT NULL id", key, _sub(value, b'"id":1,', b'"id":null,')),
        ("ENUM non-member", key, _sub(value, b'"e":"hi"', b'"e":"mid"')),
        ("base64 with padding bits set", key, _sub(value, b'"vb":"AP9hYg=="', b'"vb":"AP9hYh=="')),
        ("invalid UTF-8 in a value", key, _sub(value, b'"s":"abc"', b'"s":"ab\xff"')),
        ("invalid UTF-8 in the schema", key, _sub(value, b'"field":"s"', b'"field":"s\xff"')),
        ("raw control character", key, _sub(value, b'"s":"abc"', b'"s":"a\x01b"')),
        ("raw tab", key, _sub(value, b'"s":"abc"', b'"s":"a\tb"')),
        ("escaped quote", key, _sub(value, b'"s":"abc"', b'"s":"a\\"b"')),
        ("escaped backslash before u", key, _sub(value, b'"s":"abc"', b'"s":"C:\\\\users\\\\u"')),
        ("escaped newline", key, _sub(value, b'"s":"abc"', b'"s":"a\\nb"')),
        ("unicode escape", key, _sub(value, b'"s":"abc"', b'"s":"\\u00e9"')),
        ("lone surrogate escape", key, _sub(value, b'"s":"abc"', b'"s":"\\ud800"')),
        ("escaped key", key, _sub(value, b'"n":5', b'"\\u006e":5')),
        ("raw U+2028", key, _sub(value, b'"s":"abc"', '"s":"a\u2028b"'.encode())),
        ("raw DEL", key, _sub(value, b'"s":"abc"', b'"s":"a\x7fb"')),
        ("byte order mark", key, b"\xef\xbb\xbf" + value),
        ("overlong UTF-8", key, _sub(value, b'"s":"abc"', b'"s":"a\xc0\xafb"')),
        ("UTF-8 of a surrogate in a value", key, _sub(value, b'"s":"abc"', b'"s":"a\xed\xa0\x80b"')),
        ("UTF-8 of a surrogate in the key", _sub(key, b'"id":1', b'"id":"\xed\xa0\x80"'), value),
        ("invalid UTF-8 in the key", _sub(key, b'"id":1', b'"id":"\xff"'), value),
        ("a leading zero", key, _sub(value, b'"n":5', b'"n":05')),
        ("a plus sign", key, _sub(value, b'"n":5', b'"n":+5')),
        ("NaN in an INT", key, _sub(value, b'"n":5', b'"n":NaN')),
        ("Infinity in an INT", key, _sub(value, b'"n":5', b'"n":Infinity')),
        ("true in an INT", key, _sub(value, b'"n":5', b'"n":true')),
        ("duplicated db in the source", key, _sub(value, b'"db":"diffdb"', b'"db":"diffdb","db":"other"')),
        ("truncated by one byte", key, value[:-1]),
        ("truncated in the payload", key, value[: len(head) // 2]),
        ("truncated key", key[:-3], value),
        ("malformed key", b"not json", value),
        ("key payload not an object", _sub(key, b'{"id":1}', b"[1]"), value),
        ("key with a nested member", _sub(key, b'{"id":1}', b'{"id":{"x":1}}'), value),
        ("null key", None, value),
        ("tombstone", key, None),
        ("empty value", key, b""),
        ("schema not an object", key, head + b',"schema":[1]}'),
        ("schema a string", key, head + b',"schema":"s"}'),
        ("schema null", key, head + b',"schema":null}'),
        ("no schema member", key, head + b"}"),
        ("schema without fields", key, head + b',"schema":{"type":"struct"}}'),
        ("op m with a row", key, _sub(value, b'"op":"c"', b'"op":"m"')),
        ("op x", key, _sub(value, b'"op":"c"', b'"op":"x"')),
        ("op a number", key, _sub(value, b'"op":"c"', b'"op":1')),
        ("op r (snapshot read)", key, _sub(value, b'"op":"c"', b'"op":"r"')),
        ("op u without before", key, _sub(value, b'"op":"c","before":null', b'"op":"u","before":null')),
        ("op d with an after image", key, _sub(value, b'"op":"c"', b'"op":"d"')),
        ("commit_ts above 2**64-1", key, _sub(value, b'"commit_ts":6001', b'"commit_ts":18446744073709551616')),
        ("commit_ts 2**64-1", key, _sub(value, b'"commit_ts":6001', b'"commit_ts":18446744073709551615')),
        ("commit_ts 2**63", key, _sub(value, b'"commit_ts":6001', b'"commit_ts":9223372036854775808')),
        ("commit_ts negative", key, _sub(value, b'"commit_ts":6001', b'"commit_ts":-1')),
        ("commit_ts a string", key, _sub(value, b'"commit_ts":6001', b'"commit_ts":"6001"')),
        ("commit_ts a fraction", key, _sub(value, b'"commit_ts":6001', b'"commit_ts":6001.0')),
        ("commit_ts missing", key, _sub(value, b',"commit_ts":6001', b"")),
        ("commit_ts before the table's first version", key, _sub(value, b'"commit_ts":6001', b'"commit_ts":999')),
        ("source db another table", key, _sub(value, b'"table":"plain"', b'"table":"covered"')),
        ("source table a number", key, _sub(value, b'"table":"plain"', b'"table":7')),
        (
            "source not an object",
            key,
            _sub(value, b'"source":{', b'"source":[{').replace(b',"ts_ms":', b'],"ts_ms":', 1),
        ),
        ("payload not an object", key, b'{"payload":[1],"schema":' + schema_text + b"}"),
    ]
    return [(name, (k, v)) for name, k, v in out]


def mutation_cases(encoder: DebeziumEncoder) -> list[tuple[str, list[Pair]]]:
    """Per mutation of a valid ``plain`` INSERT: (its name, [a valid INSERT, the mutation, a valid DELETE])."""
    key, value = plain_pair(encoder, 1)
    assert key is not None
    assert value is not None
    return [
        (name, [plain_pair(encoder, 2), pair, plain_pair(encoder, 3, DmlOp.DELETE)])
        for name, pair in mutations(key, value)
    ]


def shuffled(cases: Iterable[Case], rng: random.Random) -> Case:
    """All messages of ``cases`` in one random order, with their taken indexes moved along."""
    whole = Case("mixed")
    for case in cases:
        whole.extend(case)
    order = list(range(len(whole.pairs)))
    rng.shuffle(order)
    mixed = Case("mixed")
    for new, old in enumerate(order):
        mixed.add(whole.pairs[old], old in whole.taken)
        assert (new in mixed.taken) == (old in whole.taken)
    return mixed
