"""The decode stage's first pass: the table schemas and the DDL a set of messages announces."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ticdc_lake.events import ChangeEvent, EventKind, RawMessage
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup
from ticdc_lake.schema.avro_registry import WriterSchemaUse
from ticdc_lake.schema.ddl_facts import DdlFact, number_ddls
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


ScanFact = TableSchema | DdlFact | WriterSchemaUse


def scanned_facts(decoder: Decoder, messages: Iterable[RawMessage]) -> Iterator[ScanFact]:
    """What the first pass hands the driver: versioned schemas of non-DDL events (BOOTSTRAP),
    every DDL event as a :class:`DdlFact` (numbered within its commit TSO, see ``ddl_fold``) and,
    where the decoder reads writer schema ids (``Decoder.writer_schema_id``: ``avro``), each row of
    a partition whose value writer schema differs from the previous row of its table there
    (``avro_registry``; the first row per writer schema is among them).

    ``messages`` must be in offset order per partition (one landed file). DDL are read with
    ``decode`` (not ``read``): the driver folds their text in commit order across the whole run.
    """
    empty = MemorySchemaLookup()
    ddls: list[DdlFact] = []
    writers = _WriterScan()
    for message in messages:
        schema_id = decoder.writer_schema_id(message)
        if schema_id is not None:
            yield from _writer_use(decoder, message, schema_id, writers)
            continue
        if not decoder.may_carry_schema(message):
            continue
        try:
            events = decoder.decode(message, empty)
        except Exception:
            continue  # the main pass quarantines it
        for event in events:
            if event.kind is EventKind.DDL:
                position = event.position
                ddls.append(
                    DdlFact(
                        event.commit_ts,
                        event.database,
                        event.table,
                        event.ddl_type,
                        event.ddl_query,
                        position.topic,
                        position.partition,
                        position.offset,
                        position.index,
                        table_id=event.table_id,
                        table_schema=event.table_schema,
                        pre_table_schema=event.pre_table_schema,
                    )
                )
                continue
            for schema in (event.table_schema, event.pre_table_schema):
                if schema is not None and schema.version is not None:
                    yield schema
    yield from number_ddls(ddls)


def prepared_lookup(
    decoder: Decoder, messages: Iterable[RawMessage], lookup: MemorySchemaLookup | None = None
) -> MemorySchemaLookup:
    """What the decode stage's driver does, in one process: ``lookup`` (new if None) with the
    schemas ``messages`` announce and their DDL folded in commit order, ready for ``decoder.read``.

    For ``ticdc-lake decode`` and tests; ``messages`` may mix partitions (each in offset order).
    """
    from ticdc_lake.schema.ddl_fold import fold_ddls

    lookup = lookup if lookup is not None else MemorySchemaLookup()
    by_partition: dict[tuple[str, int], list[RawMessage]] = {}
    for message in messages:
        by_partition.setdefault((message.topic, message.partition), []).append(message)
    facts: list[DdlFact] = []
    for part in by_partition.values():
        for fact in scanned_facts(decoder, part):
            if isinstance(fact, DdlFact):
                facts.append(fact)
            elif isinstance(fact, TableSchema):
                lookup.add(fact)
    if decoder.untimed_ddl:
        from ticdc_lake.schema.offset_versions import OffsetVersions
        from ticdc_lake.schema.untimed_ddl import fold_untimed

        lookup.add_folded(fold_untimed(facts, lookup, decoder.protocol))  # no commit TSO: by offset
        lookup.offset_versions = OffsetVersions()
        return lookup
    lookup.add_folded(fold_ddls(facts, lookup, decoder.protocol))
    return lookup


class _WriterScan:
    """What the scan of one partition's messages knows of avro writer schemas so far."""

    def __init__(self) -> None:
        #: value writer schema id -> its (database, table), from the first row decoded with it.
        self.tables: dict[int, tuple[str, str]] = {}
        #: (database, table, partition) -> value writer schema id of the table's last row there.
        self.last: dict[tuple[str, str, int], int] = {}


def _writer_use(decoder: Decoder, message: RawMessage, schema_id: int, scan: _WriterScan) -> Iterator[WriterSchemaUse]:
    """The row's value writer schema, if it differs from that of the previous row of its table in
    this partition (a schema change point; the first row per schema id is one).

    ``schema_id`` is read from the message's framing without decoding; only change points are
    decoded. Rows of one partition are in commit order, so the first row of a schema has the
    smallest commit TSO.
    """
    table = scan.tables.get(schema_id)
    if table is not None and scan.last.get((*table, message.partition)) == schema_id:
        return
    try:
        events = decoder.decode(message, MemorySchemaLookup())
    except Exception:
        return  # the main pass quarantines it
    for event in events:
        use = _use(event)
        if use is not None:
            scan.tables[schema_id] = (use.database, use.table)
            scan.last[(use.database, use.table, message.partition)] = schema_id
            yield use


def _use(event: ChangeEvent) -> WriterSchemaUse | None:
    schema_id = event.facts.value_schema_id
    if event.kind is not EventKind.DML or schema_id is None or event.database is None or event.table is None:
        return None
    key = event.facts.handle_key or ()
    p = event.position
    return WriterSchemaUse(schema_id, event.database, event.table, event.commit_ts, key, p.topic, p.partition, p.offset)
