"""Differential test of the vectorized Canal-JSON decode against the Python decoder, its specification.

The same messages go through the Python decoder alone (the reference) and through what the decode
worker does (``CanalJsonVectorDecoder`` over the whole batch, the Python decoder on the messages it
did not take); every message must give the same ``change_events`` rows, every column, or the same
quarantine reason, and the vector path must take exactly the messages each case says
(``differential_support.assert_same`` with :data:`CANAL_JSON`; the rule is stated in
``canal_json_differential_cases``). Messages: TiCDC's own Canal-JSON lines (tiflow's test
vectors), the simulator's encoder over a table of every column type under each option set, two
schema versions and unknown tables, ENUM/SET numbers named by the bound schema, compressed
pipelines, malformed mutations of a valid message, and all of it shuffled into one batch; then the
same without the TiDB extension (rows with commit TSO 0 bound by their partition and offset, with
and without the decode driver's offset rule, versions changing mid-stream over three partitions).
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import pytest

from tests import tiflow_vectors
from tests.ticdc_lake.spark.arrow_decode import canal_json_differential_cases as cases
from tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases import Case, _rows_for, shuffled
from tests.ticdc_lake.spark.arrow_decode.differential_support import (
    COMPRESSION_PAIRS,
    Compared,
    Paths,
    compress,
    raw,
    statuses,
)
from tests.ticdc_lake.spark.arrow_decode.differential_support import assert_same as assert_both
from tests.ticdc_lake.spark.arrow_decode.simple_json_differential_cases import _evo_row as evo_row
from tests.ticdc_lake.spark.arrow_decode.simple_json_differential_cases import evolving_schemas, plain_row, plain_schema
from ticdc_lake.config import CodecOptions, Compression, Protocol
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.message_batch import batches
from ticdc_lake.landing.raw_batch import ConsumedRecord, read_raw_blocks, write_raw_batch
from ticdc_lake.schema.inference import MISSING_FACTS
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.offset_versions import OffsetVersions
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.spark.arrow_decode.canal_batch import CanalJsonVectorDecoder
from ticdc_sim.model import DmlOp, RowChange

#: The two Canal-JSON decode paths: the worker keeps the message's image key order.
CANAL_JSON = Paths(Protocol.CANAL_JSON, CanalJsonVectorDecoder)
RANDOM_ROWS = 150


#: ``differential_support.assert_same`` of these paths.
assert_same = partial(assert_both, paths=CANAL_JSON)


def options(**changes: Any) -> CodecOptions:
    return CodecOptions(server_time_zone=cases.ZONE, **changes)


def lookup() -> MemorySchemaLookup:
    return MemorySchemaLookup(cases.lookup_schemas())


def every_type_case(rng: random.Random, random_rows: int, **encoder_options: bool) -> Case:
    schema = cases.every_type_schema()
    rows = _rows_for(schema, rng, random_rows)
    return cases.dml_case("every type", schema, rows, cases.encoder(**encoder_options), commit_ts=5_000)


@pytest.mark.parametrize("option_set", list(cases.OPTION_SETS))
def test_every_type(option_set: str) -> None:
    """The wide table's edge rows (minimums, maximums, zeros, NULLs, zero dates) and random rows,
    inserted, updated and deleted, under each option set of the encoder."""
    case = every_type_case(random.Random(14), RANDOM_ROWS, **cases.OPTION_SETS[option_set])
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    assert len(case.pairs) == 3 * (6 + RANDOM_ROWS)
    assert statuses(result.reference).count("READY") == len(case.pairs)
    assert len(result.taken) > len(case.pairs) // (2 if option_set == "bare types" else 3)
    kept = [o.rows[0] for n, o in enumerate(result.reference) if n in result.taken]
    assert {row["op"] for row in kept} == {"I", "U", "D"}
    assert {row["schema_version"] for row in kept} == {1_000}


def test_without_the_extension() -> None:
    """Without the TiDB extension rows have no commit TSO: where the pipeline says so too, they are
    taken as the rule says (here no version at TSO 0 and no offset rule: unbound, but for rows with
    a bare ENUM/SET number, which the reference makes PENDING); where the pipeline and the messages
    disagree about the extension, none is taken (the reference quarantines them)."""
    untimed = cases.untimed_dml_case(
        "every type",
        cases.every_type_schema(),
        _rows_for(cases.every_type_schema(), random.Random(5), 20),
        cases.encoder(enable_tidb_extension=False),
    )
    result = assert_same(
        options(enable_tidb_extension=False), raw(untimed.pairs), lookup(), taken=untimed.taken(1, ordered=False)
    )
    assert all(o.reason is None for o in result.reference)
    assert 0 < len(result.taken) < len(untimed.pairs)
    case = every_type_case(random.Random(5), 20, enable_tidb_extension=False)
    assert case.pairs == untimed.pairs
    result = assert_same(options(), raw(case.pairs), lookup(), taken=set())
    assert all(o.reason is not None for o in result.reference)
    extended = every_type_case(random.Random(5), 20)
    result = assert_same(options(enable_tidb_extension=False), raw(extended.pairs), lookup(), taken=set())
    assert all(o.reason is not None for o in result.reference)


def test_two_versions_unknown_tables_and_other_messages() -> None:
    case = cases.evolving_case(cases.encoder())
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    assert len(case.taken) == 18
    assert statuses(result.reference)[3] == "PENDING"  # column c before version 2
    versions = {o.rows[0]["schema_version"] for n, o in enumerate(result.reference) if n in case.taken}
    assert versions == {cases.EVO_V1, cases.EVO_V2}
    assert [o.rows[0]["kind"] for o in result.reference[-2:]] == ["DDL", "WATERMARK"]


def test_only_updated_columns() -> None:
    """UPDATEs whose ``old`` holds only the changed columns: taken where none of them was null (the
    before image is ``data`` overlaid with them), also with an HTML character easyjson escapes."""
    enc = cases.encoder(only_output_updated_columns=True)
    schema = plain_schema()
    pairs, taken = [], set()
    for n in range(12):
        before = plain_row(n)
        after = {**before, "n": 100 + n} if n % 3 else {**before, "s": "x<y", "vb": None}
        if n % 4 == 3:
            before = {**before, "s": None}  # changed from NULL: "s":null in old
        pair = cases.encode(
            enc, RowChange(DmlOp.UPDATE, cases.DB, "plain", before=before, after=after), schema, 6_100 + n
        )
        pairs.append(pair)
        if n % 4 != 3:
            taken.add(n)
    result = assert_same(options(), raw(pairs), lookup(), taken=taken)
    assert all(cases.takes(value or b"") == (n in taken) for n, (_, value) in enumerate(pairs))
    assert statuses(result.reference) == ["READY"] * len(pairs)


def _bare_enum_schema(**changes: Any) -> TableSchema:
    columns = (ColumnSchema("id", "int", nullable=False), ColumnSchema("e", "enum"), ColumnSchema("st", "set"))
    primary = (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
    return replace(TableSchema(cases.DB, "numbers", columns, primary, version=100), **changes)


def test_enum_and_set_numbers() -> None:
    """Bare ``enum``/``set`` types send numbers, which binding names by the schema's members: taken
    where the schema names them, or keeps them (a schema inferred without members); rows with
    numbers a schema cannot name are PENDING in the reference and never taken, but their NULLs are."""
    named = _bare_enum_schema(
        columns=(
            ColumnSchema("id", "int", nullable=False),
            ColumnSchema("e", "enum", elements=("lo", "hi")),
            ColumnSchema("st", "set", elements=("a", "b")),
        )
    )
    inferred = _bare_enum_schema(extra={MISSING_FACTS: ["e", "st"]})
    unnamed = _bare_enum_schema()
    sent = [("lo", "a,b"), ("hi", ""), (None, None), ("hi", "b")]
    for schema, take in ((named, {0, 1, 2, 3}), (inferred, {0, 1, 2, 3}), (unnamed, {2})):
        pairs = []
        for n, (e, st) in enumerate(sent):
            row = {"id": n, "e": e, "st": st}
            pairs.append(
                cases.encode(cases.encoder(), RowChange(DmlOp.INSERT, cases.DB, "numbers", after=row), named, 500)
            )
        result = assert_same(options(), raw(pairs), MemorySchemaLookup([schema]), taken=take)
        if schema is unnamed:
            assert statuses(result.reference) == ["PENDING", "PENDING", "READY", "PENDING"]
    beyond = pairs[0][1]
    assert beyond is not None
    pairs = [(None, beyond.replace(b'"e":"1"', b'"e":"3"')), (None, beyond.replace(b'"st":"3"', b'"st":"4"')), pairs[1]]
    result = assert_same(options(), raw(pairs), MemorySchemaLookup([named]), taken={2})
    assert statuses(result.reference) == ["PENDING", "PENDING", "READY"]


@pytest.mark.parametrize(
    ("sent", "configured"),
    COMPRESSION_PAIRS,
)
def test_compression(sent: Compression, configured: Compression) -> None:
    case = every_type_case(random.Random(6), 10)
    pairs = [(k, compress(v, sent)) for k, v in case.pairs]
    result = assert_same(options(compression=configured), raw(pairs), lookup(), taken=set())
    assert statuses(result.reference).count("READY") == (len(pairs) if sent is configured else 0)


def test_a_failing_group_goes_to_python(caplog: pytest.LogCaptureFixture) -> None:
    """An exception while decoding a group (a bug) leaves its messages to the Python decoder."""

    class Failing(CanalJsonVectorDecoder):
        def _group(self, *args: Any) -> list[Any]:
            raise RuntimeError("boom")

    case = every_type_case(random.Random(4), 5)
    messages = raw(case.pairs)
    result = Failing(options(), "p", "r").decode("b", messages, lookup())
    assert (result.events, result.taken) == (None, [False] * len(messages))
    assert "the vector decoder failed on diffdb.all_types; decoding it in Python" in caplog.text


def test_a_message_batch_decodes_as_its_messages() -> None:
    """The decode worker's input, a :class:`MessageBatch` gathered from landed blocks (its values
    a slice of the blocks' bytes), decodes as the same messages given one by one."""
    case = every_type_case(random.Random(8), 60)
    messages = [replace(m, offset=1000 + n) for n, m in enumerate(raw(case.pairs))]
    sink = io.BytesIO()
    stop = 1000 + len(messages)
    records = [ConsumedRecord(m) for m in messages]
    write_raw_batch(
        sink, records, pipeline="p", topic=messages[0].topic, partition=0, start=1000, end=stop, block_bytes=9_000
    )
    chunks = list(batches(read_raw_blocks(io.BytesIO(sink.getvalue())), 1010, stop - 5, 100))
    assert len(chunks) > 1
    for chunk in chunks:
        as_batch = CanalJsonVectorDecoder(options(), "p", "r").decode("b", chunk, lookup())
        as_list = CanalJsonVectorDecoder(options(), "p", "r").decode("b", list(chunk), lookup())
        assert as_batch.taken == as_list.taken
        assert any(as_batch.taken)
        assert as_batch.events is not None
        assert as_list.events is not None
        assert as_batch.events.to_pylist() == as_list.events.to_pylist()


