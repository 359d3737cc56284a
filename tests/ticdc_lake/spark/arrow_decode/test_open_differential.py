"""Differential test of the vectorized Open Protocol decode against the Python decoder, its specification.

The same messages go through the Python decoder alone (the reference) and through what the decode
worker does (``OpenVectorDecoder`` over the whole batch, the Python decoder on the messages it did
not take); every message must give the same ``change_events`` rows, every column (``idx`` too: a
message may hold several events), or the same quarantine reason, and the vector path must take
exactly the messages each case says (the rule is stated in ``open_differential_cases``).
Messages: the simulator's encoder over a table of every column type under each option set, the
same messages batched as TiCDC batches them, two schema versions with DDL and resolved events,
compressed pipelines, tiflow's own Open Protocol vectors, malformed mutations of a valid message,
and all of it shuffled into one batch.
"""

from __future__ import annotations

import copy
import io
import random
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

import pytest

from tests import tiflow_vectors
from tests.ticdc_lake.spark.arrow_decode import open_differential_cases as cases
from tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases import Case, _rows_for, shuffled
from tests.ticdc_lake.spark.arrow_decode.differential_support import (
    BATCH,
    COMPRESSION_PAIRS,
    PIPELINE,
    RUN,
    Outcome,
    Paths,
    compress,
    raw,
    reference,
    statuses,
)
from ticdc_lake.config import CodecOptions, Compression, Protocol
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.message_batch import batches
from ticdc_lake.landing.raw_batch import ConsumedRecord, read_raw_blocks, write_raw_batch
from ticdc_lake.protocols.open_framing import frame_batch
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.spark.arrow_decode.open_batch import OpenVectorDecoder
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA

#: The two Open Protocol decode paths (image keys in the order sent).
OPEN = Paths(Protocol.OPEN, OpenVectorDecoder)
RANDOM_ROWS = 120


def options(**changes: Any) -> CodecOptions:
    return CodecOptions(server_time_zone=cases.ZONE, **changes)


def lookup(*extra: TableSchema) -> MemorySchemaLookup:
    return MemorySchemaLookup([*cases.lookup_schemas(), *extra])


def assert_same(
    opts: CodecOptions,
    messages: Sequence[RawMessage],
    schemas: MemorySchemaLookup,
    *,
    taken: Collection[int],
    may_take: Collection[int] = (),
) -> tuple[Outcome, ...]:
    """``differential_support.assert_same`` for messages of several events: the vector rows of a
    taken message are all its events (``idx`` 0, 1, ...), compared with the reference's rows."""
    expected = reference(opts, messages, schemas, OPEN)
    mine = copy.deepcopy(schemas)
    result = OpenVectorDecoder(opts, PIPELINE, RUN).decode(BATCH, list(messages), mine)
    assert len(result.taken) == len(messages)
    vector_rows = []
    if result.events is not None:
        assert result.events.schema.equals(EVENTS_ARROW_SCHEMA), result.events.schema
        vector_rows = result.events.to_pylist()
    taken_now = {n for n, took in enumerate(result.taken) if took}
    rest = [m for m, took in zip(messages, result.taken, strict=True) if not took]
    python = iter(reference(opts, rest, mine, OPEN))
    rows = iter(vector_rows)
    outcomes = []
    for n, message in enumerate(messages):
        if n not in taken_now:
            outcomes.append(next(python))
            continue
        spec = expected[n]
        assert spec.reason is None, f"message {n} taken, but the reference quarantines it: {spec.reason}"
        assert spec.rows, f"message {n} taken, but the reference gives no event"
        mine_rows = tuple(next(rows) for _ in spec.rows)
        assert all((r["partition"], r["offset"]) == (message.partition, message.offset) for r in mine_rows)
        if mine_rows != spec.rows:
            for got, want in zip(mine_rows, spec.rows, strict=True):
                diff = {c: (want[c], got[c]) for c in want if want[c] != got[c]}
                assert not diff, f"vector row of message {n} differs (column: (reference, vector)): {diff!r:.2000}"
        outcomes.append(Outcome(rows=mine_rows))
    assert next(rows, None) is None, "more vector rows than the taken messages' events"
    differences = [(n, spec, got) for n, (spec, got) in enumerate(zip(expected, outcomes, strict=True)) if spec != got]
    assert not differences, f"{len(differences)} message(s) decode differently: {differences[:2]!r:.3000}"
    required = frozenset(taken)
    unexpected = taken_now - required - frozenset(may_take)
    assert not unexpected, f"taken but not expected: {sorted(unexpected)[:30]}"
    assert required <= taken_now, f"expected but not taken: {sorted(required - taken_now)[:30]}"
    return tuple(expected)


