"""Simple protocol (JSON and Avro) from the real broker to Iceberg, through Airflow's test runner and Spark."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from e2e_support import Pipeline, ledger_rows, run_two_rounds, watermark_of

from ticdc_lake.cli.main import main
from ticdc_lake.simulator.encoding import ProtocolEncoder
from ticdc_lake.simulator.producer import create_topic, produce
from ticdc_lake.simulator.simple_avro_encoder import SimpleAvroEncoder
from ticdc_lake.simulator.simulator import TicdcSimulator
from ticdc_lake.simulator.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]


def _encoder(protocol: str) -> ProtocolEncoder | None:
    return SimpleAvroEncoder("UTC") if protocol == "simple-avro" else None


# simple-avro goes through the same DAG, operators and spark-submit: it is covered in-process by
# test_schema_evolution and test_randomized_apply (an Airflow run costs about 3.5 minutes of CI).
@pytest.mark.parametrize("protocol", ["simple-json"])
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
    second_watermark = run_two_rounds(pipeline, sim, kafka_bootstrap)

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


def test_malformed_message_holds_its_topic_then_skip_policy_records_and_proceeds(
    e2e_pipeline: Callable[..., Pipeline], kafka_bootstrap: str
) -> None:
    pipeline = e2e_pipeline()
    create_topic(kafka_bootstrap, pipeline.topic, 3)
    sim = TicdcSimulator(seed=5, topic=pipeline.topic, partitions=3, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(30)
    hold_at = sim.last_watermark(1)
    assert hold_at is not None
    sim.append_malformed(1, b'{"version":1,"type":"INSERT","database":')
    sim.run_transactions(30)
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
    quarantine = pipeline.catalog().load_table(("ticdc_system", "quarantine")).scan().to_arrow().to_pylist()
    rows = [r for r in quarantine if r["pipeline"] == pipeline.id]
    assert [(r["partition"], r["offset"], r["status"]) for r in rows] == [(bad_partition, bad_offset, "QUARANTINED")]
    assert rows[0]["raw_value"] == b'{"version":1,"type":"INSERT","database":'
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

    pipeline.write_config(on_decode_error="skip")
    run2 = pipeline.run(datetime(2026, 11, 20, 11, tzinfo=UTC))
    assert run2.succeeded, run2.output[-5000:]
    quarantine = pipeline.catalog().load_table(("ticdc_system", "quarantine")).scan().to_arrow().to_pylist()
    rows = [r for r in quarantine if r["pipeline"] == pipeline.id]
    assert [(r["offset"], r["status"], r["policy"]) for r in rows] == [(bad_offset, "SKIPPED", "skip")]
    assert rows[0]["resolved_run_id"] is not None
    pipeline.assert_equals_model(sim, watermark_of(sim))
