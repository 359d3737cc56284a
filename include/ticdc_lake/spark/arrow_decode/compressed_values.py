"""Vector decoding of pipelines whose changefeed compresses its messages (``codec.compression``).

TiCDC's ``large-message-handle-compression`` compresses the whole value of a Simple or Canal-JSON
message, and both the key and the value of a Debezium one (:mod:`ticdc_lake.protocols.compression`).
Their Python decoders decompress first and then read the bytes exactly as they read an uncompressed
message. :class:`DecompressingDecoder` does the same for a whole batch: it decompresses the values
(and for Debezium the keys) with the decompressor the Python decoder uses, then hands the batch of
decompressed messages to the protocol's vector decoder, configured without compression.

A message whose value (or non-empty key) does not decompress is not handed over and not taken: the
Python decoder quarantines it with its own reason. Open Protocol compresses each value item inside
a batch message, not the value: its vector decoder decompresses the items itself with
:func:`decompressed`. The decompression is one call into cramjam per value (C, about a
microsecond plus the bytes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

import cramjam
import numpy as np
import pyarrow as pa

from ticdc_lake.config import Compression
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.message_batch import MessageBatch
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.compression import decompressor
from ticdc_lake.spark.arrow_decode.row_batches import VectorDecode, message_keys, message_values


class BatchDecoder(Protocol):
    """What every vector decoder offers (``worker_events.vector_decoder``)."""

    def decode(self, batch_id: str, messages: Sequence[RawMessage], lookup: MemorySchemaLookup) -> VectorDecode: ...


class DecompressingDecoder:
    """``inner`` (configured with ``compression: none``) over the decompressed messages (module docstring)."""

    def __init__(self, inner: BatchDecoder, compression: Compression, *, keys: bool) -> None:
        if compression is Compression.NONE:
            raise ValueError("DecompressingDecoder needs a compression; use the inner decoder alone")
        self.inner = inner
        self.compression = compression
        #: Whether keys are compressed too (Debezium).
        self.keys = keys

    def decode(self, batch_id: str, messages: Sequence[RawMessage], lookup: MemorySchemaLookup) -> VectorDecode:
        count = len(messages)
        if count == 0:
            return VectorDecode(None, [])
        values, ok = decompressed(message_values(messages), self.compression, empty_too=True)
        keys = message_keys(messages)
        if self.keys:
            keys, keys_ok = decompressed(keys, self.compression, empty_too=False)
            ok &= keys_ok
        rows = np.flatnonzero(ok)
        if len(rows) == 0:
            return VectorDecode(None, [False] * count)
        plain = _replaced(messages, values, keys)
        if len(rows) < count:
            plain = _subset(plain, rows)
        result = self.inner.decode(batch_id, plain, lookup)
        if len(rows) == count or result.events is None:
            return result if len(rows) == count else VectorDecode(None, [False] * count)
        taken = [False] * count
        for row, was_taken in zip(rows.tolist(), result.taken, strict=True):
            taken[row] = was_taken
        return VectorDecode(result.events, taken)


def decompressed(array: pa.Array, compression: Compression, *, empty_too: bool) -> tuple[pa.Array, np.ndarray]:
    """Each item of ``array`` decompressed, and per item whether that succeeded.

    Null items stay null (and succeed); an empty item is decompressed only where ``empty_too`` (the
    Python decoders decompress an empty value but leave an empty Debezium key as it is). A failed
    item is null. The outputs are joined into the result's data buffer once, not copied one by one.
    """
    undo = decompressor(compression)
    items = array.to_pylist()
    count = len(items)
    ok = np.ones(count, dtype=bool)
    valid = np.ones(count, dtype=bool)
    sizes = np.zeros(count, dtype=np.int64)
    parts: list[Any] = []
    for index, item in enumerate(items):
        if item is None:
            valid[index] = False
            continue
        if not item and not empty_too:
            continue
        try:
            out = undo(item)
        except cramjam.DecompressionError:
            valid[index] = ok[index] = False
            continue
        parts.append(out)
        sizes[index] = len(out)
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if offsets[-1] >= 2**31:  # beyond a binary array's 32-bit offsets: leave the chunk to Python
        return pa.nulls(count, pa.binary()), np.zeros(count, dtype=bool)
    buffers = [
        pa.py_buffer(np.packbits(valid, bitorder="little")),
        pa.py_buffer(offsets.astype(np.int32)),
        pa.py_buffer(b"".join(parts)),
    ]
    return pa.Array.from_buffers(pa.binary(), count, buffers), ok


def _replaced(messages: Sequence[RawMessage], values: pa.Array, keys: pa.Array) -> Sequence[RawMessage]:
    """``messages`` with these values and keys."""
    if isinstance(messages, MessageBatch):
        return messages.with_payloads(values, keys)
    return [
        dataclasses.replace(message, value=value, key=key)
        for message, value, key in zip(messages, values.to_pylist(), keys.to_pylist(), strict=True)
    ]


def _subset(messages: Sequence[RawMessage], rows: np.ndarray) -> Sequence[RawMessage]:
    """The messages at ``rows`` (ascending)."""
    if isinstance(messages, MessageBatch):
        return messages.take(rows)
    return [messages[i] for i in rows.tolist()]
