"""The raw batch Avro file: exact contents and reproducible bytes."""

from __future__ import annotations

import io

import fastavro
import pytest

from ticdc_lake.errors import LandingError, ManifestError
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.raw_batch import (
    CODECS,
    ConsumedRecord,
    TimestampType,
    raw_batch_schema,
    read_raw_batch,
    read_raw_blocks,
    sync_marker,
    write_raw_batch,
)
from ticdc_lake.landing.raw_block_reader import RawRecords
from ticdc_lake.landing.record_chunks import RecordChunk

MESSAGES = [
    RawMessage("orders", 1, 10, 1772359200000, b"k1", b'{"a":1}', (("h1", b"v"), ("h2", None))),
    RawMessage("orders", 1, 11, 1772359200001, None, b"\x00\xff", ()),
    RawMessage("orders", 1, 13, 1772359200002, b"k3", None, (("dup", b"1"), ("dup", b"2"))),
]


def _write(messages: list[RawMessage], start: int = 10, end: int = 15, pipeline: str = "p") -> tuple[bytes, int]:
    sink = io.BytesIO()
    stats = write_raw_batch(
        sink,
        [ConsumedRecord(m) for m in messages],
        pipeline=pipeline,
        topic="orders",
        partition=1,
        start=start,
        end=end,
    )
    return sink.getvalue(), stats.count


def test_round_trip_keeps_every_field() -> None:
    data, count = _write(MESSAGES)
    assert count == 3
    assert list(read_raw_batch(io.BytesIO(data))) == MESSAGES


def test_file_is_a_standard_zstandard_avro_container() -> None:
    data, _ = _write(MESSAGES)
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.codec == "zstandard"
    schema = reader.writer_schema
    assert isinstance(schema, dict)
    assert schema["name"] == "ticdc_lake.landing.RawKafkaRecord"
    records = list(reader)
    assert records[0] == {
        "topic": "orders",
        "partition": 1,
        "offset": 10,
        "timestamp": 1772359200000,
        "timestamp_type": int(TimestampType.CREATE_TIME),
        "key": b"k1",
        "value": b'{"a":1}',
        "headers": [{"key": "h1", "value": b"v"}, {"key": "h2", "value": None}],
    }
    # The sync marker closes the header and every block: derived from the range, not random.
    marker = sync_marker("p", "orders", 1, 10)
    assert len(marker) == 16
    assert data.endswith(marker)


def test_files_of_the_old_deflate_codec_still_read() -> None:
    # Exactly what the land stage wrote before zstandard: deflate at level 6, the same sync marker.
    sink = io.BytesIO()
    fastavro.writer(
        sink,
        raw_batch_schema(),
        [
            {
                "topic": m.topic,
                "partition": m.partition,
                "offset": m.offset,
                "timestamp": m.timestamp_ms,
                "timestamp_type": int(TimestampType.CREATE_TIME),
                "key": m.key,
                "value": m.value,
                "headers": [{"key": k, "value": v} for k, v in m.headers],
            }
            for m in MESSAGES
        ],
        codec="deflate",
        codec_compression_level=6,
        sync_marker=sync_marker("p", "orders", 1, 10),
    )
    old = sink.getvalue()
    assert fastavro.reader(io.BytesIO(old)).codec == "deflate"
    assert list(read_raw_batch(io.BytesIO(old))) == MESSAGES
    # The codec parameter still writes them, byte for byte.
    rewritten = io.BytesIO()
    write_raw_batch(
        rewritten,
        [ConsumedRecord(m) for m in MESSAGES],
        pipeline="p",
        topic="orders",
        partition=1,
        start=10,
        end=15,
        codec="deflate",
        block_bytes=16_000,
    )
    assert rewritten.getvalue() == old


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_every_codec_round_trips(codec: str) -> None:
    sink = io.BytesIO()
    write_raw_batch(
        sink,
        [ConsumedRecord(m) for m in MESSAGES],
        pipeline="p",
        topic="orders",
        partition=1,
        start=10,
        end=15,
        codec=codec,
    )
    assert fastavro.reader(io.BytesIO(sink.getvalue())).codec == codec
    assert list(read_raw_batch(io.BytesIO(sink.getvalue()))) == MESSAGES


