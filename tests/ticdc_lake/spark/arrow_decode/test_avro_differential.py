"""Differential test of the vectorized avro decode against the Python decoder, its specification.

The same messages go through the Python decoder alone (the reference) and through what the decode
worker does (``AvroVectorDecoder`` over the whole batch, the Python decoder on the messages it did
not take), both with the same landed writer schemas; every message must give the same
``change_events`` rows, every column, or the same quarantine reason, and the vector path must take
exactly the messages the rule in ``avro_differential_cases`` says. Messages: the simulator's encoder
over a table of every column type with the TiDB extension, without it, and with decimals and
unsigned bigints as strings; two versions of a table bound by offset over three partitions; names
the DDL spells otherwise (and two tables one name stands for), DDL and watermarks; mutations of a
valid message; and all of it shuffled into one batch.

TiCDC's own test vectors (``TICDC_LAKE_TIFLOW_VECTORS``) hold no avro (Confluent) message, so the
simulator's encoder, tested byte for byte elsewhere, is the only source of real-shaped input here.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tests.ticdc_lake.spark.arrow_decode import avro_differential_cases as cases
from tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases import Case, _rows_for, shuffled
from tests.ticdc_lake.spark.arrow_decode.differential_support import TOPIC, Compared, Paths, raw
from tests.ticdc_lake.spark.arrow_decode.differential_support import assert_same as assert_both
from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.events import RawMessage
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.offset_versions import OffsetVersions
from ticdc_lake.spark.arrow_decode import avro_batch, avro_bindings
from ticdc_lake.spark.arrow_decode.avro_batch import AvroVectorDecoder
from ticdc_lake.spark.arrow_decode.row_batches import message_positions
from ticdc_sim.model import DmlOp

RANDOM_ROWS = 120
PARTITIONS = 3


def avro_paths(registry: cases.Registry) -> Paths:
    """The two avro decode paths, both given the registry's writer schemas as landed."""
    resources = registry.resources()
    return Paths(Protocol.AVRO, functools.partial(AvroVectorDecoder, resources=resources), resources=resources)


def assert_same(
    registry: cases.Registry,
    messages: Sequence[RawMessage],
    lookup: MemorySchemaLookup,
    *,
    taken: int | Collection[int],
    may_take: Collection[int] = (),
) -> Compared:
    options = CodecOptions(server_time_zone=cases.ZONE)
    return assert_both(options, messages, lookup, taken=taken, may_take=may_take, paths=avro_paths(registry))


def every_type_case(registry: cases.Registry, rng: random.Random, **options: Any) -> tuple[Case, Any]:
    """The wide table's rows inserted, updated and deleted by an encoder of ``options``."""
    enc = cases.encoder(registry, **options)
    schema = cases.every_type_schema()
    precise = options.get("decimal_handling_mode", "precise") == "precise"

    def take(op: DmlOp, row: Mapping[str, Any]) -> bool:
        return op is DmlOp.DELETE or cases.twins_take(schema, row, precise)

    rows = _rows_for(schema, rng, RANDOM_ROWS)
    return cases.dml_case(f"every type {options}", enc, schema, rows, commit_ts=5_000, take=take), enc


def kept_rows(result: Compared) -> list[dict[str, Any]]:
    return [o.rows[0] for n, o in enumerate(result.reference) if n in result.taken]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"enable_tidb_extension": False},
        {"decimal_handling_mode": "string", "bigint_unsigned_handling_mode": "string"},
    ],
    ids=["extension", "no-extension", "strings"],
)
def test_every_type(options: dict[str, Any]) -> None:
    """Every row of the wide table but those holding a value the twins refuse, and every tombstone."""
    registry = cases.Registry()
    case, enc = every_type_case(registry, random.Random(14), **options)
    schema = cases.every_type_schema()
    lookup = cases.lookup([schema], cases.offset_rule(registry, [(enc, schema)], TOPIC, PARTITIONS))
    result = assert_same(registry, raw(case.pairs, partitions=PARTITIONS), lookup, taken=case.taken)
    assert len(case.pairs) == 3 * (6 + RANDOM_ROWS)
    assert len(result.taken) > len(case.pairs) * 3 // 4
    kept = kept_rows(result)
    assert {row["op"] for row in kept} == (
        {"I", "D"} if options.get("enable_tidb_extension") is False else {"I", "U", "D"}
    )
    assert {row["schema_version"] for row in kept} == {cases.EVERY_TYPE_VERSION}
    assert all(row["status"] == "READY" for row in kept)


