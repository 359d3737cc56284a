"""Choosing the cut and each table's snapshot for a consistent read (no catalog needed)."""

from __future__ import annotations

from datetime import UTC, datetime

from ticdc_lake.config import PipelineConfig
from ticdc_lake.consistent_reads import (
    Cut,
    TableHold,
    belongs,
    choose_cut,
    cuts_and_holds,
    snapshot_as_of,
    table_as_of,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 1, 2, tzinfo=UTC)


def _summary(applied: int, pipeline: str = "p") -> dict[str, str]:
    return {"ticdc.applied-ts": str(applied), "ticdc.pipeline": pipeline}


def test_choose_cut_takes_the_newest_at_or_below_and_the_latest_run_on_ties() -> None:
    cuts = [Cut("r1", 100, T0), Cut("r2", 200, T0), Cut("r3", 200, T1)]
    assert choose_cut(cuts) == Cut("r3", 200, T1)
    assert choose_cut(cuts, 199) == Cut("r1", 100, T0)
    assert choose_cut(cuts, 99) is None


def test_snapshot_as_of_skips_newer_and_foreign_snapshots() -> None:
    ancestry = [(3, _summary(300)), (2, _summary(250, "other")), (1, {}), (0, _summary(100))]
    assert snapshot_as_of(ancestry, "p", 299) == (0, 100)
    assert snapshot_as_of(ancestry, "p", 300) == (3, 300)
    assert snapshot_as_of(ancestry, "p", 99) is None


def test_table_states() -> None:
    cut = Cut("r2", 200, T0)
    props = {"ticdc.upstream-database": "shop", "ticdc.upstream-table": "orders"}
    ancestry = [(5, _summary(200)), (4, _summary(100))]
    ok = table_as_of("lake", ("shop", "orders"), props, ancestry, "p", cut, None)
    assert (ok.state, ok.snapshot_id, ok.applied_ts, ok.upstream) == ("ok", 5, 200, "shop.orders")
    assert ok.spark_sql() == "SELECT * FROM `lake`.`shop`.`orders` VERSION AS OF 5"
    held = table_as_of("lake", ("shop", "orders"), props, [(4, _summary(100))], "p", cut, TableHold("HELD", 150, "x"))
    assert (held.state, held.snapshot_id, held.reason) == ("behind", 4, "HELD at commit ts 150 in run r2: x")
    dropped = table_as_of("lake", ("shop", "orders"), {**props, "ticdc.dropped-at": "180"}, ancestry, "p", cut, None)
    assert (dropped.state, dropped.reason) == ("dropped", "dropped upstream at commit ts 180")
    empty = table_as_of("lake", ("shop", "orders"), props, [], "p", cut, None)
    assert (empty.state, empty.spark_sql()) == ("empty", "SELECT * FROM `lake`.`shop`.`orders` WHERE false")


def test_cuts_and_holds_from_ledger_rows() -> None:
    def row(run: str, table: str | None, status: str, **values: object) -> dict[str, object]:
        base = {"run_id": run, "database": "shop" if table else None, "table": table, "status": status}
        return {"window_end": None, "watermark": None, "message": None, "started_at": T0, **base, **values}

    cuts, holds = cuts_and_holds(
        [
            row("r1", None, "OK", watermark=100),
            row("r1", "a", "APPLIED", window_end=100),
            row("r1", "b", "HELD", window_end=90, message="waits\nmore"),
            row("r2", None, "OK", watermark=None),
        ]
    )
    assert cuts == [Cut("r1", 100, T0)]
    assert holds == {"r1": {("shop", "b"): TableHold("HELD", 90, "waits")}}


def _pipeline(pipeline_id: str) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "id": pipeline_id,
            "protocol": "simple-json",
            "kafka": {"topics": ["t"]},
            "landing_uri": "file:///lake/landing",
            "catalog": "lake",
        }
    )


def test_a_table_no_row_is_applied_to_belongs_to_the_pipeline_that_made_it() -> None:
    """A table created (or altered) by a DDL and no row applied yet has no snapshot saying whose it
    is: its ``ticdc.ddl-pipeline`` property does; without it the upstream name decides."""
    props = {"ticdc.upstream-database": "shop", "ticdc.upstream-table": "orders"}
    made_by_p = {**props, "ticdc.ddl-pipeline": "p"}
    assert belongs(_pipeline("p"), "shop", made_by_p, [])
    assert not belongs(_pipeline("q"), "shop", made_by_p, [])
    assert belongs(_pipeline("q"), "shop", props, [])  # made before the property: its name maps here
    # A snapshot a pipeline committed says more than the property.
    assert belongs(_pipeline("q"), "shop", made_by_p, [(1, _summary(100, "q"))])
