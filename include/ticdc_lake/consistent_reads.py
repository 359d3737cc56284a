"""Reading every table of a pipeline as of one TSO (pyiceberg; no Spark, no Airflow).

Every apply run brings all tables of a pipeline to one watermark (the run's *cut*) and records it
in the run ledger; each MERGE records the TSO it applied up to in its snapshot summary
(``ticdc.applied-ts``). So for a cut W, a table's snapshot as of W is its newest snapshot with
``applied-ts <= W``, provided the run that reached W did not hold the table back. A TSO between
two cuts is read at the cut below it: a snapshot can cover several transactions, so nothing finer
is exact. See docs/consistent-reads.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ticdc_lake import table_markers
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.identifiers import UPSTREAM_DATABASE_PROPERTY, UPSTREAM_TABLE_PROPERTY, quote
from ticdc_lake.run_ledger import LedgerStatus


@dataclass(frozen=True, slots=True)
class Cut:
    """One apply run's watermark: every table not held in that run was applied up to it."""

    run_id: str
    watermark: int
    started_at: datetime | None


@dataclass(frozen=True, slots=True)
class TableHold:
    status: str  # HELD or FAILED
    position: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class TableAsOf:
    catalog: str
    namespace: str
    table: str
    upstream: str
    #: ok: the snapshot is the table as of the cut; empty: the table existed with no rows yet;
    #: behind: the run held the table below the cut (see reason); dropped: dropped upstream by then.
    state: str
    snapshot_id: int | None = None
    applied_ts: int | None = None
    reason: str = ""

    @property
    def sql_name(self) -> str:
        return ".".join(quote(p) for p in (self.catalog, self.namespace, self.table))

    def spark_sql(self) -> str:
        """A Spark SQL query reading this table as of the cut."""
        if self.snapshot_id is None:
            return f"SELECT * FROM {self.sql_name} WHERE false"
        return f"SELECT * FROM {self.sql_name} VERSION AS OF {self.snapshot_id}"


def choose_cut(cuts: Iterable[Cut], at: int | None = None) -> Cut | None:
    """The newest cut at or below ``at`` (the newest of all when ``at`` is None); the latest run wins ties."""
    eligible = [c for c in cuts if at is None or c.watermark <= at]
    if not eligible:
        return None
    return max(eligible, key=lambda c: (c.watermark, c.started_at or datetime.min))


def snapshot_as_of(
    snapshots: Sequence[tuple[int, dict[str, str]]], pipeline_id: str, ts: int
) -> tuple[int, int] | None:
    """(snapshot id, applied TSO) of the newest snapshot this pipeline committed with applied-ts <= ``ts``.

    ``snapshots``: the table's current snapshot and its ancestors, newest first, with their summaries.
    """
    for snapshot_id, summary in snapshots:
        applied = summary.get(table_markers.APPLIED_TS)
        if applied is not None and summary.get(table_markers.PIPELINE) == pipeline_id and int(applied) <= ts:
            return snapshot_id, int(applied)
    return None


def table_as_of(
    catalog: str,
    identifier: tuple[str, str],
    properties: dict[str, str],
    snapshots: Sequence[tuple[int, dict[str, str]]],
    pipeline_id: str,
    cut: Cut,
    hold: TableHold | None,
) -> TableAsOf:
    namespace, table = identifier
    upstream = (
        f"{properties.get(UPSTREAM_DATABASE_PROPERTY, namespace)}.{properties.get(UPSTREAM_TABLE_PROPERTY, table)}"
    )
    found = snapshot_as_of(snapshots, pipeline_id, cut.watermark)
    snapshot_id, applied = found if found is not None else (None, None)
    base = TableAsOf(catalog, namespace, table, upstream, "ok", snapshot_id, applied)
    dropped = properties.get(table_markers.DROPPED_AT)
    if dropped is not None and int(dropped) <= cut.watermark:
        return _with(base, "dropped", f"dropped upstream at commit ts {dropped}")
    if hold is not None and (hold.position is None or hold.position < cut.watermark):
        at = f" at commit ts {hold.position}" if hold.position is not None else ""
        return _with(base, "behind", f"{hold.status}{at} in run {cut.run_id}: {hold.reason}")
    if found is None:
        return _with(base, "empty", "no rows applied by then")
    return base


def _with(base: TableAsOf, state: str, reason: str) -> TableAsOf:
    return TableAsOf(
        base.catalog, base.namespace, base.table, base.upstream, state, base.snapshot_id, base.applied_ts, reason
    )


# -- catalog access ----------------------------------------------------------------------------


def apply_ledger_rows(catalog: Any, system_namespace: str, pipeline_id: str) -> list[dict[str, Any]]:
    from pyiceberg.exceptions import NoSuchTableError

    try:
        ledger = catalog.load_table((system_namespace, "run_ledger"))
    except NoSuchTableError:
        return []
    scan = ledger.scan(
        row_filter=f"pipeline = '{pipeline_id}' AND stage = 'apply'",  # pipeline ids are [a-z0-9_]
        selected_fields=("run_id", "database", "table", "status", "window_end", "watermark", "message", "started_at"),
    )
    return list(scan.to_arrow().to_pylist())


