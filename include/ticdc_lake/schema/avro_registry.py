"""Table versions of the ``avro`` protocol, from the writer schemas in the schema registry.

TiCDC's ``avro`` protocol sends no DDL: a table change shows as a new value writer schema (fields
added or removed, ``tidb_type`` changed). Each value writer schema becomes one table version
(``source`` ``avro-registry``): the columns and TiDB types from the fields' ``tidb_type``
properties (with DECIMAL precision/scale, BIT length and ENUM/SET members where TiCDC wrote
them), the key from the key record's fields. Its version is the smallest commit TSO of the rows
written with it: every row after the change that introduced the schema uses it, every row before
uses an earlier one, so binding rows to the newest version not after their commit TSO finds it.

Rows without the TiDB extension carry commit TSO 0, so their writer schemas have no TSO to order
them by: in such (offset-ordered) pipelines the version is the registry id itself, as the registry
gives ids in registration order and TiCDC registers a table's new schema after the DDL that made
it (``schema.offset_versions`` binds the rows, ``docs/offset-ordered-apply.md``).

This module knows table schemas only: reading a writer schema's text is the protocol's part
(``ticdc_lake.protocols.avro_versions`` hands :func:`writer_versions` its parser).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Protocol

from ticdc_lake.schema.inference import MISSING_FACTS, column_from_type
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema

REGISTRY_SOURCE = "avro-registry"
#: ``TableSchema.extra`` key: the registry id of the value writer schema the version comes from.
WRITER_SCHEMA_ID = "writer_schema_id"

#: ``tidb_type`` -> (MySQL type, unsigned). TiCDC writes type families: INT is TINYINT..INT,
#: TEXT is CHAR..LONGTEXT, BLOB is BINARY..LONGBLOB; the widest member is taken.
_TYPES: dict[str, tuple[str, bool]] = {
    "INT": ("int", False),
    "INT UNSIGNED": ("int", True),
    "BIGINT": ("bigint", False),
    "BIGINT UNSIGNED": ("bigint", True),
    "FLOAT": ("float", False),
    "DOUBLE": ("double", False),
    "DECIMAL": ("decimal", False),
    "TEXT": ("longtext", False),
    "BLOB": ("longblob", False),
    "BIT": ("bit", False),
    "ENUM": ("enum", False),
    "SET": ("set", False),
    "JSON": ("json", False),
    "DATE": ("date", False),
    "DATETIME": ("datetime", False),
    "TIMESTAMP": ("timestamp", False),
    "TIME": ("time", False),
    "YEAR": ("year", False),
    "TiDBVECTORFloat32": ("vector", False),
}
_FAMILIES = (
    "exact types inside TiCDC's avro type families (INT: TINYINT..INT, TEXT: CHAR..LONGTEXT, "
    "BLOB: BINARY..LONGBLOB), lengths, fractional-second precision and defaults are not in the writer schema"
)


class WriterColumn(Protocol):
    """What a table version needs of one column field of a value writer schema."""

    @property
    def name(self) -> str: ...
    @property
    def tidb_type(self) -> str: ...
    @property
    def nullable(self) -> bool: ...
    @property
    def precision(self) -> int | None: ...
    @property
    def scale(self) -> int | None: ...
    @property
    def length(self) -> int | None: ...
    @property
    def allowed(self) -> str | None: ...


#: The column fields of the value writer schema with a registry id, or None when it cannot be read.
WriterColumns = Callable[[int], Sequence[WriterColumn] | None]


@dataclass(frozen=True, slots=True)
class WriterSchemaUse:
    """A row of one partition whose value writer schema differs from the previous row of its table
    in that partition (found by the first pass; the first row per schema among them)."""

    schema_id: int
    database: str
    table: str
    commit_ts: int
    key: tuple[str, ...]
    #: Where the row is (offset-ordered pipelines bind tombstones by it); not part of equality.
    topic: str = field(default="", compare=False)
    partition: int = field(default=0, compare=False)
    offset: int = field(default=0, compare=False)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> WriterSchemaUse:
        data = json.loads(text)
        return WriterSchemaUse(**{**data, "key": tuple(data["key"])})


def registry_schema(
    database: str, table: str, columns: Sequence[WriterColumn], key: Sequence[str], version: int, schema_id: int
) -> TableSchema:
    """The table version one value writer schema describes."""
    missing = [_FAMILIES]
    result = []
    for avro in columns:
        column, fact = _column(avro)
        if fact is not None:
            missing.append(fact)
        result.append(replace(column, nullable=avro.nullable and avro.name not in key))
    names = {c.name for c in result}
    key = tuple(k for k in key if k in names)
    return TableSchema(
        database=database,
        table=table,
        columns=tuple(result),
        indexes=(IndexSchema("PRIMARY", key, primary=True, unique=True),) if key else (),
        version=version,
        source=REGISTRY_SOURCE,
        extra={MISSING_FACTS: missing, WRITER_SCHEMA_ID: schema_id},
    )


def _column(avro: WriterColumn) -> tuple[ColumnSchema, str | None]:
    known = _TYPES.get(avro.tidb_type)
    if known is None:
        return column_from_type(avro.name, avro.tidb_type)
    mysql_type, unsigned = known
    column = ColumnSchema(avro.name, mysql_type, unsigned=unsigned)
    if mysql_type == "decimal":
        if avro.precision is None:
            return column, f"column {avro.name!r}: DECIMAL precision and scale unknown; the Iceberg column is a string"
        return replace(column, length=avro.precision, scale=avro.scale or 0), None
    if mysql_type == "bit":
        return replace(column, length=avro.length), None
    if mysql_type in ("enum", "set"):
        if avro.allowed is None:
            return column, f"column {avro.name!r}: {mysql_type.upper()} members unknown"
        return replace(column, elements=split_allowed(avro.allowed)), None
    return column, None


def split_allowed(allowed: str) -> tuple[str, ...]:
    """TiCDC's ``allowed`` text (members joined by ``,``, a comma inside a member escaped ``\\,``)."""
    members, current, escaped = [], [], False
    for char in allowed:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            members.append("".join(current))
            current = []
        else:
            current.append(char)
    members.append("".join(current))
    return tuple(members)


