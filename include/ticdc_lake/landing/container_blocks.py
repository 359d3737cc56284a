"""Some blocks of an Avro object container file, cut out without decompressing the others.

An Avro container is a header (magic, metadata, a 16-byte sync marker) and blocks, each its record
count, its byte size, its (compressed) bytes and the sync marker again. :func:`selected_blocks`
walks the blocks by their sizes and returns the header followed by the wanted blocks only: a
container fastavro reads as usual, decompressing just those. The decode stage's schema pass reads
a raw batch this way when the land stage recorded which blocks may carry a schema
(``LandedRange.schema_blocks``, docs/landing.md).
"""

from __future__ import annotations

from collections.abc import Collection

from ticdc_lake.landing.raw_block_reader import scalar_long

_MAGIC = b"Obj\x01"
_SYNC_BYTES = 16


def selected_blocks(data: bytes, wanted: Collection[int]) -> bytes | None:
    """The container ``data`` with only the blocks whose index (from 0) is in ``wanted``; None where
    ``data`` is not a well-formed container (the caller then reads it whole, which says what is wrong)."""
    header_end = _header_end(data)
    if header_end is None:
        return None
    sync = data[header_end - _SYNC_BYTES : header_end]
    wanted = set(wanted)  # asked once per block
    pieces = [data[:header_end]]
    at, index = header_end, 0
    while at < len(data):
        start = at
        count, at = scalar_long(data, at)
        if count is None or count < 0:
            return None
        size, at = scalar_long(data, at)
        if size is None or size < 0 or at + size + _SYNC_BYTES > len(data):
            return None
        end = at + size + _SYNC_BYTES
        if data[end - _SYNC_BYTES : end] != sync:
            return None
        if index in wanted:
            pieces.append(data[start:end])
        at, index = end, index + 1
    return b"".join(pieces)


def _header_end(data: bytes) -> int | None:
    """Where the header (magic, metadata map, sync marker) ends; None if malformed."""
    if not data.startswith(_MAGIC):
        return None
    at = len(_MAGIC)
    while True:
        count, at = scalar_long(data, at)
        if count is None:
            return None
        if count == 0:
            break
        if count < 0:  # a block of the map given with its byte size
            count = -count
            size, at = scalar_long(data, at)
            if size is None:
                return None
        for _ in range(2 * count):  # key (string) and value (bytes): a length, then the bytes
            length, at = scalar_long(data, at)
            if length is None or length < 0 or at + length > len(data):
                return None
            at += length
    return at + _SYNC_BYTES if at + _SYNC_BYTES <= len(data) else None
