from __future__ import annotations

import cramjam
import pytest

from ticdc_lake.config import Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.protocols.compression import decompress, looks_like, sniff, undeclared_compression

DATA = b'{"version":1,"type":"WATERMARK","commitTs":455000000000000000}' * 20
SNAPPY = bytes(cramjam.snappy.compress_raw(DATA))
LZ4 = bytes(cramjam.lz4.compress(DATA))


def test_snappy_is_the_raw_block_format_and_lz4_the_frame_format() -> None:
    assert decompress(SNAPPY, Compression.SNAPPY, "p", "the value") == DATA
    assert LZ4[:4] == b"\x04\x22\x4d\x18"
    assert decompress(LZ4, Compression.LZ4, "p", "the value") == DATA
    assert decompress(DATA, Compression.NONE, "p", "the value") is DATA


def test_snappy_framed_stream_is_not_accepted_as_raw_snappy() -> None:
    framed_stream = bytes(cramjam.snappy.compress(DATA))  # the streaming format TiCDC does not use
    with pytest.raises(DecodeError) as err:
        decompress(framed_stream, Compression.SNAPPY, "simple-json", "the value")
    assert err.value.protocol == "simple-json"
    assert err.value.reason.startswith("the value could not be decompressed as snappy (")
    assert err.value.reason.endswith(
        "it looks like snappy data or another binary format. codec.compression must match the changefeed's "
        "large-message-handle-compression"
    )


@pytest.mark.parametrize(
    ("data", "configured", "shape", "fits"),
    [
        (LZ4, Compression.SNAPPY, "an LZ4 frame", "lz4"),
        (DATA, Compression.SNAPPY, "uncompressed JSON", "none"),
        (DATA, Compression.LZ4, "uncompressed JSON", "none"),
        (SNAPPY, Compression.LZ4, "a snappy block", "snappy"),
        (b"\x16\x06\x00", Compression.LZ4, "an uncompressed Simple Avro message", "none"),
    ],
)
def test_mismatch_names_the_setting_that_fits(data: bytes, configured: Compression, shape: str, fits: str) -> None:
    with pytest.raises(DecodeError) as err:
        decompress(data, configured, "open", "the value of event 2")
    assert err.value.reason.startswith(f"the value of event 2 could not be decompressed as {configured.value} (")
    assert err.value.reason.endswith(
        f"); it looks like {shape}. Set the pipeline's codec.compression to {fits} (now {configured.value}): it "
        "must match the changefeed's large-message-handle-compression"
    )


@pytest.mark.parametrize(("data", "name"), [(LZ4, "an LZ4 frame"), (SNAPPY, "a snappy block")])
def test_compressed_data_read_as_uncompressed(data: bytes, name: str) -> None:
    error = undeclared_compression(data, Compression.NONE, "canal-json", "the value")
    assert error is not None
    found = "lz4" if data is LZ4 else "snappy"
    assert str(error) == (
        f"canal-json: the value is {name}, but codec.compression is none: the changefeed compresses its "
        f"messages (large-message-handle-compression={found}); set the pipeline's codec.compression to {found}"
    )
    assert undeclared_compression(data, Compression.LZ4, "canal-json", "the value") is None
    assert undeclared_compression(DATA, Compression.NONE, "canal-json", "the value") is None


def test_sniff_and_looks_like() -> None:
    assert (sniff(LZ4), sniff(SNAPPY), sniff(DATA), sniff(b""), sniff(b"\x80")) == (
        Compression.LZ4,
        Compression.SNAPPY,
        None,
        None,
        None,
    )
    # A snappy header claiming far more bytes than the data could expand to is not snappy.
    assert sniff(b"\xff\xff\xff\x7f\x00abc") is None
    assert looks_like(b"  {") == "uncompressed JSON"
    assert looks_like(b"\x16\x06") == "an uncompressed Simple Avro message"
    assert looks_like(b"\x80\x01") == "snappy data or another binary format"
    assert looks_like(SNAPPY) == "a snappy block"
