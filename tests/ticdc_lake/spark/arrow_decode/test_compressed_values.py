"""Compressed pipelines through the vector path (``compressed_values``): the same rows and reasons as
the Python decoder, and every message taken that the same pipeline without compression would take."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases as dbz_cases
from tests.ticdc_lake.spark.arrow_decode import test_canal_json_differential as canal
from tests.ticdc_lake.spark.arrow_decode import test_debezium_differential as dbz
from tests.ticdc_lake.spark.arrow_decode import test_simple_avro_differential as simple_avro
from tests.ticdc_lake.spark.arrow_decode import test_simple_json_differential as simple
from tests.ticdc_lake.spark.arrow_decode.differential_support import Paths, assert_same, compress, raw
from ticdc_lake.config import CodecOptions, Compression, PipelineConfig, Protocol
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.message_batch import MessageBatch
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.spark.arrow_decode.canal_batch import CanalJsonVectorDecoder
from ticdc_lake.spark.arrow_decode.compressed_values import DecompressingDecoder, decompressed
from ticdc_lake.spark.arrow_decode.debezium_batch import DebeziumVectorDecoder
from ticdc_lake.spark.arrow_decode.open_batch import OpenVectorDecoder
from ticdc_lake.spark.arrow_decode.simple_avro_batch import SimpleAvroVectorDecoder
from ticdc_lake.spark.arrow_decode.simple_json_batch import SimpleJsonVectorDecoder
from ticdc_lake.spark.arrow_decode.worker_events import vector_decoder
from ticdc_sim.debezium_encoder import DebeziumEncoder

Pair = tuple[bytes | None, bytes | None]


def _wrapped(inner: Callable[[CodecOptions, str, str], Any], keys: bool) -> Callable[[CodecOptions, str, str], Any]:
    """The vector path as ``worker_events.vector_decoder`` builds it for a compressed pipeline."""

    def make(options: CodecOptions, pipeline: str, run_id: str) -> Any:
        plain = options.model_copy(update={"compression": Compression.NONE})
        if options.compression is Compression.NONE:
            return inner(plain, pipeline, run_id)
        return DecompressingDecoder(inner(plain, pipeline, run_id), options.compression, keys=keys)

    return make


DEBEZIUM = Paths(Protocol.DEBEZIUM, _wrapped(DebeziumVectorDecoder, keys=True))
SIMPLE_JSON = Paths(Protocol.SIMPLE_JSON, _wrapped(SimpleJsonVectorDecoder, keys=False), sort_images=True)
CANAL_JSON = Paths(Protocol.CANAL_JSON, _wrapped(CanalJsonVectorDecoder, keys=False))
SIMPLE_AVRO = Paths(Protocol.SIMPLE_AVRO, _wrapped(SimpleAvroVectorDecoder, keys=False))


def _case(protocol: Protocol) -> tuple[list[Pair], set[int], Paths, Callable[..., CodecOptions], MemorySchemaLookup]:
    """(pairs, the indexes taken uncompressed, paths, options, lookup) of the protocol's every-type case."""
    if protocol is Protocol.DEBEZIUM:
        case = dbz_cases.covered_case(DebeziumEncoder(dbz_cases.ZONE), random.Random(6), 10)
        return list(case.pairs), set(case.taken), DEBEZIUM, dbz.options, dbz.lookup()
    if protocol is Protocol.SIMPLE_JSON:
        case = simple.every_type_case(random.Random(6), 10)
        return list(case.pairs), set(case.taken), SIMPLE_JSON, simple.options, simple.lookup()
    if protocol is Protocol.SIMPLE_AVRO:
        case = simple_avro.every_type_case(random.Random(6), 10)
        return list(case.pairs), set(case.taken), SIMPLE_AVRO, simple_avro.options, simple_avro.lookup()
    case = canal.every_type_case(random.Random(6), 10)
    return list(case.pairs), set(case.taken), CANAL_JSON, canal.options, canal.lookup()


PROTOCOLS = [Protocol.DEBEZIUM, Protocol.SIMPLE_JSON, Protocol.SIMPLE_AVRO, Protocol.CANAL_JSON]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.value)
@pytest.mark.parametrize("compression", [Compression.SNAPPY, Compression.LZ4], ids=lambda c: c.value)
def test_a_compressed_pipeline_takes_what_an_uncompressed_one_takes(
    protocol: Protocol, compression: Compression
) -> None:
    pairs, taken, paths, options, known = _case(protocol)
    assert taken, "the case must have messages the vector path takes"
    plain = assert_same(options(), raw(pairs), known, taken=taken, paths=paths)
    keys = protocol is Protocol.DEBEZIUM
    sent = [(compress(k, compression) if keys else k, compress(v, compression)) for k, v in pairs]
    packed = assert_same(options(compression=compression), raw(sent), known, taken=taken, paths=paths)
    assert packed.reference == plain.reference  # the same events: compression changes nothing decoded


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.value)
def test_messages_that_do_not_decompress_go_to_python(protocol: Protocol) -> None:
    """A value (or Debezium key) that is not what ``codec.compression`` says is left to the Python decoder,
    which quarantines it with its reason; every other message is still taken."""
    pairs, taken, paths, options, known = _case(protocol)
    keys = protocol is Protocol.DEBEZIUM
    sent = [(compress(k, Compression.SNAPPY) if keys else k, compress(v, Compression.SNAPPY)) for k, v in pairs]
    first, second = sorted(taken)[:2]
    broken = dict(enumerate(sent))
    broken[first] = (sent[first][0], pairs[first][1])  # sent uncompressed
    broken[second] = (pairs[second][0], sent[second][1]) if keys else (sent[second][0], b"\x07garbage")
    messages = raw([broken[n] for n in range(len(sent))])
    result = assert_same(
        options(compression=Compression.SNAPPY), messages, known, taken=taken - {first, second}, paths=paths
    )
    reason = result.reference[first].reason
    assert reason is not None
    assert "the value could not be decompressed as snappy" in reason
    reason = result.reference[second].reason
    assert reason is not None
    assert f"the {'key' if keys else 'value'} could not be decompressed as snappy" in reason


