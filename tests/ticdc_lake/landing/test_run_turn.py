"""The pipeline's run turn: one run at a time, the earliest-started waiting run first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from ticdc_lake.landing.run_turn import RunTurn

T0 = datetime(2026, 11, 21, 10, tzinfo=UTC)


def _turn(tmp_path: Path, settle_s: float = 120.0) -> RunTurn:
    return RunTurn(f"file://{tmp_path}/landing", "orders", settle_s=settle_s)


def test_runs_take_the_turn_one_after_the_other_in_start_order(tmp_path: Path) -> None:
    turn = _turn(tmp_path)
    active = {"b3", "b2", "b1"}
    # Started in the backfill's order (newest interval first); b1 looks first, but b3 started first.
    assert turn.poke("b1", T0 + timedelta(seconds=2), active.__contains__, running=3, now=T0) == (
        "2 other running run(s) of pipeline 'orders' have not reached their land task yet; "
        "the run that started first goes first"
    )
    assert turn.poke("b2", T0 + timedelta(seconds=1), active.__contains__, running=3, now=T0) == (
        "1 other running run(s) of pipeline 'orders' have not reached their land task yet; "
        "the run that started first goes first"
    )
    assert turn.poke("b1", T0 + timedelta(seconds=2), active.__contains__, running=3, now=T0) == (
        "1 other running run(s) of pipeline 'orders' have not reached their land task yet; "
        "the run that started first goes first"
    )
    assert turn.poke("b3", T0, active.__contains__, running=3, now=T0) is None
    assert turn.holder() == (1, "b3")
    assert turn.poke("b3", T0, active.__contains__, running=3, now=T0) is None  # a retry keeps it
    where = f"file://{tmp_path}/landing/orders/locks/turn"
    assert turn.poke("b1", T0 + timedelta(seconds=2), active.__contains__, running=3, now=T0) == (
        f"run 'b3' has the turn of pipeline 'orders' ({where})"
    )
    active.discard("b3")  # its run ended: the turn is free, b2 started before b1
    assert turn.poke("b1", T0 + timedelta(seconds=2), active.__contains__, running=2, now=T0) == (
        "run 'b2' started earlier and goes first"
    )
    assert turn.poke("b2", T0 + timedelta(seconds=1), active.__contains__, running=2, now=T0) is None
    active.discard("b2")
    assert turn.poke("b1", T0 + timedelta(seconds=2), active.__contains__, running=1, now=T0) is None
    assert turn.holder() == (3, "b1")


def test_a_run_that_never_reaches_land_holds_the_others_back_only_for_the_settle_time(tmp_path: Path) -> None:
    turn = _turn(tmp_path, settle_s=60)
    active = {"scheduled", "stuck"}.__contains__
    assert turn.poke("scheduled", T0, active, running=2, now=T0) is not None
    assert turn.poke("scheduled", T0, active, running=2, now=T0 + timedelta(seconds=59)) is not None
    assert turn.poke("scheduled", T0, active, running=2, now=T0 + timedelta(seconds=60)) is None


def test_a_waiting_run_that_ended_is_forgotten(tmp_path: Path) -> None:
    turn = _turn(tmp_path)
    assert turn.poke("early", T0, {"early", "late"}.__contains__, running=2, now=T0) is not None
    # "early" was marked failed before it got the turn: "late" does not wait for it.
    assert turn.poke("late", T0 + timedelta(seconds=5), {"late"}.__contains__, running=1, now=T0) is None
    assert not list((tmp_path / "landing/orders/locks/turn/waiting").iterdir())
