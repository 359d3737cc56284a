"""Reading a raw batch block by block: ``keep_block`` sees each block's decompressed bytes, and
only the records of the blocks it keeps are read (the decode stage's schema pass)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import cast

import fastavro
import pytest

from ticdc_lake.errors import ManifestError
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.raw_batch import CODECS, ConsumedRecord, raw_batch_schema, read_raw_batch, write_raw_batch
from ticdc_lake.landing.store import LandingStore

#: 40 records of about 120 bytes; every 7th value holds the marker ``DDL``.
MESSAGES = [
    RawMessage(
        "orders",
        1,
        n,
        1772359200000 + n,
        b"key-%d" % n,
        b'{"n":%d,"kind":"%s","pad":"%s"}' % (n, b"DDL" if n % 7 == 3 else b"ROW", b"x" * 80),
        (("h", b"%d" % n),) if n % 2 else (),
    )
    for n in range(40)
]
#: Small blocks (fastavro closes a block once its records reach this many bytes): several per file.
BLOCK_BYTES = 600


def _file(codec: str = "zstandard", block_bytes: int = BLOCK_BYTES) -> bytes:
    sink = io.BytesIO()
    write_raw_batch(
        sink,
        [ConsumedRecord(m) for m in MESSAGES],
        pipeline="p",
        topic="orders",
        partition=1,
        start=0,
        end=40,
        codec=codec,
        block_bytes=block_bytes,
    )
    return sink.getvalue()


def _blocks(data: bytes) -> list[list[int]]:
    """The offsets of each block's records, as fastavro reads them."""
    return [
        [cast(dict[str, int], record)["offset"] for record in block]
        for block in fastavro.block_reader(io.BytesIO(data))
    ]


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_only_the_records_of_kept_blocks_are_read(codec: str) -> None:
    data = _file(codec)
    blocks = _blocks(data)
    assert len(blocks) == 8
    seen: list[bytes] = []

    def keep(block: bytes) -> bool:
        seen.append(block)
        return b"DDL" in block

    kept = list(read_raw_batch(io.BytesIO(data), keep_block=keep))
    with_marker = [offsets for offsets in blocks if any(n % 7 == 3 for n in offsets)]
    assert [m.offset for m in kept] == [n for offsets in with_marker for n in offsets]
    assert kept == [MESSAGES[n] for offsets in with_marker for n in offsets]
    assert 0 < len(with_marker) < len(blocks)
    # The test saw every block once, each holding its records' values as they are.
    assert len(seen) == len(blocks)
    for block, offsets in zip(seen, blocks, strict=True):
        for n in offsets:
            assert (MESSAGES[n].value or b"-") in block
            assert (MESSAGES[n].key or b"-") in block


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_keeping_every_block_reads_the_whole_file(codec: str) -> None:
    data = _file(codec)
    assert list(read_raw_batch(io.BytesIO(data), keep_block=lambda block: True)) == MESSAGES
    assert list(read_raw_batch(io.BytesIO(data), keep_block=lambda block: False)) == []


def test_files_written_by_fastavro_read_block_by_block() -> None:
    # The land stage's files before it encoded records itself: deflate, fastavro's own blocks.
    sink = io.BytesIO()
    records = [
        {
            "topic": m.topic,
            "partition": m.partition,
            "offset": m.offset,
            "timestamp": m.timestamp_ms,
            "timestamp_type": 1,
            "key": m.key,
            "value": m.value,
            "headers": [{"key": k, "value": v} for k, v in m.headers],
        }
        for m in MESSAGES
    ]
    fastavro.writer(sink, raw_batch_schema(), records, codec="deflate", sync_interval=1_000)
    old = sink.getvalue()
    assert len(_blocks(old)) > 2
    assert list(read_raw_batch(io.BytesIO(old), keep_block=lambda block: True)) == MESSAGES
    assert [m.offset for m in read_raw_batch(io.BytesIO(old), keep_block=lambda block: b'"n":0,' in block)] == list(
        _blocks(old)[0]
    )


def test_damaged_file_is_a_manifest_error_block_by_block() -> None:
    data = _file()
    with pytest.raises(ManifestError) as caught:
        list(read_raw_batch(io.BytesIO(data[: len(data) // 2]), name="file:///lake/x.avro", keep_block=lambda b: True))
    assert str(caught.value).startswith("file:///lake/x.avro: not a readable raw batch (")
    assert str(caught.value).endswith(
        "the file is damaged or truncated: restore it from a backup (the manifest that lists it holds its size "
        "and sha256)"
    )


def test_landing_store_reads_kept_blocks_of_a_stream(tmp_path: Path) -> None:
    """The store's input streams cannot seek or tell; the block reader still gets each block's position."""
    store = LandingStore(f"file://{tmp_path}/landing", "orders_cdc")
    landed = store.write_batch(
        (ConsumedRecord(m) for m in MESSAGES), topic="orders", partition=1, start=0, end=40, block_bytes=BLOCK_BYTES
    )
    assert landed.file is not None
    assert list(store.read_messages(landed.file)) == MESSAGES
    kept = list(store.read_messages(landed.file, keep_block=lambda block: b'"n":0,' in block))
    assert kept == [MESSAGES[n] for n in _blocks(_file())[0]]