def test_every_type_without_offset_rule() -> None:
    """Rows without commit TSO and no offset rule bind to ``latest(db, table, 0)``: none with the table at
    version 1000, so the Python decoder leaves them unbound (taken so), unless it infers a schema for an
    unknown table (never taken); all bound at version 0."""
    registry = cases.Registry()
    case, _ = every_type_case(registry, random.Random(15), enable_tidb_extension=False)
    schema = cases.every_type_schema()
    messages = raw(case.pairs)
    result = assert_same(registry, messages, cases.lookup([schema]), taken=case.taken)
    assert {row["schema_version"] for row in kept_rows(result)} == {None}
    inferring = cases.lookup([schema])
    inferring.infer_missing = True  # the table has a version: nothing is inferred
    assert_same(registry, messages, inferring, taken=case.taken)
    unknown = cases.lookup([cases.plain_schema()])
    unknown.infer_missing = True
    result = assert_same(registry, messages, unknown, taken=set())
    assert {o.rows[0]["schema_version"] for o in result.reference} == {0}  # inferred from the first row
    start = cases.lookup([replace(schema, version=0)])
    result = assert_same(registry, messages, start, taken=case.taken)
    assert {row["schema_version"] for row in kept_rows(result)} == {0}


def test_evolving_by_offset() -> None:
    """Two versions of ``evo`` without commit TSO over three partitions: each row and tombstone binds
    to the version the offset rule gives it (its own writer schema, the change points before it, the
    floor), the group split by version."""
    registry = cases.Registry()
    enc = cases.encoder(registry, enable_tidb_extension=False)
    case = cases.evolving_case(enc)
    v1, v2 = cases.evolving_schemas()
    rule = cases.offset_rule(registry, [(enc, v1), (enc, v2)], TOPIC, PARTITIONS)
    messages = raw(case.pairs, partitions=PARTITIONS)
    result = assert_same(registry, messages, cases.lookup([v1, v2], rule), taken=case.taken)
    versions = [row["schema_version"] for row in kept_rows(result)]
    assert set(versions) == {7_000, 8_000}
    assert {row["op"] for row in kept_rows(result)} == {"I", "D"}


def test_renamed_tables_ddl_and_watermarks() -> None:
    """Rows of ``t-x`` (sent as ``t_x``/``c_d``) under the DDL's names; rows of a name two upstream
    tables share are quarantined; DDL and watermark messages go to Python."""
    registry = cases.Registry()
    enc = cases.encoder(registry)
    case = cases.renamed_case(enc)
    upstream, ambiguous = cases.renamed_schemas()
    lookup = cases.lookup([upstream, ambiguous, cases.ambiguous_twin()])
    result = assert_same(registry, raw(case.pairs), lookup, taken=case.taken)
    kept = kept_rows(result)
    assert len(kept) == 6
    assert {(row["table"], tuple(k for k, _ in row["after"])) for row in kept} == {("t-x", ("id", "c d"))}
    assert sum(1 for o in result.reference if o.reason) == 6


def _mutation_batch(registry: cases.Registry) -> tuple[list[tuple[str, Case]], MemorySchemaLookup]:
    enc = cases.encoder(registry)
    found = []
    for name, pair, take in cases.mutations(registry, enc):
        case = Case(name)
        case.add(cases.plain_pair(enc, 2), True)
        case.add(pair, take)
        case.add(cases.plain_pair(enc, 3, DmlOp.DELETE), True)
        found.append((name, case))
    schema = cases.plain_schema()
    return found, cases.lookup([schema], cases.offset_rule(registry, [(enc, schema)], TOPIC, PARTITIONS))


def test_mutations() -> None:
    """Each mutation between a valid INSERT and a valid tombstone: taken exactly where the rule says."""
    registry = cases.Registry()
    batches, lookup = _mutation_batch(registry)
    assert len(batches) > 40
    quarantined = 0
    for name, case in batches:
        try:
            result = assert_same(registry, raw(case.pairs), lookup, taken=case.taken)
        except AssertionError as exc:
            raise AssertionError(f"mutation {name!r}: {exc}") from None
        quarantined += result.reference[1].reason is not None
    assert quarantined > 25


