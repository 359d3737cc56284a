"""Pipeline status read from the catalog with pyiceberg (no Spark, no Airflow)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ticdc_lake import tso
from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import LakeConfig, PipelineConfig

APPLIED_TS = "ticdc.applied-ts"
PIPELINE_PROP = "ticdc.pipeline"


@dataclass(frozen=True, slots=True)
class TableStatus:
    namespace: str
    table: str
    applied_ts: int | None
    snapshot_id: int | None
    rows: int

    @property
    def applied_at(self) -> datetime | None:
        return tso.to_datetime(self.applied_ts) if self.applied_ts else None


def applied_snapshot(table: Any, pipeline_id: str) -> tuple[int | None, int | None]:
    """(applied TSO, snapshot id) of the newest ancestor snapshot this pipeline committed."""
    snapshot = table.current_snapshot()
    while snapshot is not None:
        summary = snapshot.summary.additional_properties if snapshot.summary is not None else {}
        if APPLIED_TS in summary and summary.get(PIPELINE_PROP) == pipeline_id:
            return int(summary[APPLIED_TS]), snapshot.snapshot_id
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return None, None


def pipeline_tables(config: LakeConfig, pipeline: PipelineConfig) -> list[TableStatus]:
    """Every target table in the pipeline's catalog that this pipeline has written."""
    catalog_config = config.catalog_for(pipeline)
    catalog = load_catalog(pipeline.catalog, catalog_config)
    result = []
    for (namespace,) in sorted(catalog.list_namespaces()):
        if namespace == catalog_config.system_namespace:
            continue
        for identifier in sorted(catalog.list_tables(namespace)):
            table = catalog.load_table(identifier)
            applied, snapshot_id = applied_snapshot(table, pipeline.id)
            if applied is None:
                continue
            current = table.current_snapshot()
            rows = int(current.summary.additional_properties.get("total-records", 0)) if current else 0
            deletes = int(current.summary.additional_properties.get("total-position-deletes", 0)) if current else 0
            result.append(TableStatus(namespace, identifier[-1], applied, snapshot_id, rows - deletes))
    return result
