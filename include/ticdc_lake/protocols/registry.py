"""Decoders registered by protocol id."""

from __future__ import annotations

from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.errors import ConfigError
from ticdc_lake.protocols.base import Decoder
from ticdc_lake.protocols.resources import DecodeResources


def _decoders() -> dict[Protocol, type[Decoder]]:
    # Imported on use: a Spark worker or an Airflow task loads only what its pipeline needs.
    from ticdc_lake.protocols.avro_confluent import AvroDecoder
    from ticdc_lake.protocols.canal_json import CanalJsonDecoder
    from ticdc_lake.protocols.debezium import DebeziumDecoder
    from ticdc_lake.protocols.open_protocol import OpenProtocolDecoder
    from ticdc_lake.protocols.simple_avro import SimpleAvroDecoder
    from ticdc_lake.protocols.simple_json import SimpleJsonDecoder

    return {
        Protocol.SIMPLE_JSON: SimpleJsonDecoder,
        Protocol.SIMPLE_AVRO: SimpleAvroDecoder,
        Protocol.DEBEZIUM: DebeziumDecoder,
        Protocol.OPEN: OpenProtocolDecoder,
        Protocol.CANAL_JSON: CanalJsonDecoder,
        Protocol.AVRO: AvroDecoder,
    }


def decoder_class(protocol: Protocol | str) -> type[Decoder]:
    """The decoder class of ``protocol``: what it declares (``Decoder`` class attributes) without
    codec options."""
    protocol_id = Protocol(protocol)
    decoders = _decoders()
    if protocol_id not in decoders:
        supported = ", ".join(p.value for p in decoders)
        raise ConfigError(f"protocol {protocol_id.value!r} has no decoder yet; supported: {supported}")
    return decoders[protocol_id]


def decoder_for(protocol: Protocol | str, options: CodecOptions, resources: DecodeResources | None = None) -> Decoder:
    """A decoder for ``protocol`` configured with the pipeline's codec options and landed resources."""
    return decoder_class(protocol)(options, resources)
