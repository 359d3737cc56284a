from __future__ import annotations

import pytest

from ticdc_lake.ambiguous_times import FOLD0, GO
from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.protocols.registry import decoder_class, decoder_for


@pytest.mark.parametrize("protocol", [p.value for p in Protocol])
def test_each_registered_protocol_has_its_decoder(protocol: str) -> None:
    assert decoder_for(protocol, CodecOptions()).protocol == protocol


def test_an_unknown_protocol_names_the_supported_ones() -> None:
    with pytest.raises(ValueError, match="'avro-glue' is not a valid Protocol"):
        decoder_for("avro-glue", CodecOptions())


def test_decoders_declare_how_their_timestamps_became_utc() -> None:
    readings = {p.value: decoder_class(p).timestamp_reading for p in Protocol}
    assert readings == {p.value: GO if p is Protocol.DEBEZIUM else FOLD0 for p in Protocol}
    assert readings["debezium"] == GO
