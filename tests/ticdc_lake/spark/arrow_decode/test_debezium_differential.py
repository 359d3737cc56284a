"""Differential test of the vectorized Debezium decode against the Python decoder, its specification.

The same messages go through the Python decoder alone (the reference) and through what the decode
worker does (``DebeziumVectorDecoder`` over the whole batch, the Python decoder on the messages it
did not take); every message must give the same ``change_events`` rows, every column, or the same
quarantine reason, and the vector path must take exactly the messages each case says
(``differential_support.assert_same``). Messages: TiCDC's own encoder output (tiflow's
vectors), the simulator's encoder over a table of every column type under each option set, two
schema versions of one table, unknown tables, malformed mutations of a valid message, and all of
it shuffled into one batch.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests import tiflow_vectors
from tests.ticdc_lake.spark.arrow_decode import debezium_differential_cases as cases
from tests.ticdc_lake.spark.arrow_decode.differential_support import (
    assert_same,
    compress,
    raw,
    statuses,
)
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.spark.arrow_decode.debezium_batch import DebeziumVectorDecoder
from ticdc_sim.debezium_encoder import DebeziumEncoder

ZONE = cases.ZONE
RANDOM_ROWS = 150


def options(**changes: Any) -> CodecOptions:
    return CodecOptions(server_time_zone=ZONE, **changes)


def lookup(*, infer_missing: bool = False) -> MemorySchemaLookup:
    known = MemorySchemaLookup(cases.lookup_schemas())
    known.infer_missing = infer_missing
    return known


# ------------------------------------------------------------------------------ TiCDC's encoder
def compact(text: bytes) -> bytes:
    """``text`` without the whitespace between JSON tokens (strings kept byte for byte): the
    pretty-printed vectors as TiCDC sends them on the wire."""
    out = bytearray()
    inside = escaped = False
    for byte in text:
        if inside:
            out.append(byte)
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                inside = False
        elif byte == 0x22:
            inside = True
            out.append(byte)
        elif byte not in b" \t\r\n":
            out.append(byte)
    return bytes(out)


def _vector(name: str) -> bytes:
    matches = list(tiflow_vectors.EXTRACTED.glob(f"debezium_codec_test_{name}_*.json"))
    assert len(matches) == 1, name
    return matches[0].read_bytes()


#: (value, key) of tiflow's codec_test.go vectors; the row changes with a schema are the ones taken.
_CODEC_TEST_PAIRS = [
    ("L758", "L749", False),  # INSERT, schema off
    ("L816", "L794", True),  # INSERT, schema on
    ("L958", "L948", False),  # UPDATE with before, schema off
    ("L1019", "L996", True),  # UPDATE with before, schema on
    ("L1137", "L1126", False),  # UPDATE without before, schema off
    ("L1204", "L1194", False),  # DELETE, schema off
    ("L1264", "L1241", True),  # DELETE, schema on
    ("L563", "L553", False),  # watermark
    ("L91", "L72", False),  # RENAME TABLE
    ("L428", "L422", False),  # CREATE TABLE
    ("L504", "L498", False),  # DROP TABLE
]
GOLDEN_TS = 445815958939484161
#: Golden columns left out of the reduced row: BIT(n>1) has no vector twin; the Debezium connector's
#: doubles (FLOAT, DOUBLE, DECIMAL) and JSON are left out as well, so the reduced row is taken whole.
_GOLDEN_UNCOVERED = {
    "col_float",
    "col_double",
    "col_decimal",
    "col_numeric",
    "col_bit_5",
    "col_bit_6",
    "col_bit_60",
    "col_json",
}


def _golden() -> tuple[dict[str, Any], bytes]:
    testdata = tiflow_vectors.DEBEZIUM_DATA
    doc = json.loads((testdata / "datatype.dbz.json").read_bytes())
    doc["payload"]["source"]["commit_ts"] = GOLDEN_TS  # what TiCDC adds to the Debezium connector's output
    return doc, (testdata / "datatype.dbz.key.json").read_bytes()


def _without_uncovered(doc: dict[str, Any]) -> dict[str, Any]:
    """The golden row without its uncovered columns, in its schema and its image."""
    doc = json.loads(json.dumps(doc))
    for image in doc["schema"]["fields"]:
        if image["field"] in ("before", "after"):
            image["fields"] = [f for f in image["fields"] if f["field"] not in _GOLDEN_UNCOVERED]
    doc["payload"]["after"] = {k: v for k, v in doc["payload"]["after"].items() if k not in _GOLDEN_UNCOVERED}
    return doc


def _dumps(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


@tiflow_vectors.needs_vectors
def test_tiflow_vectors() -> None:
    doc, key = _golden()
    # Payload first, as TiCDC writes it (the Debezium connector's file has the schema first).
    ordered = {"payload": doc["payload"], "schema": doc["schema"]}
    reduced = _without_uncovered(ordered)
    pairs: list[tuple[bytes | None, bytes | None]] = [
        (key, _dumps(doc)),  # schema first: the Python decoder's
        (compact(key), _dumps(ordered)),  # BIT(n>1) has no twin: the Python decoder's
        (compact(key), _dumps(reduced)),
    ]
    taken = {2}
    for value_name, key_name, schema_on in _CODEC_TEST_PAIRS:
        pairs.append((_vector(key_name), _vector(value_name)))  # pretty-printed: never taken
        if schema_on:
            taken.add(len(pairs))
        pairs.append((compact(_vector(key_name)), compact(_vector(value_name))))
    known = lookup()
    known.add(TableSchema("test", "table1", (ColumnSchema("tiny", "smallint"),), version=1))
    known.add(TableSchema("test", "foo", tuple(ColumnSchema(n, "int") for n in doc["payload"]["after"]), version=1))
    result = assert_same(options(enable_tidb_extension=False), raw(pairs), known, taken=taken)
    assert statuses(result.reference)[2] == "READY"
    assert result.reference[2].rows[0]["after"][:3] == [
        ("pk", "1"),
        ("col_d_2023", "2023-11-30"),
        ("col_d_1000", "1000-01-01"),
    ]


# ------------------------------------------------------------------------------ the simulator
@pytest.mark.parametrize("extension", [True, False], ids=["tidb-extension", "no-extension"])
@pytest.mark.parametrize("old_value", [True, False], ids=["old-value", "no-old-value"])
def test_every_covered_type(extension: bool, old_value: bool) -> None:
    encoder = DebeziumEncoder(ZONE, enable_tidb_extension=extension, output_old_value=old_value)
    case = cases.covered_case(encoder, random.Random(14), RANDOM_ROWS)
    case.extend(cases.covered_case(encoder, random.Random(15), RANDOM_ROWS, plain=True))
    if extension:
        case.add((encoder.encode_watermark(9_999, 9_999).key, encoder.encode_watermark(9_999, 9_999).value), False)
    result = assert_same(options(enable_tidb_extension=extension), raw(case.pairs), lookup(), taken=case.taken)
    assert len(case.pairs) == 2 * 3 * (6 + RANDOM_ROWS) + extension
    # Every row but those with a \u escape (a control character the generator's words include); TiCDC
    # writes an UPDATE without old values with no ``before`` member at all (tiflow's codec_test.go
    # vector L1137), taken too.
    assert len(result.taken) == (932 if old_value else 933)


def test_json_documents() -> None:
    case = cases.json_case(DebeziumEncoder(ZONE), random.Random(8))
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    assert len(result.taken) == 123


def test_doubles() -> None:
    """FLOAT, DOUBLE and DECIMAL (sent as a double) rows: taken where the double is sent as the text
    pyarrow writes for it; TiCDC writes large and small ones positionally, which go to Python."""
    case = cases.double_case(DebeziumEncoder(ZONE), random.Random(12))
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    assert len(result.taken) == len(case.taken)
    assert len(case.taken) > len(case.pairs) // 4


def test_a_failing_group_goes_to_python(caplog: pytest.LogCaptureFixture) -> None:
    """An exception while decoding a group (a bug) leaves its messages to the Python decoder."""

    class Failing(DebeziumVectorDecoder):
        def _group(self, *args: Any) -> None:
            raise RuntimeError("boom")

    case = cases.covered_case(DebeziumEncoder(ZONE), random.Random(4), 5)
    messages = raw(case.pairs)
    result = Failing(options(), "p", "r").decode("b", messages, lookup())
    assert (result.events, result.taken) == (None, [False] * len(messages))
    # The group holds the messages the pre-read checks pass: those the rule takes (none with a \u escape).
    assert f"the vector decoder failed on {len(case.taken)} message(s); decoding them in Python" in caplog.text
    assert 0 < len(case.taken) < len(messages)


def test_types_without_a_twin_go_to_python() -> None:
    case = cases.uncovered_case(DebeziumEncoder(ZONE), random.Random(3))
    result = assert_same(options(), raw(case.pairs), lookup(), taken=set())
    assert statuses(result.reference).count("READY") == len(case.pairs)


def test_without_schema_member() -> None:
    encoder = DebeziumEncoder(ZONE, disable_schema=True)
    case = cases.covered_case(encoder, random.Random(5), 20)
    result = assert_same(options(), raw(case.pairs), lookup(), taken=set())
    assert statuses(result.reference).count("READY") == len(case.pairs)


@pytest.mark.parametrize(
    ("sent", "configured"),
    [
        (Compression.SNAPPY, Compression.SNAPPY),
        (Compression.LZ4, Compression.LZ4),
        (Compression.SNAPPY, Compression.NONE),
        (Compression.LZ4, Compression.NONE),
        (Compression.NONE, Compression.LZ4),
    ],
)
def test_compression(sent: Compression, configured: Compression) -> None:
    case = cases.covered_case(DebeziumEncoder(ZONE), random.Random(6), 10)
    pairs = [(compress(k, sent), compress(v, sent)) for k, v in case.pairs]
    result = assert_same(options(compression=configured), raw(pairs), lookup(), taken=set())
    decoded = statuses(result.reference).count("READY")
    assert decoded == (len(pairs) if sent is configured else 0)


def test_two_versions_of_one_table() -> None:
    evolving = cases.evolving_cases(DebeziumEncoder(ZONE))
    split = assert_same(options(), raw(evolving["split"].pairs), lookup(), taken=evolving["split"].taken)
    versions = [o.rows[0]["schema_version"] for o in split.reference if o.rows and o.rows[0]["kind"] == "DML"]
    assert sorted({int(v) for v in versions}) == [7_000, cases.EVO_DDL_TS]
    spanning = assert_same(options(), raw(evolving["spanning"].pairs), lookup(), taken=set())
    versions = [o.rows[0]["schema_version"] for o in spanning.reference if o.rows and o.rows[0]["kind"] == "DML"]
    assert sorted({int(v) for v in versions}) == [7_000, cases.EVO_DDL_TS]
    pending = assert_same(options(), raw(evolving["pending"].pairs), lookup(), taken=set())
    assert statuses(pending.reference) == ["PENDING"] * 12 + ["READY"]  # then the DDL
    together = cases.Case("together")
    for case in evolving.values():
        together.extend(case)
    assert_same(options(), raw(together.pairs), lookup(), taken=together.taken)


@pytest.mark.parametrize("infer_missing", [False, True], ids=["unbound", "infer-missing"])
def test_unknown_table(infer_missing: bool) -> None:
    encoder = DebeziumEncoder(ZONE)
    case = cases.unknown_table_case(encoder)
    case.extend(cases.evolving_cases(encoder)["split"])
    result = assert_same(options(), raw(case.pairs), lookup(infer_missing=infer_missing), taken=case.taken)
    versions = [o.rows[0]["schema_version"] for o in result.reference[:6]]
    assert versions == [0 if infer_missing else None] * 6


def test_column_named_schema() -> None:
    """A row image with a column named ``schema`` holds ``,"schema":`` inside the payload, where the
    envelope cut stops (``arrow_decode.envelope``): such rows go to the Python decoder."""
    schema = cases.schema_column_schema()
    rows = [{"id": n, "schema": f"s{n}", "n": n} for n in range(5)]
    case = cases.dml_case("schema column", schema, rows, DebeziumEncoder(ZONE), commit_ts=5_000, take=False)
    result = assert_same(options(), raw(case.pairs), lookup(), taken=set())
    assert statuses(result.reference).count("READY") == len(case.pairs)


# ------------------------------------------------------------------------------ mutations
_MUTATIONS = cases.mutation_cases(DebeziumEncoder(ZONE))
#: Mutations that make ``pyarrow.json``'s read of their whole group fail (a value of another JSON
#: type, a number beyond int64, a payload that is not one object, a duplicated member), or its
#: binding (no version at the group's smallest commit TSO): the valid rows of the group then go to
#: the Python decoder too. Correct, only slower.
_SPOIL_GROUP = {
    "duplicated column",
    "duplicated op",
    "duplicated payload member of the envelope",
    "a fraction in an INT",
    "an exponent in an INT",
    "a string in an INT",
    "a number in a VARCHAR",
    "an object in a VARCHAR",
    "a number in a BIT(1)",
    "BIGINT above int64",
    "BIGINT UNSIGNED above uint64",
    "op a number",
    "commit_ts above 2**64-1",
    "commit_ts 2**64-1",
    "commit_ts 2**63",
    "commit_ts a string",
    "commit_ts a fraction",
    "commit_ts before the table's first version",
    "source table a number",
    "source not an object",
    "payload not an object",
    "a leading zero",
    "a plus sign",
    "NaN in an INT",
    "Infinity in an INT",
    "true in an INT",
    "duplicated db in the source",
}
#: Mutations the rule takes: ``C:\\users`` is an escaped backslash before the letter u, no ``\\u`` escape.
_TAKEN = {"escaped backslash before u"}
#: Invalid UTF-8 (also overlong forms and encoded surrogates) in a payload or key: only that message
#: goes to the Python decoder (``row_batches.utf8_texts``); the batch's other rows are taken.
_NOT_UTF8 = {
    "invalid UTF-8 in a value",
    "overlong UTF-8",
    "UTF-8 of a surrogate in a value",
    "UTF-8 of a surrogate in the key",
    "invalid UTF-8 in the key",
}


@pytest.mark.parametrize(("name", "pairs"), _MUTATIONS, ids=[name for name, _ in _MUTATIONS])
def test_mutation(name: str, pairs: list[tuple[bytes | None, bytes | None]]) -> None:
    """Between two valid rows of its table, each mutation is taken only where it decodes as the
    reference does; the valid rows are taken unless the mutation spoils their group's read."""
    if name in _NOT_UTF8:
        assert_same(options(), raw(pairs), lookup(), taken={0, 2})
    elif name in _TAKEN:
        assert_same(options(), raw(pairs), lookup(), taken={0, 1, 2})
    elif name in _SPOIL_GROUP:
        assert_same(options(), raw(pairs), lookup(), taken=set(), may_take={0, 1, 2})
    else:
        assert_same(options(), raw(pairs), lookup(), taken={0, 2}, may_take={1})


