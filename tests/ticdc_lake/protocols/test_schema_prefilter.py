"""The schema pass's byte pre-filter (``may_carry_schema``) is sound for every protocol.

It may let through a message without schema facts, never hold back one with them (a DDL or a
versioned table schema): the rows of its batch would bind to the wrong schema. Every message of
the simulator's output (a workload with BOOTSTRAP, every DDL kind of ``ddl_cases``) and of TiCDC's
golden vectors is checked; each schema-carrying JSON message is also re-serialized the ways a relay
may write it (indented, spaces around the ``:``, keys shuffled, every key character escaped as
``\\uXXXX``) and must still pass the pre-filter and decode to exactly the compact form's events.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests import tiflow_vectors
from tests.ticdc_lake.protocols.ddl_cases import CASES
from ticdc_lake.byte_search import LARGE
from ticdc_lake.config import CodecOptions
from ticdc_lake.events import ChangeEvent, EventKind, RawMessage
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup
from ticdc_lake.protocols.json_markers import has_member
from ticdc_lake.protocols.open_framing import frame_batch, split_batch
from ticdc_lake.protocols.registry import decoder_for
from ticdc_sim.encoders import encoder_for
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

VECTORS = tiflow_vectors.ROOT
OPEN_DATA = tiflow_vectors.OPEN_DATA
JSON_PROTOCOLS = ("simple-json", "canal-json", "debezium", "open")


# ------------------------------------------------------------------------------------ has_member
#: (text, whether it may hold the member ``"isDdl": true``).
MEMBER_CASES = [
    (b'{"isDdl":true}', True),
    (b'{"isDdl": true}', True),
    (b'{"isDdl" :\n\t true}', True),
    (b'{"\\u0069sDdl":true}', True),
    (b'{"is\\u0044dl" : true}', True),
    (b'{"isDdl":false,"x":"true"}', False),
    (b'{"isDdl":false,"\\u0078":"true"}', False),
    (b'{"isDdl"}', False),
    (b'{"isDdl":', False),
    (b'{"isDdl": false, "other": {"isDdl": true}}', True),  # nested: an over-approximation
    (b'{"x":"a\\"b","isDdl":true}', True),  # a backslash but no \\u escape: the literal search
    (b'{"x":"a\\\\u","isDdl":false}', False),  # an escaped backslash before u: the pattern decides
    (b'{"x":"\\\\","\\u0069sDdl":true}', True),
]


@pytest.mark.parametrize(("text", "expected"), MEMBER_CASES)
def test_has_member_tolerates_any_json_formatting(text: bytes, expected: bool) -> None:
    assert has_member(text, "isDdl", ("true",)) is expected


@pytest.mark.parametrize(("text", "expected"), MEMBER_CASES)
def test_has_member_answers_the_same_inside_a_whole_block(text: bytes, expected: bool) -> None:
    """A block of landed records (over ``byte_search.LARGE`` bytes) is searched with plain searches
    first (``memmem``); the answer is the regular expression's, wherever in the block the message is."""
    for filler in (b'{"x":"' + b"y" * LARGE + b'"}', b'{"isDdl":false,"x":"' + b"y" * LARGE + b'"}'):
        for block in (filler + b"\n" + text, text + b"\n" + filler, filler + b"\n" + text + b"\n" + filler):
            assert len(block) >= LARGE
            assert has_member(block, "isDdl", ("true",)) is expected


def test_has_member_in_a_whole_block_with_many_values() -> None:
    """More value tokens than the block's plain searches take (Simple JSON's DDL types): the
    expression decides, as on one message."""
    kinds = tuple(f'"{kind}"' for kind in ("BOOTSTRAP", "CREATE", "ALTER", "DROP"))
    rows = b'{"type":"INSERT","x":"' + b"y" * LARGE + b'"}'
    assert has_member(rows + b'\n{"type" : "ALTER"}', "type", kinds)
    assert has_member(rows + b'\n{"type":"UPDATE","x":"ALTER"}', "type", kinds) is False
    assert has_member(rows, "type", kinds) is False


