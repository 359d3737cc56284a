"""The decode stage on real Spark writes exactly what the Python decoder reads from the landed batch.

No Kafka: the simulator's messages are landed with the real LandingStore. The files are cut into
many slices (cuts forced), one message is undecodable (binary key and value), one DML
names a schema version nobody announced (PENDING).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.stage_runs import land_messages
from tests.ticdc_lake.spark.carrier_rows import event_rows_with_carrier
from ticdc_lake.config import CodecOptions, LakeConfig, load_config
from ticdc_lake.events import EventKind, EventStatus
from ticdc_lake.landing.lander import schema_test
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.schema_scan import prepared_lookup
from ticdc_lake.spark import decode_plan
from ticdc_lake.spark.decode_job import run_decode
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = pytest.mark.spark

BAD_KEY = b"\xff\x00key"
BAD_VALUE = b"\x00\xfe not a Simple message"


def _messages(topic: str) -> dict[int, list[tuple[bytes | None, bytes]]]:
    sim = TicdcSimulator(seed=11, topic=topic, partitions=3, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(60)
    sim.append_malformed(1, BAD_VALUE, key=BAD_KEY)
    sim.flush_watermark()
    by_partition: dict[int, list[tuple[bytes | None, bytes]]] = {}
    for message in sim.take():
        by_partition.setdefault(message.partition, []).append((message.key, message.value))
    dml = next(json.loads(v) for _, v in by_partition[2] if b'"type":"INSERT"' in v)
    dml["schemaVersion"] = 12345  # announced by no BOOTSTRAP or DDL: stays PENDING
    by_partition[2].append((None, json.dumps(dml).encode()))
    return by_partition


def _expected(store: LandingStore, ranges: list[Any], pipeline_id: str, run_id: str) -> list[tuple[Any, ...]]:
    decoder = decoder_for("simple-json", CodecOptions())
    messages = [m for r in ranges for m in store.read_messages(r.file)]
    lookup = prepared_lookup(decoder, messages)
    events = [e for message in messages if message.value != BAD_VALUE for e in decoder.read(message, lookup)]
    return event_rows_with_carrier(pipeline_id, "000000000001", run_id, events, lookup)


def _config(lake_home: Path, tmp_path: Path) -> tuple[LakeConfig, str]:
    """A lake config with one Simple JSON pipeline on a topic of its own, and the topic."""
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id = f"decode-{suffix}", f"decode_{suffix}"
    config_file = tmp_path / "pipelines.yaml"
    catalog = {"uri": f"jdbc:sqlite:{lake_home}/catalog/lake.db", "warehouse": f"file://{lake_home}/warehouse"}
    pipeline_doc = {
        "id": pipeline_id,
        "protocol": "simple-json",
        "kafka": {"topics": [topic]},
        "landing_uri": f"file://{tmp_path}/landing",
        "catalog": "lake",
        "policies": {"on_decode_error": "skip"},
    }
    config_file.write_text(yaml.safe_dump({"catalogs": {"lake": catalog}, "pipelines": [pipeline_doc]}))
    return load_config(config_file), topic


def test_decode_stage_writes_what_the_python_decoder_reads(
    spark: Any, lake_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decode_plan, "MIN_SLICE_MESSAGES", 5)
    monkeypatch.setattr(decode_plan, "MIN_GAIN", -10.0)  # cut as often as allowed
    config, topic = _config(lake_home, tmp_path)
    pipeline_id = config.pipelines[0].id
    pipeline = config.pipeline(pipeline_id)
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    ranges = land_messages(store, topic, _messages(topic))
    files = [decode_plan.FileRange("000000000001", r.file, r.start, r.end, r.count) for r in ranges]
    assert len(decode_plan.plan_tasks(files, spark.sparkContext.defaultParallelism)) > len(files), "no file was cut"

    for run_id in ("run-1", "run-2"):  # the PENDING row makes run 2 decode the batch again
        summary = run_decode(spark, config, pipeline, run_id)
        expected = _expected(store, ranges, pipeline_id, run_id)
        actual = [
            tuple(r)
            for r in spark.sql(
                f"SELECT * FROM lake.ticdc_system.change_events WHERE pipeline = '{pipeline_id}'"
            ).collect()
        ]
        assert sorted(actual, key=lambda r: r[2:6]) == sorted(expected, key=lambda r: r[2:6])
        assert (summary.batches, summary.events, summary.quarantined, summary.pending) == (1, len(expected), 1, 1)

    quarantine = spark.sql(f"SELECT * FROM lake.ticdc_system.quarantine WHERE pipeline = '{pipeline_id}'").collect()
    assert [(q["partition"], q["raw_key"], q["raw_value"], q["status"]) for q in quarantine] == [
        (1, bytearray(BAD_KEY), bytearray(BAD_VALUE), "SKIPPED")
    ]
    assert quarantine[0]["reason"].startswith("simple-json: ")
    batches = {
        r["partition"]: r.asDict()
        for r in spark.sql(
            f"SELECT * FROM lake.ticdc_system.decoded_batches WHERE pipeline = '{pipeline_id}'"
        ).collect()
    }
    assert sorted(batches) == [0, 1, 2]
    for rng in ranges:
        kinds = Counter(r[6] for r in expected if r[3] == rng.partition)
        watermarks = [int(r[7]) for r in expected if r[3] == rng.partition and r[6] == EventKind.WATERMARK.value]
        row = batches[rng.partition]
        assert (row["messages"], row["events"], row["dml"], row["ddl"], row["watermarks"]) == (
            rng.count,
            sum(kinds.values()),
            kinds[EventKind.DML.value],
            kinds[EventKind.DDL.value],
            kinds[EventKind.WATERMARK.value],
        )
        assert row["max_watermark"] == (max(watermarks) if watermarks else None)
        assert row["quarantined"] == (1 if rng.partition == 1 else 0)
        pending = sum(1 for r in expected if r[3] == rng.partition and r[22] == EventStatus.PENDING.value)
        assert row["pending"] == pending == (1 if rng.partition == 2 else 0)
        assert row["run_id"] == "run-2"


def test_the_schema_pass_reads_only_files_the_land_stage_found_may_carry_a_schema(
    spark: Any, lake_home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Partitions 1 and 2 hold no DDL or BOOTSTRAP: their blocks fail the land-time block test, the
    schema pass skips their files, and every event decodes as the Python decoder reads it (their rows
    bound to the versions partition 0 announces)."""
    config, topic = _config(lake_home, tmp_path)
    pipeline_id = config.pipelines[0].id
    pipeline = config.pipeline(pipeline_id)
    test = schema_test(pipeline)
    assert test is not None
    assert test.name == "simple-json/1"
    messages = _messages(topic)
    for partition in (1, 2):
        messages[partition] = [(k, v) for k, v in messages[partition] if not test.test(v)]
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    ranges = land_messages(store, topic, messages, schema_test=test)
    assert [r.schema_blocks.blocks != () for r in ranges] == [True, False, False]

    with caplog.at_level("INFO", logger="ticdc_lake.spark.decode_job"):
        run_decode(spark, config, pipeline, "run-1")
    assert "decode: the schema pass reads 1 of 3 file(s)" in caplog.text
    expected = _expected(store, ranges, pipeline_id, "run-1")
    actual = [
        tuple(r)
        for r in spark.sql(f"SELECT * FROM lake.ticdc_system.change_events WHERE pipeline = '{pipeline_id}'").collect()
    ]
    assert sorted(actual, key=lambda r: r[2:6]) == sorted(expected, key=lambda r: r[2:6])
    ready = [r for r in actual if r[3] in (1, 2) and r[6] == EventKind.DML.value and r[22] == EventStatus.READY.value]
    assert ready, "the rows of partitions 1 and 2 are bound to the versions partition 0 announces"
