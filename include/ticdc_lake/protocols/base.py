"""The one small interface every protocol decoder implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from bisect import bisect_right, insort
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, RawMessage
from ticdc_lake.protocols.compression import decompress
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.table_schema import TableSchema

if TYPE_CHECKING:
    from ticdc_lake.schema.ddl_facts import DdlKey, FoldedDdl
    from ticdc_lake.schema.offset_versions import OffsetVersions


class SchemaLookup(Protocol):
    """Known table schemas by exact (database, table, version)."""

    def get(self, database: str, table: str, version: int) -> TableSchema | None: ...

    def latest(self, database: str, table: str, at_ts: int) -> TableSchema | None:
        """The newest version not after ``at_ts`` (versions that are commit TSOs: DDL-derived schemas)."""
        ...


class MemorySchemaLookup:
    """A :class:`SchemaLookup` over an in-memory mapping (picklable, so Spark can broadcast it).

    Besides versions it holds what the decode driver derived for this run: the fold result of
    every DDL (:mod:`ticdc_lake.schema.ddl_fold`), which ``schema_facts`` gives to the DDL events,
    and ``infer_missing``: bind rows of tables with no known schema to one inferred from the rows
    (:mod:`ticdc_lake.schema.inference`) instead of leaving them unbound.
    """

    def __init__(self, schemas: Iterable[TableSchema] = ()) -> None:
        self._by_key: dict[tuple[str, str, int], TableSchema] = {}
        self._versions: dict[tuple[str, str], list[int]] = {}
        self._folded: dict[DdlKey, FoldedDdl] = {}
        self.infer_missing = False
        #: Offset-ordered runs (no commit TSO): how rows bind to versions by position (``schema.offset_versions``).
        self.offset_versions: OffsetVersions | None = None
        for schema in schemas:
            self.add(schema)

    def add(self, schema: TableSchema) -> None:
        if schema.version is None:
            return
        key = (schema.database, schema.table, schema.version)
        if key not in self._by_key:
            insort(self._versions.setdefault((schema.database, schema.table), []), schema.version)
        self._by_key[key] = schema

    def get(self, database: str, table: str, version: int) -> TableSchema | None:
        return self._by_key.get((database, table, version))

    def latest(self, database: str, table: str, at_ts: int) -> TableSchema | None:
        versions = self._versions.get((database, table))
        if not versions:
            return None
        position = bisect_right(versions, at_ts)
        return self._by_key[(database, table, versions[position - 1])] if position else None

    def tables(self) -> list[tuple[str, str]]:
        """Every (database, table) with at least one version."""
        return list(self._versions)

    def knows_table(self, database: str, table: str) -> bool:
        return (database, table) in self._versions

    def add_folded(self, results: Mapping[DdlKey, FoldedDdl]) -> None:
        self._folded.update(results)

    def folded(self, key: DdlKey) -> FoldedDdl | None:
        """The fold result of the DDL with identity ``key`` (``ddl_fold.ddl_key``), if the driver folded it."""
        return self._folded.get(key)

    def as_mapping(self) -> Mapping[tuple[str, str, int], TableSchema]:
        return self._by_key

    def __len__(self) -> int:
        return len(self._by_key)


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

    @abstractmethod
    def decode(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        """All events in ``message`` in their order inside it, as the protocol states them."""

    def read(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        """:meth:`decode`, then the schema facts the protocol leaves to the consumer.

        What the decode stage and ``ticdc-lake decode`` call: DDL text becomes a table schema and
        rows are bound to the schema in effect at their commit TSO (``schema_facts``).
        """
        from ticdc_lake.protocols.schema_facts import complete_events

        return complete_events(self.decode(message, schemas), schemas, self.protocol)

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
