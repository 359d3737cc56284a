"""The run ledger: its row statuses, and its rows read with pyiceberg (one row per run, stage and table,
written by the Spark stages)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from ticdc_lake.config import LakeConfig, PipelineConfig


class LedgerStatus(StrEnum):
    """The ``status`` column of a run ledger row; the values are what the table stores (docs/exactly-once.md).

    A :class:`~enum.StrEnum`: a member equals its value, so rows read back from the table (plain strings)
    compare with the members directly. Importing it loads no heavy client (plugins parse with it).
    """

    #: A stage's pipeline-level row: the stage did its work.
    OK = "OK"
    #: A stage or table had nothing to do (everything already decoded, known or applied).
    NOOP = "NOOP"
    #: A table row of apply: its events (or a DDL) were applied.
    APPLIED = "APPLIED"
    #: A table row of apply or rebuild: the table waits (a quarantined event, a pending schema, ...).
    HELD = "HELD"
    #: A stage or table failed; the message says why.
    FAILED = "FAILED"
    #: A table row of rebuild: the table was rebuilt from the beginning.
    REBUILT = "REBUILT"


def ledger_rows(
    config: LakeConfig, pipeline: PipelineConfig, run_id: str | None = None, newest_runs: int = 3
) -> list[dict[str, Any]]:
    """The ledger rows of one run, or of the ``newest_runs`` newest runs, oldest first, in stage order."""
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.expressions import And, BooleanExpression, EqualTo

    from ticdc_lake.catalog import load_catalog  # pyarrow, pyiceberg: not for the importers of LedgerStatus

    catalog_config = config.catalog_for(pipeline)
    catalog = load_catalog(pipeline.catalog, catalog_config)
    try:
        table = catalog.load_table((catalog_config.system_namespace, "run_ledger"))
    except NoSuchTableError:
        return []
    row_filter: BooleanExpression = EqualTo("pipeline", pipeline.id)  # type: ignore[call-arg, arg-type]
    if run_id is not None:  # each append is a file of one run: the scan reads only that run's files
        row_filter = And(row_filter, EqualTo("run_id", run_id))  # type: ignore[call-arg, arg-type]
    rows = table.scan(row_filter=row_filter).to_arrow().to_pylist()
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