def every_type_case(rng: random.Random, random_rows: int, *, printable: bool = True, **encoder_options: Any) -> Case:
    """The wide table's rows; ``printable``: BINARY/VARBINARY bytes made printable ASCII without
    ``\\`` or ``"`` (random bytes are nearly always Go-quoted with an escape, which is not taken)."""
    schema = cases.every_type_schema()
    rows = _rows_for(schema, rng, random_rows)
    if printable:
        binary = {c.name for c in schema.columns if c.mysql_type in ("binary", "varbinary")}
        rows = [{k: cases.printable(v) if k in binary else v for k, v in row.items()} for row in rows]
    return cases.dml_case("every type", schema, rows, cases.encoder(**encoder_options), commit_ts=5_000, take=True)


@pytest.mark.parametrize(
    "encoder_options",
    [{}, {"output_old_value": False}, {"only_output_updated_columns": True}],
    ids=["default", "no old value", "only updated columns"],
)
def test_every_type(encoder_options: dict[str, Any]) -> None:
    """The wide table's edge rows and random rows, inserted, updated and deleted, one event a message."""
    case = every_type_case(random.Random(14), RANDOM_ROWS, **encoder_options)
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    assert statuses(result).count("READY") == len(case.pairs)
    assert len(case.taken) > len(case.pairs) // 2
    kept = [row for n, o in enumerate(result) if n in case.taken for row in o.rows]
    assert {row["op"] for row in kept} == (
        {"I", "D"} if encoder_options.get("output_old_value") is False else {"I", "U", "D"}
    )


def test_every_type_random_bytes() -> None:
    """Random BINARY/VARBINARY bytes: Go quotes them with ``\\xNN`` escapes (taken) and ``\\u`` ones
    for the runes it cannot print (those rows go to Python)."""
    case = every_type_case(random.Random(15), RANDOM_ROWS, printable=False)
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    assert statuses(result).count("READY") == len(case.pairs)
    assert len(case.pairs) // 4 < len(case.taken) < len(case.pairs)


def test_batched() -> None:
    """The same messages joined into batches of 1 to 16 events, as TiCDC batches the rows of a
    partition key: a batch is taken when each of its events would be; rows carry ``idx``."""
    case = cases.batched(every_type_case(random.Random(16), 60), [3, 1, 16, 2, 5, 7])
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    kept = [row for n, o in enumerate(result) if n in case.taken for row in o.rows]
    assert len(case.taken) > len(case.pairs) // 3
    assert max(row["idx"] for row in kept) >= 4


def test_two_versions_ddl_and_resolved_events() -> None:
    case = cases.evolving_case(cases.encoder())
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    assert len(case.taken) == 18
    assert statuses(result)[:4] == ["READY", "READY", "READY", "PENDING"]
    assert [o.rows[0]["schema_version"] for o in result[:3]] == [cases.EVO_V1, cases.EVO_V2, None]
    assert [o.rows[0]["kind"] for o in result[-2:]] == ["DDL", "WATERMARK"]
    assert {o.rows[0]["schema_version"] for n, o in enumerate(result) if n in case.taken} == {
        cases.EVO_V1,
        cases.EVO_V2,
        None,
    }


@pytest.mark.parametrize("infer", [False, True], ids=["unbound", "inferred"])
def test_a_table_no_version_binds(infer: bool) -> None:
    """Rows of a table the lookup knows no version of: unbound in the reference (taken, schema_version
    NULL) where the lookup infers no schema; where it does, the reference infers one from the first
    row and binds the others to it (nothing taken: the Python decoder does that)."""
    case = cases.evolving_case(cases.encoder())
    rows = [n for n in range(24) if n % 4 in (0, 2)]  # version 1's columns
    known = MemorySchemaLookup()
    known.infer_missing = infer
    result = assert_same(options(), raw([case.pairs[n] for n in rows]), known, taken=set() if infer else set(range(12)))
    versions = {o.rows[0]["schema_version"] for o in result}
    assert versions == ({0} if infer else {None})