def test_has_member_string_values_and_any_value() -> None:
    assert has_member(b'{"type" : "CREATE"}', "type", ('"CREATE"', '"ALTER"'))
    assert has_member(b'{"type":"\\u0043REATE"}', "type", ('"CREATE"',))
    assert has_member(b'{"type":"\\u0063REATE"}', "type", ('"CREATE"',)) is False  # lower-case c
    assert has_member(b'{"type":"INSERT"}', "type", ('"CREATE"',)) is False
    assert has_member(b'{"payload":{"ddl" :"x"}}', "ddl")
    assert has_member(b'{"payload":{"\\u0064dl":"x"}}', "ddl")
    assert has_member(b'{"payload":{"op":"c","x":"ddl"}}', "ddl") is False


# ------------------------------------------------------------------------------------ messages
def _facts(events: list[ChangeEvent]) -> bool:
    """Whether the schema pass needs these events: a DDL, or a versioned table schema."""
    schemas = [s for e in events for s in (e.table_schema, e.pre_table_schema) if s is not None]
    return any(e.kind is EventKind.DDL for e in events) or any(s.version is not None for s in schemas)


def _simulated(protocol: str) -> Iterator[RawMessage]:
    """A seeded workload (BOOTSTRAP, CREATE DATABASE/TABLE, rows, watermarks), then every DDL case."""
    simulator = TicdcSimulator(seed=11, partitions=2, encoder=encoder_for(protocol), workload=WorkloadConfig(tables=3))
    simulator.setup(create_databases=True)
    simulator.run_transactions(40)
    simulator.flush_watermark()
    for offset, m in enumerate(simulator.messages()):
        yield RawMessage(m.topic, m.partition, offset, 0, m.key, m.value)
    encoder = encoder_for(protocol)
    for offset, case in enumerate(CASES):
        encoded = encoder.encode_ddl(case.ddl, case.commit_ts, 1_700_000_000_000)
        if encoded is not None:
            yield RawMessage("shop", 0, 10_000 + offset, 0, encoded.key, encoded.value)


def _golden(protocol: str) -> Iterator[RawMessage]:
    tiflow_vectors.require()
    if protocol == "canal-json":
        for offset, line in enumerate(
            (VECTORS / "_extracted_from_tests/canal_json_txn_event_decoder_test_L98_insert_update_delete.jsonl")
            .read_bytes()
            .splitlines()
        ):
            yield RawMessage("cdc", 0, offset, 0, None, line)
    elif protocol == "debezium":
        for offset, path in enumerate(sorted((VECTORS / "_extracted_from_tests").glob("debezium_*_value_*.json"))):
            yield RawMessage("dbz", 0, offset, 0, None, path.read_bytes())
    elif protocol == "open":
        for offset, path in enumerate(sorted((OPEN_DATA / "key").iterdir())):
            value = OPEN_DATA / "value" / path.name.replace("_key_", "_value_")
            yield RawMessage("cdc", 0, offset, 0, path.read_bytes(), value.read_bytes())


def _decoders(protocol: str) -> tuple[Decoder, ...]:
    """Canal-JSON with and without the TiDB extension (its golden lines have none)."""
    if protocol == "canal-json":
        return tuple(decoder_for(protocol, CodecOptions(enable_tidb_extension=on)) for on in (True, False))
    return (decoder_for(protocol, CodecOptions()),)


def _decoded(decoder: Decoder, message: RawMessage) -> list[ChangeEvent] | None:
    try:
        return decoder.decode(message, MemorySchemaLookup())
    except Exception:
        return None  # the main pass quarantines it


# ------------------------------------------------------------------------------------ re-serializing
def _no_float(text: str) -> float:
    raise AssertionError(f"a schema-carrying message holds the float {text}; re-serializing would change it")


def _load(data: bytes) -> Any:
    return json.loads(data, parse_float=_no_float)


