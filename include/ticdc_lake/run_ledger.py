"""The run ledger read with pyiceberg: one row per run, stage and table (written by the Spark stages)."""

from __future__ import annotations

from typing import Any

from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import LakeConfig, PipelineConfig


def ledger_rows(
    config: LakeConfig, pipeline: PipelineConfig, run_id: str | None = None, newest_runs: int = 3
) -> list[dict[str, Any]]:
    """The ledger rows of one run, or of the ``newest_runs`` newest runs, oldest first, in stage order."""
    from pyiceberg.exceptions import NoSuchTableError

    catalog_config = config.catalog_for(pipeline)
    catalog = load_catalog(pipeline.catalog, catalog_config)
    try:
        table = catalog.load_table((catalog_config.system_namespace, "run_ledger"))
    except NoSuchTableError:
        return []
    rows = table.scan(row_filter=f"pipeline = '{pipeline.id}'").to_arrow().to_pylist()  # ids are [a-z0-9_]
    started: dict[str, Any] = {}
    for r in rows:
        first = started.get(r["run_id"])
        if first is None or r["started_at"] < first:
            started[r["run_id"]] = r["started_at"]
    runs = [run_id] if run_id is not None else sorted(started, key=lambda k: started[k])[-newest_runs:]
    stage_order = {"land": 0, "decode": 1, "schema_history": 2, "apply": 3}
    chosen = [r for r in rows if r["run_id"] in runs]
    return sorted(
        chosen,
        key=lambda r: (
            started[r["run_id"]],
            r["run_id"],
            stage_order.get(r["stage"], 9),
            r["table"] is None,
            r["database"] or "",
            r["table"] or "",
        ),
    )
