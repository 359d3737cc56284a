"""Schema facts the row-typed protocols leave to the consumer.

Simple sends a table schema with every DDL and a schema version with every row. Canal-JSON, Open
Protocol, Debezium and Avro do not: their DDL is SQL text (Debezium adds ``tableChanges``), and
their rows carry types inline but no version, and Canal-JSON/Open send ENUM/SET values as an index
or bitmask without the members. After a decoder has read a message, :func:`complete_events`

* gives each DDL the schemas the decode driver folded for it in commit order
  (:mod:`ticdc_lake.schema.ddl_fold`, found in the lookup by the DDL's identity): the table after
  it (``table_schema``, version = the DDL's commit TSO), the table before it
  (``pre_table_schema``), or, when neither can be derived, the reason in ``extra["schema_error"]``
  (the ``schema_error`` column of ``change_events``: apply holds the table at that DDL with it).
  Without a fold result (``ticdc-lake decode``, the first pass) a ``CREATE TABLE`` text still
  becomes its schema, and a schema without a version (Debezium ``tableChanges``) takes the DDL's
  commit TSO, so schema history can record both;
* binds each DML of those protocols to the table schema in effect at its commit TSO (the newest
  version not after it), and names the ENUM/SET members the message sent as numbers. Rows without
  commit TSO (``extra["offset_ordered"]``) bind by their position instead where the lookup has the
  driver's ``offset_versions`` (avro: :mod:`ticdc_lake.schema.offset_versions`; Canal-JSON:
  :mod:`ticdc_lake.schema.untimed_ddl`, a row no known version has all columns of is PENDING).

A DML whose ENUM/SET numbers cannot be named yet (no schema seen for its table) becomes
``PENDING``, like a Simple DML with an unknown version: the decode stage decodes its batch again
once the schema has arrived. When the lookup says ``infer_missing`` (the decode stage, for
tables never seen), such a row binds instead to a schema inferred from the row itself
(:mod:`ticdc_lake.schema.inference`, version 0), and ENUM/SET numbers that schema cannot name
are kept as they were sent (recorded in the schema's ``extra["missing_facts"]``).

A DML with commit TSO whose images carry a column the schema it binds to lacks (a DDL this
pipeline never received, a baseline taken before an ADD COLUMN, a Debezium Connect schema that
gained a field) is never applied without it: it becomes ``PENDING`` with a reason naming the
columns, its position and what to do (:func:`unknown_columns_reason`), so apply holds its table
before it. A column dropped by a known DDL is not such a case: rows before the DROP bind to the
version before it, which has the column.
"""

from __future__ import annotations

from dataclasses import replace

from ticdc_lake.canonical import enum_name, parse_integer, set_names
from ticdc_lake.errors import SchemaError
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, RowImage
from ticdc_lake.protocols.base import SchemaLookup
from ticdc_lake.schema.ddl_facts import FoldedDdl, ddl_key
from ticdc_lake.schema.inference import MISSING_FACTS, infer_schema
from ticdc_lake.schema.offset_versions import OFFSET_ORDERED, OffsetVersions
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.schema.untimed_ddl import untimed_schema

#: ``extra`` key of a DML: ENUM/SET columns whose text is still the index / bitmask.
UNRESOLVED_ENUM_SET = "unresolved_enum_set"
#: ``extra`` key of a PENDING DML: the columns of its images that the schema it binds to lacks.
UNKNOWN_COLUMNS = "unknown_columns"
#: ``extra`` key of a DDL whose text could not be turned into a table schema.
SCHEMA_ERROR = "schema_error"

_ENUM_INDEX_MAX = (1 << 16) - 1
_SET_BITMASK_MAX = (1 << 64) - 1


def schema_note(event: ChangeEvent) -> str | None:
    """The ``schema_error`` column of ``change_events``: why a DDL has no schema, or why a PENDING
    row waits (apply names it when it holds the table there)."""
    if event.kind is EventKind.DDL:
        return event.extra.get(SCHEMA_ERROR)
    return event.extra.get("pending_reason") if event.status is EventStatus.PENDING else None


def complete_events(events: list[ChangeEvent], schemas: SchemaLookup, protocol: str) -> list[ChangeEvent]:
    """Fill the schema facts of ``events`` in place (see the module docstring); returns them."""
    for event in events:
        if event.kind is EventKind.DDL:
            _ddl_schema(event, schemas, protocol)
        elif event.kind is EventKind.DML and event.schema_version is None and event.status is EventStatus.READY:
            _bind_schema(event, schemas, protocol)
    return events


def _ddl_schema(event: ChangeEvent, schemas: SchemaLookup, protocol: str) -> None:
    folded = _folded(event, schemas)
    if folded is not None:
        if event.table_schema is None:
            event.table_schema = folded.table_schema
        elif event.table_schema.version is None:
            event.table_schema = replace(event.table_schema, version=event.commit_ts)
        if event.pre_table_schema is None:
            event.pre_table_schema = folded.pre_table_schema
        if folded.error is not None:
            event.extra[SCHEMA_ERROR] = folded.error
        return
    if event.table_schema is not None:
        if event.table_schema.version is None:
            event.table_schema = replace(event.table_schema, version=event.commit_ts)
        return
    if event.ddl_type != "CREATE" or not event.ddl_query:
        return
    from ticdc_lake.schema.ddl_parser import parse_create_table  # sqlglot loads only where DDL is met

    try:
        parsed = parse_create_table(event.ddl_query, event.database)
    except SchemaError as exc:
        event.extra[SCHEMA_ERROR] = str(exc)
        return
    event.table_schema = replace(
        parsed,
        version=event.commit_ts,
        table_id=event.table_id if event.table_id is not None else parsed.table_id,
        source=f"{protocol}-ddl",
    )


