from __future__ import annotations

import pytest

from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.errors import ConfigError
from ticdc_lake.protocols.registry import decoder_for


@pytest.mark.parametrize("protocol", ["simple-json", "simple-avro", "debezium", "open", "canal-json"])
def test_each_registered_protocol_has_its_decoder(protocol: str) -> None:
    assert decoder_for(protocol, CodecOptions()).protocol == protocol


def test_unregistered_protocol_names_the_supported_ones() -> None:
    with pytest.raises(ConfigError) as err:
        decoder_for(Protocol.AVRO, CodecOptions())
    assert str(err.value) == (
        "protocol 'avro' has no decoder yet; supported: simple-json, simple-avro, debezium, open, canal-json"
    )
