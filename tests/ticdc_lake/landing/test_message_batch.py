"""Landed messages cut into batches of a few thousand, with their columns: the same messages, in
order, as reading the file record by record, from blocks read whole and blocks fastavro read."""

from __future__ import annotations

import io
import random

import pytest

from ticdc_lake.events import RawMessage
from ticdc_lake.landing.message_batch import MessageBatch, batches
from ticdc_lake.landing.raw_batch import ConsumedRecord, read_raw_blocks, write_raw_batch
from ticdc_lake.landing.raw_block_reader import RawRecords

TOPIC = "shop"


def _messages(count: int) -> list[RawMessage]:
    rng = random.Random(11)
    messages = []
    offset = 100
    for n in range(count):
        offset += rng.choice([1, 1, 3])
        value = None if n % 17 == 5 else b'{"n":%d}' % n + rng.randbytes(rng.randrange(0, 200))
        if n % 29 == 7:  # the bytes a record starts with, inside a value: that block goes through fastavro
            value = b"\x08shop\x04" + (value or b"")
        key = None if n % 3 else b"k%d" % n
        messages.append(RawMessage(TOPIC, 2, offset, 1_700_000_000_000 + n, key, value))
    return messages


MESSAGES = _messages(500)


def _blocks() -> list[RawRecords | list[RawMessage]]:
    sink = io.BytesIO()
    write_raw_batch(
        sink,
        [ConsumedRecord(m) for m in MESSAGES],
        pipeline="p",
        topic=TOPIC,
        partition=2,
        start=MESSAGES[0].offset,
        end=MESSAGES[-1].offset + 1,
        block_bytes=2_000,
    )
    return list(read_raw_blocks(io.BytesIO(sink.getvalue())))


def test_the_file_has_both_kinds_of_block() -> None:
    kinds = [isinstance(block, RawRecords) for block in _blocks()]
    assert any(kinds)
    assert not all(kinds)


@pytest.mark.parametrize(("first", "stop", "rows"), [(0, 1 << 40, 64), (150, 700, 100), (300, 301, 7), (0, 50, 10)])
def test_batches_hold_the_slice_in_order(first: int, stop: int, rows: int) -> None:
    expected = [m for m in MESSAGES if first <= m.offset < stop]
    got = list(batches(_blocks(), first, stop, rows))
    assert [len(b) for b in got] == [min(rows, len(expected) - i) for i in range(0, len(expected), rows)]
    assert [m for b in got for m in b] == expected
    for batch in got:
        messages = list(batch)
        assert batch.values.to_pylist() == [m.value for m in messages]
        assert batch.keys.to_pylist() == [m.key for m in messages]
        assert batch.topics.to_pylist() == [TOPIC] * len(messages)
        assert batch.partitions.to_pylist() == [2] * len(messages)
        assert batch.offsets.to_pylist() == [m.offset for m in messages]


def test_pick_makes_only_the_messages_asked_for() -> None:
    (batch,) = batches(_blocks(), 0, 1 << 40, 1_000)
    rows = [0, 1, 2, 57, 58, 230, 499]
    assert batch.pick(rows) == [MESSAGES[i] for i in rows]
    assert batch._messages is None  # the others were never made
    assert batch.pick(range(0, 500, 2)) == MESSAGES[::2]  # many: made all at once
    assert batch[3] == MESSAGES[3]


def test_a_batch_of_messages_read_by_fastavro_only() -> None:
    batch = MessageBatch([(MESSAGES, 10, 20)])
    assert list(batch) == MESSAGES[10:20]
    assert batch.values.to_pylist() == [m.value for m in MESSAGES[10:20]]
    assert batch.pick([1, 9]) == [MESSAGES[11], MESSAGES[19]]
