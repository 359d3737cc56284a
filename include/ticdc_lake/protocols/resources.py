"""What a decoder may need beyond one message and the codec options.

Everything here is plain data (picklable), read from the landing store before decoding starts,
so decoding and replays never depend on an external service being up: the Avro writer schemas
the land task fetched from the schema registry live beside the raw batches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class DecodeResources:
    #: Confluent schema registry id -> writer schema (Avro schema JSON text), as landed.
    writer_schemas: Mapping[int, str] = field(default_factory=dict)
