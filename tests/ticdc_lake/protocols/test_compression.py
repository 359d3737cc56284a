from __future__ import annotations

import cramjam
import pytest

from ticdc_lake.config import Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.protocols.compression import decompress, looks_like

DATA = b'{"version":1,"type":"WATERMARK","commitTs":455000000000000000}' * 20


def test_snappy_is_the_raw_block_format_and_lz4_the_frame_format() -> None:
    assert decompress(bytes(cramjam.snappy.compress_raw(DATA)), Compression.SNAPPY, "p", "the value") == DATA
    framed = bytes(cramjam.lz4.compress(DATA))
    assert framed[:4] == b"\x04\x22\x4d\x18"
    assert decompress(framed, Compression.LZ4, "p", "the value") == DATA
    assert decompress(DATA, Compression.NONE, "p", "the value") is DATA


def test_snappy_framed_stream_is_not_accepted_as_raw_snappy() -> None:
    framed_stream = bytes(cramjam.snappy.compress(DATA))  # the streaming format TiCDC does not use
    with pytest.raises(DecodeError) as err:
        decompress(framed_stream, Compression.SNAPPY, "simple-json", "the value")
    assert err.value.protocol == "simple-json"
    assert err.value.reason.startswith("the value could not be decompressed as snappy (")


def test_mismatch_message_says_what_the_bytes_look_like() -> None:
    lz4 = bytes(cramjam.lz4.compress(DATA))
    with pytest.raises(DecodeError) as err:
        decompress(lz4, Compression.SNAPPY, "open", "the value of event 2")
    assert err.value.reason.endswith(
        "it looks like an LZ4 frame. codec.compression must match the changefeed's large-message-handle-compression"
    )
    assert looks_like(b"  {") == "uncompressed JSON"
    assert looks_like(b"\x16\x06") == "an uncompressed Simple Avro message"
    assert looks_like(b"\x80\x01") == "snappy data or another binary format"
