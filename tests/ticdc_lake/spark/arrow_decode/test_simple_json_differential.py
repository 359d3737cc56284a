"""Differential test of the vectorized Simple JSON decode against the Python decoder, its specification.

The same messages go through the Python decoder alone (the reference) and through what the decode
worker does (``SimpleJsonVectorDecoder`` over the whole batch, the Python decoder on the messages
it did not take); every message must give the same ``change_events`` rows, every column, or the
same quarantine reason, and the vector path must take exactly the messages each case says
(``differential_support.assert_same`` with :data:`SIMPLE_JSON`; the rule is stated in
``simple_json_differential_cases``). Messages: the simulator's encoder over a table of every
column type, two schema versions of one table with unknown versions and other message types,
compressed pipelines, malformed mutations of a valid message, and all of it shuffled into one batch.
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any

import pytest

from tests.ticdc_lake.spark.arrow_decode import simple_json_differential_cases as cases
from tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases import Case, _rows_for, shuffled
from tests.ticdc_lake.spark.arrow_decode.differential_support import (
    COMPRESSION_PAIRS,
    Paths,
    compress,
    raw,
    statuses,
)
from tests.ticdc_lake.spark.arrow_decode.differential_support import assert_same as assert_both
from ticdc_lake.config import CodecOptions, Compression, Protocol
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.spark.arrow_decode.simple_json_batch import SimpleJsonVectorDecoder

#: The two Simple JSON decode paths: the worker writes its image keys in code point order.
SIMPLE_JSON = Paths(Protocol.SIMPLE_JSON, SimpleJsonVectorDecoder, sort_images=True)


#: ``differential_support.assert_same`` of these paths.
assert_same = partial(assert_both, paths=SIMPLE_JSON)


RANDOM_ROWS = 150


def options(**changes: Any) -> CodecOptions:
    return CodecOptions(server_time_zone=cases.ZONE, **changes)


def lookup() -> MemorySchemaLookup:
    return MemorySchemaLookup(cases.lookup_schemas())


def every_type_case(rng: random.Random, random_rows: int) -> Case:
    schema = cases.every_type_schema()
    return cases.dml_case(
        "every type", schema, _rows_for(schema, rng, random_rows), cases.encoder(), commit_ts=5_000, take=True
    )


def test_every_type() -> None:
    """The wide table's edge rows (minimums, maximums, zeros, NULLs, zero dates) and random rows,
    inserted, updated and deleted."""
    case = every_type_case(random.Random(14), RANDOM_ROWS)
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    assert len(case.pairs) == 3 * (6 + RANDOM_ROWS)
    assert statuses(result.reference).count("READY") == len(case.pairs)
    assert len(result.taken) > len(case.pairs) // 3
    kept = [o.rows[0] for n, o in enumerate(result.reference) if n in result.taken]
    assert {row["op"] for row in kept} == {"I", "U", "D"}
    assert {row["table_id"] for row in kept} == {11}


def test_two_versions_unknown_versions_and_other_messages() -> None:
    case = cases.evolving_case(cases.encoder())
    result = assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)
    assert len(case.taken) == 12
    assert statuses(result.reference)[:8] == ["READY", "READY", "PENDING", "PENDING"] * 2
    kinds = [o.rows[0]["kind"] for o in result.reference[-3:]]
    assert kinds == ["DDL", "BOOTSTRAP", "WATERMARK"]
    assert all(o.reason is not None for o in result.reference[24:27])  # column c is not in version 1


def test_types_without_a_twin() -> None:
    """A table with a column of a type the decoder does not support: its rows go to Python (which
    decodes its NULLs and quarantines its values)."""
    schema = TableSchema(cases.DB, "odd", (ColumnSchema("id", "int"), ColumnSchema("g", "geometry")), version=5)
    rows = [{"id": n, "g": None} for n in range(5)]
    case = cases.dml_case("odd", schema, rows, cases.encoder(), commit_ts=5_000, take=False)
    known = lookup()
    known.add(schema)
    result = assert_same(options(), raw(case.pairs), known, taken=set())
    assert statuses(result.reference).count("READY") == len(case.pairs)


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

    class Failing(SimpleJsonVectorDecoder):
        def _group(self, *args: Any) -> None:
            raise RuntimeError("boom")

    case = every_type_case(random.Random(4), 5)
    messages = raw(case.pairs)
    result = Failing(options(), "p", "r").decode("b", messages, lookup())
    assert (result.events, result.taken) == (None, [False] * len(messages))
    assert "the vector decoder failed on diffdb.all_types version 1000; decoding it in Python" in caplog.text


# ------------------------------------------------------------------------------ mutations
_MUTATIONS = cases.mutation_cases(cases.encoder())
#: Mutations that make ``pyarrow.json``'s read of their table version's messages fail (a value of
#: another JSON type than the one read, a commitTs beyond int64, a text that is not one JSON
#: document per line): the valid messages of the group then go to the Python decoder too.
_SPOIL_GROUP = {
    "an integer a JSON number",
    "a value an object",
    "a value true",
    "TIMESTAMP a string",
    "commitTs 2**63",
    "commitTs above 2**64-1",
    "data not an object",
    "truncated by one byte",
    "truncated in the data",
    "duplicated data",
    "duplicated column",
}
#: Mutations the rule takes: escapes jsoniter writes the same way, a raw U+2028 (no escape), a double
#: with an exponent (``float_text`` keeps the text as sent), a TIMESTAMP in another zone or in the
#: server zone by an empty name (both read in their zone), DATE and DATETIME fields out of the
#: calendar (``date_text``/``datetime_text`` keep them as sent).
_TAKEN = {
    "escaped quote",
    "escaped backslash before u",
    "escaped newline",
    "raw U+2028",
    "double with an exponent",
    "TIMESTAMP in another zone",
    "TIMESTAMP in the server zone by an empty name",
    "DATETIME February 30",
    "DATE zero",
}


@pytest.mark.parametrize(("name", "pairs"), _MUTATIONS, ids=[name for name, _ in _MUTATIONS])
def test_mutation(name: str, pairs: list[tuple[bytes | None, bytes | None]]) -> None:
    """Between two valid rows of its table version, each mutation is never taken but where the rule
    allows it; the valid rows are taken unless the mutation spoils their group's read."""
    if name in _SPOIL_GROUP:
        assert_same(options(), raw(pairs), lookup(), taken=set())
    elif name in _TAKEN:
        assert_same(options(), raw(pairs), lookup(), taken={0, 1, 2})
    else:
        assert_same(options(), raw(pairs), lookup(), taken={0, 2})


# ------------------------------------------------------------------------------ one big batch
def test_one_mixed_batch() -> None:
    """Everything above (but the mutations that spoil their group) shuffled into one
    ``decode`` call, dealt over three partitions: the vector path takes exactly what it takes of
    each case alone."""
    rng = random.Random(2026)
    enc = cases.encoder()
    parts = [every_type_case(rng, 900), cases.evolving_case(enc)]
    mutations = Case("mutations")
    for name, pairs in _MUTATIONS:
        if name not in _SPOIL_GROUP:
            mutations.add(pairs[1], False)
    parts.append(mutations)
    mixed = shuffled(parts, rng)
    may = {n for n, (_, v) in enumerate(mixed.pairs) if v is not None and b'"table":"plain"' in v}
    assert len(mixed.pairs) > 2_500
    result = assert_same(options(), raw(mixed.pairs, partitions=3), lookup(), taken=mixed.taken, may_take=may)
    assert len(result.taken) > 500
