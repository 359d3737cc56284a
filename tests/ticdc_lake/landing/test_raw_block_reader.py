"""A raw batch block read a whole block at a time gives exactly fastavro's records, or nothing.

``parse_block`` is compared with fastavro's record-by-record read on random records (null and
empty keys and values, extreme offsets and timestamps, values holding the very bytes a record
starts with) and must decline, never misread, every block it cannot vouch for.
"""

from __future__ import annotations

import io
import random
from typing import Any, cast

import fastavro
import numpy as np
import pytest

from ticdc_lake.events import RawMessage
from ticdc_lake.landing import raw_block_reader
from ticdc_lake.landing.raw_batch import (
    CODECS,
    ConsumedRecord,
    raw_batch_schema,
    read_raw_batch,
    read_raw_blocks,
    write_raw_batch,
)
from ticdc_lake.landing.raw_block_reader import RawRecords, parse_block

TOPIC = "orders-cdc"
INT64 = (-(1 << 63), (1 << 63) - 1)


def _file(messages: list[RawMessage], codec: str = "zstandard", block_bytes: int = 4_000) -> bytes:
    sink = io.BytesIO()
    first = messages[0]
    write_raw_batch(
        sink,
        [ConsumedRecord(m) for m in messages],
        pipeline="p",
        topic=first.topic,
        partition=first.partition,
        start=first.offset,
        end=messages[-1].offset + 1,
        codec=codec,
        block_bytes=block_bytes,
    )
    return sink.getvalue()


def _fastavro_blocks(data: bytes) -> list[tuple[bytes, int, list[RawMessage]]]:
    """Each block's decompressed bytes, record count and records as fastavro reads them."""
    blocks = []
    for block in fastavro.block_reader(io.BytesIO(data)):
        records = [
            RawMessage(r["topic"], r["partition"], r["offset"], r["timestamp"], r["key"], r["value"])
            for r in cast(list[dict[str, Any]], list(block))
        ]
        blocks.append((cast(Any, block).bytes_.getvalue(), block.num_records, records))
    return blocks


def _random_messages(
    rng: random.Random, count: int, partition: int = 3, prefix_inside: bool = False
) -> list[RawMessage]:
    prefix = _prefix(TOPIC, partition)
    offset = rng.choice([0, 5, 1 << 20, (1 << 62) - count * 3])
    messages = []
    for _ in range(count):
        offset += rng.choice([1, 1, 1, 2, 1000])
        key = rng.choice([None, b"", b"k", rng.randbytes(rng.randrange(1, 300))])
        value = rng.choice([None, b"", rng.randbytes(rng.randrange(1, 3_000)), b'{"payload":{"a":1}}'])
        if prefix_inside and value is not None and rng.random() < 0.3:
            value = value + prefix + b"tail"
        timestamp = rng.choice([-1, 0, 1_772_359_200_000, *INT64])
        messages.append(RawMessage(TOPIC, partition, offset, timestamp, key, value))
    return messages


def _prefix(topic: str, partition: int) -> bytes:
    """What every record of a raw batch starts with: the Avro string ``topic`` and the int ``partition``."""
    encoded = io.BytesIO()
    fastavro.schemaless_writer(
        encoded,
        {"type": "record", "name": "p", "fields": [{"name": "t", "type": "string"}, {"name": "p", "type": "int"}]},
        {"t": topic, "p": partition},
    )
    return encoded.getvalue()


@pytest.mark.parametrize("seed", range(6))
def test_every_block_reads_as_fastavro_reads_it(seed: int) -> None:
    rng = random.Random(seed)
    messages = _random_messages(rng, 300, partition=rng.choice([0, 1, 63, 64, (1 << 31) - 1]))
    blocks = _fastavro_blocks(_file(messages, codec=rng.choice(list(CODECS))))
    assert len(blocks) > 5
    for data, count, expected in blocks:
        records = parse_block(data, count)
        assert records is not None
        assert records.messages() == expected
        assert records.value_array().to_pylist() == [m.value for m in expected]
        assert records.key_array(2, 7).to_pylist() == [m.key for m in expected[2:7]]
        assert records.messages_at([0, count - 1]) == [expected[0], expected[-1]]
    assert list(read_raw_batch(io.BytesIO(_file(messages)))) == messages


