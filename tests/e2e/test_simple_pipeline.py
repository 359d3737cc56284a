"""Simple protocol (JSON and Avro) from the real broker to Iceberg, through Airflow's test runner and Spark."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from e2e_support import Pipeline, watermark_of

from ticdc_lake.cli.main import main
from ticdc_lake.simulator.encoding import ProtocolEncoder
from ticdc_lake.simulator.producer import create_topic, produce
from ticdc_lake.simulator.simple_avro_encoder import SimpleAvroEncoder
from ticdc_lake.simulator.simulator import TicdcSimulator
from ticdc_lake.simulator.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]


def _ledger(pipeline: Pipeline) -> list[dict[str, Any]]:
    table = pipeline.catalog().load_table(("ticdc_system", "run_ledger"))
    return [r for r in table.scan().to_arrow().to_pylist() if r["pipeline"] == pipeline.id]


def _encoder(protocol: str) -> ProtocolEncoder | None:
    return SimpleAvroEncoder("UTC") if protocol == "simple-avro" else None


@pytest.mark.parametrize("protocol", ["simple-json", "simple-avro"])
def test_two_runs_equal_the_model_and_a_third_changes_nothing(
    e2e_pipeline: Callable[..., Pipeline], kafka_bootstrap: str, capsys: pytest.CaptureFixture[str], protocol: str
) -> None:
    pipeline = e2e_pipeline(protocol)
    create_topic(kafka_bootstrap, pipeline.topic, 3)
    sim = TicdcSimulator(
        seed=20261121,
        topic=pipeline.topic,
        partitions=3,
        workload=WorkloadConfig(tables=4, databases=2),
        encoder=_encoder(protocol),
    )
    sim.setup()
    sim.run_transactions(120)
    produce(kafka_bootstrap, sim.take())
    first_watermark = watermark_of(sim)

    run1 = pipeline.run(datetime(2026, 11, 20, 10, tzinfo=UTC))
    assert run1.succeeded, run1.output[-5000:]
    pipeline.assert_equals_model(sim, first_watermark)

    # Second run: new changes (the workload mixes key-changing updates and deletes), a tail of
    # transactions after the last watermark, and an at-least-once replay of an applied range.
    sim.run_transactions(120)
    sim.flush_watermark()
    sim.run_transactions(15)  # the newest of these come after the last watermark: not applied yet
    second_watermark = watermark_of(sim)
    assert second_watermark < sim.model.last_commit_ts, "the test wants transactions after the watermark"
    replayed = sim.replay(partitions=[0, 1, 2], start=3, count=25)
    produce(kafka_bootstrap, sim.take())
    assert any(m.kind == "DML" for m in replayed)
    run2 = pipeline.run(datetime(2026, 11, 20, 11, tzinfo=UTC))
    assert run2.succeeded, run2.output[-5000:]
    pipeline.assert_equals_model(sim, second_watermark)

    ops = {c.op.value for t in sim.model.transactions() for c in t.changes}
    assert {"INSERT", "UPDATE", "DELETE"} <= ops
    assert any(c.split for t in sim.model.transactions() for c in t.changes), "no key-changing update in workload"
    ledger = _ledger(pipeline)
    runs = sorted((r["started_at"], r["run_id"]) for r in ledger if r["stage"] == "apply" and r["table"] is None)
    assert len(runs) == 2, runs
    assert {(r["stage"], r["status"]) for r in ledger if r["run_id"] == runs[1][1] and r["table"] is None} == {
        ("decode", "OK"),
        ("schema_history", "NOOP"),
        ("apply", "OK"),
    }
    second_run = [r for r in ledger if r["run_id"] == runs[1][1] and r["table"] is not None]
    assert {r["status"] for r in second_run} <= {"APPLIED", "NOOP"}, second_run
    assert sum(int(r["replays_skipped"] or 0) for r in second_run) > 0, second_run

    # Third run: no new message -> no new snapshot anywhere.
    before = pipeline.snapshot_ids(sim)
    run3 = pipeline.run(datetime(2026, 11, 20, 12, tzinfo=UTC))
    assert run3.succeeded, run3.output[-5000:]
    assert pipeline.snapshot_ids(sim) == before
    pipeline.assert_equals_model(sim, second_watermark)

    # The status command reports the same applied position for every table.
    assert main(["--config", str(pipeline.config_path), "status"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "applied_ts" in line]
    assert len(lines) == len(sim.model.tables())
    assert all(f"applied_ts {second_watermark} " in line for line in lines), lines


def test_malformed_message_halts_then_skip_policy_records_and_proceeds(
    e2e_pipeline: Callable[..., Pipeline], kafka_bootstrap: str
) -> None:
    pipeline = e2e_pipeline()
    create_topic(kafka_bootstrap, pipeline.topic, 3)
    sim = TicdcSimulator(seed=5, topic=pipeline.topic, partitions=3, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(30)
    sim.append_malformed(1, b'{"version":1,"type":"INSERT","database":')
    sim.run_transactions(30)
    sim.flush_watermark()
    messages = sim.take()
    offsets = produce(kafka_bootstrap, messages)
    bad_partition, bad_offset = next(o for m, o in zip(messages, offsets, strict=True) if m.kind == "MALFORMED")

    run1 = pipeline.run(datetime(2026, 11, 20, 10, tzinfo=UTC))
    assert not run1.succeeded
    where = (
        f"topic {pipeline.topic!r} partition {bad_partition} offset {bad_offset}: simple-json: value is not valid JSON"
    )
    assert where in run1.output, run1.output[-5000:]
    assert "set policies.on_decode_error: skip" in run1.output
    quarantine = pipeline.catalog().load_table(("ticdc_system", "quarantine")).scan().to_arrow().to_pylist()
    rows = [r for r in quarantine if r["pipeline"] == pipeline.id]
    assert [(r["partition"], r["offset"], r["status"]) for r in rows] == [(bad_partition, bad_offset, "QUARANTINED")]
    assert rows[0]["raw_value"] == b'{"version":1,"type":"INSERT","database":'
    halted = [r for r in _ledger(pipeline) if r["stage"] == "decode"]
    assert [r["status"] for r in halted] == ["HALTED"]
    assert f"partition {bad_partition} offset {bad_offset}" in halted[0]["message"]

    pipeline.write_config(on_decode_error="skip")
    run2 = pipeline.run(datetime(2026, 11, 20, 11, tzinfo=UTC))
    assert run2.succeeded, run2.output[-5000:]
    quarantine = pipeline.catalog().load_table(("ticdc_system", "quarantine")).scan().to_arrow().to_pylist()
    rows = [r for r in quarantine if r["pipeline"] == pipeline.id]
    assert [(r["offset"], r["status"], r["policy"]) for r in rows] == [(bad_offset, "SKIPPED", "skip")]
    assert rows[0]["resolved_run_id"] is not None
    pipeline.assert_equals_model(sim, watermark_of(sim))
