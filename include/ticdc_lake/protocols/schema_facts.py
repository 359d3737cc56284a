"""Schema facts the row-typed protocols leave to the consumer.

Simple sends a table schema with every DDL and a schema version with every row. Canal-JSON, Open
Protocol, Debezium and Avro do not: their DDL is SQL text (Debezium adds ``tableChanges``), and
their rows carry types inline but no version, and Canal-JSON/Open send ENUM/SET values as an index
or bitmask without the members. After a decoder has read a message, :func:`complete_events`

* gives each DDL the schemas the decode driver folded for it in commit order
  (:mod:`ticdc_lake.schema.ddl_fold`, found in the lookup by the DDL's identity): the table after
  it (``table_schema``, version = the DDL's commit TSO), the table before it
  (``pre_table_schema``), or, when neither can be derived, the reason in ``schema_error``
  (the ``schema_error`` column of ``change_events``: apply holds the table at that DDL with it).
  Without a fold result (``ticdc-lake decode``, the first pass) a ``CREATE TABLE`` text still
  becomes its schema, and a schema without a version (Debezium ``tableChanges``) takes the DDL's
  commit TSO, so schema history can record both;
* binds each DML of those protocols to the table schema in effect at its commit TSO (the newest
  version not after it), and names the ENUM/SET members the message sent as numbers. Rows without
  commit TSO (``facts.offset_ordered``) bind by their position instead where the lookup has the
  driver's ``offset_versions``: rows that name their writer schemas (avro) by
  :mod:`ticdc_lake.schema.offset_versions`, the others (Canal-JSON) by the columns they name,
  :mod:`ticdc_lake.schema.untimed_ddl` (a row no known version has all columns of is PENDING).

A DML whose ENUM/SET numbers cannot be named yet (no schema seen for its table) becomes
``PENDING``, like a Simple DML with an unknown version: the decode stage decodes its batch again
once the schema has arrived. When the lookup says ``infer_missing`` (the decode stage, for
tables never seen), such a row binds instead to a schema inferred from the row itself
(:func:`infer_schema`, version 0), and ENUM/SET numbers that schema cannot name
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
from ticdc_lake.schema.ddl_facts import FoldedDdl, ddl_key
from ticdc_lake.schema.inference import MISSING_FACTS, schema_from_types
from ticdc_lake.schema.lookup import SchemaLookup
from ticdc_lake.schema.offset_versions import OffsetVersions
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.schema.untimed_ddl import untimed_schema

_ENUM_INDEX_MAX = (1 << 16) - 1
_SET_BITMASK_MAX = (1 << 64) - 1


def schema_note(event: ChangeEvent) -> str | None:
    """The ``schema_error`` column of ``change_events``: why a DDL has no schema, or why a PENDING
    row waits (apply names it when it holds the table there)."""
    if event.kind is EventKind.DDL:
        return event.schema_error
    return event.pending_reason if event.status is EventStatus.PENDING else None


def complete_events(events: list[ChangeEvent], schemas: SchemaLookup, protocol: str) -> list[ChangeEvent]:
    """Fill the schema facts of ``events`` in place (see the module docstring); returns them.
    ``protocol`` only names the source of derived schemas and the protocol in reasons."""
    for event in events:
        if event.kind is EventKind.DDL:
            _ddl_schema(event, schemas, protocol)
        elif event.kind is EventKind.DML and event.schema_version is None and event.status is EventStatus.READY:
            _bind_schema(event, schemas, protocol)
    return events


def infer_schema(event: ChangeEvent) -> TableSchema | None:
    """The schema one row implies (:func:`ticdc_lake.schema.inference.schema_from_types`), or None
    when the row carries no column types. Its key: the message key's columns, else the primary
    key, else the handle key the message names."""
    if event.database is None or event.table is None or not event.column_types:
        return None
    facts = event.facts
    key = facts.key_columns or facts.primary_key or facts.handle_key or ()
    return schema_from_types(event.database, event.table, event.column_types, key, event.table_id)


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
            event.schema_error = folded.error
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
        event.schema_error = str(exc)
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
    if _by_columns(event, schemas):
        names = event.column_types or (event.after or event.before or {})
        p = event.position
        schema = untimed_schema(event.database, event.table, names, p.partition, p.offset, schemas)
        if schema is None and _known(schemas, event):
            event.status = EventStatus.PENDING
            event.pending_reason = (
                f"no known schema version of {event.table_ref()} has all columns of this row "
                f"({', '.join(sorted(event.column_types or {}))}): the DDL that added them was not decoded yet"
            )
            return
    else:
        schema = _offset_schema(event, schemas)
    if schema is None:
        schema = schemas.latest(event.database, event.table, event.commit_ts)
    if schema is None and infers_schema(schemas, event.database, event.table):
        schema = infer_schema(event)
        if schema is not None:
            schemas.add(schema)  # type: ignore[attr-defined]  # infer_missing: a MemorySchemaLookup
    unresolved = list(event.facts.unresolved_enum_set or ())
    if schema is not None and not event.facts.offset_ordered:
        unknown = unknown_columns(event, schema)
        if unknown:
            event.status = EventStatus.PENDING
            event.unknown_columns = tuple(unknown)
            event.pending_reason = unknown_columns_reason(event, schema, unknown, protocol)
            return
    if schema is None:
        if unresolved:
            event.status = EventStatus.PENDING
            event.pending_reason = (
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
        event.pending_reason = str(exc)
        return
    event.schema_version = schema.version
    if event.facts.unresolved_enum_set is not None:
        event.facts = replace(event.facts, unresolved_enum_set=None)


def unknown_columns(event: ChangeEvent, schema: TableSchema) -> list[str]:
    """The columns of the row's images that ``schema`` lacks (names compare without case, as in
    MySQL), in the row's order."""
    names = _column_names(schema)
    before, after = event.before, event.after
    if (before is None or names.issuperset(before)) and (after is None or names.issuperset(after)):
        return []  # every name as the schema spells it: the common case, without lowering each name
    known = {c.name.lower() for c in schema.columns}
    seen: dict[str, None] = {}
    for image in (event.before, event.after):
        for name in image or ():
            if name.lower() not in known:
                seen.setdefault(name, None)
    return list(seen)


