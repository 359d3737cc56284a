"""The schema pass's block test (``Decoder.schema_block_test``) is sound: a block it rejects holds
no message that ``may_carry_schema``, so skipping the block finds exactly the same schema facts.

Every schema-carrying message of the simulator's output and of TiCDC's golden vectors, in every
JSON formatting a relay may write, passes the test inside any bytes around it; the same messages
landed among rows in small blocks give ``scanned_facts`` the same facts read block by block as
read record by record, while the blocks of rows alone are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from pathlib import Path

import pytest

from tests.ticdc_lake.protocols.test_schema_prefilter import (
    FORMATS,
    _decoded,
    _decoders,
    _facts,
    _golden,
    _reformat,
    _simulated,
)
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.raw_batch import ConsumedRecord
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.schema_scan import scanned_facts

#: Protocols whose pre-filter searches the value: the block test is that same search.
BLOCK_PROTOCOLS = ("simple-json", "canal-json", "debezium")
#: Bytes around a value inside a block: other records' fields and values.
AROUND = (b"", b'\x02\x08{"op":"c"}\x00', b"\\u0041 \\\\ \xff\x00")


@pytest.mark.parametrize("protocol", BLOCK_PROTOCOLS)
def test_every_schema_carrier_passes_inside_any_block(protocol: str) -> None:
    carriers = 0
    for decoder in _decoders(protocol):
        test = decoder.schema_block_test()
        assert test is not None
        for message in (*_simulated(protocol), *_golden(protocol)):
            if not decoder.may_carry_schema(message):
                continue
            forms = [message]
            events = _decoded(decoder, message)
            if events is not None and _facts(events):
                carriers += 1
                forms += [_reformat(protocol, message, form) for form in FORMATS.values()]
            for form in forms:
                assert form.value is not None
                for before in AROUND:
                    for after in AROUND:
                        assert test(before + (form.key or b"") + form.value + after), (protocol, form)
    assert carriers >= 10


@pytest.mark.parametrize("protocol", BLOCK_PROTOCOLS)
def test_a_block_of_rows_alone_is_skipped(protocol: str) -> None:
    for decoder in _decoders(protocol):
        test = decoder.schema_block_test()
        assert test is not None
        rows = [m for m in _simulated(protocol) if not decoder.may_carry_schema(m)]
        assert len(rows) > 20
        block = b"".join(chain.from_iterable((m.key or b"", m.value or b"") for m in rows))
        assert test(block) is False


@pytest.mark.parametrize("protocol", ["simple-avro", "avro", "open"])
def test_protocols_without_a_searched_value_have_no_block_test(protocol: str) -> None:
    """Simple Avro tests bytes at fixed places, avro reads writer schema ids, Open's DDL marker
    (``"t":2``) is also a column type code of every row with a SMALLINT: each record is read."""
    assert decoder_for(protocol, CodecOptions()).schema_block_test() is None


@pytest.mark.parametrize("protocol", BLOCK_PROTOCOLS)
@pytest.mark.parametrize("compression", [Compression.SNAPPY, Compression.LZ4])
def test_compressed_values_have_no_block_test(protocol: str, compression: Compression) -> None:
    """A compressed value's bytes in the block are not the text the pre-filter reads."""
    assert decoder_for(protocol, CodecOptions(compression=compression)).schema_block_test() is None


@pytest.mark.parametrize("protocol", BLOCK_PROTOCOLS)
def test_scanned_facts_are_the_same_block_by_block(protocol: str, tmp_path: Path) -> None:
    (decoder, *_) = _decoders(protocol)
    test = decoder.schema_block_test()
    store = LandingStore(f"file://{tmp_path}/landing", "p")
    messages = list(_simulated(protocol))
    facts = landed = 0
    read: list[RawMessage] = []

    def counted(file: str) -> Iterator[RawMessage]:
        for message in store.read_messages(file, test):
            read.append(message)
            yield message

    for partition in sorted({m.partition for m in messages}):
        mine = [m for m in messages if m.partition == partition]
        # Rows first, so that the first blocks hold rows alone, then the rest in their order.
        rows = [m for m in mine if not decoder.may_carry_schema(m)]
        ordered = [RawMessage("shop", partition, offset, 0, m.key, m.value) for offset, m in enumerate(rows)]
        ordered += [
            RawMessage("shop", partition, len(ordered) + offset, 0, m.key, m.value)
            for offset, m in enumerate(m for m in mine if m not in rows)
        ]
        result = store.write_batch(
            (ConsumedRecord(m) for m in ordered),
            topic="shop",
            partition=partition,
            start=0,
            end=len(ordered),
            block_bytes=4_096,
        )
        assert result.file is not None
        by_record = [fact.to_json() for fact in scanned_facts(decoder, store.read_messages(result.file))]
        by_block = [fact.to_json() for fact in scanned_facts(decoder, counted(result.file))]
        assert by_block == by_record
        facts += len(by_record)
        landed += len(ordered)
    assert facts >= 3
    assert 0 < len(read) < landed / 2
