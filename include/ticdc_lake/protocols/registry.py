"""Decoders registered by protocol id."""

from __future__ import annotations

from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.errors import ConfigError
from ticdc_lake.protocols.base import Decoder


def decoder_for(protocol: Protocol | str, options: CodecOptions) -> Decoder:
    """A decoder for ``protocol`` configured with the pipeline's codec options."""
    protocol_id = Protocol(protocol)
    if protocol_id is Protocol.SIMPLE_JSON:
        from ticdc_lake.protocols.simple_json import SimpleJsonDecoder

        return SimpleJsonDecoder(options)
    if protocol_id is Protocol.OPEN:
        from ticdc_lake.protocols.open_protocol import OpenProtocolDecoder

        return OpenProtocolDecoder(options)
    raise ConfigError(f"protocol {protocol_id.value!r} has no decoder yet; supported: {Protocol.SIMPLE_JSON.value}")
