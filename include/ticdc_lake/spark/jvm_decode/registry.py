"""JVM decoders by protocol: the one place that says which protocols decode (partly) in the JVM.

A JVM decoder takes the landed messages (``contract.MESSAGE_COLUMNS``), the run's schema lookup and
the codec options, and returns the same rows with an ``events`` column: an array of
``contract.EVENT_STRUCT`` where it decoded the message, NULL where the message falls back to the
protocol's Python decoder. It returns None when the codec options rule the JVM path out for the
whole pipeline. Protocols missing here decode every message in Python.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.spark.jvm_decode.simple_json import decode_simple_json

JvmDecoder = Callable[[SparkSession, DataFrame, MemorySchemaLookup, CodecOptions], DataFrame | None]


def jvm_decoder_for(protocol: Protocol) -> JvmDecoder | None:
    decoders: dict[Protocol, JvmDecoder] = {Protocol.SIMPLE_JSON: decode_simple_json}
    return decoders.get(protocol)
