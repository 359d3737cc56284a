"""Schema facts the row-typed protocols leave to the consumer.

Simple sends a table schema with every DDL and a schema version with every row. Canal-JSON, Open
Protocol, Debezium and Avro do not: their DDL is SQL text (Debezium adds ``tableChanges``), and
their rows carry types inline but no version, and Canal-JSON/Open send ENUM/SET values as an index
or bitmask without the members. After a decoder has read a message, :func:`complete_events`

* gives a DDL that creates a table the schema parsed from its SQL text (``CREATE TABLE``) with the
  DDL's commit TSO as the version, and gives a schema without a version (Debezium
  ``tableChanges``) that same version, so schema history can record both;
* binds each DML of those protocols to the table schema in effect at its commit TSO (the newest
  version not after it), and names the ENUM/SET members the message sent as numbers.

A DML whose ENUM/SET numbers cannot be named yet (no schema seen for its table) becomes
``PENDING``, like a Simple DML with an unknown version: the decode stage decodes its batch again
once the schema has arrived. A DDL text the parser cannot read keeps no schema; the reason is in
``extra["schema_error"]`` and apply holds the table at that DDL with the text in its message.
"""

from __future__ import annotations

from dataclasses import replace

from ticdc_lake.canonical import enum_name, parse_integer, set_names
from ticdc_lake.errors import SchemaError
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, RowImage
from ticdc_lake.protocols.base import SchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema

#: ``extra`` key of a DML: ENUM/SET columns whose text is still the index / bitmask.
UNRESOLVED_ENUM_SET = "unresolved_enum_set"
#: ``extra`` key of a DDL whose text could not be turned into a table schema.
SCHEMA_ERROR = "schema_error"

_ENUM_INDEX_MAX = (1 << 16) - 1
_SET_BITMASK_MAX = (1 << 64) - 1


def complete_events(events: list[ChangeEvent], schemas: SchemaLookup, protocol: str) -> list[ChangeEvent]:
    """Fill the schema facts of ``events`` in place (see the module docstring); returns them."""
    for event in events:
        if event.kind is EventKind.DDL:
            _ddl_schema(event, protocol)
        elif event.kind is EventKind.DML and event.schema_version is None and event.status is EventStatus.READY:
            _bind_schema(event, schemas)
    return events


def _ddl_schema(event: ChangeEvent, protocol: str) -> None:
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


def _bind_schema(event: ChangeEvent, schemas: SchemaLookup) -> None:
    if event.database is None or event.table is None:
        return
    schema = schemas.latest(event.database, event.table, event.commit_ts)
    unresolved = list(event.extra.get(UNRESOLVED_ENUM_SET) or ())
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
