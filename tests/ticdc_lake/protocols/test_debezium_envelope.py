"""The Debezium envelope fast path (``debezium_envelope``): each distinct schema text parsed once, and
decoded events and error texts identical to the reference path (the whole message through
``debezium._envelope``) for simulator output of every column type, TiCDC's own vectors, and
malformed or edge JSON."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import tiflow_vectors
from tests.ticdc_lake.protocols.test_protocol_roundtrip import _row, _table
from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols import debezium
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.debezium import DebeziumDecoder
from ticdc_lake.protocols.debezium_envelope import SCHEMA_CACHE_ENTRIES, SchemaCache, split_envelope
from ticdc_lake.protocols.debezium_values import FieldType
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.encoders import encoder_for
from ticdc_sim.model import DmlOp, RowChange

TABLE = TableSchema(
    "shop",
    "t",
    (ColumnSchema("id", "bigint", nullable=False), column("note", "varchar", length=20), column("n", "int")),
    (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
)
WIDER = TableSchema("shop", "t", (*TABLE.columns, column("extra", "double")), TABLE.indexes)
_STRING_OR_SPACE = re.compile(rb'"(?:[^"\\]|\\.)*"|\s+')


def encode(schema: TableSchema, row: dict[str, Any], ts: int = 100, *, disable_schema: bool = False) -> RawMessage:
    encoder = encoder_for("debezium", "UTC", disable_schema=disable_schema)
    out = encoder.encode_row(RowChange(DmlOp.INSERT, schema.database, schema.table, None, row), schema, ts, 1)
    return RawMessage("dbz", 0, ts, 0, out.key, out.value)


def outcome(decoder: DebeziumDecoder, message: RawMessage) -> tuple[str, object]:
    """What decoding ``message`` gives: the events, or the error's type and exact text."""
    try:
        return "events", decoder.decode(message, MemorySchemaLookup())
    except DecodeError as exc:
        return "DecodeError", str(exc)
    except Exception as exc:
        return type(exc).__name__, str(exc)


def reference() -> DebeziumDecoder:
    decoder = DebeziumDecoder(CodecOptions())
    decoder.schemas = None
    return decoder


def assert_same(messages: list[RawMessage]) -> None:
    """Each message decodes alike on a fresh fast decoder, on one shared (cached) fast decoder read
    twice, and on the reference path."""
    shared = DebeziumDecoder(CodecOptions())
    for message in messages:
        expected = outcome(reference(), message)
        assert outcome(DebeziumDecoder(CodecOptions()), message) == expected, message.value
        assert outcome(shared, message) == expected, message.value
        assert outcome(shared, message) == expected, message.value


def compact(text: bytes) -> bytes:
    """``text`` without the whitespace between JSON tokens (strings kept as written)."""
    return _STRING_OR_SPACE.sub(lambda m: m.group(0) if m.group(0).startswith(b'"') else b"", text)


def test_the_schema_text_is_parsed_once_per_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    original = debezium.connect_field_types

    def counted(schema: dict[str, Any], where: str) -> dict[str, FieldType]:
        built.append(where)
        return original(schema, where)

    monkeypatch.setattr(debezium, "connect_field_types", counted)
    decoder = DebeziumDecoder(CodecOptions())
    events = [
        decoder.decode(encode(TABLE, {"id": i, "note": f"n{i}", "n": i}, 100 + i), MemorySchemaLookup())[0]
        for i in range(50)
    ]
    assert decoder.schemas is not None
    assert decoder.schemas.parses == 2  # the value's schema and the key's
    assert built == ["shop.t"]
    assert [e.after for e in events[:2]] == [{"id": "0", "note": "n0", "n": "0"}, {"id": "1", "note": "n1", "n": "1"}]
    assert events[49].column_types == {"id": "bigint", "note": "varchar", "n": "int"}


