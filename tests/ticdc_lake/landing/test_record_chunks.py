"""Chunks of consumed records and their Avro encoding (``landing.record_chunks``), against fastavro."""

from __future__ import annotations

import io

import fastavro
import numpy as np

from ticdc_lake.events import RawMessage
from ticdc_lake.landing.raw_batch import ConsumedRecord, as_chunks, raw_batch_schema
from ticdc_lake.landing.record_chunks import CHUNK_RECORDS, RecordChunk, _varints, encoded_parts, varint

EDGES = [0, 1, 63, 64, 8191, 8192, 2**13 + 1, 2**20 - 1, 2**20, 2**27 - 1, 2**27, 2**40, 2**62, 2**63 - 1]
NUMBERS = sorted({e + d for e in EDGES for d in (-1, 0, 1) if e + d < 2**63} | {-e for e in EDGES} | {-(2**63)})


def _avro_long(n: int) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, "long", n)
    return out.getvalue()


def test_every_length_of_long_is_encoded_as_avro_encodes_it() -> None:
    data, sizes = _varints(np.array(NUMBERS, dtype=np.int64))
    for row, n in enumerate(NUMBERS):
        expected = _avro_long(n)
        assert varint(n) == expected, n
        assert bytes(data[row, : sizes[row]]) == expected, n


def test_each_record_is_encoded_as_fastavro_encodes_it() -> None:
    messages = [
        RawMessage("t-é", 3, 2**40 + i, (-1, 0, 2**41)[i % 3], key, value, headers)
        for i, (key, value, headers) in enumerate(
            [
                (b"k", b"v" * 300, ()),
                (None, None, ()),
                (b"", b"", (("h", None), ("ü", b"x" * 200))),
                (b"x" * 20_000, None, ()),
            ]
        )
    ]
    chunk = RecordChunk.of_messages(messages, [0, 1, 2, 1])
    prefix = _avro_long(len("t-é".encode())) + "t-é".encode() + _avro_long(3)
    encoded = encoded_parts(chunk, prefix)
    schema = fastavro.parse_schema(raw_batch_schema())
    for row, (message, kind) in enumerate(zip(messages, [0, 1, 2, 1], strict=True)):
        expected = io.BytesIO()
        fastavro.schemaless_writer(
            expected,
            schema,
            {
                "topic": message.topic,
                "partition": message.partition,
                "offset": message.offset,
                "timestamp": message.timestamp_ms,
                "timestamp_type": kind,
                "key": message.key,
                "value": message.value,
                "headers": [{"key": k, "value": v} for k, v in message.headers],
            },
        )
        record = b"".join(encoded.parts[5 * row : 5 * row + 5])
        assert record == expected.getvalue(), row
        assert encoded.sizes[row] == len(record)


def test_a_chunk_without_headers_gives_its_records_back() -> None:
    messages = [RawMessage("t", 0, o, 5, b"k", b"v") for o in range(3)]
    chunk = RecordChunk.of_messages(messages, [1, 1, 1])
    assert chunk.headers is None
    assert chunk.messages() == messages
    assert len(chunk) == 3


def test_single_records_are_gathered_into_chunks_of_one_partition() -> None:
    records = [ConsumedRecord(RawMessage("t", p, o, 0, None, b"v"), 1) for p, o in [(0, 1), (0, 2), (1, 3), (0, 4)]]
    given: list[RecordChunk | ConsumedRecord] = [
        *records[:2],
        RecordChunk.of_messages([RawMessage("t", 0, 9, 0, None, None)], [2]),
        *records[2:],
    ]
    chunks = list(as_chunks(given))
    assert [(c.partition, c.offsets, c.timestamp_types) for c in chunks] == [
        (0, [1, 2], [1, 1]),
        (0, [9], [2]),
        (1, [3], [1]),
        (0, [4], [1]),
    ]
    many = [ConsumedRecord(RawMessage("t", 0, o, 0, None, b"v")) for o in range(CHUNK_RECORDS + 1)]
    assert [len(c) for c in as_chunks(many)] == [CHUNK_RECORDS, 1]