#: Column names per schema object (id -> the schema, kept alive so that the id stays its own, and its names).
_NAMES: dict[int, tuple[TableSchema, frozenset[str]]] = {}
_NAMES_ENTRIES = 1024


def _column_names(schema: TableSchema) -> frozenset[str]:
    """The column names of ``schema`` as a set, made once per schema object."""
    known = _NAMES.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    if len(_NAMES) >= _NAMES_ENTRIES:
        _NAMES.clear()
    names = frozenset(c.name for c in schema.columns)
    _NAMES[id(schema)] = (schema, names)
    return names


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


def _by_columns(event: ChangeEvent, schemas: SchemaLookup) -> bool:
    """Whether ``event`` is a row without commit TSO and without writer schemas (Canal-JSON) in an
    offset-ordered decode run: it binds by the columns it names."""
    ordered = getattr(schemas, "offset_versions", None) is not None
    facts = event.facts
    return facts.offset_ordered and facts.key_schema_id is None and facts.value_schema_id is None and ordered


def _offset_schema(event: ChangeEvent, schemas: SchemaLookup) -> TableSchema | None:
    """The schema of an offset-ordered row by its position (``schema.offset_versions``), if known."""
    rule: OffsetVersions | None = getattr(schemas, "offset_versions", None)
    if rule is None or not event.facts.offset_ordered or event.database is None or event.table is None:
        return None
    p, facts = event.position, event.facts
    slot = (event.database, event.table, p.topic, p.partition)
    version = rule.version_of(slot, p.offset, facts.value_schema_id, facts.key_schema_id)
    if version is None:
        return None
    return schemas.get(event.database, event.table, version)


def infers_schema(schemas: SchemaLookup, database: str, table: str) -> bool:
    """Whether a row of ``database.table`` that no version binds gets a schema inferred from it
    (``infer_missing``, and no version of the table known); else it stays unbound (READY, no version).
    The vector decoders ask the same (``arrow_decode``)."""
    knows = getattr(schemas, "knows_table", None)
    known = knows is not None and bool(knows(database, table))
    return bool(getattr(schemas, "infer_missing", False)) and not known


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
