"""What the simulator needs from a protocol encoder (Simple JSON now, other protocols later).

The simulator decides *when* and *where* messages go (DDL broadcast, BOOTSTRAP and WATERMARK
cadence, dispatch); an encoder decides the bytes and declares which message kinds its protocol
has and where its DDLs go.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.model import DdlChange, RowChange


@dataclass(frozen=True, slots=True)
class EncodedMessage:
    key: bytes | None
    value: bytes


class ProtocolEncoder(ABC):
    #: The protocol id (``ticdc_lake.config.Protocol`` value).
    protocol: ClassVar[str]
    #: True: DDL to every partition (Simple, Open, Debezium); False: partition 0 only (Canal-JSON).
    ddl_to_all_partitions: ClassVar[bool] = True
    #: Whether the protocol has BOOTSTRAP messages (Simple only).
    has_bootstrap: ClassVar[bool] = False
    #: Whether the protocol has watermark messages (with the options the encoder was built with).
    has_watermark: ClassVar[bool] = True

    @abstractmethod
    def encode_ddl(self, ddl: DdlChange, commit_ts: int, build_ts: int) -> EncodedMessage | None:
        """The DDL message, or None when TiCDC sends none for it (the simulator then emits nothing):
        Debezium for actions it does not support, avro without its test-only DDL messages."""

    @abstractmethod
    def encode_row(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> EncodedMessage: ...

    @abstractmethod
    def encode_watermark(self, commit_ts: int, build_ts: int) -> EncodedMessage: ...

    def encode_bootstrap(self, schema: TableSchema, build_ts: int) -> EncodedMessage:
        raise NotImplementedError(f"protocol {self.protocol} has no BOOTSTRAP messages")


_T = TypeVar("_T")


def index_record(index: IndexSchema) -> dict[str, Any]:
    """An index as the Simple protocol's ``tableSchema.indexes`` item (JSON and Avro alike)."""
    return {
        "name": index.name,
        "unique": index.unique,
        "primary": index.primary,
        "nullable": index.nullable,
        "columns": list(index.columns),
    }


def expect_type(value: object, kind: type[_T], column: ColumnSchema) -> _T:
    """``value`` if it is a ``kind`` (bools never pass for numbers), else a SchemaError naming the column."""
    if not isinstance(value, kind) or isinstance(value, bool):
        raise SchemaError(
            f"column {column.name!r} ({column.type_text()}): cannot encode {value!r}, expected {kind.__name__}"
        )
    return value