def test_unknown_codec_is_refused() -> None:
    with pytest.raises(LandingError) as raised:
        write_raw_batch(io.BytesIO(), [], pipeline="p", topic="orders", partition=1, start=10, end=15, codec="lz4")
    assert str(raised.value) == "raw batch codec 'lz4' is not one of ['deflate', 'null', 'snappy', 'zstandard']"


def test_same_input_gives_identical_bytes() -> None:
    first, _ = _write(MESSAGES)
    second, _ = _write(list(MESSAGES))
    assert first == second


def test_sync_marker_depends_on_pipeline_and_range() -> None:
    assert sync_marker("p", "orders", 1, 10) == sync_marker("p", "orders", 1, 10)
    assert sync_marker("p", "orders", 1, 10) != sync_marker("p", "orders", 1, 11)
    assert sync_marker("p", "orders", 1, 10) != sync_marker("q", "orders", 1, 10)
    assert _write(MESSAGES, pipeline="p")[0] != _write(MESSAGES, pipeline="q")[0]


def test_many_records_span_several_blocks_deterministically() -> None:
    # 12,000 records of about 230 bytes: three blocks of BLOCK_BYTES (1 MiB) uncompressed.
    many = [RawMessage("orders", 1, n, 1772359200000 + n, b"key-%d" % n, b"v" * 200, ()) for n in range(12_000)]
    first, count = _write(many, start=0, end=12_000)
    second, _ = _write(many, start=0, end=12_000)
    assert count == 12_000
    assert first == second
    assert first.count(sync_marker("p", "orders", 1, 0)) > 2
    assert list(read_raw_batch(io.BytesIO(first))) == many


def test_record_outside_the_range_is_rejected() -> None:
    with pytest.raises(LandingError) as caught:
        _write([*MESSAGES, RawMessage("orders", 1, 15, 0, None, None)])
    assert str(caught.value) == (
        "topic 'orders' partition 1 range [10, 15): record offset 15 is out of order or outside the range "
        "(previous offset 13)"
    )


def test_records_out_of_order_are_rejected() -> None:
    with pytest.raises(LandingError, match=r"record offset 10 is out of order .*\(previous offset 11\)"):
        _write([MESSAGES[1], MESSAGES[0]])


def test_record_of_another_partition_is_rejected() -> None:
    with pytest.raises(LandingError) as caught:
        _write([RawMessage("orders", 2, 10, 0, None, None)])
    assert str(caught.value) == (
        "topic 'orders' partition 1 range [10, 15): got a record of topic 'orders' partition 2 offset 10"
    )