# ------------------------------------------------------------------------------ one big batch
def _mixed(rng: random.Random, mutated: list[str]) -> tuple[cases.Case, set[int]]:
    """Everything above but tiflow's files, and the ``mutated`` mutations, shuffled; and the
    indexes of the ``plain`` table's messages (the mutations' group, which they may spoil)."""
    encoder = DebeziumEncoder(ZONE)
    parts = [
        cases.covered_case(encoder, rng, 400),
        cases.covered_case(encoder, rng, 400, plain=True),
        cases.json_case(encoder, rng),
        cases.double_case(encoder, rng),
        cases.uncovered_case(encoder, rng),
        cases.unknown_table_case(encoder),
    ]
    parts.extend(cases.evolving_cases(encoder).values())
    watermarks = cases.Case("watermarks")
    for n in range(5):
        message = encoder.encode_watermark(9_000 + n, 9_000 + n)
        watermarks.add((message.key, message.value), False)
    parts.append(watermarks)
    mutations = cases.Case("mutations")
    for name, pairs in _MUTATIONS:
        if name in mutated:
            mutations.add(pairs[1], False)
    parts.append(mutations)
    mixed = cases.shuffled(parts, rng)
    plain = {n for n, (_, v) in enumerate(mixed.pairs) if v is not None and b'"table":"plain"' in v}
    return mixed, plain


