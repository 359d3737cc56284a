"""The raw batch file: one landed offset range of one partition as an Avro container.

Schema ``ticdc_lake/resources/raw_batch.avsc``, codec zstandard at level 1 in blocks of 1 MiB
(chosen by measurement, docs/landing.md: a quarter of the write CPU of the deflate files landed
before, and files a sixth of their size for Debezium), and a sync marker derived from (pipeline,
topic, partition, start) instead of a random one, so the same records always give the same bytes:
re-landing a range reproduces the file exactly. Readers take the codec from the file's header, so
files written before (deflate) read as ever.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from importlib.resources import files
from typing import IO, Any, BinaryIO, Protocol, cast

import fastavro

from ticdc_lake.errors import LandingError, ManifestError
from ticdc_lake.events import RawMessage

#: The codec of new raw batch files; spark-avro (zstd-jni) and fastavro (backports.zstd) read it.
CODEC = "zstandard"
#: Codecs a raw batch may be written with (benchmarks and tests compare them) and their fixed levels.
CODECS: dict[str, int | None] = {"zstandard": 1, "snappy": None, "deflate": 6, "null": None}
#: Uncompressed bytes of an Avro block: records are compressed a block at a time, and blocks of
#: 1 MiB let the codec find what consecutive messages share (a Debezium message's schema), where
#: fastavro's default of 16,000 bytes (the blocks of files landed before) holds about 4 of them.
BLOCK_BYTES = 1 << 20
SCHEMA_RESOURCE = "raw_batch.avsc"


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
    records: Iterable[ConsumedRecord],
    *,
    pipeline: str,
    topic: str,
    partition: int,
    start: int,
    end: int,
    codec: str = CODEC,
    block_bytes: int = BLOCK_BYTES,
) -> BatchStats:
    """Write ``records`` (offset order, all inside ``[start, end)`` of one partition) to ``sink``.

    Raises :class:`LandingError` when a record is from another partition, out of the range or out
    of order: the file would not be the range it claims to be.
    """
    if codec not in CODECS:
        raise LandingError(f"raw batch codec {codec!r} is not one of {sorted(CODECS)}")
    stats = BatchStats()
    where = f"topic {topic!r} partition {partition} range [{start}, {end})"

    def avro_records() -> Iterator[dict[str, Any]]:
        previous = start - 1
        for record in records:
            message = record.message
            if message.topic != topic or message.partition != partition:
                raise LandingError(f"{where}: got a record of {message.where()}")
            if not previous < message.offset < end:
                raise LandingError(
                    f"{where}: record offset {message.offset} is out of order or outside the range "
                    f"(previous offset {previous})"
                )
            previous = message.offset
            stats.count += 1
            if stats.first_timestamp_ms is None:
                stats.first_timestamp_ms = message.timestamp_ms
            stats.last_timestamp_ms = message.timestamp_ms
            yield {
                "topic": message.topic,
                "partition": message.partition,
                "offset": message.offset,
                "timestamp": message.timestamp_ms,
                "timestamp_type": int(record.timestamp_type),
                "key": message.key,
                "value": message.value,
                "headers": [{"key": key, "value": value} for key, value in message.headers],
            }

    fastavro.writer(
        cast(IO[bytes], _StreamOnly(sink)),
        raw_batch_schema(),
        avro_records(),
        codec=codec,
        codec_compression_level=CODECS[codec],
        sync_interval=block_bytes,
        sync_marker=sync_marker(pipeline, topic, partition, start),
        strict=True,
    )
    return stats


def read_raw_batch(source: BinaryIO, name: str = "raw batch") -> Iterator[RawMessage]:
    """Yield the records of a raw batch file in offset order."""
    try:
        reader = fastavro.reader(source)
        for item in reader:
            record = cast(dict[str, Any], item)
            yield RawMessage(
                topic=record["topic"],
                partition=record["partition"],
                offset=record["offset"],
                timestamp_ms=record["timestamp"],
                key=record["key"],
                value=record["value"],
                headers=tuple((header["key"], header["value"]) for header in record["headers"]),
            )
    except (ValueError, EOFError, KeyError, TypeError) as exc:
        raise ManifestError(
            f"{name}: not a readable raw batch ({type(exc).__name__}: {exc}); the file is damaged or "
            "truncated: restore it from a backup (the manifest that lists it holds its size and sha256)"
        ) from exc
