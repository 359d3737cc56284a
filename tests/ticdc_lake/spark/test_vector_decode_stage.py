"""The decode stage with the vectorized Debezium decoder against the stage with the Python decoder alone.

The same landed Debezium messages (the simulator's workload with its DDL and watermarks, a table
of every column type, malformed messages) are decoded by the real decode stage twice: with
``vector=False`` (every message through the Python decoder, the specification) and with the
default, where the workers' vector decoder (``arrow_decode``) takes the row changes it can vouch
for. Both must write identical ``change_events``, quarantine and ``decoded_batches`` rows, and
the vector decoder must really have taken the rows this test expects (so the test fails if
everything silently falls back). The message-level differential test of every case is
``tests/ticdc_lake/spark/arrow_decode/test_debezium_differential.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.stage_runs import land_messages, pipeline_rows, stage_config
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_sim.debezium_encoder import DebeziumEncoder
from ticdc_sim.simulator import OutMessage, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = pytest.mark.spark

TOPIC = "vector-diff"


def _messages() -> tuple[list[OutMessage], int]:
    """The simulator's messages, and how many of them are row changes."""
    sim = TicdcSimulator(
        seed=11, topic=TOPIC, partitions=2, workload=WorkloadConfig(tables=3), encoder=DebeziumEncoder("UTC")
    )
    sim.setup()
    sim.run_transactions(40)
    sim.flush_watermark()
    messages = sim.take()
    return messages, sum(1 for m in messages if m.kind == "DML")


def _malformed(template: OutMessage) -> list[OutMessage]:
    """Mutations of one row change that the vector decoder must leave to the Python decoder."""
    value = template.value or b""
    cut = value.index(b',"schema":')
    return [
        OutMessage(template.topic, template.partition, template.key, value.replace(b'"op":', b'"op" :', 1), "DML", 0),
        OutMessage(template.topic, template.partition, template.key, value[:cut] + b"}", "DML", 0),  # no schema
        OutMessage(template.topic, template.partition, template.key, value[: len(value) // 2], "DML", 0),
        OutMessage(template.topic, template.partition, b"{", value, "DML", 0),  # a broken key
        OutMessage(template.topic, template.partition, template.key, value.replace(b'"op":"', b'"op":"x', 1), "DML", 0),
    ]


def _land(store: LandingStore, messages: list[OutMessage]) -> None:
    by_partition: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
    for m in messages:
        by_partition.setdefault(m.partition, []).append((m.key, m.value))
    land_messages(store, TOPIC, by_partition)


def test_the_vector_decoder_writes_what_the_python_decoder_writes(spark: Any, tmp_path: Path, lake_home: Path) -> None:
    messages, dml = _messages()
    template = next(m for m in messages if m.kind == "DML" and b'"op":"u"' in (m.value or b""))
    bad = _malformed(template)
    landed = messages + bad
    results = {}
    for mode in ("python", "vector"):
        home = tmp_path / mode
        home.mkdir()
        config = stage_config(
            home, lake_home, {"id": f"vec_{mode}", "protocol": "debezium", "kafka": {"topics": [TOPIC]}}
        )
        pipeline = config.pipeline(f"vec_{mode}")
        _land(LandingStore(pipeline.landing_uri, pipeline.id), landed)
        summary = run_decode(spark, config, pipeline, "run-1", vector=mode == "vector")
        tables = SystemTables.of(config, pipeline)
        position = ("topic", "partition", "offset", "idx")
        events = pipeline_rows(spark, tables.change_events, pipeline.id, position, ("run_id",))
        quarantine = pipeline_rows(
            spark, tables.quarantine, pipeline.id, position, ("recorded_at", "resolved_at", "run_id")
        )
        batches = pipeline_rows(
            spark, tables.decoded_batches, pipeline.id, ("batch_id", "topic", "partition"), ("decoded_at", "run_id")
        )
        results[mode] = (summary, events, quarantine, batches)
    python, vector = results["python"], results["vector"]
    assert python[0].vector_events == 0
    assert vector[1] == python[1]
    assert vector[2] == python[2]
    assert vector[3] == python[3]
    # Whitespace and the message without schema decode in Python; the truncated value, the broken key
    # and the unknown op are quarantined.
    assert len(python[2]) == 3
    assert (vector[0].events, vector[0].pending, vector[0].quarantined) == (
        python[0].events,
        python[0].pending,
        python[0].quarantined,
    )
    # Every row change of the workload's tables (bound to the versions its DDL made) is taken but 7,
    # whose doubles TiCDC writes positionally and pyarrow with an exponent (1e-07, 1.5e+20): the
    # vector decoder cannot show it read their text as sent, so Python decodes them.
    assert (dml, vector[0].vector_events) == (156, 149)
    # Both wrote the typed record carrier of every bound row change (the comparison above says the
    # same bytes, so the same typed values and the same texts of what the types cannot hold; the
    # decoders' texts before the carrier are compared message by message in arrow_decode's tests):
    # a record for each image its op has, none where there is none, and no map beside them.
    bound = [e for e in python[1].values() if e["kind"] == "DML" and e["schema_version"] is not None]
    assert len(bound) == dml + 2  # with the two malformed messages the Python decoder reads
    for event in bound:
        assert (event["before_record"] is not None, event["after_record"] is not None) == (
            event["op"] in ("U", "D"),
            event["op"] in ("I", "U"),
        ), event["op"]
        assert (event["before"], event["after"]) == (None, None)
        assert event["after_key"] is None or len(event["after_key"]) >= 1
