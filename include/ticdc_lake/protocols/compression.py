"""TiCDC's own message compression (``large-message-handle-compression``).

Nothing in a message says it is compressed: the pipeline's ``codec.compression`` must match the
changefeed. snappy is the raw block format (no framing), lz4 the LZ4 frame format (magic
``04 22 4D 18``); both are undone with cramjam. Simple and Canal-JSON compress the whole value,
Open each value item of a batch, Debezium the key and the value; Avro never compresses.
"""

from __future__ import annotations

import cramjam

from ticdc_lake.config import Compression
from ticdc_lake.errors import DecodeError

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"


def looks_like(data: bytes) -> str:
    """A guess at what ``data`` is, for error messages only."""
    if data.startswith(LZ4_FRAME_MAGIC):
        return "an LZ4 frame"
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"["):
        return "uncompressed JSON"
    if data[:1] == b"\x16":
        return "an uncompressed Simple Avro message"
    return "snappy data or another binary format"


def decompress(data: bytes, compression: Compression, protocol: str, what: str) -> bytes:
    """``data`` as sent before TiCDC compressed it; DecodeError naming the protocol and the part."""
    if compression is Compression.NONE:
        return data
    try:
        if compression is Compression.SNAPPY:
            return bytes(cramjam.snappy.decompress_raw(data))
        return bytes(cramjam.lz4.decompress(data))
    except cramjam.DecompressionError as exc:
        raise DecodeError(
            protocol,
            f"{what} could not be decompressed as {compression.value} ({exc}); it looks like {looks_like(data)}. "
            "codec.compression must match the changefeed's large-message-handle-compression",
        ) from None
