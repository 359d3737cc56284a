"""Simple JSON and Canal-JSON read a message with msgspec first (``json_fast``): events and error
texts must be those of the ``json`` reading for simulator output of every column type, TiCDC's
Canal-JSON vectors, and edge or malformed JSON."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import tiflow_vectors
from tests.ticdc_lake.protocols.test_protocol_roundtrip import _row, _table
from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols import canal_json, simple_json
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup
from ticdc_lake.protocols.json_fast import REFERENCE, json_reader, read_json
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.encoders import encoder_for
from ticdc_sim.model import DmlOp, RowChange

MODULES: dict[str, ModuleType] = {"simple-json": simple_json, "canal-json": canal_json}
#: JSON value texts put into a message as a member of its own (``"extra"``) and as a column value.
VALUES = [
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e400",
    b"-1e400",
    b"-0.0",
    b"-0",
    b"2.50",
    b"1E5",
    b"0.1e-2",
    b"123456789012345678901234567890",
    b"-123456789012345678901234567890",
    b"18446744073709551616",
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"\\ud83d\\ude80"',
    b'"\\u0000"',
    b'"a\nb"',
    b'"a\tb"',
    b'"\x7f"',
    b'"\xff"',
    b'"\xc3\xa9"',
    b'"\xe2\x80\xa8"',
    b'"\\/\\"\\\\"',
    b"[" * 3000 + b"]" * 3000,
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":1,"a":2}',
    b'{"\\u0061":1,"a":2}',
    b"01",
    b"1.",
    b".5",
    b"+1",
    b"[1,]",
    b'{"a":1,}',
    b"nUll",
    b"true",
    b"null",
]


def outcomes(decoder: Decoder, messages: list[RawMessage]) -> list[tuple[str, object]]:
    """What reading each message in turn gives (schemas it announces are known to the next)."""
    schemas = MemorySchemaLookup()
    seen: list[tuple[str, object]] = []
    for message in messages:
        try:
            events = decoder.read(message, schemas)
        except DecodeError as exc:
            seen.append(("DecodeError", str(exc)))
            continue
        except Exception as exc:
            seen.append((type(exc).__name__, str(exc)))
            continue
        for event in events:
            for announced in (event.table_schema, event.pre_table_schema):
                if announced is not None:
                    schemas.add(announced)
        seen.append(("events", events))
    return seen


def assert_same(protocol: str, messages: list[RawMessage], monkeypatch: pytest.MonkeyPatch) -> None:
    fast = outcomes(decoder_for(protocol, CodecOptions()), messages)
    with monkeypatch.context() as patch:
        patch.setattr(MODULES[protocol], "read_json", lambda text, reader: REFERENCE)
        reference = outcomes(decoder_for(protocol, CodecOptions()), messages)
    assert len(fast) == len(reference)
    for message, got, expected in zip(messages, fast, reference, strict=True):
        assert got == expected, message.value


def _messages(protocol: str, schema: TableSchema, rows: list[dict[str, Any]]) -> list[RawMessage]:
    encoder = encoder_for(protocol, "UTC")
    out = [encoder.encode_bootstrap(schema, 1)] if encoder.has_bootstrap else []
    db, table = schema.database, schema.table
    changes = [
        RowChange(DmlOp.INSERT, db, table, None, rows[0]),
        RowChange(DmlOp.UPDATE, db, table, rows[0], rows[1]),
        RowChange(DmlOp.DELETE, db, table, rows[1], None),
    ]
    out += [encoder.encode_row(change, schema, 100 + n, 1) for n, change in enumerate(changes)]
    return [RawMessage("t", 0, n, 0, m.key, m.value) for n, m in enumerate(out)]


@pytest.mark.parametrize("protocol", sorted(MODULES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_column_type_reads_as_with_json(protocol: str, data: st.DataObject) -> None:
    schema = data.draw(_table())
    rows = [data.draw(_row(schema, key)) for key in range(2)]
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_same(protocol, _messages(protocol, schema, rows), monkeypatch)


@pytest.mark.parametrize("protocol", sorted(MODULES))
def test_edge_and_malformed_json_reads_as_with_json(protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.ticdc_lake.protocols.test_debezium_envelope import TABLE

    messages = _messages(protocol, TABLE, [{"id": 1, "note": "a", "n": 2}, {"id": 1, "note": "b", "n": 3}])
    base = messages[-1].value
    assert base is not None
    assert base.startswith(b"{")
    assert b'"b"' in base
    values = [b'{"extra":' + v + b"," + base[1:] for v in VALUES]
    values += [base.replace(b'"b"', v, 1) for v in VALUES]
    values += [
        base[:-1] + b',"type":"INSERT"}',
        b'{"type":"INSERT",' + base[1:],
        b" \t\r\n" + base + b" \r\n",
        base + b" x",
        base + b"{}",
        base + b"\x0c",
        b"\xef\xbb\xbf" + base,
        b"\xff" + base,
        b"",
        b"{}",
        b"[]",
        b"null",
        b"12",
        b'"text"',
    ]
    cases = [RawMessage("t", 0, 100 + n, 0, messages[-1].key, v) for n, v in enumerate(values)]
    # each case after the messages that announce the table, so rows can decode in full
    for case in cases:
        assert_same(protocol, [*messages[:-1], case], monkeypatch)


@tiflow_vectors.needs_vectors
def test_canal_json_vectors_read_as_with_json(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [
        line.encode()
        for path in sorted(tiflow_vectors.EXTRACTED.glob("canal_json_*.jsonl"))
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    assert len(lines) >= 3
    assert_same("canal-json", [RawMessage("t", 0, n, 0, None, v) for n, v in enumerate(lines)], monkeypatch)


def test_msgspec_refuses_what_json_reads_differently() -> None:
    from decimal import Decimal

    reader = json_reader(Decimal)
    for text in ("NaN", "[Infinity]", '"\\ud800"', '"a\nb"', "[" * 100_000 + "]" * 100_000, "1 x"):
        assert read_json(text, reader) is REFERENCE, text
    assert read_json('{"a":2.50,"a":1E400,"b":123456789012345678901234567890}', reader) == {
        "a": Decimal("1E+400"),
        "b": 123456789012345678901234567890,
    }
    assert str(read_json("2.50", reader)) == "2.50"
