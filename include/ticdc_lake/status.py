"""Pipeline status read from the catalog and the landing storage (pyiceberg; no Spark, no Airflow).

Per table: the applied TSO and its wall time, how far that is behind now, decoded events not
applied yet (of which waiting for their schema) and quarantined messages naming the table. Per
partition: Kafka's end offset, the newest landed and decoded offsets and how many messages each
step is behind the one before it. Kafka's end offsets come from :mod:`ticdc_lake.status_kafka`
when Kafka settings are given; without them the rest is still shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ticdc_lake import table_markers, tso
from ticdc_lake.apply.watermark_cut import LandedScope, landed_scope
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.consistent_reads import Cut, TableHold, apply_ledger_rows, choose_cut, cuts_and_holds, owned_tables
from ticdc_lake.identifiers import UPSTREAM_DATABASE_PROPERTY, UPSTREAM_TABLE_PROPERTY
from ticdc_lake.landing.manifest import Manifest

PartitionKey = tuple[str, int]
NO_KAFKA = "no Kafka settings given: Kafka end offsets not read"


@dataclass(frozen=True, slots=True)
class TableStatus:
    namespace: str
    table: str
    #: Events up to this TSO are applied: the newest MERGE's, or a later DDL's (which need not
    #: write a snapshot).
    applied_ts: int | None
    snapshot_id: int | None
    rows: int
    #: Set when the newest apply run held the table back or failed it.
    hold: TableHold | None = None
    database: str = ""
    upstream_table: str = ""
    #: Decoded events above ``applied_ts`` (not applied yet), and of them those waiting for their schema.
    pending: int = 0
    waiting_for_schema: int = 0
    #: Quarantined messages that name this table (still QUARANTINED).
    quarantined: int = 0

    @property
    def applied_at(self) -> datetime | None:
        return tso.to_datetime(self.applied_ts) if self.applied_ts else None

    def lag_seconds(self, now: datetime) -> float | None:
        """Now minus the wall time of the applied TSO."""
        at = self.applied_at
        return max(0.0, (now - at).total_seconds()) if at is not None else None


@dataclass(frozen=True, slots=True)
class PartitionStatus:
    topic: str
    partition: int
    #: Kafka's end offset (next offset to be written; the last stable offset), None when unknown.
    kafka_end: int | None
    #: Exclusive end of the newest landed range, and of the newest decoded range.
    landed_end: int | None
    decoded_end: int | None
    #: Messages in landed ranges whose batch is not decoded yet.
    landed_not_decoded: int = 0
    #: What apply waits for in this partition (a hole in the landed offsets, a batch not decoded
    #: yet; ``apply.watermark_cut``), None when it can read everything landed.
    waits_for: str | None = None

    @property
    def landing_behind(self) -> int | None:
        """Offsets Kafka holds beyond the newest landed one (all of them when nothing was landed)."""
        if self.kafka_end is None:
            return None
        return max(0, self.kafka_end - (self.landed_end or 0))


@dataclass(frozen=True, slots=True)
class PipelineStatus:
    #: The newest apply run's watermark (every table not held is applied up to it).
    cut: Cut | None
    tables: list[TableStatus]
    partitions: list[PartitionStatus] = field(default_factory=list)
    #: Quarantined messages that name no table (they hold every table of their topic under halt).
    quarantined_without_table: int = 0
    #: Where Kafka's end offsets came from, or why they are missing.
    kafka: str = NO_KAFKA
    checked_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def lag_seconds(self) -> float | None:
        """Now minus the wall time of the newest cut's watermark."""
        if self.cut is None:
            return None
        return max(0.0, (self.checked_at - tso.to_datetime(self.cut.watermark)).total_seconds())


def applied_snapshot(table: Any, pipeline_id: str) -> tuple[int | None, int | None]:
    """(applied TSO, snapshot id) of the newest ancestor snapshot this pipeline committed."""
    snapshot = table.current_snapshot()
    while snapshot is not None:
        summary = snapshot.summary.additional_properties if snapshot.summary is not None else {}
        if table_markers.APPLIED_TS in summary and summary.get(table_markers.PIPELINE) == pipeline_id:
            return int(summary[table_markers.APPLIED_TS]), snapshot.snapshot_id
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return None, None


def partition_statuses(
    manifests: Sequence[Manifest],
    decoded: Iterable[Mapping[str, Any]],
    kafka_ends: Mapping[PartitionKey, int] | None,
) -> list[PartitionStatus]:
    """Per partition: Kafka end, landed end, decoded end and messages landed but not decoded (pure).

    ``decoded``: ``decoded_batches`` rows (``batch_id``, ``topic``, ``partition``, ``end_offset``).
    """
    decoded_rows = list(decoded)
    done = {r["batch_id"] for r in decoded_rows}
    landed: dict[PartitionKey, int] = {}
    waiting: dict[PartitionKey, int] = {}
    for manifest in manifests:
        for r in manifest.ranges:
            landed[r.key] = max(landed.get(r.key, 0), r.end)
            if manifest.batch_id not in done:
                waiting[r.key] = waiting.get(r.key, 0) + r.count
    decoded_end: dict[PartitionKey, int] = {}
    for row in decoded_rows:
        key = (row["topic"], int(row["partition"]))
        decoded_end[key] = max(decoded_end.get(key, 0), int(row["end_offset"]))
    keys = sorted({*landed, *decoded_end, *(kafka_ends or {})})
    scope = landed_scope(manifests, done)
    return [
        PartitionStatus(
            topic,
            partition,
            kafka_ends.get((topic, partition)) if kafka_ends is not None else None,
            landed.get((topic, partition)),
            decoded_end.get((topic, partition)),
            waiting.get((topic, partition), 0),
            _waits_for(scope, (topic, partition)),
        )
        for topic, partition in keys
    ]