# ------------------------------------------------------------------------------ TiCDC's own lines
GOLDEN = "canal_json_txn_event_decoder_test_L98_insert_update_delete.jsonl"
EMPLOYEE = TableSchema(
    "test",
    "employee",
    (
        ColumnSchema("FirstName", "varchar"),
        ColumnSchema("HireDate", "date"),
        ColumnSchema("LastName", "varchar"),
        ColumnSchema("OfficeLocation", "varchar"),
        ColumnSchema("id", "int", nullable=False),
    ),
    (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
    version=100,
)


def _with_extension(line: bytes, commit_ts: int) -> bytes:
    """A golden line (no TiDB extension) as TiCDC writes it with the extension: ``old`` before
    ``data`` (the Go test compares as JSON, so its literal's member order is not the encoder's), then
    ``_tidb``."""
    doc = json.loads(line)
    rest = {k: v for k, v in doc.items() if k not in ("old", "data")}
    doc = {**rest, "old": doc["old"], "data": doc["data"], "_tidb": {"commitTs": commit_ts}}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


@tiflow_vectors.needs_vectors
def test_tiflow_vectors() -> None:
    """TiCDC's INSERT, UPDATE and DELETE lines: as sent (no TiDB extension), none is taken; with
    the extension added, all three are."""
    lines = (tiflow_vectors.EXTRACTED / GOLDEN).read_bytes().splitlines()
    assert len(lines) == 3
    known = MemorySchemaLookup([EMPLOYEE])
    as_sent = [(None, line) for line in lines]
    result = assert_same(options(enable_tidb_extension=False), raw(as_sent), known, taken=set())
    assert statuses(result.reference) == ["READY"] * 3
    extended = [(None, _with_extension(line, 1_000 + n)) for n, line in enumerate(lines)]
    result = assert_same(options(), raw(extended), known, taken={0, 1, 2})
    assert [o.rows[0]["op"] for o in result.reference] == ["I", "U", "D"]


# ------------------------------------------------------------------------------ mutations
_MUTATIONS = cases.mutation_cases(cases.encoder())


@pytest.mark.parametrize(("name", "pairs"), _MUTATIONS, ids=[name for name, _ in _MUTATIONS])
def test_mutation(name: str, pairs: list[tuple[bytes | None, bytes | None]]) -> None:
    """Between two valid rows of its table version, each mutation is never taken but where the rule
    allows it (``cases.TAKEN``); the valid rows are always taken (a read that fails is split, so a
    mutation spoils no other message)."""
    assert_same(options(), raw(pairs), lookup(), taken={0, 1, 2} if name in cases.TAKEN else {0, 2})


# ------------------------------------------------------------------------------ one big batch
def test_one_mixed_batch() -> None:
    """Everything above shuffled into one ``decode`` call, dealt over three partitions: the vector
    path takes exactly what it takes of each case alone."""
    rng = random.Random(2026)
    enc = cases.encoder()
    parts = [every_type_case(rng, 900), every_type_case(rng, 100, only_output_updated_columns=True)]
    parts.append(cases.evolving_case(enc))
    mutations = Case("mutations")
    for name, pairs in _MUTATIONS:
        mutations.add(pairs[1], name in cases.TAKEN)
    parts.append(mutations)
    mixed = shuffled(parts, rng)
    assert len(mixed.pairs) > 3_000
    result = assert_same(options(), raw(mixed.pairs, partitions=3), lookup(), taken=mixed.taken)
    assert len(result.taken) > 2_000


# ------------------------------------------------------------------------------ without the extension
#: Rows without commit TSO bind by position (``canal_bindings``); the expected sets come from
#: ``cases.UntimedCase.taken``, which states the binding rule of docs/offset-ordered-apply.md.
PLAIN = {"enable_tidb_extension": False}


def untimed_lookup(
    *, ordered: bool = True, infer_missing: bool = False, schemas: Sequence[TableSchema] | None = None
) -> MemorySchemaLookup:
    """The versions of ``cases.untimed_schemas`` (or ``schemas``); ``ordered``: with the decode driver's
    offset rule (an offset-ordered run, where Canal-JSON rows bind by their columns and position)."""
    known = MemorySchemaLookup(cases.untimed_schemas() if schemas is None else schemas)
    known.offset_versions = OffsetVersions() if ordered else None
    known.infer_missing = infer_missing
    return known


def versions_taken(result: Compared, messages: Sequence[RawMessage]) -> set[tuple[int, int | None]]:
    """(partition, schema version) of the taken rows."""
    found = set()
    for n in result.taken:
        version = result.reference[n].rows[0]["schema_version"]
        found.add((messages[n].partition, None if version is None else int(version)))
    return found


@pytest.mark.parametrize("option_set", list(cases.OPTION_SETS))
@pytest.mark.parametrize("ordered", [True, False], ids=["offset rule", "no offset rule"])
def test_every_type_without_the_extension(option_set: str, ordered: bool) -> None:
    """The wide table's rows encoded without the extension, dealt over two partitions: taken as the
    rule binds them (with the offset rule: version 1 but in partition 0 at offset 0, PENDING; without
    it: unbound, but rows with bare ENUM/SET numbers, PENDING)."""
    enc = cases.encoder(enable_tidb_extension=False, **cases.OPTION_SETS[option_set])
    schema = cases.every_type_schema()
    case = cases.untimed_dml_case("every type", schema, _rows_for(schema, random.Random(15), 60), enc)
    messages = raw(case.pairs, partitions=2)
    taken = case.taken(2, ordered=ordered)
    result = assert_same(options(**PLAIN), messages, untimed_lookup(ordered=ordered), taken=taken)
    if ordered or option_set == "content compatible":  # ENUM/SET members in the types: no number to name
        assert len(taken) > len(case.pairs) // 3
    else:
        assert taken  # the rows whose bare ENUM/SET values are all NULL
    assert all(o.reason is None for o in result.reference)
    assert {result.reference[n].rows[0]["commit_ts"] for n in result.taken} == {0}
    if ordered:
        assert statuses(result.reference)[0] == "PENDING"  # partition 0, offset 0: before version 1
        assert {version for _, version in versions_taken(result, messages)} == {1}
    else:
        assert {version for _, version in versions_taken(result, messages)} == {None}


@pytest.mark.parametrize("ordered", [True, False], ids=["offset rule", "no offset rule"])
def test_offsets_pick_versions(ordered: bool) -> None:
    """Rows of one table over three partitions in one batch bind to different versions by their
    position: in partition 0 version 1 from offset 3 and version 2 (adds ``c``) from offset 12 (also
    after the version that marks the table dropped), PENDING before; in the other partitions the
    newest version with their columns. Rows of a table without versions are unbound. Without the
    offset rule every row is unbound (no version at TSO 0)."""
    rng = random.Random(31)
    case = cases.untimed_evolving_case(cases.encoder(enable_tidb_extension=False)).shuffled(rng)
    messages = raw(case.pairs, partitions=3)
    taken = case.taken(3, ordered=ordered)
    result = assert_same(options(**PLAIN), messages, untimed_lookup(ordered=ordered), taken=taken)
    found = versions_taken(result, messages)
    if ordered:
        assert {v for p, v in found if p == 0} - {None} == {cases.EVO_UNTIMED_V1, cases.EVO_UNTIMED_V2}
        assert {(p, v) for p, v in found if p != 0 and v is not None} == {(p, cases.EVO_UNTIMED_V2) for p in (1, 2)}
        assert "PENDING" in statuses(result.reference)
        assert any(version is None for _, version in found)  # the table without versions
    else:
        assert {version for _, version in found} == {None}
    # Where the lookup infers a schema for a table it does not know, its rows are not taken.
    taken = case.taken(3, ordered=ordered, infer_missing=True)
    assert len(taken) < len(result.taken)
    assert_same(options(**PLAIN), messages, untimed_lookup(ordered=ordered, infer_missing=True), taken=taken)


_UNTIMED_MUTATIONS = cases.untimed_mutation_cases(cases.encoder(enable_tidb_extension=False))


@pytest.mark.parametrize(("name", "pairs"), _UNTIMED_MUTATIONS, ids=[name for name, _ in _UNTIMED_MUTATIONS])
def test_mutation_without_the_extension(name: str, pairs: list[tuple[bytes | None, bytes | None]]) -> None:
    """The mutations without the ``_tidb`` member (those of ``_tidb`` keep it), between two valid rows
    bound by the offset rule to the start schema: never taken but where the rule allows it."""
    taken = {0, 1, 2} if name in cases.UNTIMED_TAKEN else {0, 2}
    assert_same(options(**PLAIN), raw(pairs), untimed_lookup(), taken=taken)


@tiflow_vectors.needs_vectors
def test_tiflow_vectors_without_the_extension() -> None:
    """TiCDC's lines (no TiDB extension) as the Go test writes them (``data`` before ``old``: not the
    encoder's member order, never taken) and in the encoder's order (``old`` then ``data``: taken,
    bound by the offset rule or unbound without it)."""
    lines = (tiflow_vectors.EXTRACTED / GOLDEN).read_bytes().splitlines()
    known = MemorySchemaLookup([replace(EMPLOYEE, version=0)])
    known.offset_versions = OffsetVersions()
    as_sent = [(None, line) for line in lines]
    result = assert_same(options(**PLAIN), raw(as_sent), known, taken=set())
    assert statuses(result.reference) == ["READY"] * 3
    in_order = [(None, _encoder_order(line)) for line in lines]
    result = assert_same(options(**PLAIN), raw(in_order), known, taken={0, 1, 2})
    assert [(o.rows[0]["op"], o.rows[0]["schema_version"]) for o in result.reference] == [("I", 0), ("U", 0), ("D", 0)]
    result = assert_same(options(**PLAIN), raw(in_order), MemorySchemaLookup([EMPLOYEE]), taken={0, 1, 2})
    assert [o.rows[0]["schema_version"] for o in result.reference] == [None] * 3


def _encoder_order(line: bytes) -> bytes:
    """A golden line with ``old`` before ``data``, as TiCDC's encoder writes them."""
    doc = json.loads(line)
    rest = {k: v for k, v in doc.items() if k not in ("old", "data")}
    return json.dumps({**rest, "old": doc["old"], "data": doc["data"]}, separators=(",", ":")).encode()


@pytest.mark.parametrize("extension", [True, False])
def test_columns_named_as_members(extension: bool) -> None:
    """Columns named ``old``, ``data``, ``mysqlType`` and ``_tidb`` (the members are found where they
    are, not where their names first appear)."""
    columns = tuple(ColumnSchema(name, "int") for name in ("data", "mysqlType", "old", "_tidb"))
    schema = TableSchema(
        cases.DB,
        "members",
        (ColumnSchema("id", "int", nullable=False), *columns),
        (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
        version=0,
    )
    enc = cases.encoder(enable_tidb_extension=extension)
    rows = [{"id": n, "data": n, "mysqlType": None, "old": -n, "_tidb": 7} for n in range(4)]
    case = cases.dml_case("members", schema, rows, enc, commit_ts=10)
    known = MemorySchemaLookup([schema])
    known.offset_versions = OffsetVersions()
    result = assert_same(options(enable_tidb_extension=extension), raw(case.pairs), known, taken=len(case.pairs))
    assert statuses(result.reference) == ["READY"] * len(case.pairs)


def test_a_message_batch_without_the_extension_decodes_as_its_messages() -> None:
    """A :class:`MessageBatch` of landed blocks (positions read from its columns) decodes as the same
    messages given one by one, bound by their offsets."""
    v1, v2 = (replace(s, version=v) for s, v in zip(evolving_schemas(), (1_003, 1_040), strict=True))
    case = cases.untimed_evolving_case(cases.encoder(enable_tidb_extension=False), 120)
    messages = [replace(m, offset=1000 + n) for n, m in enumerate(raw(case.pairs))]
    sink = io.BytesIO()
    stop = 1000 + len(messages)
    write_raw_batch(
        sink,
        [ConsumedRecord(m) for m in messages],
        pipeline="p",
        topic=messages[0].topic,
        partition=0,
        start=1000,
        end=stop,
        block_bytes=3_000,
    )
    known = MemorySchemaLookup([v1, v2])
    known.offset_versions = OffsetVersions()
    chunks = list(batches(read_raw_blocks(io.BytesIO(sink.getvalue())), 1000, stop, 50))
    assert len(chunks) > 1
    found = set()
    for chunk in chunks:
        as_batch = CanalJsonVectorDecoder(options(**PLAIN), "p", "r").decode("b", chunk, known)
        as_list = CanalJsonVectorDecoder(options(**PLAIN), "p", "r").decode("b", list(chunk), known)
        assert as_batch.taken == as_list.taken
        if as_batch.events is not None:
            assert as_list.events is not None
            assert as_batch.events.to_pylist() == as_list.events.to_pylist()
            found |= set(as_batch.events.column("schema_version").to_pylist())
    assert found == {1_003, 1_040, None}  # None: the table without versions


def test_one_mixed_batch_without_the_extension() -> None:
    """The cases without the extension shuffled into one ``decode`` call over three partitions, bound
    by the offset rule: the vector path takes exactly what the rule says of each message where it lies."""
    rng = random.Random(2027)
    plain = cases.encoder(enable_tidb_extension=False)
    schema = cases.every_type_schema()
    parts = [
        cases.untimed_dml_case("every type", schema, _rows_for(schema, rng, 900), plain),
        cases.untimed_dml_case(
            "only updated",
            schema,
            _rows_for(schema, rng, 100),
            cases.encoder(enable_tidb_extension=False, only_output_updated_columns=True),
        ),
        cases.untimed_dml_case(
            "content compatible",
            schema,
            _rows_for(schema, rng, 60),
            cases.encoder(enable_tidb_extension=False, content_compatible=True),
        ),
        cases.untimed_evolving_case(plain),
    ]
    mutations = cases.UntimedCase("mutations")
    for name, pairs in _UNTIMED_MUTATIONS:
        mutations.add(pairs[1], name in cases.UNTIMED_TAKEN)
    parts.append(mutations)
    whole = cases.UntimedCase("mixed")
    for part in parts:
        whole.extend(part)
    mixed = whole.shuffled(rng)
    messages = raw(mixed.pairs, partitions=3)
    assert len(messages) > 3_000
    # ``evo`` changes mid-stream: in partition 0 (offsets up to ~1,150) version 1 from offset 300,
    # version 2 from 700, dropped at 900.
    schemas = cases.untimed_schemas((300, 700, 900))
    taken = mixed.taken(3, ordered=True, schemas=schemas)
    result = assert_same(options(**PLAIN), messages, untimed_lookup(schemas=schemas), taken=taken)
    assert len(result.taken) > 2_000
    found = versions_taken(result, messages)
    assert {v for _, v in found} == {0, 1, 300, 700, None}
    assert {v for p, v in found if p != 0} == {0, 1, 700, None}
    assert "PENDING" in statuses(result.reference)


def test_no_offset_rule_binds_at_tso_zero() -> None:
    """Without the offset rule a row binds to the version at TSO 0 even where it lacks some of the
    row's columns (offset-ordered rows are not checked for them): taken; a bare ENUM/SET number of a
    column that version lacks (or has without members) cannot be named, so its row is PENDING."""
    v1, _ = evolving_schemas()
    rows = [evo_row(n, with_c=n % 2 == 1) for n in range(6)]
    enc = cases.encoder(enable_tidb_extension=False)
    pairs = [cases.encode(enc, RowChange(DmlOp.INSERT, cases.DB, "evo", after=row), v1, 1) for row in rows[::2]]
    v2 = evolving_schemas()[1]
    pairs += [cases.encode(enc, RowChange(DmlOp.INSERT, cases.DB, "evo", after=row), v2, 1) for row in rows[1::2]]
    result = assert_same(options(**PLAIN), raw(pairs), MemorySchemaLookup([replace(v1, version=0)]), taken=6)
    assert {int(o.rows[0]["schema_version"]) for o in result.reference} == {0}
    named = _bare_enum_schema(
        columns=(
            ColumnSchema("id", "int", nullable=False),
            ColumnSchema("e", "enum", elements=("lo", "hi")),
            ColumnSchema("st", "set", elements=("a", "b")),
        )
    )
    without_e = _bare_enum_schema(columns=(ColumnSchema("id", "int", nullable=False), named.columns[2]), version=0)
    pairs = [
        cases.encode(enc, RowChange(DmlOp.INSERT, cases.DB, "numbers", after={"id": n, "e": e, "st": st}), named, 1)
        for n, (e, st) in enumerate([("lo", "a,b"), (None, "b"), (None, None), ("hi", None)])
    ]
    result = assert_same(options(**PLAIN), raw(pairs), MemorySchemaLookup([without_e]), taken={1, 2})
    assert statuses(result.reference) == ["PENDING", "READY", "READY", "PENDING"]