def writer_versions(
    schemas: Collection[TableSchema],
    uses: Iterable[WriterSchemaUse],
    writer_columns: WriterColumns,
    offset_ordered: bool = False,
) -> list[TableSchema]:
    """One version per value writer schema not among the known ``schemas`` yet, at the smallest
    commit TSO of its rows. Rows without a commit TSO give none, unless the pipeline is
    ``offset_ordered``: then the version is the writer schema's registry id (module docstring).
    ``writer_columns`` reads a writer schema by id; one it cannot read gives no version (the
    decode pass quarantines its rows with the reason).

    Tables whose DDL the stream carries (``<protocol>-ddl`` versions) get none: the DDL versions
    are exact and at the DDL's TSO. ``uses`` of tables known by another name are the caller's to
    leave out (``protocols.avro_versions``).
    """
    known = {s.extra.get(WRITER_SCHEMA_ID) for s in schemas if s.source == REGISTRY_SOURCE}
    with_ddl = {(s.database, s.table) for s in schemas if s.source.endswith("-ddl")}
    first: dict[int, WriterSchemaUse] = {}
    for use in uses:
        if (
            (use.commit_ts <= 0 and not offset_ordered)
            or use.schema_id in known
            or (use.database, use.table) in with_ddl
        ):
            continue
        if use.schema_id not in first or use.commit_ts < first[use.schema_id].commit_ts:
            first[use.schema_id] = use
    found = []
    for schema_id, use in sorted(first.items()):
        columns = writer_columns(schema_id)
        if columns is None:
            continue
        version = schema_id if offset_ordered else use.commit_ts
        found.append(registry_schema(use.database, use.table, columns, use.key, version, schema_id))
    return found