def test_a_changed_schema_gives_new_field_types() -> None:
    decoder = DebeziumDecoder(CodecOptions())
    lookup = MemorySchemaLookup()
    before = decoder.decode(encode(TABLE, {"id": 1, "note": "a", "n": 2}), lookup)[0]
    after = decoder.decode(encode(WIDER, {"id": 2, "note": "b", "n": 3, "extra": 1.5}, 101), lookup)[0]
    again = decoder.decode(encode(TABLE, {"id": 3, "note": "c", "n": 4}, 102), lookup)[0]
    assert before.column_types == {"id": "bigint", "note": "varchar", "n": "int"}
    assert after.column_types == {"id": "bigint", "note": "varchar", "n": "int", "extra": "double"}
    assert after.after == {"id": "2", "note": "b", "n": "3", "extra": "1.5"}
    assert again.column_types == before.column_types
    assert decoder.schemas is not None
    assert decoder.schemas.parses == 3


def test_the_cache_is_bounded_least_recently_used_out() -> None:
    cache = SchemaCache(entries=2)
    texts = [b'{"fields":[],"v":%d}' % n for n in range(3)]
    for text in (texts[0], texts[1], texts[0], texts[2], texts[0], texts[1]):
        cache.get(text)
    assert cache.parses == 4  # texts[1] was the least recently used when texts[2] came, then again
    assert SCHEMA_CACHE_ENTRIES == 256


def test_only_the_compact_shape_takes_the_fast_path() -> None:
    value = encode(TABLE, {"id": 1, "note": "a", "n": 2}).value
    assert value is not None
    assert value.startswith(b'{"payload":')
    assert split_envelope(value, SchemaCache()) is not None
    assert split_envelope(value.replace(b'{"payload":', b'{ "payload":', 1), SchemaCache()) is None
    assert split_envelope(value[:-1] + b',"x":1}', SchemaCache()) is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), disable_schema=st.booleans())
def test_every_column_type_decodes_as_the_reference(data: st.DataObject, disable_schema: bool) -> None:
    schema = data.draw(_table())
    rows = [data.draw(_row(schema, key)) for key in range(3)]
    encoder = encoder_for("debezium", "UTC", disable_schema=disable_schema)
    changes = [
        RowChange(DmlOp.INSERT, schema.database, schema.table, None, rows[0]),
        RowChange(
            DmlOp.UPDATE,
            schema.database,
            schema.table,
            rows[0],
            rows[1],
        ),
        RowChange(DmlOp.DELETE, schema.database, schema.table, rows[2], None),
    ]
    messages = []
    for n, change in enumerate(changes):
        out = encoder.encode_row(change, schema, 100 + n, 1)
        messages.append(RawMessage("dbz", 0, n, 0, out.key, out.value))
    assert_same(messages)


@tiflow_vectors.needs_vectors
def test_tidb_vectors_decode_as_the_reference() -> None:
    files = [
        *sorted(tiflow_vectors.EXTRACTED.glob("debezium_codec_test_*.json")),
        *sorted(tiflow_vectors.DEBEZIUM_DATA.glob("*.json")),
    ]
    assert len(files) > 10
    keys = {f.name.split("_", 4)[-1].replace("_key_", "_"): f.read_bytes() for f in files if "_key_" in f.name}
    messages = []
    for n, path in enumerate(files):
        text = path.read_bytes()
        key = keys.get(path.name.split("_", 4)[-1].replace("_value_", "_"))
        for value in (text, compact(text)):
            messages.append(RawMessage("dbz", 0, n, 0, None, value))
            messages.append(RawMessage("dbz", 0, n, 0, key and compact(key), value))
    assert sum(split_envelope(m.value or b"", SchemaCache()) is not None for m in messages) > 5
    assert_same(messages)