def _folded(event: ChangeEvent, schemas: SchemaLookup) -> FoldedDdl | None:
    folded = getattr(schemas, "folded", None)
    if folded is None:
        return None
    result: FoldedDdl | None = folded(ddl_key(event.commit_ts, event.database, event.table, event.ddl_query))
    return result


def _bind_schema(event: ChangeEvent, schemas: SchemaLookup, protocol: str) -> None:
    if event.database is None or event.table is None:
        return
    if _untimed_canal(event, schemas, protocol):
        schema = untimed_schema(event, schemas)
        if schema is None and _known(schemas, event):
            event.status = EventStatus.PENDING
            event.extra["pending_reason"] = (
                f"no known schema version of {event.table_ref()} has all columns of this row "
                f"({', '.join(sorted(event.column_types or {}))}): the DDL that added them was not decoded yet"
            )
            return
    else:
        schema = _offset_schema(event, schemas)
    if schema is None:
        schema = schemas.latest(event.database, event.table, event.commit_ts)
    if schema is None and getattr(schemas, "infer_missing", False) and not _known(schemas, event):
        schema = infer_schema(event)
        if schema is not None:
            schemas.add(schema)  # type: ignore[attr-defined]  # infer_missing: a MemorySchemaLookup
    unresolved = list(event.extra.get(UNRESOLVED_ENUM_SET) or ())
    if schema is not None and not event.extra.get(OFFSET_ORDERED):
        unknown = unknown_columns(event, schema)
        if unknown:
            event.status = EventStatus.PENDING
            event.extra[UNKNOWN_COLUMNS] = unknown
            event.extra["pending_reason"] = unknown_columns_reason(event, schema, unknown, protocol)
            return
    if schema is None:
        if unresolved:
            event.status = EventStatus.PENDING
            event.extra["pending_reason"] = (
                f"ENUM/SET column(s) {unresolved} of {event.table_ref()} were sent as numbers and no table "
                f"schema at or before commit ts {event.commit_ts} is known to name them"
            )
        return
    try:
        for name in unresolved:
            column = schema.column(name)
            if column is not None and column.elements is None and schema.extra.get(MISSING_FACTS):
                continue  # members unknown (inferred, recorded): the numbers are the values
            if column is None or column.elements is None:
                raise SchemaError(
                    f"{event.table_ref()} version {schema.version} has no ENUM/SET column {name!r} with members"
                )
            try:
                event.before = _named(event.before, column)
                event.after = _named(event.after, column)
            except ValueError as exc:
                raise SchemaError(
                    f"{event.table_ref()} column {name!r} (schema version {schema.version}): {exc}"
                ) from exc
    except SchemaError as exc:
        event.status = EventStatus.PENDING
        event.extra["pending_reason"] = str(exc)
        return
    event.schema_version = schema.version
    event.extra.pop(UNRESOLVED_ENUM_SET, None)


def unknown_columns(event: ChangeEvent, schema: TableSchema) -> list[str]:
    """The columns of the row's images that ``schema`` lacks (names compare without case, as in
    MySQL), in the row's order."""
    known = {c.name.lower() for c in schema.columns}
    seen: dict[str, None] = {}
    for image in (event.before, event.after):
        for name in image or ():
            if name.lower() not in known:
                seen.setdefault(name, None)
    return list(seen)


def unknown_columns_reason(event: ChangeEvent, schema: TableSchema, unknown: list[str], protocol: str) -> str:
    """Why a row with columns its bound schema lacks waits: what, where and what to do."""
    p = event.position
    return (
        f"{protocol}: row event for {event.table_ref()} at commit ts {event.commit_ts} (topic {p.topic} "
        f"partition {p.partition} offset {p.offset}) has column(s) {', '.join(unknown)} that schema version "
        f"{schema.version} ({schema.source}) lacks: no DDL adding them was seen before it (a DDL this pipeline "
        "never received, or a baseline statement older than the ADD COLUMN). The row waits instead of being "
        "applied without those values, and the table is held before it: docs/schema-evolution.md, "
        "'Columns no schema announced' says what to do"
    )


def _untimed_canal(event: ChangeEvent, schemas: SchemaLookup, protocol: str) -> bool:
    """Whether ``event`` is a Canal-JSON row without commit TSO in an offset-ordered decode run."""
    ordered = getattr(schemas, "offset_versions", None) is not None
    return protocol == "canal-json" and bool(event.extra.get(OFFSET_ORDERED)) and ordered


def _offset_schema(event: ChangeEvent, schemas: SchemaLookup) -> TableSchema | None:
    """The schema of an offset-ordered row by its position (``schema.offset_versions``), if known."""
    rule: OffsetVersions | None = getattr(schemas, "offset_versions", None)
    if rule is None or not event.extra.get(OFFSET_ORDERED):
        return None
    version = rule.version_of(event)
    if version is None or event.database is None or event.table is None:
        return None
    return schemas.get(event.database, event.table, version)


def _known(schemas: SchemaLookup, event: ChangeEvent) -> bool:
    """Whether any version of the event's table is known (then a missing one is awaited, not inferred)."""
    knows = getattr(schemas, "knows_table", None)
    return knows is not None and bool(knows(event.database, event.table))


def _named(image: RowImage | None, column: ColumnSchema) -> RowImage | None:
    if image is None or image.get(column.name) is None:
        return image
    number = image[column.name]
    assert number is not None
    assert column.elements is not None
    if column.mysql_type == "enum":
        text = enum_name(parse_integer(number, 0, _ENUM_INDEX_MAX), column.elements)
    else:
        text = set_names(parse_integer(number, 0, _SET_BITMASK_MAX), column.elements)
    return {**image, column.name: text}
