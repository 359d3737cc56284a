"""Checks of a lake against the simulator's reference model (end-to-end tests and service tests)."""

from __future__ import annotations

from typing import Any

from ticdc_lake.status import applied_snapshot
from ticdc_sim.compare import table_differences
from ticdc_sim.simulator import TicdcSimulator


def assert_lake_equals_model(catalog: Any, pipeline_id: str, sim: TicdcSimulator, watermark: int) -> None:
    """Every upstream table in ``catalog`` (pyiceberg) equals the reference model as of ``watermark``."""
    problems = []
    for database, table in sim.model.tables():
        iceberg = catalog.load_table((database, table))
        applied, _ = applied_snapshot(iceberg, pipeline_id)
        assert applied is not None, f"{database}.{table} was never applied"
        assert applied <= watermark, (database, table, applied, watermark)
        expected = sim.expected_iceberg_rows(database, table, watermark)
        diff = table_differences(expected, iceberg.scan().to_arrow().to_pylist())
        if diff:
            problems.append(f"{database}.{table} (applied {applied}, watermark {watermark}):\n  " + "\n  ".join(diff))
    assert not problems, "\n".join(problems)


def watermark_of(sim: TicdcSimulator) -> int:
    """The pipeline watermark after everything produced so far: the minimum over partitions."""
    marks = [sim.last_watermark(p) for p in range(sim.partitions)]
    assert all(m is not None for m in marks)
    return min(m for m in marks if m is not None)