def _waits_for(scope: LandedScope, key: PartitionKey) -> str | None:
    why = scope.waiting.get(key)
    return f"apply waits at offset {scope.ends[key]}: {why}" if why is not None else None


def event_counts(
    events: Iterable[Mapping[str, Any]], applied: Mapping[tuple[str, str], int | None]
) -> dict[tuple[str, str], tuple[int, int]]:
    """Per upstream table: (events above its applied TSO, of them PENDING) from ``change_events`` rows (pure)."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for e in events:
        key = (e["database"], e["table"])
        position = applied.get(key)
        if position is not None and e["commit_ts"] is not None and int(e["commit_ts"]) <= position:
            continue
        above, schema = counts.get(key, (0, 0))
        counts[key] = (above + 1, schema + (e["status"] == "PENDING"))
    return counts


def pipeline_status(
    config: LakeConfig,
    pipeline: PipelineConfig,
    kafka_ends: Mapping[PartitionKey, int] | None = None,
    kafka: str | None = None,
) -> PipelineStatus:
    """Every target table this pipeline has written, every partition it reads, and the newest cut.

    ``kafka_ends``: Kafka's end offsets (:func:`ticdc_lake.status_kafka.end_offsets`); ``kafka``
    says where they came from or why they are missing.
    """
    from ticdc_lake.landing.store import LandingStore

    catalog_config = config.catalog_for(pipeline)
    catalog = load_catalog(pipeline.catalog, catalog_config)
    system = catalog_config.system_namespace
    cuts, holds = cuts_and_holds(apply_ledger_rows(catalog, system, pipeline.id))
    cut = choose_cut(cuts)
    run_holds = holds.get(cut.run_id, {}) if cut is not None else {}
    tables = []
    # Only this pipeline's tables: the catalog may hold other pipelines' tables, whose positions
    # would otherwise be listed here and would count this pipeline's events as pending.
    for owned in owned_tables(catalog, system, pipeline):
        applied, snapshot_id = applied_snapshot(owned.table, pipeline.id)
        properties = owned.properties
        ddl_applied = properties.get(table_markers.DDL_APPLIED_TS)
        if applied is None and ddl_applied is None:
            continue
        if ddl_applied is not None and (applied is None or int(ddl_applied) > applied):
            applied = int(ddl_applied)
        current = owned.table.current_snapshot()
        summary = current.summary.additional_properties if current and current.summary else {}
        rows = int(summary.get("total-records", 0)) - int(summary.get("total-position-deletes", 0))
        rows -= int(summary.get("total-equality-deletes", 0))
        upstream = (properties.get(UPSTREAM_DATABASE_PROPERTY, ""), properties.get(UPSTREAM_TABLE_PROPERTY, ""))
        hold = run_holds.get(upstream)
        tables.append(TableStatus(owned.namespace, owned.name, applied, snapshot_id, rows, hold, *upstream))

    positions = {(t.database, t.upstream_table): t.applied_ts for t in tables}
    # Only events above the lowest applied position can be pending (Iceberg skips older files).
    low = min((p or 0 for p in positions.values()), default=0)
    events = _rows(catalog, system, "change_events", pipeline.id, _EVENT_FIELDS, f"{_PENDING} AND commit_ts > {low}")
    counts = event_counts(events, positions)
    quarantine = _rows(catalog, system, "quarantine", pipeline.id, ("database", "table"), "status = 'QUARANTINED'")
    quarantined: dict[tuple[str, str] | None, int] = {}
    for q in quarantine:
        key = (q["database"], q["table"]) if q["table"] is not None else None
        quarantined[key] = quarantined.get(key, 0) + 1
    tables = [
        _with_counts(
            t, counts.get((t.database, t.upstream_table), (0, 0)), quarantined.get((t.database, t.upstream_table), 0)
        )
        for t in tables
    ]
    decoded = _rows(catalog, system, "decoded_batches", pipeline.id, ("batch_id", "topic", "partition", "end_offset"))
    manifests = LandingStore(pipeline.landing_uri, pipeline.id).manifests()
    return PipelineStatus(
        cut,
        tables,
        partition_statuses(manifests, decoded, kafka_ends),
        quarantined.get(None, 0),
        kafka or NO_KAFKA,
    )


_EVENT_FIELDS = ("database", "table", "commit_ts", "status")
#: Events that apply would act on: row changes and DDL of a table, decoded or waiting for a schema.
_PENDING = "kind in ('DML', 'DDL') AND status in ('READY', 'PENDING') AND table is not null"


def _with_counts(t: TableStatus, counts: tuple[int, int], quarantined: int) -> TableStatus:
    return TableStatus(
        t.namespace, t.table, t.applied_ts, t.snapshot_id, t.rows, t.hold, t.database, t.upstream_table,
        counts[0], counts[1], quarantined,
    )  # fmt: skip


def _rows(
    catalog: Any, system: str, name: str, pipeline_id: str, fields: Sequence[str], where: str | None = None
) -> list[dict[str, Any]]:
    """Rows of a system table for one pipeline (pipeline ids are ``[a-z0-9_]``); [] before it exists."""
    from pyiceberg.exceptions import NoSuchTableError

    try:
        table = catalog.load_table((system, name))
    except NoSuchTableError:
        return []
    row_filter = f"pipeline = '{pipeline_id}'" + (f" AND {where}" if where else "")
    return list(table.scan(row_filter=row_filter, selected_fields=tuple(fields)).to_arrow().to_pylist())


def pipeline_tables(config: LakeConfig, pipeline: PipelineConfig) -> list[TableStatus]:
    return pipeline_status(config, pipeline).tables
