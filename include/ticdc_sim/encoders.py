"""The simulator's protocol encoders by protocol id (``ticdc_lake.config.Protocol`` values)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ticdc_sim.encoding import ProtocolEncoder


def _factories() -> dict[str, Callable[..., ProtocolEncoder]]:
    from ticdc_sim.avro_confluent_encoder import AvroConfluentEncoder
    from ticdc_sim.canal_json_encoder import CanalJsonEncoder
    from ticdc_sim.debezium_encoder import DebeziumEncoder
    from ticdc_sim.open_encoder import OpenEncoder
    from ticdc_sim.simple_avro_encoder import SimpleAvroEncoder
    from ticdc_sim.simple_json_encoder import SimpleJsonEncoder

    return {
        SimpleJsonEncoder.protocol: SimpleJsonEncoder,
        SimpleAvroEncoder.protocol: SimpleAvroEncoder,
        DebeziumEncoder.protocol: DebeziumEncoder,
        CanalJsonEncoder.protocol: CanalJsonEncoder,
        OpenEncoder.protocol: OpenEncoder,
        AvroConfluentEncoder.protocol: AvroConfluentEncoder,
    }


def supported_protocols() -> list[str]:
    """The protocol ids :func:`encoder_for` knows, in a stable order."""
    return list(_factories())


def encoder_for(protocol: str, server_time_zone: str = "UTC", **options: Any) -> ProtocolEncoder:
    """An encoder for ``protocol`` writing TIMESTAMPs for a TiCDC server in ``server_time_zone``.

    ``options`` are the encoder's keyword options (``disable_schema`` for ``debezium``,
    ``enable_tidb_extension`` for ``debezium`` and ``canal-json``, ``content_compatible`` for
    ``canal-json``, ``register`` and ``topic`` for ``avro``, …). Raises ValueError naming the
    supported ids for an unknown protocol, and for options the encoder does not take.
    """
    factories = _factories()
    factory = factories.get(protocol)
    if factory is None:
        raise ValueError(f"the simulator has no encoder for protocol {protocol!r}; supported: {', '.join(factories)}")
    try:
        return factory(server_time_zone, **options)
    except TypeError as exc:
        raise ValueError(f"protocol {protocol!r}: unsupported encoder options {sorted(options)} ({exc})") from None
