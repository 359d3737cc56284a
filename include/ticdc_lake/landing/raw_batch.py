"""The raw batch file: one landed offset range of one partition as an Avro container.

Schema ``ticdc_lake/resources/raw_batch.avsc``, codec zstandard at level 1 in blocks of 1 MiB
(chosen by measurement, docs/landing.md: a quarter of the write CPU of the deflate files landed
before, and files a sixth of their size for Debezium), and a sync marker derived from (pipeline,
topic, partition, start) instead of a random one, so the same records always give the same bytes:
re-landing a range reproduces the file exactly. Readers take the codec from the file's header, so
files written before (deflate) read as ever.

Records are encoded here a chunk at a time (:class:`_RecordEncoder` and
:mod:`.record_chunks`, Avro's binary encoding of the fixed schema, with numpy) and handed to
fastavro a block at a time (``Writer.write_block``), which writes the header, compresses
each block and writes the sync markers: the file is byte for byte what ``fastavro.writer`` writes
from the same records (tested), with about a third less land CPU per message (docs/landing.md).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from importlib.resources import files
from typing import IO, Any, BinaryIO, Protocol, cast

import fastavro
import numpy as np
from fastavro.write import Writer

from ticdc_lake.errors import LandingError, ManifestError
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.container_blocks import selected_blocks
from ticdc_lake.landing.raw_block_reader import Block, RawRecords, parse_block
from ticdc_lake.landing.record_chunks import CHUNK_RECORDS, RecordChunk, encoded_parts, varint

#: The codec of new raw batch files; spark-avro (zstd-jni) and fastavro (backports.zstd) read it.
CODEC = "zstandard"
#: Codecs a raw batch may be written with (benchmarks and tests compare them) and their fixed levels.
CODECS: dict[str, int | None] = {"zstandard": 1, "snappy": None, "deflate": 6, "null": None}
#: Uncompressed bytes of an Avro block: records are compressed a block at a time, and blocks of
#: 1 MiB let the codec find what consecutive messages share (a Debezium message's schema), where
#: fastavro's default of 16,000 bytes (the blocks of files landed before) holds about 4 of them.
BLOCK_BYTES = 1 << 20
SCHEMA_RESOURCE = "raw_batch.avsc"


#: A test of a block's bytes (``Decoder.schema_block_test``).
BlockTest = Callable[[bytes], bool]


@dataclass(frozen=True, slots=True)
class SchemaTest:
    """A decoder's schema block test and what names it in a manifest (``Decoder.schema_block_test_id``)."""

    name: str
    test: BlockTest


class TimestampType(IntEnum):
    """Kafka's record timestamp types, as librdkafka numbers them."""

    NOT_AVAILABLE = 0
    CREATE_TIME = 1
    LOG_APPEND_TIME = 2


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    """A Kafka record as read, with the timestamp type that :class:`RawMessage` leaves out."""

    message: RawMessage
    timestamp_type: int = TimestampType.CREATE_TIME


@dataclass(slots=True)
class BatchStats:
    count: int = 0
    first_timestamp_ms: int | None = None
    last_timestamp_ms: int | None = None
    #: Indexes (in file order, from 0) of the blocks the ``block_test`` of :func:`write_raw_batch`
    #: kept; None without a test.
    schema_blocks: list[int] | None = None


def as_chunks(records: Iterable[RecordChunk | ConsumedRecord]) -> Iterator[RecordChunk]:
    """``records`` as chunks: a chunk as it is, consecutive single records (say, a test's) gathered
    into chunks of up to ``record_chunks.CHUNK_RECORDS`` of one topic partition and timestamp type."""
    held: list[ConsumedRecord] = []
    for record in records:
        if isinstance(record, RecordChunk):
            yield from _held_chunks(held)
            held = []
            if len(record):
                yield record
            continue
        if held and (
            len(held) == CHUNK_RECORDS
            or (record.message.topic, record.message.partition) != (held[0].message.topic, held[0].message.partition)
        ):
            yield from _held_chunks(held)
            held = []
        held.append(record)
    yield from _held_chunks(held)


def _held_chunks(held: list[ConsumedRecord]) -> Iterator[RecordChunk]:
    if held:
        yield RecordChunk.of_messages([r.message for r in held], [int(r.timestamp_type) for r in held])


class Writable(Protocol):
    def write(self, data: bytes, /) -> Any: ...


class _StreamOnly:
    """What fastavro needs of an output: write-only, never seeks (so it never tries to append)."""

    def __init__(self, sink: Writable) -> None:
        self._sink = sink

    def write(self, data: bytes, /) -> int:
        self._sink.write(data)
        return len(data)

    def flush(self) -> None:
        pass

    def seekable(self) -> bool:
        return False


