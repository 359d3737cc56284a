"""The low-water TSO a run records: below it every event is applied for every table (docs/apply-performance.md)."""

from __future__ import annotations

from datetime import UTC, datetime

from ticdc_lake.apply.quarantine_holds import Hold, Holds
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.spark import ledger
from ticdc_lake.spark.apply_job import ApplySummary, _low_water_after, _Scope


def _row(table: str | None, status: str, end: int | None) -> ledger.LedgerRow:
    return ledger.LedgerRow(
        "p", "r", "apply", "shop", table, None, LedgerStatus(status), None, ledger.tso(end), None,
        None, None, None, None, None, None, None, None, datetime(2026, 1, 1, tzinfo=UTC), 0,
    )  # fmt: skip


def test_the_lowest_table_position_and_hold_below_the_watermark() -> None:
    summary = ApplySummary({"a": 500, "b": 700}, watermark=500)
    # A NOOP table (all its events applied; say it has none above the mark) does not hold the mark back.
    rows = [_row("t1", "APPLIED", 500), _row("t2", "HELD", 320), _row("t3", "NOOP", 10)]
    assert _low_water_after(rows, summary, None, {"a": 500, "b": 500}) == 320
    holds = Holds(topics={"b": Hold(300, "quarantined", "b")})
    assert _low_water_after(rows, summary, holds, {"a": 500, "b": 500}) == 300
    assert _low_water_after([], summary, None, {"a": 500, "b": 500}) == 500


def test_no_mark_while_a_topic_has_no_watermark_a_database_ddl_failed_or_a_position_is_unknown() -> None:
    waiting = ApplySummary({"a": 500, "b": None}, watermark=500)
    assert _low_water_after([_row("t1", "APPLIED", 500)], waiting, None, {"a": 500}) is None
    assert _low_water_after([_row("t1", "APPLIED", 500)], waiting, None, {"a": 500, "b": 500}) == 500  # retired
    summary = ApplySummary({"a": 500}, watermark=500)
    assert _low_water_after([_row(None, "FAILED", None)], summary, None, {"a": 500}) is None
    assert _low_water_after([_row(None, "APPLIED", None), _row("t1", "APPLIED", 400)], summary, None, {"a": 500}) == 400
    assert _low_water_after([_row("t1", "FAILED", None)], summary, None, {"a": 500}) is None
    assert _low_water_after([], ApplySummary({"a": None}), None, {}) is None


def test_a_scope_is_settled_when_the_watermark_is_at_the_low_water_mark_and_no_batch_is_new() -> None:
    def scope(marks: dict[str, int], low: int, this_run: set[str]) -> _Scope:
        return _Scope({"b1", "b2"}, set(), marks, low, this_run)

    assert scope({"a": 500, "b": 500}, 500, set()).settled()  # nothing above the low-water mark to read
    assert not scope({"a": 500}, 400, set()).settled()  # events in (400, 500] may wait
    assert not scope({"a": 500}, 500, {"b2"}).settled()  # this run decoded b2: its replays are counted
    assert not scope({"a": 0}, 0, set()).settled()  # no low-water mark recorded yet
    assert not scope({}, 500, set()).settled()  # no live topic


def test_the_ddl_read_covers_exactly_the_parts_of_the_scope_whose_decode_wrote_ddl() -> None:
    """``decoded_batches.ddl`` names the batch partitions with DDL events: the DDL read scans only
    those of the scope (whole batches and single parts), so a run without DDL plans no DDL scan."""
    wrote = frozenset({("b1", "t", 0), ("b3", "t", 0), ("b3", "t", 1), ("b9", "t", 0)})
    scope = _Scope({"b1", "b2"}, {("b3", "t", 0)}, {"t": 100}, 0, set(), wrote)
    assert scope.ddl_scope() == [("b1", "t", 0), ("b3", "t", 0)]
    assert scope.with_ddls()
    assert not _Scope({"b1", "b2"}, set(), {"t": 100}, 0, set(), frozenset({("b9", "t", 0)})).with_ddls()
    assert not _Scope({"b1", "b2"}, set(), {"t": 100}, 0, set()).with_ddls()
