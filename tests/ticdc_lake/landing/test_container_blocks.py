"""Blocks cut out of an Avro container without decompressing the others (``landing.container_blocks``)."""

from __future__ import annotations

import io

import fastavro
import pytest

from ticdc_lake.events import RawMessage
from ticdc_lake.landing.container_blocks import selected_blocks
from ticdc_lake.landing.raw_batch import CODECS, ConsumedRecord, write_raw_batch

MESSAGES = [RawMessage("t", 0, n, 1772359200000 + n, b"k%d" % n, b"v%d-" % n * 40) for n in range(300)]


def _file(codec: str) -> bytes:
    sink = io.BytesIO()
    write_raw_batch(
        sink,
        [ConsumedRecord(m) for m in MESSAGES],
        pipeline="p",
        topic="t",
        partition=0,
        start=0,
        end=300,
        codec=codec,
        block_bytes=2_000,
    )
    return sink.getvalue()


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_the_wanted_blocks_read_as_fastavro_reads_them_in_the_whole_file(codec: str) -> None:
    data = _file(codec)
    every = [list(block) for block in fastavro.block_reader(io.BytesIO(data))]
    assert len(every) > 10
    wanted = [0, 3, len(every) - 1]
    cut = selected_blocks(data, set(wanted))
    assert cut is not None
    assert len(cut) < len(data)
    assert [list(block) for block in fastavro.block_reader(io.BytesIO(cut))] == [every[i] for i in wanted]
    nothing = selected_blocks(data, set())
    assert nothing is not None
    assert list(fastavro.reader(io.BytesIO(nothing))) == []


def test_what_is_not_a_well_formed_container_is_refused() -> None:
    data = _file("zstandard")
    assert selected_blocks(data, {0}) is not None
    assert selected_blocks(b"PK\x03\x04" + data[4:], {0}) is None  # not Avro
    assert selected_blocks(data[: len(data) - 5], {0}) is None  # truncated
    damaged = bytearray(data)
    damaged[-1] ^= 0xFF  # the last sync marker
    assert selected_blocks(bytes(damaged), {0}) is None
    assert selected_blocks(data[:10], {0}) is None  # a header cut short