class _Block:
    """What ``Writer.write_block`` reads of a block: its record count and its encoded records."""

    __slots__ = ("_data", "bytes_", "num_records")

    def __init__(self, count: int, data: bytes) -> None:
        self.num_records = count
        self.bytes_ = self
        self._data = data

    def getvalue(self) -> bytes:
        return self._data


class _RecordEncoder:
    """Avro binary encoding of raw batch records of one topic partition, gathered into blocks.

    Each record is five pieces (:func:`~ticdc_lake.landing.record_chunks.encoded_parts`; the
    value's bytes are never copied until the block is joined); a block is closed once its records
    reach ``block_bytes``, where fastavro would close it.
    """

    def __init__(
        self, writer: Writer, topic: str, partition: int, block_bytes: int, block_test: BlockTest | None = None
    ) -> None:
        self._writer = writer
        self._block_test = block_test
        #: Indexes of the blocks written that ``block_test`` kept.
        self.kept_blocks: list[int] = []
        self._blocks = 0
        name = topic.encode()
        self._prefix = varint(len(name)) + name + varint(partition)
        self._block_bytes = block_bytes
        self._parts: list[bytes] = []
        self._size = 0
        self._count = 0

    def add(self, chunk: RecordChunk) -> None:
        encoded = encoded_parts(chunk, self._prefix)
        ends = np.cumsum(encoded.sizes)
        first = 0
        while first < len(chunk):
            # The block closes after the first record that takes it to block_bytes, as fastavro's does.
            base = int(ends[first - 1]) if first else 0
            closing = int(np.searchsorted(ends, base + self._block_bytes - self._size, side="left"))
            last = min(closing, len(chunk) - 1)
            self._parts += encoded.parts[5 * first : 5 * last + 5]
            self._size += int(ends[last]) - base
            self._count += last + 1 - first
            first = last + 1
            if self._size >= self._block_bytes:
                self.flush()

    def flush(self) -> None:
        if self._count:
            data = b"".join(self._parts)
            if self._block_test is not None and self._block_test(data):
                self.kept_blocks.append(self._blocks)
            self._blocks += 1
            self._writer.write_block(_Block(self._count, data))
            self._parts = []
            self._size = 0
            self._count = 0


@lru_cache(maxsize=1)
def raw_batch_schema() -> dict[str, Any]:
    """The parsed Avro schema of raw batch records."""
    text = files("ticdc_lake").joinpath("resources", SCHEMA_RESOURCE).read_text(encoding="utf-8")
    return cast(dict[str, Any], fastavro.parse_schema(json.loads(text)))


def sync_marker(pipeline: str, topic: str, partition: int, start: int) -> bytes:
    """The 16-byte Avro sync marker of a batch: fixed per range, so files are reproducible."""
    seed = f"ticdc-lake raw batch\0{pipeline}\0{topic}\0{partition}\0{start}".encode()
    return hashlib.sha256(seed).digest()[:16]


def write_raw_batch(
    sink: Writable,
    records: Iterable[RecordChunk | ConsumedRecord],
    *,
    pipeline: str,
    topic: str,
    partition: int,
    start: int,
    end: int,
    codec: str = CODEC,
    block_bytes: int = BLOCK_BYTES,
    block_test: BlockTest | None = None,
) -> BatchStats:
    """Write ``records`` (chunks or single records; offset order, all inside ``[start, end)`` of one
    partition) to ``sink``. With ``block_test`` (a decoder's ``schema_block_test``), the stats list
    the blocks it keeps, run on each block's bytes as a reader decompresses them.

    Raises :class:`LandingError` when a record is from another partition, out of the range or out
    of order: the file would not be the range it claims to be.
    """
    if codec not in CODECS:
        raise LandingError(f"raw batch codec {codec!r} is not one of {sorted(CODECS)}")
    stats = BatchStats()
    where = f"topic {topic!r} partition {partition} range [{start}, {end})"
    writer = Writer(
        cast(IO[bytes], _StreamOnly(sink)),
        raw_batch_schema(),
        codec=codec,
        sync_interval=block_bytes,
        sync_marker=sync_marker(pipeline, topic, partition, start),
        compression_level=CODECS[codec],
    )
    encoder = _RecordEncoder(writer, topic, partition, block_bytes, block_test)
    previous = start - 1
    for chunk in as_chunks(records):
        if chunk.topic != topic or chunk.partition != partition:
            raise LandingError(f"{where}: got a record of {chunk.messages()[0].where()}")
        offsets = np.asarray(chunk.offsets, dtype=np.int64)
        before = np.concatenate(([previous], offsets[:-1]))
        wrong = np.flatnonzero((offsets <= before) | (offsets >= end))
        if len(wrong):
            at = int(wrong[0])
            raise LandingError(
                f"{where}: record offset {int(offsets[at])} is out of order or outside the range "
                f"(previous offset {int(before[at])})"
            )
        previous = int(offsets[-1])
        encoder.add(chunk)
        stats.count += len(chunk)
        if stats.first_timestamp_ms is None:
            stats.first_timestamp_ms = chunk.timestamps[0]
        stats.last_timestamp_ms = chunk.timestamps[-1]
    encoder.flush()
    writer.flush()
    if block_test is not None:
        stats.schema_blocks = encoder.kept_blocks
    return stats