def cuts_and_holds(rows: Iterable[dict[str, Any]]) -> tuple[list[Cut], dict[str, dict[tuple[str, str], TableHold]]]:
    """The cuts (one per apply run with a watermark) and, per run, the tables it held or failed."""
    cuts: list[Cut] = []
    holds: dict[str, dict[tuple[str, str], TableHold]] = {}
    for r in rows:
        if r["table"] is None and r["database"] is None:
            if r["watermark"] is not None:
                cuts.append(Cut(r["run_id"], int(r["watermark"]), r["started_at"]))
        elif r["table"] is not None and r["status"] in (LedgerStatus.HELD, LedgerStatus.FAILED):
            position = int(r["window_end"]) if r["window_end"] is not None else None
            hold = TableHold(r["status"], position, (r["message"] or "").splitlines()[0] if r["message"] else "")
            holds.setdefault(r["run_id"], {})[(r["database"], r["table"])] = hold
    return cuts, holds


def ancestry(table: Any) -> list[tuple[int, dict[str, str]]]:
    """The table's current snapshot and its ancestors, newest first, with their summaries."""
    result = []
    snapshot = table.current_snapshot()
    while snapshot is not None:
        summary = dict(snapshot.summary.additional_properties) if snapshot.summary is not None else {}
        result.append((snapshot.snapshot_id, summary))
        parent = snapshot.parent_snapshot_id
        snapshot = table.snapshot_by_id(parent) if parent is not None else None
    return result


def belongs(
    pipeline: PipelineConfig, namespace: str, properties: dict[str, str], snapshots: list[tuple[int, dict[str, str]]]
) -> bool:
    """A table this pipeline committed to, or one it created with no rows yet (its upstream name maps
    to this namespace under the pipeline's target rules). The catalog may hold other pipelines' tables."""
    if any(s.get(table_markers.PIPELINE) == pipeline.id for _, s in snapshots):
        return True
    if any(table_markers.PIPELINE in s for _, s in snapshots):
        return False  # another pipeline's table
    if (maker := properties.get(table_markers.DDL_PIPELINE)) is not None:
        return maker == pipeline.id  # a table a pipeline created or applied a DDL to, no row applied yet
    database, table = properties.get(UPSTREAM_DATABASE_PROPERTY), properties.get(UPSTREAM_TABLE_PROPERTY)
    if database is None or table is None:
        return False
    return pipeline.target.namespace_for(database) == namespace and pipeline.target.wants(database, table)


@dataclass(frozen=True, slots=True)
class OwnedTable:
    namespace: str
    name: str
    table: Any  # a pyiceberg Table
    properties: dict[str, str]
    snapshots: list[tuple[int, dict[str, str]]]


def owned_tables(catalog: Any, system_namespace: str, pipeline: PipelineConfig) -> list[OwnedTable]:
    """The pipeline's target tables in ``catalog``, in name order: every read command scopes to these
    (a catalog shared by several pipelines holds their tables side by side)."""
    result = []
    for (namespace,) in sorted(catalog.list_namespaces()):
        if namespace == system_namespace:
            continue
        for identifier in sorted(catalog.list_tables(namespace)):
            table = catalog.load_table(identifier)
            properties = dict(table.properties)
            snapshots = ancestry(table)
            if belongs(pipeline, namespace, properties, snapshots):
                result.append(OwnedTable(namespace, identifier[-1], table, properties, snapshots))
    return result


def tables_as_of(
    config: LakeConfig, pipeline: PipelineConfig, at: int | None = None
) -> tuple[Cut | None, list[TableAsOf]]:
    """The cut at or below ``at`` (newest when None) and every table of the pipeline as of it."""
    catalog_config = config.catalog_for(pipeline)
    catalog = load_catalog(pipeline.catalog, catalog_config)
    cuts, holds = cuts_and_holds(apply_ledger_rows(catalog, catalog_config.system_namespace, pipeline.id))
    cut = choose_cut(cuts, at)
    if cut is None:
        return None, []
    run_holds = holds.get(cut.run_id, {})
    result = []
    for owned in owned_tables(catalog, catalog_config.system_namespace, pipeline):
        properties = owned.properties
        upstream = (properties.get(UPSTREAM_DATABASE_PROPERTY), properties.get(UPSTREAM_TABLE_PROPERTY))
        hold = run_holds.get(upstream) if upstream[0] is not None and upstream[1] is not None else None  # type: ignore[arg-type]
        result.append(
            table_as_of(
                pipeline.catalog, (owned.namespace, owned.name), properties, owned.snapshots, pipeline.id, cut, hold
            )
        )
    return cut, result
