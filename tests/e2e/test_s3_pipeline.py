"""The S3 path through Airflow: landing, claim-check objects and the Iceberg warehouse on an S3 API server.

The local S3 server (include/scripts/s3.sh, S3Proxy on loopback) holds one bucket per test; the
pipeline's ``landing_uri``, ``codec.claim_check_storage_uri`` and catalog warehouse are all
``s3://`` URIs in it, and the only catalog state on local disk is the JDBC catalog's SQLite file.
Every client (the land task, spark-submit, Spark's Iceberg S3FileIO, the decode workers, pyiceberg
here) gets the endpoint and key pair from the standard AWS_* environment variables
(docs/object-storage.md). One DAG run; afterwards every table equals the simulator's model and the
landed batches, manifests, claim-check objects, data and metadata files are listed through the S3
API, while nothing was written to the local filesystem and the secret key appears in no task log.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.fs as pafs
import pytest
import yaml
from e2e_support import Pipeline, watermark_of

from ticdc_lake.object_store import S3Settings
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import MessageKind, OutMessage, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]

#: Every n-th row message goes through the claim-check storage, as an oversize message would.
CLAIM_EVERY = 4


def _write_config(pipeline: Pipeline, bucket: str) -> None:
    document = {
        "catalogs": {
            "lake": {
                "type": "jdbc",
                "uri": f"jdbc:sqlite:{pipeline.home}/catalog/lake.db",
                "warehouse": f"s3://{bucket}/warehouse",
            }
        },
        "pipelines": [
            {
                "id": pipeline.id,
                "protocol": "simple-json",
                "kafka": {"connection_id": "kafka_default", "topics": [pipeline.topic]},
                "codec": {"claim_check_storage_uri": f"s3://{bucket}/claims"},
                "schedule": "@hourly",
                "landing_uri": f"s3://{bucket}/landing",
                "catalog": "lake",
            }
        ],
    }
    pipeline.config_path.write_text(yaml.safe_dump(document, sort_keys=False))


def _claim_checked(message: OutMessage, s3: pafs.FileSystem, bucket: str) -> OutMessage:
    """``message`` as TiCDC sends an oversize row: the original stored as an object, a reference on Kafka.

    The object is what ``claimcheck.WriteMessage`` writes (``{"key", "value"}`` base64 JSON); the
    reference carries the producer's own full URI (the consumer keeps only the file name) and only
    one column, flagged ``handleKeyOnly`` like TiCDC's Simple encoder does.
    """
    name = f"{uuid.uuid4()}.json"
    stored = {
        "key": None if message.key is None else base64.b64encode(message.key).decode(),
        "value": base64.b64encode(message.value).decode(),
    }
    with s3.open_output_stream(f"{bucket}/claims/{name}") as out:
        out.write(json.dumps(stored, separators=(",", ":")).encode())
    doc = json.loads(message.value)
    for image in ("data", "old"):
        if isinstance(doc.get(image), dict):
            first = next(iter(doc[image]))
            doc[image] = {first: doc[image][first]}
    doc["claimCheckLocation"] = f"s3://ticdc-side-bucket/changefeed/{name}"
    doc["handleKeyOnly"] = True
    return OutMessage(
        message.topic,
        message.partition,
        message.key,
        json.dumps(doc, separators=(",", ":")).encode(),
        message.kind,
        message.commit_ts,
        message.replay,
    )


def _objects(s3: pafs.FileSystem, prefix: str) -> list[str]:
    infos = s3.get_file_info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))
    return sorted(i.path.removeprefix(f"{prefix}/") for i in infos if i.type == pafs.FileType.File)


def test_landing_claim_check_and_warehouse_on_s3(
    e2e_pipeline: Callable[..., Pipeline],
    kafka_bootstrap: str,
    s3_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)  # the Airflow runner passes this environment on
    settings = S3Settings.from_environment()
    s3 = pafs.S3FileSystem(allow_bucket_creation=True, allow_bucket_deletion=True, **settings.pyarrow_options())
    pipeline = e2e_pipeline()
    bucket = f"e2e-{pipeline.id.removeprefix('e2e_')}"
    s3.create_dir(bucket)
    _write_config(pipeline, bucket)
    create_topic(kafka_bootstrap, pipeline.topic, 3)

    sim = TicdcSimulator(seed=6, topic=pipeline.topic, partitions=3, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(60)
    sim.flush_watermark()
    watermark = watermark_of(sim)
    messages = sim.take()
    rows = [i for i, m in enumerate(messages) if m.kind == MessageKind.DML]
    claimed = set(rows[::CLAIM_EVERY])
    assert len(claimed) >= 10
    produce(kafka_bootstrap, [_claim_checked(m, s3, bucket) if i in claimed else m for i, m in enumerate(messages)])

    run = pipeline.run(datetime(2026, 11, 20, 10, tzinfo=UTC))
    assert run.succeeded, run.output[-5000:]
    assert s3_env["AWS_SECRET_ACCESS_KEY"] not in run.output
    pipeline.assert_equals_model(sim, watermark)

    # The claim-checked rows came from the objects: decode marked exactly those events.
    catalog = pipeline.catalog()
    events = catalog.load_table(("ticdc_system", "change_events")).scan().to_arrow().to_pylist()
    assert sum(1 for e in events if e["pipeline"] == pipeline.id and e["claim_check"]) == len(claimed)

    # Everything is in the bucket, listed through the S3 API; nothing landed on local disk.
    landed = _objects(s3, f"{bucket}/landing/{pipeline.id}")
    assert "manifests/000000000001.json" in landed
    assert {f.split("/")[1] for f in landed if f.startswith("data/")} == {f"topic={pipeline.topic}"}
    batches = [f for f in landed if f.startswith("data/") and f.endswith(".avro")]
    assert {f.split("/")[2] for f in batches} == {"partition=0", "partition=1", "partition=2"}, batches
    assert len(_objects(s3, f"{bucket}/claims")) == len(claimed)
    warehouse = _objects(s3, f"{bucket}/warehouse")
    for database, table in [*sim.model.tables(), ("ticdc_system", "run_ledger")]:
        location = catalog.load_table((database, table)).location()
        assert location.startswith(f"s3://{bucket}/warehouse/"), location
        folder = location.removeprefix(f"s3://{bucket}/warehouse/")
        assert any(f.startswith(f"{folder}/data/") and f.endswith(".parquet") for f in warehouse), folder
        assert any(f.startswith(f"{folder}/metadata/") and f.endswith(".metadata.json") for f in warehouse), folder
    # The decode workers wrote change_events' files to the bucket themselves (``event_files``: task,
    # attempt, UUID, counter), and the driver committed exactly those.
    events_table = catalog.load_table(("ticdc_system", "change_events"))
    events_files = [t.file.file_path for t in events_table.scan().plan_files()]
    assert events_files
    assert all(re.search(r"/\d{5}-\d+-[0-9a-f-]{36}-\d{5}\.parquet$", p) for p in events_files), events_files
    assert {p.removeprefix(f"s3://{bucket}/warehouse/") for p in events_files} <= set(warehouse)
    local = sorted(str(p.relative_to(pipeline.home)) for p in Path(pipeline.home).rglob("*") if p.is_file())
    assert local == ["catalog/lake.db"], local
    with contextlib.suppress(OSError):  # best effort (S3Proxy's filesystem store races on folders); kept on failure
        s3.delete_dir(bucket)