def read_raw_batch(
    source: BinaryIO, name: str = "raw batch", keep_block: Callable[[bytes], bool] | None = None
) -> Iterator[RawMessage]:
    """Yield the records of a raw batch file in offset order.

    With ``keep_block``, only the records of the Avro blocks whose decompressed bytes (the
    records' encodings one after another, so each key and value as it is) it keeps; the others
    are not decoded at all (the decode stage's schema pass, ``Decoder.schema_block_test``).
    """
    return block_messages(read_raw_blocks(source, name, keep_block))


def block_messages(blocks: Iterator[Block]) -> Iterator[RawMessage]:
    """The messages of ``blocks`` (:func:`read_raw_blocks`) one by one; closing this closes them (the file)."""
    try:
        for block in blocks:
            yield from block.messages() if isinstance(block, RawRecords) else block
    finally:
        blocks.close()  # type: ignore[attr-defined]  # a generator


def read_raw_blocks(
    source: BinaryIO,
    name: str = "raw batch",
    keep_block: Callable[[bytes], bool] | None = None,
    only: Collection[int] | None = None,
) -> Iterator[Block]:
    """The Avro blocks of a raw batch file in order (with ``keep_block``: those it keeps; with
    ``only``: those of these indexes, the others never decompressed), each as its records' columns
    (:func:`~ticdc_lake.landing.raw_block_reader.parse_block`, a whole block at a time) or, where
    that cannot vouch for a block (headers, a file of another schema), as the messages fastavro
    decodes from it record by record."""
    if only is not None:
        data = source.read()
        source = io.BytesIO(selected_blocks(data, only) or data)  # not a container: read whole, to say so
    try:
        blocks = fastavro.block_reader(cast(IO[bytes], _Positioned(source)))
        whole_blocks = _has_raw_batch_schema(blocks.metadata)
        for block in blocks:
            data = cast(Any, block).bytes_.getvalue()  # the decompressed block (a BytesIO), not in the stub
            if keep_block is not None and not keep_block(data):
                continue
            records = parse_block(data, block.num_records) if whole_blocks else None
            yield records if records is not None else [record_message(item) for item in block]
    except (ValueError, EOFError, KeyError, TypeError) as exc:
        raise ManifestError(
            f"{name}: not a readable raw batch ({type(exc).__name__}: {exc}); the file is damaged or "
            "truncated: restore it from a backup (the manifest that lists it holds its size and sha256)"
        ) from exc


def record_message(item: Any) -> RawMessage:
    """A raw batch record (as fastavro or Spark's Avro reader gives it, a dict) as a :class:`RawMessage`."""
    record = cast(dict[str, Any], item)
    headers = record["headers"]
    return RawMessage(
        topic=record["topic"],
        partition=record["partition"],
        offset=record["offset"],
        timestamp_ms=record["timestamp"],
        key=record["key"],
        value=record["value"],
        # TiCDC sends no headers: no generator for an empty list (about 1 µs a record)
        headers=tuple((header["key"], header["value"]) for header in headers) if headers else (),
    )


def _has_raw_batch_schema(metadata: dict[str, Any]) -> bool:
    """Whether a file's writer schema is :func:`raw_batch_schema`, the layout ``parse_block`` reads."""
    text = metadata.get("avro.schema")
    try:
        return text is not None and fastavro.parse_schema(json.loads(text)) == _parsed_schema()
    except (ValueError, TypeError, fastavro.schema.SchemaParseException):
        return False


@lru_cache(maxsize=1)
def _parsed_schema() -> dict[str, Any]:
    """:func:`raw_batch_schema` as fastavro parses it (as it is written into a file's header)."""
    return cast(dict[str, Any], fastavro.parse_schema(raw_batch_schema()))


class _Positioned:
    """A stream that tells how much was read from it: fastavro's block reader asks each block's
    position, which a non-seekable stream (``open_input_stream``: local or S3) cannot answer."""

    def __init__(self, source: BinaryIO) -> None:
        self._source = source
        self._position = 0

    def read(self, size: int = -1) -> bytes:
        data = self._source.read(size)
        self._position += len(data)
        return data

    def tell(self) -> int:
        return self._position
