"""The one small interface every protocol decoder implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from ticdc_lake.ambiguous_times import FOLD0
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, RawMessage
from ticdc_lake.protocols.compression import decompress
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.schema_facts import complete_events
from ticdc_lake.schema.lookup import MemorySchemaLookup, SchemaLookup

#: ``MemorySchemaLookup`` lives in ``schema.lookup``; named here too for the decoders' callers.
__all__ = ["Decoder", "MemorySchemaLookup", "MessageLocation", "SchemaLookup", "WholeValueDecoder"]


@dataclass(frozen=True, slots=True)
class MessageLocation:
    """Where a message belongs, as far as its bytes tell: what a quarantined message holds back.

    ``table`` None means the message could belong to any table of its topic (a database DDL, a
    watermark, a batch of several tables); ``commit_ts`` is informational.
    """

    database: str | None
    table: str | None
    commit_ts: int | None = None


class Decoder(ABC):
    """Turns one Kafka message into normalized events.

    ``decode`` raises :class:`ticdc_lake.errors.DecodeError` with a reason naming the protocol
    and the field; the caller adds the topic, partition and offset and quarantines the message.
    """

    protocol: ClassVar[str]
    #: How the protocol's TIMESTAMP values became UTC instants (``ticdc_lake.ambiguous_times``):
    #: decode's ``fold=0`` reading of the wall time the message sent, unless the protocol says otherwise.
    timestamp_reading: ClassVar[str] = FOLD0

    def __init__(self, options: CodecOptions, resources: DecodeResources | None = None) -> None:
        self.options = options
        self.resources = resources or DecodeResources()

    @abstractmethod
    def may_carry_schema(self, message: RawMessage) -> bool:
        """Cheap pre-filter: could this message carry table schemas (DDL, BOOTSTRAP)?

        The decode job decodes these first so that every DML of the same batch can be resolved
        against the schemas they announce. False positives cost time; false negatives leave DML
        pending until the next run.
        """

    def schema_block_test(self) -> Callable[[bytes], bool] | None:
        """A test the first pass runs once on the decompressed bytes of a whole block of landed
        records (their keys and values among other fields) instead of reading each record: False
        only if no record in the block :meth:`may_carry_schema`, so the pass skips the block.

        A decoder returns one only where :meth:`may_carry_schema` searches the message's own bytes
        for a pattern (a search that holds for some bytes holds for any bytes containing them) and
        :meth:`writer_schema_id` is always None. None (the default): every record is read and tested.
        """
        return None

    #: The version of the protocol's :meth:`schema_block_test`: a release that changes what the test
    #: accepts bumps it, so block counts the land stage recorded with another test are not trusted.
    schema_test_version: ClassVar[int] = 1

    def schema_block_test_id(self) -> str | None:
        """What names :meth:`schema_block_test` in a manifest (``LandedRange.schema_blocks``): the
        protocol and the test's version; None where the decoder has no block test."""
        if self.schema_block_test() is None:
            return None
        return f"{self.protocol}/{self.schema_test_version}"

    @abstractmethod
    def decode(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        """All events in ``message`` in their order inside it, as the protocol states them."""

    def read(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        """:meth:`decode`, then the schema facts the protocol leaves to the consumer.

        What the decode stage and ``ticdc-lake decode`` call: DDL text becomes a table schema and
        rows are bound to the schema in effect at their commit TSO (``schema_facts``).
        """
        return complete_events(self.decode(message, schemas), schemas, self.protocol)

    @property
    def untimed_ddl(self) -> bool:
        """Whether this pipeline's DDL come without a commit TSO: the decode driver then folds them
        by offset (``schema.untimed_ddl``) and rows without writer schemas bind by the columns they
        name. False unless the protocol says otherwise (Canal-JSON without the TiDB extension)."""
        return False

    def writer_schema_id(self, message: RawMessage) -> int | None:
        """The registry id of the value writer schema ``message`` was written with, read from its
        framing without decoding; None for messages (and protocols) without one.

        The first pass (``schema_scan.scanned_facts``) decodes only the rows where a table's
        writer schema changes, and these instead of the messages that :meth:`may_carry_schema`.
        """
        return None

    def locate(self, message: RawMessage) -> MessageLocation | None:
        """The table ``message`` belongs to, best effort, for a message :meth:`decode` rejected; never raises.

        Only what the message states for certain: a wrong table would let the right one advance past
        the lost change, so anything doubtful (truncated bytes, several tables) gives None.
        """
        try:
            return self.find_location(message)
        except Exception:  # best effort: a broken message must not fail its own quarantine
            return None

    def find_location(self, message: RawMessage) -> MessageLocation | None:
        """The protocol's part of :meth:`locate` (may raise); None where the format gives no cheap answer."""
        return None


class WholeValueDecoder(Decoder):
    """A decoder for protocols that send one (possibly compressed) value per Kafka message."""

    #: Whether :meth:`value_may_carry_schema` only searches the value for byte patterns
    #: (``json_markers.has_member``), so that it may run on a whole block (:meth:`schema_block_test`).
    value_test_is_search: ClassVar[bool] = False

    def schema_block_test(self) -> Callable[[bytes], bool] | None:
        """:meth:`value_may_carry_schema` where it is a search and values are not compressed (a
        block then holds each value's bytes as the test would see them)."""
        if not self.value_test_is_search or self.options.compression is not Compression.NONE:
            return None
        return self.value_may_carry_schema

    def may_carry_schema(self, message: RawMessage) -> bool:
        """Checks the decompressed value with :meth:`value_may_carry_schema`; undecodable values say True."""
        if message.value is None:
            return False
        try:
            value = decompress(message.value, self.options.compression, self.protocol, "the value")
        except DecodeError:
            return True  # the main pass quarantines it
        return self.value_may_carry_schema(value)

    @abstractmethod
    def value_may_carry_schema(self, value: bytes) -> bool:
        """The protocol's cheap test on the decompressed value."""
