"""JVM decoders by protocol: the one place that says which protocols decode (partly) in the JVM.

A JVM decoder takes the landed messages (``contract.MESSAGE_COLUMNS``), the run's schema lookup and
the codec options, and returns the same rows with the event columns of ``contract`` (one event per
message, with either the row images or their typed record carrier) where it decoded the message,
NULL where the message falls back to the protocol's Python decoders. It returns None when the codec
options rule the JVM path out for the whole pipeline. Protocols missing here decode every message in Python.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.spark.jvm_decode.debezium import decode_debezium, takes_every_version
from ticdc_lake.spark.jvm_decode.simple_json import decode_simple_json

#: Protocols whose JVM decoder returns the typed record carrier, never maps of text (``contract``):
#: the order of image keys matters only for those that return maps (``decode_arrow.SORTED_IMAGE_PROTOCOLS``).
CARRIER_PROTOCOLS = frozenset({Protocol.DEBEZIUM})

JvmDecoder = Callable[[SparkSession, DataFrame, MemorySchemaLookup, CodecOptions], DataFrame | None]


def jvm_decoder_for(protocol: Protocol) -> JvmDecoder | None:
    decoders: dict[Protocol, JvmDecoder] = {
        Protocol.SIMPLE_JSON: decode_simple_json,
        Protocol.DEBEZIUM: decode_debezium,
    }
    return decoders.get(protocol)


def jvm_by_default(protocol: Protocol, lookup: MemorySchemaLookup, options: CodecOptions) -> bool:
    """Whether the decode stage takes the JVM path when the caller does not say: measured cheaper than
    the workers' own decoders only where the JVM decodes nearly every message, so only for Debezium
    runs whose every known table version it takes (docs/jvm-decoder.md, "When it runs"). The Simple JSON
    JVM decoder measured more CPU than the Python path (docs/design.md) and runs only when asked."""
    return protocol is Protocol.DEBEZIUM and takes_every_version(lookup, options)
