"""Status from manifests, decoded batches, events and Kafka end offsets; Kafka settings from the environment."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ticdc_lake import tso
from ticdc_lake.cli.reads import status_document
from ticdc_lake.config import load_config
from ticdc_lake.consistent_reads import Cut
from ticdc_lake.errors import ConfigError
from ticdc_lake.landing.manifest import LandedRange, Manifest
from ticdc_lake.status import PartitionStatus, PipelineStatus, TableStatus, event_counts, partition_statuses
from ticdc_lake.status_kafka import kafka_settings, read_end_offsets

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def _range(partition: int, start: int, end: int, count: int | None = None) -> LandedRange:
    count = end - start if count is None else count
    return LandedRange(
        topic="t",
        partition=partition,
        start=start,
        end=end,
        count=count,
        file=f"data/topic=t/partition={partition}/{start:020d}-{end:020d}.avro" if count else None,
        sha256="0" * 64 if count else None,
        size_bytes=10 if count else None,
        first_timestamp_ms=1 if count else None,
        last_timestamp_ms=2 if count else None,
    )


def _manifest(sequence: int, *ranges: LandedRange) -> Manifest:
    return Manifest(
        pipeline="p",
        sequence=sequence,
        batch_id=f"{sequence:012d}",
        run_id=f"run{sequence}",
        interval_start=None,
        interval_end=None,
        created_at=NOW,
        ranges=ranges,
    )


def test_partitions_compare_kafka_landed_and_decoded() -> None:
    manifests = [_manifest(1, _range(0, 0, 10), _range(1, 0, 4)), _manifest(2, _range(0, 10, 16, count=5))]
    decoded = [{"batch_id": "000000000001", "topic": "t", "partition": 0, "end_offset": 10}]
    decoded.append({"batch_id": "000000000001", "topic": "t", "partition": 1, "end_offset": 4})
    ends = {("t", 0): 20, ("t", 1): 4, ("t", 2): 7}
    assert partition_statuses(manifests, decoded, ends) == [
        PartitionStatus(
            "t", 0, 20, 16, 10, 5, "apply waits at offset 10: batch 000000000002 ([10, 16)) is not decoded yet"
        ),
        PartitionStatus("t", 1, 4, 4, 4, 0),
        PartitionStatus("t", 2, 7, None, None, 0),
    ]
    assert [p.landing_behind for p in partition_statuses(manifests, decoded, ends)] == [4, 0, 7]
    without_kafka = partition_statuses(manifests, [], None)
    assert [(p.partition, p.kafka_end, p.landing_behind, p.landed_not_decoded) for p in without_kafka] == [
        (0, None, None, 15),
        (1, None, None, 4),
    ]


def test_a_hole_in_the_landed_offsets_says_what_apply_waits_for() -> None:
    # A backfill landed [20, 30) before the run that lands [10, 20).
    manifests = [_manifest(1, _range(0, 0, 10)), _manifest(2, _range(0, 20, 30))]
    decoded = [
        {"batch_id": b, "topic": "t", "partition": 0, "end_offset": e}
        for b, e in (("000000000001", 10), ("000000000002", 30))
    ]
    (status,) = partition_statuses(manifests, decoded, {("t", 0): 30})
    assert (status.landed_end, status.decoded_end, status.landing_behind) == (30, 30, 0)
    assert status.waits_for == (
        "apply waits at offset 10: offsets [10, 20) are not landed yet (batch 000000000002 lands [20, 30)); "
        "the backfill of their interval or the next scheduled or manual run lands them"
    )


def test_pending_events_are_those_above_the_applied_position() -> None:
    events = [
        {"database": "d", "table": "a", "commit_ts": 100, "status": "READY"},
        {"database": "d", "table": "a", "commit_ts": 101, "status": "READY"},
        {"database": "d", "table": "a", "commit_ts": 102, "status": "PENDING"},
        {"database": "d", "table": "b", "commit_ts": 50, "status": "READY"},
        {"database": "d", "table": "new", "commit_ts": 1, "status": "PENDING"},
    ]
    counts = event_counts(events, {("d", "a"): 100, ("d", "b"): 60})
    assert counts == {("d", "a"): (2, 1), ("d", "new"): (1, 1)}


def test_status_document_for_machines(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "catalogs: {lake: {uri: 'jdbc:sqlite:/x.db', warehouse: 'file:///w'}}\n"
        "pipelines: [{id: p, protocol: simple-json, kafka: {topics: [t]}, landing_uri: /l, catalog: lake}]\n",
        encoding="utf-8",
    )
    pipeline = load_config(path).pipeline("p")
    applied = tso.from_datetime(NOW - timedelta(seconds=42), 5)
    status = PipelineStatus(
        Cut("run9", applied, NOW),
        [TableStatus("d", "a", applied, 77, 3, None, "d", "a", 2, 1, 1)],
        [PartitionStatus("t", 0, 20, 16, 10, 5)],
        quarantined_without_table=0,
        kafka="Kafka at b:9092",
        checked_at=NOW,
    )
    document = json.loads(json.dumps(status_document(pipeline, status)))
    assert document == {
        "pipeline": "p",
        "checked_at": NOW.isoformat(),
        "watermark": applied,
        "watermark_at": tso.to_datetime(applied).isoformat(),
        "watermark_run_id": "run9",
        "lag_seconds": 42.0,
        "kafka": "Kafka at b:9092",
        "quarantined_without_table": 0,
        "tables": [
            {
                "catalog": "lake",
                "namespace": "d",
                "table": "a",
                "upstream": "d.a",
                "applied_ts": applied,
                "applied_at": "2026-11-21T11:59:18+00:00",
                "lag_seconds": 42.0,
                "snapshot_id": 77,
                "rows": 3,
                "pending": 2,
                "waiting_for_schema": 1,
                "quarantined": 1,
                "hold": None,
            }
        ],
        "partitions": [
            {
                "topic": "t",
                "partition": 0,
                "kafka_end": 20,
                "landed_end": 16,
                "decoded_end": 10,
                "landing_behind": 4,
                "decoding_behind": 5,
                "waits_for": None,
            }
        ],
    }


def test_kafka_settings_from_the_airflow_connection_variable() -> None:
    json_form = json.dumps(
        {
            "conn_type": "kafka",
            "host": "b1",
            "port": 9093,
            "login": "u",
            "password": "s3cret",
            "extra": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "note": "ignored"},
        }
    )
    assert kafka_settings("kafka_default", environ={"AIRFLOW_CONN_KAFKA_DEFAULT": json_form}) == {
        "bootstrap.servers": "b1:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "s3cret",
    }
    extra_only = json.dumps({"conn_type": "generic", "extra": {"bootstrap.servers": "a:1,b:2"}})
    assert kafka_settings("k", environ={"AIRFLOW_CONN_K": extra_only}) == {"bootstrap.servers": "a:1,b:2"}
    uri = "kafka://u%40x:p%2Fw@broker:9092/?security.protocol=SASL_PLAINTEXT&sasl.mechanism=SCRAM-SHA-256"
    assert kafka_settings("k", environ={"AIRFLOW_CONN_K": uri}) == {
        "bootstrap.servers": "broker:9092",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "u@x",
        "sasl.password": "p/w",
    }
    override = kafka_settings("k", "other:9092", environ={"AIRFLOW_CONN_K": extra_only})
    assert override == {"bootstrap.servers": "other:9092"}
    assert kafka_settings("k", environ={}) is None
    assert kafka_settings("k", "b:9092", environ={}) == {"bootstrap.servers": "b:9092"}
    with pytest.raises(ConfigError, match="AIRFLOW_CONN_K is not valid JSON"):
        kafka_settings("k", environ={"AIRFLOW_CONN_K": "{nope"})


def test_without_kafka_settings_status_says_how_to_get_them(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "catalogs: {lake: {uri: 'jdbc:sqlite:/x.db', warehouse: 'file:///w'}}\n"
        "pipelines: [{id: p, protocol: simple-json, kafka: {connection_id: cdc, topics: [t]}, landing_uri: /l, "
        "catalog: lake}]\n",
        encoding="utf-8",
    )
    pipeline = load_config(path).pipeline("p")
    ends, note = read_end_offsets(pipeline, environ={})
    assert ends is None
    assert note == (
        "no Kafka settings: set AIRFLOW_CONN_CDC (the Airflow connection 'cdc') or pass --bootstrap-servers "
        "to see how far landing is behind Kafka"
    )
    secret = json.dumps({"host": "127.0.0.1", "port": 1, "password": "hunter2", "extra": {}})
    ends, note = read_end_offsets(pipeline, environ={"AIRFLOW_CONN_CDC": secret}, timeout_s=2)
    assert ends is None
    assert note.startswith("Kafka at 127.0.0.1:1 not readable: ")
    assert "hunter2" not in note
