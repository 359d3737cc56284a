"""Differential test of the vectorized Simple Avro decode against the Python decoder, its specification.

The same messages go through the Python decoder alone (the reference) and through what the decode
worker does (``SimpleAvroVectorDecoder`` over the whole batch, the Python decoder on the messages
it did not take); every message must give the same ``change_events`` rows, every column, or the
same quarantine reason, and the vector path must take exactly the messages each case says
(``differential_support.assert_same`` with :data:`SIMPLE_AVRO`; the rule is stated in
``simple_avro_differential_cases``). Messages: the simulator's encoder over a table of every column
type in two server zones, with and without row checksums, written also with tiflow's own copy of
the message schema (``TICDC_LAKE_TIFLOW_VECTORS``: tiflow's tests hold no Simple Avro message, only
the schema), two schema versions of one table with unknown versions and other message types,
compressed pipelines, mutations of a valid message, and all of it shuffled into one batch.
"""

from __future__ import annotations

import io
import json
import random
from functools import partial
from typing import Any

import fastavro
import pytest

from tests import tiflow_vectors
from tests.ticdc_lake.spark.arrow_decode import simple_avro_differential_cases as cases
from tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases import Case, _rows_for, shuffled
from tests.ticdc_lake.spark.arrow_decode.differential_support import (
    COMPRESSION_PAIRS,
    Paths,
    compress,
    raw,
    statuses,
)
from tests.ticdc_lake.spark.arrow_decode.differential_support import assert_same as assert_both
from tests.ticdc_lake.spark.arrow_decode.simple_json_differential_cases import DB, every_type_schema
from ticdc_lake.config import CodecOptions, Compression, Protocol
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.message_batch import batches
from ticdc_lake.landing.raw_batch import ConsumedRecord, read_raw_blocks, write_raw_batch
from ticdc_lake.protocols.simple_avro import message_schema
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.spark.arrow_decode.simple_avro_batch import SimpleAvroVectorDecoder
from ticdc_sim import simple_avro_encoder

#: The two Simple Avro decode paths: image keys keep the maps' order.
SIMPLE_AVRO = Paths(Protocol.SIMPLE_AVRO, SimpleAvroVectorDecoder)
RANDOM_ROWS = 150


#: ``differential_support.assert_same`` of these paths.
assert_same = partial(assert_both, paths=SIMPLE_AVRO)


def options(zone: str = cases.ZONE, **changes: Any) -> CodecOptions:
    return CodecOptions(server_time_zone=zone, **changes)


def lookup() -> MemorySchemaLookup:
    return MemorySchemaLookup(cases.lookup_schemas())


def every_type_case(rng: random.Random, random_rows: int, zone: str = cases.ZONE, *, checksum: bool = False) -> Case:
    schema = every_type_schema()
    enc = cases.encoder(zone, checksum=checksum)
    return cases.dml_case("every type", schema, _rows_for(schema, rng, random_rows), enc, commit_ts=5_000, take=True)


@pytest.mark.parametrize("zone", [cases.ZONE, "UTC"])
@pytest.mark.parametrize("checksum", [False, True], ids=["plain", "checksum"])
def test_every_type(zone: str, checksum: bool) -> None:
    """The wide table's edge rows (minimums, maximums, zeros, NULLs, zero dates) and random rows,
    inserted, updated and deleted: every message taken but those with the zero TIMESTAMP or, outside
    UTC, a TIMESTAMP from 2038 on."""
    case = every_type_case(random.Random(14), RANDOM_ROWS, zone, checksum=checksum)
    result = assert_same(options(zone), raw(case.pairs), lookup(), taken=case.taken)
    assert len(case.pairs) == 3 * (6 + RANDOM_ROWS)
    assert statuses(result.reference).count("READY") == len(case.pairs)
    assert len(result.taken) > len(case.pairs) * 9 // 10
    kept = [o.rows[0] for n, o in enumerate(result.reference) if n in result.taken]
    assert {row["op"] for row in kept} == {"I", "U", "D"}
    assert {row["table_id"] for row in kept} == {11}


