"""The pipeline's run turn: one run at a time, the earliest-started waiting run first."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from ticdc_lake.landing.run_turn import RunTurn
from ticdc_lake.object_store import S3Settings

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
        f"run 'b3' has the turn of pipeline 'orders' ({where}) until it ends; "
        "if that run is stuck (its process gone), mark it failed in Airflow"
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


@pytest.fixture
def bucket(s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new empty bucket on the local S3 server, with this process's AWS_* pointing at it; removed afterwards."""
    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)
    name = f"turn-{uuid.uuid4().hex[:12]}"
    keys = {"access_key": s3_env["AWS_ACCESS_KEY_ID"], "secret_key": s3_env["AWS_SECRET_ACCESS_KEY"]}
    options = S3Settings.from_environment().pyarrow_options()
    s3 = pafs.S3FileSystem(allow_bucket_creation=True, allow_bucket_deletion=True, **keys, **options)
    s3.create_dir(name)
    yield name
    with contextlib.suppress(OSError):  # best effort: S3Proxy's filesystem store can race on its folders
        s3.delete_dir(name)


def test_on_s3_only_one_run_creates_the_next_turn(bucket: str) -> None:
    first = RunTurn(f"s3://{bucket}/landing", "orders")
    second = RunTurn(f"s3://{bucket}/landing", "orders")
    assert first._create(f"{first.folder}/000000000001", b'{"run_id": "a"}') is True
    assert second._create(f"{second.folder}/000000000001", b'{"run_id": "b"}') is False  # conditional PUT: 412
    assert second.holder() == (1, "a")
    assert second.poke("b", T0, {"a", "b"}.__contains__, running=2, now=T0) == (
        f"run 'a' has the turn of pipeline 'orders' (s3://{bucket}/landing/orders/locks/turn) until it ends; "
        "if that run is stuck (its process gone), mark it failed in Airflow"
    )
    assert second.poke("b", T0, {"b"}.__contains__, running=1, now=T0) is None
    assert first.holder() == (2, "b")