def _edge_values() -> list[bytes]:
    base = encode(TABLE, {"id": 1, "note": "a", "n": 2}).value
    assert base is not None
    payload_end = base.index(b',"schema":')
    payload, schema = base[len(b'{"payload":') : payload_end], base[payload_end + len(b',"schema":') : -1]
    after = b'"after":{"id":1,"note":"a","n":2}'
    assert after in payload

    def with_after(text: bytes) -> bytes:
        return b'{"payload":' + payload.replace(after, b'"after":' + text) + b',"schema":' + schema + b"}"

    def with_schema(text: bytes) -> bytes:
        return b'{"payload":' + payload + b',"schema":' + text + b"}"

    column_types = schema.replace(b'"field":"n"', b'"field":"n","extra":NaN')
    return [
        base,
        b'{"schema":' + schema + b',"payload":' + payload + b"}",
        b'{"payload":' + payload + b"}",
        b'{"payload":' + payload + b',"schema":null}',
        b'{"payload" : ' + payload + b', "schema": ' + schema + b"}",
        base + b" ",
        base + b" x",
        base + b"{}",
        b'{"payload":' + payload + b',"payload":{"op":"d"},"schema":' + schema + b"}",
        b'{"payload":{"op":"d"},"pay\\u006coad":' + payload + b',"schema":' + schema + b"}",
        b'{"payload":' + payload + b',"schema":' + schema + b',"schema":{"fields":1}}',
        b'{"payload":' + payload + b',"sch\\u0065ma":' + schema + b"}",
        b'{"payload":' + payload + b',"schema":' + schema + b',"extra":1}',
        with_after(b'{"id":1,"note":"a","n":NaN}'),
        with_after(b'{"id":1,"note":"a","n":Infinity}'),
        with_after(b'{"id":1,"note":"a","n":-Infinity}'),
        with_after(b'{"id":1,"note":"a","n":1e400}'),
        with_after(b'{"id":1,"note":"a","n":-0.0}'),
        with_after(b'{"id":1,"note":"a","n":2.50}'),
        with_after(b'{"id":123456789012345678901234567890,"note":"a","n":2}'),
        with_after(b'{"id":-123456789012345678901234567890,"note":"a","n":2}'),
        with_after(b'{"id":1,"note":"a","note":"b","n":2}'),
        with_after(b'{"id":1,"note":"\\ud800","n":2}'),
        with_after(b'{"id":1,"note":"\\udc00x","n":2}'),
        with_after(b'{"id":1,"note":"\\ud83d\\ude80","n":2}'),
        with_after(b'{"id":1,"note":"\\u00e9\\n\\"","n":2}'),
        with_after(b'{"id":1,"note":"\xff","n":2}'),
        with_after(b'{"id":1,"note":"\xc3\xa9","n":2}'),
        with_after(b'{"id":1,"note":' + b"[" * 3000 + b"]" * 3000 + b',"n":2}'),
        with_after(b'{"id":1,"note":' + b"[" * 100_000 + b"]" * 100_000 + b',"n":2}'),
        with_after(b'{"id":1,"note":"a","n":2,"ghost":3}'),
        with_after(b'{"id":1,"note":"a","n":"2"}'),
        with_after(b"[1]"),
        with_after(b"null"),
        with_after(b'{"id":1,"note":"a","n":2'),
        with_schema(b"[]"),
        with_schema(b"7"),
        with_schema(b'"text"'),
        with_schema(b"{}"),
        with_schema(b'{"fields":[{"field":"after","fields":[{"field":"id","type":5}]}]}'),
        with_schema(schema.replace(b'"field":"after"', b'"field":"after","field":"x"', 1)),
        with_schema(schema.replace(b'"type":"int32"', b'"type":"int32","type":"string"', 1)),
        with_schema(column_types),
        with_schema(schema.replace(b'"field":"n"', b'"field":"n","doc":"\\ud800"', 1)),
        with_schema(schema.replace(b'"field":"n"', b'"field":"n","doc":"\xff"', 1)),
        with_schema(schema.replace(b'"field":"n"', b'"field":"n","doc":1e400,"big":123456789012345678901234567890', 1)),
        with_schema(b"[" * 100_000 + b"]" * 100_000),
        b"",
        b"{}",
        b"[]",
        b"null",
        b'"payload"',
        b"12",
        b'{"payload":[],"schema":{}}',
        b'{"payload":null,"schema":{}}',
        b'{"payload":{},"schema":{}}',
        b"\xef\xbb\xbf" + base,
        b"\xff" + base,
    ]


def test_malformed_and_edge_json_decode_as_the_reference() -> None:
    values = _edge_values()
    key = encode(TABLE, {"id": 1, "note": "a", "n": 2}).key
    messages = [RawMessage("dbz", 0, n, 0, k, v) for n, v in enumerate(values) for k in (key, None)]
    messages += [RawMessage("dbz", 0, 0, 0, v, values[0]) for v in values[1:]]  # the same cases as keys
    assert_same(messages)
    fast = sum(split_envelope(v, SchemaCache()) is not None for v in values)
    assert fast == 21  # only the compact shapes the reference reads to the same documents (some then fail alike)
