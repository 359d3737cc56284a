"""Simple JSON from the real broker to Iceberg through Airflow's test runner and spark-submit: two
DAG runs of one pipeline (a malformed message held, then skipped, with new changes, a tail and an
at-least-once replay), each ending with every table equal to the model. (A run with nothing new
changes nothing: test_concurrent_runs, whose second run applies nothing, and test_rebuild.)

simple-avro goes through the same DAG, operators and spark-submit: it is covered in-process by
test_schema_evolution and test_randomized_apply (an Airflow run costs about a minute of CI).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from e2e_support import Pipeline, ledger_rows, watermark_of

from ticdc_lake.cli.main import main
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]

MALFORMED = b'{"version":1,"type":"INSERT","database":'


def _quarantined(pipeline: Pipeline) -> list[dict[str, object]]:
    quarantine = pipeline.catalog().load_table(("ticdc_system", "quarantine")).scan().to_arrow().to_pylist()
    return [r for r in quarantine if r["pipeline"] == pipeline.id]


def test_a_malformed_message_is_held_then_skipped_and_replays_are_counted(
    e2e_pipeline: Callable[..., Pipeline], kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = e2e_pipeline("simple-json")
    create_topic(kafka_bootstrap, pipeline.topic, 3)
    sim = TicdcSimulator(
        seed=20261121, topic=pipeline.topic, partitions=3, workload=WorkloadConfig(tables=4, databases=2)
    )

    # Run 1: the CREATE TABLEs and 120 transactions, with a malformed message in partition 1 half way.
    sim.setup()
    sim.run_transactions(60)
    hold_at = sim.last_watermark(1)
    assert hold_at is not None
    sim.append_malformed(1, MALFORMED)
    sim.run_transactions(60)
    sim.flush_watermark()
    messages = sim.take()
    offsets = produce(kafka_bootstrap, messages)
    bad_partition, bad_offset = next(o for m, o in zip(messages, offsets, strict=True) if m.kind == "MALFORMED")

    # Under halt the run succeeds; the message does not tell its table, so every table of its topic is
    # held at the last watermark before it in its partition, and the ledger says why and what to do.
    run1 = pipeline.run(datetime(2026, 11, 20, 10, tzinfo=UTC))
    assert run1.succeeded, run1.output[-5000:]
    where = (
        f"topic {pipeline.topic!r} partition {bad_partition} offset {bad_offset}: simple-json: value is not valid JSON"
    )
    assert where in run1.output, run1.output[-5000:]
    assert "set policies.on_decode_error: skip" in run1.output
    rows = _quarantined(pipeline)
    assert [(r["partition"], r["offset"], r["status"]) for r in rows] == [(bad_partition, bad_offset, "QUARANTINED")]
    assert rows[0]["raw_value"] == MALFORMED
    assert (rows[0]["database"], rows[0]["table"]) == (None, None)
    decoded = [r for r in ledger_rows(pipeline) if r["stage"] == "decode"]
    assert [r["status"] for r in decoded] == ["OK"]
    assert f"partition {bad_partition} offset {bad_offset}" in decoded[0]["message"]
    held = [r for r in ledger_rows(pipeline) if r["stage"] == "apply" and r["table"] is not None]
    assert {r["table"] for r in held} == {table for _, table in sim.model.tables()}
    assert {r["status"] for r in held} == {"HELD"}
    assert all(
        f"every table of topic {pipeline.topic!r} (the message does not tell its table) is held at commit ts "
        f"{hold_at}" in r["message"]
        for r in held
    )
    pipeline.assert_equals_model(sim, hold_at)

    # Run 2 under skip: 120 more transactions (key-changing updates and deletes), a tail after the
    # last watermark that must wait, and an at-least-once replay of an applied range.
    pipeline.write_config(on_decode_error="skip")
    sim.run_transactions(120)
    sim.flush_watermark()
    sim.run_transactions(15)
    second_watermark = watermark_of(sim)
    assert second_watermark < sim.model.last_commit_ts, "the test wants transactions after the watermark"
    replayed = sim.replay(partitions=[0, 2], start=3, count=25)  # not partition 1: its malformed message
    assert any(m.kind == "DML" for m in replayed)
    produce(kafka_bootstrap, sim.take())
    run2 = pipeline.run(datetime(2026, 11, 20, 11, tzinfo=UTC))
    assert run2.succeeded, run2.output[-5000:]
    pipeline.assert_equals_model(sim, second_watermark)
    rows = _quarantined(pipeline)
    assert [(r["offset"], r["status"], r["policy"]) for r in rows] == [(bad_offset, "SKIPPED", "skip")]
    assert rows[0]["resolved_run_id"] is not None

    ops = {c.op.value for t in sim.model.transactions() for c in t.changes}
    assert {"INSERT", "UPDATE", "DELETE"} <= ops
    assert any(c.split for t in sim.model.transactions() for c in t.changes), "the workload wants key changes"
    ledger = ledger_rows(pipeline)
    runs = sorted((r["started_at"], r["run_id"]) for r in ledger if r["stage"] == "apply" and r["table"] is None)
    assert len(runs) == 2, runs
    assert {(r["stage"], r["status"]) for r in ledger if r["run_id"] == runs[1][1] and r["table"] is None} == {
        ("decode", "OK"),
        ("schema_history", "NOOP"),
        ("apply", "OK"),
    }
    second_run = [r for r in ledger if r["run_id"] == runs[1][1] and r["table"] is not None]
    assert {r["status"] for r in second_run} == {"APPLIED"}, second_run
    assert sum(int(r["replays_skipped"] or 0) for r in second_run) > 0, second_run

    # The status command reports the same applied position for every table.
    assert main(["--config", str(pipeline.config_path), "status"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "applied_ts" in line]
    assert len(lines) == len(sim.model.tables())
    assert all(f"applied_ts {second_watermark} " in line for line in lines), lines
