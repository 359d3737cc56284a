"""The decode stage's first pass: the table schemas a set of messages announces."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema


def announced_schemas(decoder: Decoder, messages: Iterable[RawMessage]) -> Iterator[TableSchema]:
    """Every versioned table schema (DDL, BOOTSTRAP, ``CREATE TABLE`` text) the messages announce.

    Only messages that may carry schemas are read, without any known schema, so that the rows of
    the same batch can be bound to the schemas announced before them. Messages that cannot be
    decoded are skipped here: the main pass reports (quarantines) them.
    """
    empty = MemorySchemaLookup()
    for message in messages:
        if not decoder.may_carry_schema(message):
            continue
        try:
            events = decoder.read(message, empty)
        except Exception:
            continue
        for event in events:
            for schema in (event.table_schema, event.pre_table_schema):
                if schema is not None and schema.version is not None:
                    yield schema
