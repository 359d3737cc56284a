"""TiCDC's own message compression (``large-message-handle-compression``).

Nothing in a message says it is compressed: the pipeline's ``codec.compression`` must match the
changefeed. snappy is the raw block format (klauspost ``snappy.Encode``, no framing), lz4 the LZ4
frame format (pierrec/lz4 v4 writer, magic ``04 22 4D 18``); both are undone with cramjam
(TiCDC ``pkg/compression/compress.go``, called through ``pkg/sink/codec/common/compress.go``).
Simple and Canal-JSON compress the whole value, Open each value item of a batch (never the key),
Debezium the key and the value; Avro never compresses.

A mismatch either way is a :class:`DecodeError` naming the protocol, the part of the message and
the ``codec.compression`` value that would fit the bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cramjam

from ticdc_lake.config import Compression
from ticdc_lake.errors import DecodeError

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
#: A snappy block never expands more than this per input byte; larger claimed sizes are not snappy.
_SNAPPY_MAX_RATIO = 64
_SNAPPY_MAX_SIZE = 256 << 20
_UNCOMPRESSED_STARTS = (b"{", b"[", b"\x16")


def looks_like(data: bytes) -> str:
    """A guess at what ``data`` is, for error messages only."""
    if data.startswith(LZ4_FRAME_MAGIC):
        return "an LZ4 frame"
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"["):
        return "uncompressed JSON"
    if data[:1] == b"\x16":
        return "an uncompressed Simple Avro message"
    if _is_raw_snappy(data):
        return "a snappy block"
    return "snappy data or another binary format"


def sniff(data: bytes) -> Compression | None:
    """The compression that most likely produced ``data``: LZ4 frame or snappy block, else None.

    Only for error messages: the snappy test decompresses ``data`` once.
    """
    if data.startswith(LZ4_FRAME_MAGIC):
        return Compression.LZ4
    if _is_raw_snappy(data):
        return Compression.SNAPPY
    return None


def decompressor(compression: Compression) -> Callable[[bytes], Any]:
    """The cramjam function that undoes ``compression`` (not ``none``): it returns a buffer and raises
    ``cramjam.DecompressionError``. :func:`decompress` and the vector path (``compressed_values``) call it."""
    if compression is Compression.SNAPPY:
        return cramjam.snappy.decompress_raw
    return cramjam.lz4.decompress


def decompress(data: bytes, compression: Compression, protocol: str, what: str) -> bytes:
    """``data`` as sent before TiCDC compressed it; DecodeError naming the protocol and the part.

    ``what`` names the part and its position, e.g. ``the value`` or ``the value of event 2 (...)``.
    """
    if compression is Compression.NONE:
        return data
    try:
        return bytes(decompressor(compression)(data))
    except cramjam.DecompressionError as exc:
        raise DecodeError(
            protocol,
            f"{what} could not be decompressed as {compression.value} ({exc}); it looks like "
            f"{looks_like(data)}. {_advice(data, compression)}",
        ) from None


def undeclared_compression(data: bytes, compression: Compression, protocol: str, what: str) -> DecodeError | None:
    """The error for a compressed ``data`` read under ``codec.compression: none``, else None.

    Decoders call this when ``data`` did not parse, before reporting the parse error itself.
    """
    if compression is not Compression.NONE:
        return None
    found = sniff(data)
    if found is None:
        return None
    shape = "an LZ4 frame" if found is Compression.LZ4 else "a snappy block"
    return DecodeError(
        protocol,
        f"{what} is {shape}, but codec.compression is none: the changefeed compresses its messages "
        f"(large-message-handle-compression={found.value}); set the pipeline's codec.compression to {found.value}",
    )


def _advice(data: bytes, compression: Compression) -> str:
    found = sniff(data)
    if found is None and data.lstrip()[:1] in _UNCOMPRESSED_STARTS:
        found = Compression.NONE
    if found is None or found is compression:
        return "codec.compression must match the changefeed's large-message-handle-compression"
    return (
        f"Set the pipeline's codec.compression to {found.value} (now {compression.value}): it must match the "
        "changefeed's large-message-handle-compression"
    )


def _is_raw_snappy(data: bytes) -> bool:
    """Whether ``data`` is a well-formed snappy block (a varint length, then that many bytes' worth)."""
    size = shift = 0
    for index, byte in enumerate(data[:5]):
        size |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            header = index + 1
            break
    else:
        return False
    if size == 0 or size > min(_SNAPPY_MAX_SIZE, _SNAPPY_MAX_RATIO * len(data)) or header >= len(data):
        return False
    try:
        return len(cramjam.snappy.decompress_raw(data)) == size
    except cramjam.DecompressionError:
        return False