def _shuffled(doc: Any, rng: random.Random) -> Any:
    if isinstance(doc, dict):
        items = list(doc.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(doc, list):
        return [_shuffled(v, rng) for v in doc]
    return doc


def _escaped_keys(doc: Any) -> str:
    """JSON with every key character written as ``\\uXXXX`` and non-ASCII string characters escaped."""
    if isinstance(doc, dict):
        members = ('"' + "".join(f"\\u{ord(c):04x}" for c in k) + '" : ' + _escaped_keys(v) for k, v in doc.items())
        return "{ " + " , ".join(members) + " }"
    if isinstance(doc, list):
        return "[ " + " , ".join(_escaped_keys(v) for v in doc) + " ]"
    return json.dumps(doc)


FORMATS: dict[str, Callable[[Any], str]] = {
    "indent": lambda doc: json.dumps(doc, indent=2, ensure_ascii=False),
    "spaced": lambda doc: json.dumps(doc, separators=(" , ", " : ")),
    "shuffled": lambda doc: json.dumps(_shuffled(doc, random.Random(7)), ensure_ascii=True),
    "escaped-keys": _escaped_keys,
}


def _reformat(protocol: str, message: RawMessage, form: Callable[[Any], str]) -> RawMessage:
    def one(data: bytes) -> bytes:
        return form(_load(data)).encode() if data else data

    if protocol == "open":
        pairs = split_batch(message.key, message.value)
        key, value = frame_batch([one(k.data) for k, _ in pairs], [one(v.data) for _, v in pairs])
        return RawMessage(message.topic, message.partition, message.offset, 0, key, value)
    assert message.value is not None
    return RawMessage(message.topic, message.partition, message.offset, 0, message.key, one(message.value))


@pytest.mark.parametrize("protocol", JSON_PROTOCOLS)
def test_prefilter_is_sound_in_any_json_formatting(protocol: str) -> None:
    (decoder, *_) = _decoders(protocol)
    carriers = 0
    for message in (*_simulated(protocol), *_golden(protocol)):
        events = _decoded(decoder, message)
        if events is None or not _facts(events):
            continue
        carriers += 1
        assert decoder.may_carry_schema(message), (protocol, message)
        for form_name, form in FORMATS.items():
            other = _reformat(protocol, message, form)
            assert other.value != message.value or other.key != message.key
            assert decoder.may_carry_schema(other), (protocol, form_name, other)
            assert decoder.decode(other, MemorySchemaLookup()) == events, (protocol, form_name)
    assert carriers >= 10


@pytest.mark.parametrize("protocol", ["simple-json", "simple-avro", "canal-json", "debezium", "open"])
def test_every_message_with_schema_facts_passes_the_prefilter(protocol: str) -> None:
    passed = held_back = 0
    for decoder in _decoders(protocol):
        for message in (*_simulated(protocol), *_golden(protocol)):
            events = _decoded(decoder, message)
            if decoder.may_carry_schema(message):
                passed += 1
            else:
                held_back += 1
                assert events is None or not _facts(events), (protocol, message)
    assert passed >= 10
    assert held_back > passed  # rows are still skipped


def test_simple_json_database_ddl_without_table_schema_passes() -> None:
    """A DROP DATABASE has no ``tableSchema`` but drops the database's tables: the old marker missed it."""
    (decoder,) = _decoders("simple-json")
    value = b'{"version":1,"type":"QUERY","sql":"DROP DATABASE `shop`","commitTs":5,"buildTs":1}'
    message = RawMessage("t", 0, 0, 0, None, value)
    (event,) = decoder.decode(message, MemorySchemaLookup())
    assert (event.kind, event.ddl_query) == (EventKind.DDL, "DROP DATABASE `shop`")
    assert decoder.may_carry_schema(message)


def test_simple_avro_type_written_as_a_longer_varint_passes() -> None:
    (decoder,) = _decoders("simple-avro")
    assert decoder.may_carry_schema(RawMessage("t", 0, 0, 0, None, b"\x16\x84\x00"))
    assert not decoder.may_carry_schema(RawMessage("t", 0, 0, 0, None, b"\x16\x06"))
