"""``Decoder.locate``: the table of a message the decoder rejects, per protocol, never a guess."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import EventKind, RawMessage
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup, MessageLocation
from ticdc_lake.protocols.open_framing import frame_batch, split_batch
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_sim.encoders import encoder_for
from ticdc_sim.simulator import OutMessage, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

PROTOCOLS = ["simple-json", "simple-avro", "debezium", "canal-json", "open", "avro"]


@dataclass
class _Registry:
    """An in-memory schema registry for the avro encoder: ids by schema text."""

    texts: dict[int, str] = field(default_factory=dict)

    def register(self, subject: str, text: str) -> int:
        for schema_id, known in self.texts.items():
            if known == text:
                return schema_id
        self.texts[len(self.texts) + 1] = text
        return len(self.texts)


def _stream(protocol: str) -> tuple[Decoder, list[RawMessage], list[OutMessage]]:
    registry = _Registry()
    options: dict[str, Any] = {"register": registry.register, "topic": "t"} if protocol == "avro" else {}
    sim = TicdcSimulator(
        seed=5, topic="t", partitions=1, workload=WorkloadConfig(tables=2), encoder=encoder_for(protocol, **options)
    )
    sim.setup()
    sim.run_transactions(6)
    sim.flush_watermark()
    sent = sim.take()
    decoder = decoder_for(protocol, CodecOptions(), DecodeResources(writer_schemas=registry.texts))
    raw = [RawMessage(m.topic, m.partition, offset, 0, m.key, m.value) for offset, m in enumerate(sent)]
    return decoder, raw, sent


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_locate_names_the_table_every_row_message_decodes_to(protocol: str) -> None:
    decoder, raw, sent = _stream(protocol)
    tables = set()
    for message, out in zip(raw, sent, strict=True):
        events = decoder.decode(message, MemorySchemaLookup())
        found = decoder.locate(message)
        if out.kind == "DML":
            (event,) = events
            assert found is not None
            assert (found.database, found.table) == (event.database, event.table)
            assert found.commit_ts in (event.commit_ts, None)  # avro rows: not read without a full decode
            tables.add(found.table)
        if out.kind == "WATERMARK":
            assert found is None or found.table is None
            assert found is None or found.commit_ts in (None, events[0].commit_ts)
            assert events[0].kind is EventKind.WATERMARK
    assert len(tables) == 2


def _first_row(protocol: str) -> tuple[Decoder, RawMessage, MessageLocation]:
    decoder, raw, sent = _stream(protocol)
    message = next(m for m, out in zip(raw, sent, strict=True) if out.kind == "DML")
    (event,) = decoder.decode(message, MemorySchemaLookup())
    assert event.database is not None
    assert event.table is not None
    return decoder, message, MessageLocation(event.database, event.table)


def _json_edit(edit: Callable[[dict[str, object]], None]) -> Callable[[RawMessage], RawMessage]:
    def corrupt(message: RawMessage) -> RawMessage:
        doc = json.loads(message.value or b"")
        edit(doc)
        return replace(message, value=json.dumps(doc).encode())

    return corrupt


def _open_bad_value(message: RawMessage) -> RawMessage:
    keys = [k.data for k, _ in split_batch(message.key, message.value)]
    key, value = frame_batch(keys, [b'{"u": not json'] * len(keys))
    return replace(message, key=key, value=value)


def _cut_tail(message: RawMessage) -> RawMessage:
    return replace(message, value=(message.value or b"")[:-3])


#: A corruption after the table name: a bad value, a missing field, a cut tail (Avro reads in place).
BAD_VALUE: dict[str, Callable[[RawMessage], RawMessage]] = {
    "simple-json": _json_edit(lambda doc: doc.update(schemaVersion="not a number")),
    "simple-avro": _cut_tail,
    "debezium": _json_edit(lambda doc: doc["payload"].update(after="oops")),  # type: ignore[attr-defined]
    "canal-json": _json_edit(lambda doc: doc.update(data="oops")),
    "open": _open_bad_value,
    "avro": _cut_tail,
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_bad_value_after_the_table_name_still_tells_the_table(protocol: str) -> None:
    decoder, message, table = _first_row(protocol)
    broken = BAD_VALUE[protocol](message)
    with pytest.raises(DecodeError):
        decoder.decode(broken, MemorySchemaLookup())
    found = decoder.locate(broken)
    assert found is not None
    assert (found.database, found.table) == (table.database, table.table)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "cut",
    [
        lambda m: replace(m, value=(m.value or b"")[:4], key=(m.key or b"")[:4] if m.key else None),
        lambda m: replace(m, value=b"\xff\xfe garbage \x00\x01", key=b"\x07garbage" if m.key else None),
        lambda m: replace(m, value=None, key=None),
    ],
    ids=["truncated", "garbage", "empty"],
)
def test_truncated_or_garbage_messages_tell_no_table(protocol: str, cut: Callable[[RawMessage], RawMessage]) -> None:
    decoder, message, _ = _first_row(protocol)
    broken = cut(message)
    with pytest.raises(DecodeError):
        decoder.decode(broken, MemorySchemaLookup())
    found = decoder.locate(broken)
    assert found is None or found.table is None


def test_simple_json_rename_and_database_ddl_tell_no_table() -> None:
    decoder = decoder_for("simple-json", CodecOptions())
    rename = {
        "version": 1,
        "type": "RENAME",
        "sql": "RENAME TABLE a TO b",
        "commitTs": 7,
        "tableSchema": {"schema": "db", "table": "b", "columns": "broken"},
        "preTableSchema": {"schema": "db", "table": "a"},
    }
    alter = {**rename, "type": "ALTER", "preTableSchema": {"schema": "db", "table": "b"}}
    create_db = {"version": 1, "type": "QUERY", "sql": "CREATE DATABASE x", "commitTs": 9}
    found = [decoder.locate(RawMessage("t", 0, 0, 0, None, json.dumps(d).encode())) for d in (rename, alter, create_db)]
    assert found == [MessageLocation("db", None, 7), MessageLocation("db", "b", 7), MessageLocation(None, None, 9)]


def test_open_batch_of_two_tables_tells_no_table() -> None:
    keys = [
        json.dumps({"ts": 5, "scm": "db", "tbl": "a", "t": 1}).encode(),
        json.dumps({"ts": 6, "scm": "db", "tbl": "b", "t": 1}).encode(),
    ]
    key, value = frame_batch(keys, [b"{bad", b"{bad"])
    decoder = decoder_for("open", CodecOptions())
    assert decoder.locate(RawMessage("t", 0, 0, 0, key, value)) == MessageLocation(None, None, 5)
    key, value = frame_batch(keys[:1], [b"{bad"])
    assert decoder.locate(RawMessage("t", 0, 0, 0, key, value)) == MessageLocation("db", "a", 5)
