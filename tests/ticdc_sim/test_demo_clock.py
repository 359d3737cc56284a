"""The demo's simulated upstream runs on real time: a fresh or resumed upstream ends near now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ticdc_lake import tso
from ticdc_sim.demo import upstream_start
from ticdc_sim.simulator import DEFAULT_START, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig


def test_the_transactions_of_a_fresh_upstream_end_within_seconds_before_now() -> None:
    now = datetime.now(UTC)
    sim = TicdcSimulator(seed=7, topic="t", partitions=3, start=upstream_start(400, now))
    sim.setup()
    sim.run_transactions(400)
    last_commit = tso.to_datetime(sim.model.last_commit_ts)
    assert now - timedelta(seconds=30) < last_commit < now


def test_a_saved_upstream_resumes_at_real_time_without_a_watermark_per_idle_second() -> None:
    sim = TicdcSimulator(seed=7, topic="t", partitions=3, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(20)
    sim.take()
    assert sim.now < DEFAULT_START + timedelta(hours=1)  # an upstream saved by an earlier demo, in 2025
    now = datetime.now(UTC)
    resume = upstream_start(400, now)
    assert resume == now - timedelta(seconds=400 * 0.21 + 2)

    sim.idle_until(resume)
    assert sim.now == resume
    assert sim.take() == []  # nothing sent for the idle months
    sim.run_transactions(400)
    sim.flush_watermark()
    assert now - timedelta(seconds=30) < tso.to_datetime(sim.model.last_commit_ts) < now
    watermarks = [m for m in sim.take() if m.kind == "WATERMARK"]
    assert 3 * 60 <= len(watermarks) <= 3 * 120  # one per second and partition while transactions ran
    sim.idle_until(resume)  # an earlier moment: the clock never goes back
    assert sim.now > resume