def test_decompressed_keeps_nulls_and_empty_keys() -> None:
    packed = compress(b'{"a":1}', Compression.LZ4)
    values, ok = decompressed(pa.array([packed, None, b"", b"nope"], pa.binary()), Compression.LZ4, empty_too=False)
    assert values.to_pylist() == [b'{"a":1}', None, b"", None]
    assert ok.tolist() == [True, True, True, False]
    values, ok = decompressed(pa.array([b""], pa.binary()), Compression.SNAPPY, empty_too=True)
    assert (values.to_pylist(), ok.tolist()) == ([None], [False])  # the Python decoder fails on it too


def _pipeline(protocol: str, compression: str) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "id": "orders",
            "protocol": protocol,
            "kafka": {"topics": ["t"]},
            "landing_uri": "file:///lake/landing",
            "catalog": "lake",
            "codec": {"compression": compression},
        }
    )


@pytest.mark.parametrize(
    ("protocol", "inner", "keys"),
    [
        ("debezium", DebeziumVectorDecoder, True),
        ("simple-json", SimpleJsonVectorDecoder, False),
        ("simple-avro", SimpleAvroVectorDecoder, False),
        ("canal-json", CanalJsonVectorDecoder, False),
    ],
)
def test_the_worker_wraps_whole_value_protocols(protocol: str, inner: type, keys: bool) -> None:
    made = vector_decoder(_pipeline(protocol, "lz4"), "run")
    assert isinstance(made, DecompressingDecoder)
    assert isinstance(made.inner, inner)
    assert made.inner.options.compression is Compression.NONE  # type: ignore[attr-defined]
    assert made.compression is Compression.LZ4
    assert made.keys is keys
    assert isinstance(vector_decoder(_pipeline(protocol, "none"), "run"), inner)


def test_open_protocol_is_not_wrapped() -> None:
    """Open Protocol compresses each value item inside a batch message: its vector decoder gets the
    compression and decompresses the items itself (``test_open_differential``)."""
    made = vector_decoder(_pipeline("open", "snappy"), "run")
    assert isinstance(made, OpenVectorDecoder)
    assert made.options.compression is Compression.SNAPPY


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.value)
def test_a_message_batch_decodes_as_the_list(protocol: Protocol) -> None:
    """The worker hands over a ``MessageBatch``: decompressed as columns, it decodes to the list's rows."""
    pairs, taken, paths, options, known = _case(protocol)
    keys = protocol is Protocol.DEBEZIUM
    sent = [(compress(k, Compression.LZ4) if keys else k, compress(v, Compression.LZ4)) for k, v in pairs]
    sent[0] = (sent[0][0], b"not lz4")
    messages = raw(sent)
    codec = options(compression=Compression.LZ4)
    listed = paths.vector(codec, "p", "r").decode("b", messages, copy.deepcopy(known))
    batched = paths.vector(codec, "p", "r").decode(
        "b", MessageBatch([(messages, 0, len(messages))]), copy.deepcopy(known)
    )
    assert batched.taken == listed.taken
    assert sum(listed.taken) == len(taken - {0})
    assert listed.events is not None
    assert batched.events is not None
    assert batched.events.to_pylist() == listed.events.to_pylist()


def test_a_message_batch_with_other_payloads() -> None:
    messages = [RawMessage("t", n % 2, n, 1_000 + n, b"k%d" % n, b"v%d" % n) for n in range(6)]
    batch = MessageBatch([(messages, 0, 6)])
    values = pa.array([b"V%d" % n for n in range(6)], pa.binary())
    keys = pa.array([None, *[b"K%d" % n for n in range(1, 6)]], pa.binary())
    changed = batch.with_payloads(values, keys)
    assert [m.value for m in changed] == values.to_pylist()
    assert [m.key for m in changed] == keys.to_pylist()
    assert [(m.topic, m.partition, m.offset, m.timestamp_ms) for m in changed] == [
        (m.topic, m.partition, m.offset, m.timestamp_ms) for m in messages
    ]
    some = changed.take(np.array([1, 4]))
    assert len(some) == 2
    assert some.values.to_pylist() == [b"V1", b"V4"]
    assert some.offsets.to_pylist() == [1, 4]
    assert some.partitions.to_pylist() == [1, 0]
    assert some.pick([1]) == [RawMessage("t", 0, 4, 1_004, b"K4", b"V4")]
    with pytest.raises(ValueError, match="2 values and 6 keys for 6 messages"):
        batch.with_payloads(values.slice(0, 2), keys)