def test_one_shape_across_two_versions() -> None:
    """Rows of one shape bound to two versions (version 1's columns, before and after the ALTER
    that adds ``c``): each is taken, bound to its own version."""
    case = cases.straddling_case(cases.encoder())
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    assert [o.rows[0]["schema_version"] for o in result] == [cases.EVO_V1, cases.EVO_V2]


def test_unnamed_enum_and_unknown_table() -> None:
    """An ENUM column whose bound version lists no members (PENDING in the reference) and a table the
    lookup does not know (unbound): nothing taken."""
    plain = cases.plain_schema()
    no_members = replace(plain, columns=tuple(replace(c, elements=None) if c.name == "e" else c for c in plain.columns))
    pairs = [cases.plain_pair(cases.encoder(), n) for n in range(3)]
    result = assert_same(options(), raw(pairs), MemorySchemaLookup([no_members]), taken=set())
    assert statuses(result) == ["PENDING"] * 3
    result = assert_same(options(), raw(pairs), MemorySchemaLookup(), taken=set())
    assert statuses(result) == ["PENDING"] * 3  # ENUM numbers no schema names


@pytest.mark.parametrize(
    ("sent", "configured"),
    COMPRESSION_PAIRS,
)
def test_compression(sent: Compression, configured: Compression) -> None:
    """Compressed value items (each on its own, as TiCDC compresses them): taken where the pipeline's
    compression is the one sent, as the same messages uncompressed are."""
    case = every_type_case(random.Random(6), 10)
    pairs = []
    for pair in case.pairs:
        items = cases.events(pair)
        pairs.append(frame_batch([k for k, _ in items], [compress(v, sent) or b"" for _, v in items]))
    taken = case.taken if sent is configured else set()
    assert taken or sent is not configured
    result = assert_same(options(compression=configured), raw(pairs), lookup(), taken=taken)
    assert statuses(result).count("READY") == (len(pairs) if sent is configured else 0)


def test_a_message_with_an_item_that_does_not_decompress_goes_whole_to_python() -> None:
    """Two taken messages joined into one batch message whose second value item is sent uncompressed:
    that message goes to the Python decoder (which quarantines it), the others are taken."""
    case = every_type_case(random.Random(7), 4)
    first, second = sorted(case.taken)[:2]
    joined = [*cases.events(case.pairs[first]), *cases.events(case.pairs[second])]
    keys = [k for k, _ in joined]
    values = [compress(v, Compression.LZ4) or b"" for v in [v for _, v in joined][:-1]] + [joined[-1][1]]
    pairs = [frame_batch(keys, values)]
    for n in sorted(case.taken)[2:]:
        items = cases.events(case.pairs[n])
        pairs.append(frame_batch([k for k, _ in items], [compress(v, Compression.LZ4) or b"" for _, v in items]))
    result = assert_same(options(compression=Compression.LZ4), raw(pairs), lookup(), taken=set(range(1, len(pairs))))
    reason = result[0].reason
    assert reason is not None
    assert "could not be decompressed as lz4" in reason


def test_tiflow_vectors() -> None:
    """TiCDC's own Open Protocol messages (batches of 1 to 4 rows, DDL, resolved events): as sent,
    every row holds a string in a TINYINT column, so nothing is taken (the reference quarantines
    them); with the column made a VARCHAR (re-framed), every row message is taken, DDL and resolved
    ones are not."""
    root = tiflow_vectors.require() / "examples/java/src/test/resources/data"
    names = sorted(p.name.rsplit("_", 2)[0] + "_" + p.name.rsplit("_", 1)[1] for p in (root / "key").iterdir())
    sent = [
        (
            (root / "key" / n.replace("_", "_key_")).read_bytes(),
            (root / "value" / n.replace("_", "_value_")).read_bytes(),
        )
        for n in names
    ]
    schemas = [
        TableSchema("a", table, (ColumnSchema("col1", "varchar"),), version=1, source="test") for table in ("b", "c")
    ]
    known = MemorySchemaLookup(schemas)
    result = assert_same(options(), raw(sent), known, taken=set())
    rows = [n for n, name in enumerate(names) if name.startswith("row")]
    assert all(result[n].reason is not None for n in rows if sent[n][1])
    fixed = []
    for key, value in sent:
        items = cases.events((key, value))
        values = [v.replace(b'"t":1,"v"', b'"t":15,"v"') for _, v in items]
        fixed.append(frame_batch([k for k, _ in items], values) if items else (key, value))
    taken = {n for n in rows if cases.events(fixed[n])}
    result = assert_same(options(), raw(fixed), known, taken=taken)
    assert len(taken) >= 2
    assert sum(len(result[n].rows) for n in taken) >= 5