def test_one_mixed_batch() -> None:
    """All messages above (but tiflow's files and the messages that are not UTF-8) shuffled into one
    ``decode`` call, dealt over three partitions: the vector path takes exactly what it takes of
    each case alone."""
    names = [name for name, _ in _MUTATIONS if name not in _NOT_UTF8]
    mixed, plain = _mixed(random.Random(2026), names)
    assert len(mixed.pairs) > 3_000
    messages = raw(mixed.pairs, partitions=3)
    result = assert_same(options(), messages, lookup(infer_missing=True), taken=mixed.taken, may_take=plain)
    assert len(result.taken) > 1_000


def test_one_mixed_batch_with_invalid_utf8() -> None:
    """The same with the messages that are not UTF-8: they alone go to the Python decoder."""
    names = [name for name, _ in _MUTATIONS]
    mixed, plain = _mixed(random.Random(2027), names)
    result = assert_same(options(), raw(mixed.pairs), lookup(infer_missing=True), taken=mixed.taken, may_take=plain)
    assert len(result.taken) > 1_000


def test_column_readers_are_never_taken_from_another_schema_with_the_same_id() -> None:
    """The readers cache is keyed by id of a parsed schema; an id a schema the cache evicted had may
    come back for another: its readers must then be made again, not reused."""
    decoder = DebeziumVectorDecoder(options(), "p", "r")
    encoder = DebeziumEncoder(ZONE)
    case = cases.covered_case(encoder, random.Random(4), 1)
    text = case.pairs[0][1] or b""
    parsed = decoder.schemas.get(text[text.index(b',"schema":') + len(b',"schema":') : -1])
    assert parsed is not None
    gone = type(parsed)({})  # stands for the evicted schema that had this id
    decoder._readers[id(parsed)] = (gone, {})
    readers = decoder._column_readers(parsed, "diffdb.covered")
    assert readers is not None
    assert list(readers) == [c.name for c in cases.covered_schema().columns]