def test_shuffled_mix() -> None:
    """Everything above in one shuffled batch over three partitions, with one lookup of all tables."""
    rng = random.Random(77)
    registry = cases.Registry()
    parts: list[Case] = []
    writers = []
    for options in ({}, {"enable_tidb_extension": False}, {"decimal_handling_mode": "string"}):
        case, enc = every_type_case(registry, rng, **options)
        parts.append(case)
        writers.append((enc, cases.every_type_schema()))
    plain = cases.encoder(registry, enable_tidb_extension=False)
    parts.append(cases.evolving_case(plain))
    v1, v2 = cases.evolving_schemas()
    writers += [(plain, v1), (plain, v2)]
    parts.append(cases.renamed_case(cases.encoder(registry)))
    batches, _ = _mutation_batch(registry)
    parts += [case for _, case in batches]
    writers.append((cases.encoder(registry), cases.plain_schema()))
    mixed = shuffled(parts, rng)
    upstream, ambiguous = cases.renamed_schemas()
    schemas = [cases.every_type_schema(), v1, v2, upstream, ambiguous, cases.ambiguous_twin(), cases.plain_schema()]
    lookup = cases.lookup(schemas, cases.offset_rule(registry, writers, TOPIC, PARTITIONS))
    result = assert_same(registry, raw(mixed.pairs, partitions=PARTITIONS), lookup, taken=mixed.taken)
    assert len(mixed.pairs) > 1_300
    assert len(result.taken) > len(mixed.pairs) * 2 // 3


def test_a_failing_group_goes_to_python(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """An exception inside a group is logged and its messages are decoded in Python, as before."""
    registry = cases.Registry()
    enc = cases.encoder(registry)
    pairs = [cases.plain_pair(enc, n) for n in range(5)]
    lookup = cases.lookup([cases.plain_schema()])

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("broken reader")

    monkeypatch.setattr(avro_batch, "read_records", broken)
    with caplog.at_level(logging.ERROR, logger=avro_batch.__name__):
        assert_same(registry, raw(pairs), lookup, taken=set())
    assert "vector decoder failed on 5 message(s)" in caplog.text


def test_no_resources_takes_nothing() -> None:
    """Without landed writer schemas (the worker's ``vector_decoder`` has none to give) nothing is taken."""
    registry = cases.Registry()
    pairs = [cases.plain_pair(cases.encoder(registry), n) for n in range(3)]
    decoder = AvroVectorDecoder(CodecOptions(), "p", "r")
    result = decoder.decode("b", raw(pairs), cases.lookup([cases.plain_schema()]))
    assert result.events is None
    assert result.taken == [False] * 3


@pytest.mark.parametrize("seed", range(6))
def test_offset_versions_as_the_rule_gives_them(seed: int) -> None:
    """The per-row versions the vector path computes (whole arrays per partition) are
    ``OffsetVersions.version_of``'s, for rows with and without a value writer schema, versions 0 included."""
    rng = random.Random(seed)
    rule = OffsetVersions()
    table = (cases.DB, "t")
    versions = [0, 5, 7_000, 8_000, 9_000]
    rule.writer[(*table, 101)] = rng.choice(versions)
    if rng.random() < 0.7:
        rule.floor[table] = rng.choice(versions)
    if rng.random() < 0.8:
        rule.newest[table] = rng.choice(versions)
    for partition in range(3):
        if rng.random() < 0.8:
            offsets = sorted(rng.sample(range(60), rng.randint(1, 6)))
            rule.points[(*table, TOPIC, partition)] = [(o, rng.choice(versions)) for o in offsets]
    topics = [TOPIC, f"{TOPIC}-b"]  # the second topic has no change point: only the floor and newest apply
    messages = [RawMessage(rng.choice(topics), rng.randrange(3), rng.randrange(70), 0, None, None) for _ in range(300)]
    positions = message_positions(messages, np.arange(len(messages)))
    for key_id, value_id in ((100, 101), (100, -1), (100, 102)):
        got = avro_bindings.offset_versions(rule, table, *positions, key_id, value_id)
        assert got is not None
        value = value_id if value_id != -1 else None
        for message, version in zip(messages, got.tolist(), strict=True):
            slot = (*table, message.topic, message.partition)
            expected = rule.version_of(slot, message.offset, value, key_id)
            assert version == (-1 if expected is None else expected), (message, value_id)