def test_a_failing_group_goes_to_python(caplog: pytest.LogCaptureFixture) -> None:
    """An exception while decoding a group (a bug) leaves its messages to the Python decoder."""

    class Failing(OpenVectorDecoder):
        def _group(self, *args: Any) -> None:
            raise RuntimeError("boom")

    case = every_type_case(random.Random(4), 5)
    messages = raw(case.pairs)
    result = Failing(options(), "p", "r").decode("b", messages, lookup())
    assert (result.events, result.taken) == (None, [False] * len(messages))
    assert "event(s) of diffdb.all_types; decoding them in Python" in caplog.text


# ------------------------------------------------------------------------------ mutations
_MUTATIONS = cases.mutation_cases(cases.encoder())


@pytest.mark.parametrize(("name", "rule", "pairs"), _MUTATIONS, ids=[name for name, _, _ in _MUTATIONS])
def test_mutation(name: str, rule: str, pairs: list[tuple[bytes | None, bytes | None]]) -> None:
    """Between a valid INSERT of its table (its group) and a valid DELETE, each mutation is taken
    exactly where the rule takes it; the INSERT is taken unless the mutation spoils its group's read."""
    expected = {"spoils": {2}, "taken": {0, 1, 2}, "left": {0, 2}}[rule]
    assert_same(options(), raw(pairs), lookup(), taken=expected)


# ------------------------------------------------------------------------------ one big batch
def test_one_mixed_batch() -> None:
    """Everything above (but the mutations that spoil their group) shuffled into one ``decode``
    call, dealt over three partitions: the vector path takes exactly what it takes of each alone."""
    rng = random.Random(2026)
    enc = cases.encoder()
    parts = [
        every_type_case(rng, 300),
        cases.batched(every_type_case(rng, 40), [4, 16, 1]),
        cases.evolving_case(enc),
    ]
    mutations = Case("mutations")
    for _, rule, pairs in _MUTATIONS:
        if rule != "spoils":
            mutations.add(pairs[1], rule == "taken")
    parts.append(mutations)
    mixed = shuffled(parts, rng)
    # The plain INSERTs of "taken" mutations may share a group with the every-type rows: never.
    assert len(mixed.pairs) > 1_000
    result = assert_same(options(), raw(mixed.pairs, partitions=3), lookup(), taken=mixed.taken)
    assert len(mixed.taken) > 400
    assert sum(len(o.rows) for n, o in enumerate(result) if n in mixed.taken) > len(mixed.taken)


def test_a_message_batch_decodes_as_its_messages() -> None:
    """The worker's input, a :class:`MessageBatch` of landed blocks (columns, no message objects),
    decodes as the same messages given one by one: the same rows, the same taken."""
    case = cases.batched(every_type_case(random.Random(8), 40), [1, 4, 16])
    messages = [RawMessage("topic", 0, 1000 + n, 5, key, value) for n, (key, value) in enumerate(case.pairs)]
    sink = io.BytesIO()
    end = 1000 + len(messages)
    write_raw_batch(
        sink,
        [ConsumedRecord(m) for m in messages],
        pipeline="p",
        topic="topic",
        partition=0,
        start=1000,
        end=end,
        block_bytes=20_000,
    )
    chunks = list(batches(read_raw_blocks(io.BytesIO(sink.getvalue())), 1000, end, 8))
    assert len(chunks) > 1
    taken = 0
    for chunk in chunks:
        as_batch = OpenVectorDecoder(options(), "p", "r").decode("b", chunk, lookup())
        as_list = OpenVectorDecoder(options(), "p", "r").decode("b", list(chunk), lookup())
        assert as_batch.taken == as_list.taken
        assert as_batch.events is not None
        assert as_list.events is not None
        assert as_batch.events.to_pylist() == as_list.events.to_pylist()
        taken += sum(as_batch.taken)
    assert taken == len(case.taken)
