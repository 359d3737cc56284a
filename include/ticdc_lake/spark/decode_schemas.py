"""The decode driver's schema work: what is known, what this run's DDL did, and start schemas.

Before the decode pass the driver builds the broadcast :class:`MemorySchemaLookup`:

1. every version in the schema history table;
2. the baseline folder's tables (``schema_baseline_uri``) at version 0, for tables met mid-stream;
3. what the first pass found: BOOTSTRAP schemas, ``avro`` value writer schemas
   (``schema.avro_registry``: a version at the smallest commit TSO of its rows), and every DDL,
   folded in commit order onto the above (``schema.ddl_fold``): each DDL event then gets its
   pre/post schema (or the reason there is none), and rows after a DDL bind to the version it
   created;
4. ``infer_missing``: rows of tables with no known schema bind to one inferred from the row;
5. offset-ordered pipelines (no commit TSO): DDL are folded at their offset instead
   (``schema.untimed_ddl``) and ``offset_versions`` tells how rows bind to versions by their
   position (``schema.offset_versions``);
6. the type each known version's columns are carried in after decode (:func:`carry_types`,
   ``ticdc_lake.carried_types``): the workers write the typed row images in them.

After the decode pass, the version-0 schemas rows were bound to (baseline or inferred) and the
registry versions are recorded in schema history (:func:`record_start_schemas`, event
``inferred``, the ``source`` says which).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from pyspark.sql import Row, SparkSession

from ticdc_lake.carried_types import VersionEvent, carried_types, versions_of
from ticdc_lake.config import PipelineConfig
from ticdc_lake.protocols.avro_versions import registry_versions
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.avro_registry import WRITER_SCHEMA_ID, WriterSchemaUse
from ticdc_lake.schema.baseline import read_baseline
from ticdc_lake.schema.ddl_fold import DdlFact, fold_ddls
from ticdc_lake.schema.history import HistoryEntry, SchemaFact
from ticdc_lake.schema.inference import START_VERSION
from ticdc_lake.schema.offset_versions import offset_versions
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.schema.untimed_ddl import fold_untimed
from ticdc_lake.spark.decode_worker import SCAN_COLUMNS, TaskReport
from ticdc_lake.spark.schema_history_table import (
    history_of,
    history_rows,
    known_versions,
    merge_history,
    version_events,
)
from ticdc_lake.spark.system_tables import SystemTables

log = logging.getLogger(__name__)

#: Columns of the first pass's output (``decode_worker.schema_scan``).
SCAN_SCHEMA = ", ".join(f"{name} STRING" for name in SCAN_COLUMNS)


def known_schemas(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig) -> MemorySchemaLookup:
    """Steps 1, 2 and 4 of the module docstring."""
    lookup = MemorySchemaLookup(TableSchema.from_json(r["table_schema"]) for r in history_of(spark, tables, pipeline))
    if pipeline.schema_baseline_uri:
        added = 0
        for schema in read_baseline(pipeline.schema_baseline_uri):
            if lookup.get(schema.database, schema.table, START_VERSION) is None:
                lookup.add(schema)
                added += 1
        log.info("decode: %d table(s) from the schema baseline %s", added, pipeline.schema_baseline_uri)
    lookup.infer_missing = True
    return lookup


def add_scanned(
    lookup: MemorySchemaLookup, scanned: Iterable[Row], pipeline: PipelineConfig, resources: DecodeResources
) -> tuple[int, list[HistoryEntry], dict[tuple[str, str, int], VersionEvent]]:
    """Step 3: the first pass's schemas, avro registry versions and folded DDL (its collected rows,
    ``SCAN_SCHEMA``) into ``lookup``.

    Returns how many DDL were folded, the registry versions new to the schema history and the
    event of each version a DDL made (the last DDL of its commit TSO, as schema history keeps it).
    """
    facts: list[DdlFact] = []
    uses: list[WriterSchemaUse] = []
    for row in scanned:
        if row["table_schema"] is not None:
            lookup.add(TableSchema.from_json(row["table_schema"]))
        elif row["ddl"] is not None:
            facts.append(DdlFact.from_json(row["ddl"]))
        elif row["writer"] is not None:
            uses.append(WriterSchemaUse.from_json(row["writer"]))
    ordered = pipeline.offset_ordered
    fold = fold_untimed if ordered else fold_ddls
    folded = fold(facts, lookup, pipeline.protocol.value)
    lookup.add_folded(folded)
    kinds = {fact.key: fact for fact in facts}
    events: dict[tuple[str, str, int], VersionEvent] = {}
    for key, result in folded.items():  # in commit order: a later DDL of one version wins
        post = result.table_schema
        if post is not None and post.version is not None:
            fact = kinds[key]
            events[(post.database, post.table, post.version)] = (fact.ddl_type or "QUERY", fact.ddl_query, False)
    before = list(lookup.as_mapping().values())
    zone = pipeline.codec.server_time_zone
    registry = [
        HistoryEntry(SchemaFact(schema, "inferred", 0 if ordered else schema.version or 0, *_first(schema, uses)))
        for schema in registry_versions(lookup, uses, resources, zone, offset_ordered=ordered)
    ]
    if ordered:
        lookup.offset_versions = offset_versions(before, list(lookup.as_mapping().values()), uses)
    for result in folded.values():
        if result.error is not None:
            log.warning("decode: %s", result.error)
    return len(folded), registry, events


def carry_types(
    spark: SparkSession,
    tables: SystemTables,
    pipeline: PipelineConfig,
    lookup: MemorySchemaLookup,
    ddl_events: dict[tuple[str, str, int], VersionEvent],
) -> None:
    """Step 6: the carried types of every version ``lookup`` knows (``lookup.carried``), from the
    schema history's events and this run's DDL (``ddl_events``)."""
    events = {**ddl_events, **version_events(history_of(spark, tables, pipeline))}  # history's rows win
    versions = versions_of(lookup.as_mapping(), events)
    lookup.carried = carried_types(versions, pipeline.policies, pipeline.codec.server_time_zone)


def _first(schema: TableSchema, uses: list[WriterSchemaUse]) -> tuple[None, str | None, int | None, int | None]:
    """(DDL text, topic, partition, offset) of a registry version's history row: its first row seen."""
    mine = [u for u in uses if u.schema_id == schema.extra.get(WRITER_SCHEMA_ID) and u.topic]
    first = min(mine, key=lambda u: (u.commit_ts, u.topic, u.partition, u.offset), default=None)
    return (None, first.topic, first.partition, first.offset) if first else (None, None, None, None)


def record_start_schemas(
    spark: SparkSession,
    tables: SystemTables,
    pipeline: PipelineConfig,
    run_id: str,
    reports: Iterable[TaskReport],
    registry: list[HistoryEntry],
) -> int:
    """Record in schema history the version-0 schemas rows were bound to and the avro registry
    versions found (``registry``); returns how many were new."""
    first: dict[tuple[str, str], tuple[tuple[int, str, int, int], str]] = {}
    for report in reports:
        for name, (rank, text) in report.start_schemas.items():
            if name not in first or rank < first[name][0]:
                first[name] = (rank, text)
    if not first and not registry:
        return 0
    known = known_versions(spark, tables, pipeline)
    entries = [e for e in registry if e.key not in known]
    for (database, table), ((commit_ts, topic, partition, offset), text) in sorted(first.items()):
        if (database, table, START_VERSION) in known:
            continue
        schema = TableSchema.from_json(text)
        entries.append(HistoryEntry(SchemaFact(schema, "inferred", commit_ts, None, topic, partition, offset)))
    if entries:
        merge_history(spark, tables, history_rows(pipeline.id, run_id, entries))
    return len(entries)