def test_a_value_holding_the_record_prefix_is_read_by_fastavro() -> None:
    """A candidate record start inside a value breaks the chain: the block is declined, and the
    file still reads exactly (those blocks through fastavro)."""
    messages = _random_messages(random.Random(7), 200, prefix_inside=True)
    data = _file(messages)
    declined = [parse_block(block, count) is None for block, count, _ in _fastavro_blocks(data)]
    assert any(declined)
    assert not all(declined)
    assert list(read_raw_batch(io.BytesIO(data))) == messages
    kinds = {type(block) for block in read_raw_blocks(io.BytesIO(data))}
    assert kinds == {RawRecords, list}


def test_headers_are_read_by_fastavro() -> None:
    messages = [
        RawMessage(TOPIC, 0, n, 5, b"k", b"v%d" % n, (("trace", b"%d" % n),) if n == 3 else ()) for n in range(10)
    ]
    data = _file(messages, block_bytes=1 << 20)
    ((block, count, _),) = _fastavro_blocks(data)
    assert parse_block(block, count) is None
    assert list(read_raw_batch(io.BytesIO(data))) == messages


def test_damaged_blocks_are_declined() -> None:
    messages = _random_messages(random.Random(3), 40)
    ((block, count, _),) = _fastavro_blocks(_file(messages, block_bytes=1 << 22))
    assert parse_block(block, count) is not None
    assert parse_block(block, count + 1) is None  # fewer records than the header says
    assert parse_block(block, count - 1) is None
    assert parse_block(block[:-1], count) is None  # truncated
    assert parse_block(block + b"\x00", count) is None  # trailing byte
    assert parse_block(b"", 0) is None
    bad_branch = bytearray(block)
    record = len(_prefix(TOPIC, 3))
    # the first record's key branch: after offset, timestamp and timestamp type varints
    at = record
    for _ in range(3):
        while bad_branch[at] & 0x80:
            at += 1
        at += 1
    bad_branch[at] = 4  # union branch 2 does not exist
    assert parse_block(bytes(bad_branch), count) is None


def test_a_file_of_another_schema_is_read_by_fastavro() -> None:
    """``parse_block`` only reads files whose header holds this schema; another record layout is
    never taken for it (here: the same fields, ``timestamp`` moved last)."""
    schema = raw_batch_schema()
    fields = schema["fields"]
    other = {**schema, "fields": [f for f in fields if f["name"] != "timestamp"] + [fields[3]]}
    records: list[dict[str, Any]] = [
        {
            "topic": TOPIC,
            "partition": 0,
            "offset": n,
            "timestamp": 9,
            "timestamp_type": 1,
            "key": None,
            "value": b"v",
            "headers": [],
        }
        for n in range(5)
    ]
    sink = io.BytesIO()
    fastavro.writer(sink, other, records)
    blocks = list(read_raw_blocks(io.BytesIO(sink.getvalue())))
    assert all(isinstance(block, list) for block in blocks)
    assert [m.offset for block in blocks for m in cast(list[RawMessage], block)] == list(range(5))


@pytest.mark.parametrize(
    "value", [0, 1, -1, 63, -64, 64, 8191, 1 << 31, -(1 << 31), (1 << 62), INT64[0], INT64[1], INT64[1] - 1]
)
def test_longs_decode_every_width(value: int) -> None:
    encoded = io.BytesIO()
    fastavro.schemaless_writer(encoded, "long", value)
    padded = np.frombuffer(encoded.getvalue() + bytes(11), dtype=np.uint8)
    values, after, ok = raw_block_reader._longs(padded, np.array([0], dtype=np.int64))
    assert (int(values[0]), int(after[0]), bool(ok[0])) == (value, len(encoded.getvalue()), True)


def test_an_overlong_varint_is_not_well_formed() -> None:
    eleven = np.frombuffer(b"\xff" * 10 + b"\x01" + bytes(11), dtype=np.uint8)
    ten_too_big = np.frombuffer(b"\xff" * 9 + b"\x02" + bytes(11), dtype=np.uint8)
    for padded in (eleven, ten_too_big):
        _, _, ok = raw_block_reader._longs(padded, np.array([0], dtype=np.int64))
        assert not ok[0]