def test_damaged_file_is_a_manifest_error() -> None:
    data, _ = _write(MESSAGES)
    with pytest.raises(ManifestError, match=r"^file:///lake/x\.avro: not a readable raw batch"):
        list(read_raw_batch(io.BytesIO(data[: len(data) // 2]), name="file:///lake/x.avro"))


def _fastavro_file(messages: list[ConsumedRecord], topic: str, codec: str, block_bytes: int) -> bytes:
    """What fastavro.writer writes from the same records: the land stage's files before it encoded
    records itself."""
    sink = io.BytesIO()
    fastavro.writer(
        sink,
        raw_batch_schema(),
        [
            {
                "topic": r.message.topic,
                "partition": r.message.partition,
                "offset": r.message.offset,
                "timestamp": r.message.timestamp_ms,
                "timestamp_type": int(r.timestamp_type),
                "key": r.message.key,
                "value": r.message.value,
                "headers": [{"key": k, "value": v} for k, v in r.message.headers],
            }
            for r in messages
        ],
        codec=codec,
        codec_compression_level=CODECS[codec],
        sync_interval=block_bytes,
        sync_marker=sync_marker("p", topic, 7, 2**40),
        strict=True,
    )
    return sink.getvalue()


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("block_bytes", [1, 16_000, 1 << 20])
@pytest.mark.parametrize("chunk", [0, 1, 7, 1000])
def test_the_encoder_writes_what_fastavro_writes_byte_for_byte(codec: str, block_bytes: int, chunk: int) -> None:
    """Every field's edge: offsets past 2^40, timestamps -1 and 0 and repeated, each timestamp type,
    null, empty and large (multi-byte length) keys and values, non-ASCII topic and header keys,
    duplicate headers; several blocks. Given as single records (``chunk`` 0) or as chunks of
    ``chunk`` records, as the Kafka reader gives them (blocks then close inside and across chunks)."""
    topic = "commandes-é"
    records = []
    for n in range(600):
        value = None if n % 7 == 0 else bytes([n % 256]) * (n * 37 % 20_000)
        key = None if n % 3 == 0 else b"" if n % 3 == 1 else b"key-%d" % n
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if n % 5 == 1:
            headers = (("ü", b"1"), ("ü", None), ("x" * 200, b"y" * 9000))
        timestamp = (-1, 0, 1772359200000, 1772359200000, 2**40 + n)[n % 5]
        message = RawMessage(topic, 7, 2**40 + 2 * n, timestamp, key, value, headers)
        records.append(ConsumedRecord(message, (0, 1, 2)[n % 3]))
    given: list[RecordChunk | ConsumedRecord] = list(records)
    if chunk:
        given = [
            RecordChunk.of_messages([r.message for r in part], [int(r.timestamp_type) for r in part])
            for part in (records[i : i + chunk] for i in range(0, len(records), chunk))
        ]
    sink = io.BytesIO()
    stats = write_raw_batch(
        sink,
        given,
        pipeline="p",
        topic=topic,
        partition=7,
        start=2**40,
        end=2**41,
        codec=codec,
        block_bytes=block_bytes,
    )
    assert stats.count == 600
    assert (stats.first_timestamp_ms, stats.last_timestamp_ms) == (-1, 2**40 + 599)
    assert sink.getvalue() == _fastavro_file(records, topic, codec, block_bytes)
    assert list(read_raw_batch(io.BytesIO(sink.getvalue()))) == [r.message for r in records]


def test_an_empty_record_set_is_the_header_alone_as_fastavro_writes_it() -> None:
    sink = io.BytesIO()
    stats = write_raw_batch(sink, [], pipeline="p", topic="t", partition=7, start=2**40, end=2**41)
    assert stats.count == 0
    assert sink.getvalue() == _fastavro_file([], "t", "zstandard", 1 << 20)


def test_the_blocks_a_block_test_keeps_are_listed_and_read_alone() -> None:
    """Every 500th value holds the marker: the stats list the blocks a reader's ``keep_block``
    keeps, reading only those gives the same records, and without a test there is no list."""
    many = [
        RawMessage("orders", 1, n, 1772359200000, None, b"ddl" if n % 500 == 7 else b"v" * 300, ())
        for n in range(4_000)
    ]

    def marked(block: bytes) -> bool:
        return b"ddl" in block

    sink = io.BytesIO()
    stats = write_raw_batch(
        sink,
        [ConsumedRecord(m) for m in many],
        pipeline="p",
        topic="orders",
        partition=1,
        start=0,
        end=4_000,
        block_bytes=20_000,
        block_test=marked,
    )
    data = sink.getvalue()
    every = list(read_raw_blocks(io.BytesIO(data)))
    kept = [index for index, block in enumerate(every) if any(m.value == b"ddl" for m in _block_messages(block))]
    assert 0 < len(kept) < len(every)
    assert stats.schema_blocks == kept
    assert len(kept) == 8
    alone = [
        m for block in read_raw_blocks(io.BytesIO(data), keep_block=marked, only=kept) for m in _block_messages(block)
    ]
    assert alone == [m for i in kept for m in _block_messages(every[i])]
    assert [m for m in alone if m.value == b"ddl"] == [m for m in many if m.value == b"ddl"]
    assert list(read_raw_blocks(io.BytesIO(data), only=[])) == []
    assert _write(many, start=0, end=4_000)[1] == 4_000
    plain = write_raw_batch(
        io.BytesIO(), [ConsumedRecord(m) for m in many], pipeline="p", topic="orders", partition=1, start=0, end=4_000
    )
    assert plain.schema_blocks is None


def _block_messages(block: RawRecords | list[RawMessage]) -> list[RawMessage]:
    return block.messages() if isinstance(block, RawRecords) else block