@tiflow_vectors.needs_vectors
def test_tiflow_message_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """tiflow's ``message.json`` is the schema the decoder reads, and the every-type table written by
    the simulator with it (instead of the repository's copy) decodes the same both ways, taken as the
    rule says."""
    document = json.loads((tiflow_vectors.ROOT / "pkg/sink/codec/simple/message.json").read_text(encoding="utf-8"))
    theirs = fastavro.parse_schema(document)
    canonical = fastavro.schema.to_parsing_canonical_form
    assert canonical(theirs) == canonical(message_schema())
    monkeypatch.setattr(simple_avro_encoder, "_schema", lambda: theirs)
    case = every_type_case(random.Random(3), 40)
    assert_same(options(), raw(case.pairs), lookup(), taken=case.taken)


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
    decodes its NULLs)."""
    schema = TableSchema(DB, "odd", (ColumnSchema("id", "int"), ColumnSchema("g", "geometry")), version=5)
    rows = [{"id": n, "g": None} for n in range(5)]
    case = cases.dml_case("odd", schema, rows, cases.encoder(), commit_ts=5_000, take=False)
    known = lookup()
    known.add(schema)
    result = assert_same(options(), raw(case.pairs), known, taken=set())
    assert statuses(result.reference).count("READY") == len(case.pairs)


@pytest.mark.parametrize(("sent", "configured"), COMPRESSION_PAIRS)
def test_compression(sent: Compression, configured: Compression) -> None:
    case = every_type_case(random.Random(6), 10)
    pairs = [(k, compress(v, sent)) for k, v in case.pairs]
    result = assert_same(options(compression=configured), raw(pairs), lookup(), taken=set())
    assert statuses(result.reference).count("READY") == (len(pairs) if sent is configured else 0)


def test_a_failing_group_goes_to_python(caplog: pytest.LogCaptureFixture) -> None:
    """An exception while decoding a group (a bug) leaves its messages to the Python decoder."""

    class Failing(SimpleAvroVectorDecoder):
        def _group(self, *args: Any) -> None:
            raise RuntimeError("boom")

    case = every_type_case(random.Random(4), 5)
    messages = raw(case.pairs)
    result = Failing(options(), "p", "r").decode("b", messages, lookup())
    assert (result.events, result.taken) == (None, [False] * len(messages))
    assert "the vector decoder failed on diffdb.all_types version 1000; decoding it in Python" in caplog.text


# ------------------------------------------------------------------------------ mutations
_MUTATIONS = cases.mutation_cases(cases.encoder())
#: Mutations the rule takes: values of the branch TiCDC writes that the twins vouch for (a canonical
#: BIGINT UNSIGNED string, ENUM 0, odd doubles, DATE/DATETIME kept as sent, TIMESTAMP in another
#: zone or the server's by name), a missing column, another column order, an empty or null value,
#: fixed fields the Python decoder reads as sent (a negative commitTs or tableID, schemaVersion and
#: version as read), a checksum record (ignored), maps in several blocks, and varints fastavro reads
#: the same whatever their width.
_TAKEN = {
    "BIGINT UNSIGNED a canonical string",
    "BIGINT UNSIGNED zero",
    "ENUM index 0",
    "double minus zero",
    "double large",
    "double tiny",
    "DATE zero",
    "DATETIME February 30",
    "TIMESTAMP in another zone",
    "TIMESTAMP in the server zone by an empty name",
    "TIMESTAMP in the server zone by Local",
    "a string with NUL and U+2028",
    "a value null",
    "missing column",
    "columns reordered",
    "data empty",
    "commitTs negative",
    "commitTs 0",
    "tableID negative",
    "handleKeyOnly false",
    "checksum",
    "checksum corrupted",
    "map in two blocks",
    "map with a negative block count",
    "map with a wrong block size",
    "version as a two-byte varint",
}


@pytest.mark.parametrize(("name", "pairs"), _MUTATIONS, ids=[name for name, _ in _MUTATIONS])
def test_mutation(name: str, pairs: list[tuple[bytes | None, bytes | None]]) -> None:
    """Between two valid rows of its table version, each mutation is taken exactly where the rule
    allows it; the valid rows are always taken (Avro is read message by message)."""
    assert_same(options(), raw(pairs), lookup(), taken={0, 1, 2} if name in _TAKEN else {0, 2})


# ------------------------------------------------------------------------------ one big batch
def test_one_mixed_batch() -> None:
    """Everything above shuffled into one ``decode`` call, dealt over three partitions: the vector
    path takes exactly what it takes of each case alone."""
    rng = random.Random(2026)
    enc = cases.encoder()
    parts = [every_type_case(rng, 900), every_type_case(rng, 50, checksum=True), cases.evolving_case(enc)]
    mutations = Case("mutations")
    for name, pairs in _MUTATIONS:
        mutations.add(pairs[1], name in _TAKEN)
    parts.append(mutations)
    mixed = shuffled(parts, rng)
    assert len(mixed.pairs) > 2_500
    result = assert_same(options(), raw(mixed.pairs, partitions=3), lookup(), taken=mixed.taken)
    assert len(result.taken) > 2_500


# ------------------------------------------------------------------------------ the worker's input
def test_a_message_batch_decodes_as_its_messages() -> None:
    """The worker's :class:`MessageBatch` (columns gathered from landed blocks, sliced into chunks) is
    decoded exactly as the same messages given one by one: the same rows, the same taken."""
    case = every_type_case(random.Random(8), 60)
    messages = [
        RawMessage("topic", 0, 1000 + n, 5, key, value if n != 77 else b"\x16\x06\x06\x04")
        for n, (key, value) in enumerate(case.pairs)
    ]
    sink = io.BytesIO()
    end = 1000 + len(messages)
    records = [ConsumedRecord(m) for m in messages]
    write_raw_batch(sink, records, pipeline="p", topic="topic", partition=0, start=1000, end=end, block_bytes=20_000)
    chunks = list(batches(read_raw_blocks(io.BytesIO(sink.getvalue())), 1010, end - 10, 64))
    assert len(chunks) > 2
    taken = 0
    for chunk in chunks:
        as_batch = SimpleAvroVectorDecoder(options(), "p", "r").decode("b", chunk, lookup())
        as_list = SimpleAvroVectorDecoder(options(), "p", "r").decode("b", list(chunk), lookup())
        assert as_batch.taken == as_list.taken
        assert as_batch.events is not None
        assert as_list.events is not None
        assert as_batch.events.to_pylist() == as_list.events.to_pylist()
        taken += sum(as_batch.taken)
    assert taken > len(messages) * 8 // 10
