"""Pipeline status read from the catalog with pyiceberg (no Spark, no Airflow)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ticdc_lake import table_markers, tso
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.consistent_reads import Cut, TableHold, _ledger_rows, choose_cut, cuts_and_holds
from ticdc_lake.identifiers import UPSTREAM_DATABASE_PROPERTY, UPSTREAM_TABLE_PROPERTY

APPLIED_TS = table_markers.APPLIED_TS
PIPELINE_PROP = table_markers.PIPELINE


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

    @property
    def applied_at(self) -> datetime | None:
        return tso.to_datetime(self.applied_ts) if self.applied_ts else None


@dataclass(frozen=True, slots=True)
class PipelineStatus:
    #: The newest apply run's watermark (every table not held is applied up to it).
    cut: Cut | None
    tables: list[TableStatus]


def applied_snapshot(table: Any, pipeline_id: str) -> tuple[int | None, int | None]:
    """(applied TSO, snapshot id) of the newest ancestor snapshot this pipeline committed."""
    snapshot = table.current_snapshot()
    while snapshot is not None:
        summary = snapshot.summary.additional_properties if snapshot.summary is not None else {}
        if APPLIED_TS in summary and summary.get(PIPELINE_PROP) == pipeline_id:
            return int(summary[APPLIED_TS]), snapshot.snapshot_id
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return None, None


def pipeline_status(config: LakeConfig, pipeline: PipelineConfig) -> PipelineStatus:
    """Every target table in the pipeline's catalog that this pipeline has written, and the newest cut."""
    catalog_config = config.catalog_for(pipeline)
    catalog = load_catalog(pipeline.catalog, catalog_config)
    cuts, holds = cuts_and_holds(_ledger_rows(catalog, catalog_config.system_namespace, pipeline.id))
    cut = choose_cut(cuts)
    run_holds = holds.get(cut.run_id, {}) if cut is not None else {}
    result = []
    for (namespace,) in sorted(catalog.list_namespaces()):
        if namespace == catalog_config.system_namespace:
            continue
        for identifier in sorted(catalog.list_tables(namespace)):
            table = catalog.load_table(identifier)
            applied, snapshot_id = applied_snapshot(table, pipeline.id)
            properties = dict(table.properties)
            ddl_applied = properties.get(table_markers.DDL_APPLIED_TS)
            if applied is None and ddl_applied is None:
                continue
            if ddl_applied is not None and (applied is None or int(ddl_applied) > applied):
                applied = int(ddl_applied)
            current = table.current_snapshot()
            summary = current.summary.additional_properties if current and current.summary else {}
            rows = int(summary.get("total-records", 0)) - int(summary.get("total-position-deletes", 0))
            rows -= int(summary.get("total-equality-deletes", 0))
            upstream = (properties.get(UPSTREAM_DATABASE_PROPERTY, ""), properties.get(UPSTREAM_TABLE_PROPERTY, ""))
            hold = run_holds.get(upstream)
            result.append(TableStatus(namespace, identifier[-1], applied, snapshot_id, rows, hold))
    return PipelineStatus(cut, result)


def pipeline_tables(config: LakeConfig, pipeline: PipelineConfig) -> list[TableStatus]:
    return pipeline_status(config, pipeline).tables
