"""The normalized, protocol-free event model.

Every protocol decoder turns Kafka messages into :class:`ChangeEvent` objects; nothing after the
decode stage knows a protocol field name. Row images map column name to the column's canonical
text (see ``docs/canonical-values.md``) or ``None`` for SQL NULL. A column that the protocol did
not send is absent from the image, which is not the same as NULL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from ticdc_lake.schema.table_schema import TableSchema

RowImage = dict[str, str | None]


class EventKind(StrEnum):
    DML = "DML"
    DDL = "DDL"
    WATERMARK = "WATERMARK"
    BOOTSTRAP = "BOOTSTRAP"


class Op(StrEnum):
    INSERT = "I"
    UPDATE = "U"
    DELETE = "D"


class EventStatus(StrEnum):
    #: Fully decoded; values are canonical.
    READY = "READY"
    #: A DML whose table schema version is not known yet (Simple protocol). Its batch is
    #: decoded again once a BOOTSTRAP or DDL with that version has been seen.
    PENDING = "PENDING"


@dataclass(frozen=True, slots=True)
class RawMessage:
    """One Kafka record as landed: the input of every decoder."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()

    def where(self) -> str:
        return f"topic {self.topic!r} partition {self.partition} offset {self.offset}"


@dataclass(frozen=True, slots=True)
class SourcePosition:
    topic: str
    partition: int
    offset: int
    #: Index of the event inside a batched Kafka message (Open Protocol); 0 otherwise.
    index: int = 0


@dataclass(frozen=True, slots=True)
class EventFacts:
    """What the message said about an event beyond its images, one typed field per fact.

    Set by the decoder and never changed in place (``dataclasses.replace`` gives a new one).
    The binding of rows to schema versions reads the first group; the rest is what the message
    carried, kept for inspection (``ticdc-lake decode``, tests). A fact the protocol does not
    carry stays at its default.
    """

    #: Handle-key columns the message names (sorted where the protocol gives no order).
    handle_key: tuple[str, ...] | None = None
    #: Primary-key columns the message names.
    primary_key: tuple[str, ...] | None = None
    #: Columns of the message key (Debezium's key struct).
    key_columns: tuple[str, ...] | None = None
    #: No commit TSO: the event is ordered only by its Kafka offset (docs/offset-ordered-apply.md).
    offset_ordered: bool = False
    #: An INSERT that may be an UPDATE of an existing key (the message cannot tell them apart).
    upsert: bool = False
    #: Schema-registry ids of the key and value writer schemas the row was written with.
    key_schema_id: int | None = None
    value_schema_id: int | None = None
    #: ENUM/SET columns whose text is still the index or bitmask; None once named (or never sent).
    unresolved_enum_set: tuple[str, ...] | None = None
    #: UPDATE: the columns the message sent old values for, sorted.
    old_columns: tuple[str, ...] | None = None
    #: column -> java.sql.Types code the message sent.
    sql_types: Mapping[str, int] | None = None
    #: column -> flag bits the message sent.
    column_flags: Mapping[str, int] | None = None
    #: The row id (``_tidb_rowid`` / int handle) the message sent.
    row_id: int | None = None
    #: Row-level checksum and its version, where the message carries them.
    row_checksum: str | None = None
    checksum_version: int | None = None
    #: The row came without column types.
    untyped: bool = False
    #: DDL: the TiDB action type number.
    ddl_action: int | None = None
    #: DDL: where ``ddl_type`` was read: ``type`` (the message says it) or ``sql`` (from the text).
    ddl_type_from: str | None = None
    #: DDL: the table-change id and the (database, table) a rename came from.
    table_change_id: str | None = None
    renamed_from: tuple[str, str] | None = None


#: The facts of an event whose message said nothing beyond its images: one shared instance (facts
#: are immutable), since building a frozen dataclass of this many fields costs microseconds per event.
NO_FACTS = EventFacts()


@dataclass(slots=True)
class ChangeEvent:
    kind: EventKind
    position: SourcePosition
    #: Commit TSO (unsigned 64-bit). 0 for BOOTSTRAP.
    commit_ts: int
    database: str | None = None
    table: str | None = None
    #: Physical table id where the protocol carries it.
    table_id: int | None = None
    op: Op | None = None
    schema_version: int | None = None
    before: RowImage | None = None
    after: RowImage | None = None
    #: column -> MySQL type text, where the protocol carries types inline with the row.
    column_types: dict[str, str] | None = None
    #: DDL subtype (CREATE, ALTER, ERASE, RENAME, TRUNCATE, CINDEX, DINDEX, QUERY).
    ddl_type: str | None = None
    ddl_query: str | None = None
    #: Table schema after a DDL, or the schema a BOOTSTRAP announces.
    table_schema: TableSchema | None = None
    #: Table schema before a DDL.
    pre_table_schema: TableSchema | None = None
    handle_key_only: bool = False
    claim_check: bool = False
    status: EventStatus = EventStatus.READY
    #: Raw protocol payload kept for PENDING events, so they can be resolved later.
    pending_payload: str | None = None
    facts: EventFacts = NO_FACTS
    #: DDL: why no table schema could be derived from it (apply holds the table there).
    schema_error: str | None = None
    #: PENDING row: why it waits.
    pending_reason: str | None = None
    #: PENDING row: the columns of its images that the schema it binds to lacks.
    unknown_columns: tuple[str, ...] | None = None

    def table_ref(self) -> str:
        return f"{self.database}.{self.table}"


def image_to_json(image: RowImage | None) -> str | None:
    """Serialize a row image with sorted keys (stable bytes for identical images)."""
    if image is None:
        return None
    return json.dumps(image, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def image_from_json(text: str | None) -> RowImage | None:
    if text is None:
        return None
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("a row image must be a JSON object")
    return value
