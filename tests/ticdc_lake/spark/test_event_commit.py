"""The decode workers' ``change_events`` files committed by the driver (``event_commit``), on real
Spark and Iceberg: one dynamic partition overwrite per run, Iceberg's own metrics, the field ids of
an old lake whose columns have other ids, and Spark's writer where pyarrow cannot write.

No Kafka: the simulator's Simple JSON messages are landed with the real LandingStore. Each test
uses a catalog of its own (registered in the session at runtime), so its ``change_events`` is
made the way the test needs.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ticdc_lake.spark.carrier_rows import event_rows_with_carrier
from ticdc_lake.config import CodecOptions, LakeConfig, load_config
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.landing.raw_batch import ConsumedRecord
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.schema_scan import prepared_lookup
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.settings import catalog_conf
from ticdc_lake.spark.system_tables import COLUMNS
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = pytest.mark.spark

BATCH = "000000000001"
#: What a worker names its files: task, attempt, a UUID, a counter.
FILE_NAME = re.compile(r"/\d{5}-\d+-[0-9a-f-]{36}-\d{5}\.parquet$")


def _lake(spark: Any, tmp_path: Path) -> tuple[LakeConfig, str, str]:
    """A catalog of this test's own, a landed batch of 40 transactions; (config, pipeline id, catalog)."""
    suffix = uuid.uuid4().hex[:8]
    name, topic, pipeline_id = f"lake_{suffix}", f"events-{suffix}", f"events_{suffix}"
    (tmp_path / "catalog").mkdir()
    catalog = {"uri": f"jdbc:sqlite:{tmp_path}/catalog/lake.db", "warehouse": f"file://{tmp_path}/warehouse"}
    pipeline = {
        "id": pipeline_id,
        "protocol": "simple-json",
        "kafka": {"topics": [topic]},
        "landing_uri": f"file://{tmp_path}/landing",
        "catalog": name,
    }
    config_file = tmp_path / "pipelines.yaml"
    config_file.write_text(yaml.safe_dump({"catalogs": {name: catalog}, "pipelines": [pipeline]}))
    config = load_config(config_file)
    for key, value in catalog_conf(name, config.catalog_for(config.pipeline(pipeline_id))).items():
        spark.conf.set(key, value)
    sim = TicdcSimulator(seed=5, topic=topic, partitions=2, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(40)
    sim.flush_watermark()
    store = LandingStore(f"file://{tmp_path}/landing", pipeline_id)
    by_partition: dict[int, list[Any]] = {}
    for m in sim.take():
        by_partition.setdefault(m.partition, []).append(m)
    ranges = []
    for partition, items in sorted(by_partition.items()):
        records = [ConsumedRecord(RawMessage(topic, partition, o, 0, m.key, m.value)) for o, m in enumerate(items)]
        ranges.append(store.write_batch(records, topic=topic, partition=partition, start=0, end=len(items)))
    store.publish(
        Manifest(
            pipeline=pipeline_id,
            sequence=1,
            batch_id=BATCH,
            run_id="land-1",
            interval_start=None,
            interval_end=None,
            created_at=datetime.now(UTC),
            ranges=tuple(ranges),
        )
    )
    return config, pipeline_id, name


def _expected(config: LakeConfig, pipeline_id: str, run_id: str) -> list[tuple[Any, ...]]:
    """What the Python decoder reads from the landed batch, as ``change_events`` rows, with the
    typed record carrier the workers add (the workload changes no column's type, so each version
    carries its own types)."""
    store = LandingStore(config.pipeline(pipeline_id).landing_uri, pipeline_id)
    messages = [m for r in store.manifests()[0].ranges if r.file for m in store.read_messages(r.file)]
    decoder = decoder_for("simple-json", CodecOptions())
    lookup = prepared_lookup(decoder, messages)
    events = [e for m in messages for e in decoder.read(m, lookup)]
    return event_rows_with_carrier(pipeline_id, BATCH, run_id, events, lookup)


def _rows(spark: Any, catalog: str) -> list[tuple[Any, ...]]:
    # By name, in ``COLUMNS`` order: a column ``ensure`` added back is the table's last.
    rows = spark.table(f"{catalog}.ticdc_system.change_events").select(*EVENTS_ARROW_SCHEMA.names).collect()
    return sorted((tuple(r) for r in rows), key=lambda r: r[2:6])


def test_the_workers_files_are_committed_as_one_partition_overwrite(spark: Any, tmp_path: Path) -> None:
    config, pipeline_id, catalog = _lake(spark, tmp_path)
    table = f"{catalog}.ticdc_system.change_events"
    summary = run_decode(spark, config, config.pipeline(pipeline_id), "run-1")
    expected = sorted(_expected(config, pipeline_id, "run-1"), key=lambda r: r[2:6])

    assert _rows(spark, catalog) == expected
    assert summary.events == len(expected)
    snapshot = spark.sql(f"SELECT operation, summary FROM {table}.snapshots ORDER BY committed_at DESC").first()
    assert snapshot["operation"] == "overwrite"
    assert snapshot["summary"]["replace-partitions"] == "true"
    assert snapshot["summary"]["added-records"] == str(len(expected))
    assert snapshot["summary"]["spark.app.id"] == spark.sparkContext.applicationId
    files = spark.sql(
        f"SELECT file_path, partition, record_count, readable_metrics.commit_ts AS ts, "
        f"readable_metrics.`offset` AS offsets FROM {table}.files"
    ).collect()
    assert sum(f["record_count"] for f in files) == len(expected)
    for f in files:
        assert FILE_NAME.search(f["file_path"]), f["file_path"]
        assert f"/pipeline={pipeline_id}/batch_id={BATCH}/" in f["file_path"]
        assert (f["partition"]["pipeline"], f["partition"]["batch_id"]) == (pipeline_id, BATCH)
        rows = spark.sql(f"SELECT commit_ts, `offset` FROM {table} WHERE _file = '{f['file_path']}'")
        in_file = rows.collect()
        assert f["ts"]["lower_bound"] == min(r["commit_ts"] for r in in_file)
        assert f["ts"]["upper_bound"] == max(r["commit_ts"] for r in in_file)
        assert (f["offsets"]["value_count"], f["offsets"]["null_value_count"]) == (len(in_file), 0)

    before = {f["file_path"] for f in files}
    run_decode(spark, config, config.pipeline(pipeline_id), "run-2", redecode=True)
    assert _rows(spark, catalog) == sorted(_expected(config, pipeline_id, "run-2"), key=lambda r: r[2:6])
    after = {r["file_path"] for r in spark.sql(f"SELECT file_path FROM {table}.files").collect()}
    assert after
    assert not after & before


def test_an_old_lake_whose_columns_have_other_field_ids_reads_back_the_same_events(spark: Any, tmp_path: Path) -> None:
    config, pipeline_id, catalog = _lake(spark, tmp_path)
    table = f"{catalog}.ticdc_system.change_events"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.ticdc_system")
    # Two retired columns first, then the columns in another order: every id differs from a new lake's.
    columns = COLUMNS["change_events"].strip()
    spark.sql(
        f"CREATE TABLE {table} (retired_a STRING, retired_b MAP<STRING, STRING>, {columns}) USING iceberg "
        "PARTITIONED BY (pipeline, batch_id) TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(f"ALTER TABLE {table} DROP COLUMN retired_a")
    spark.sql(f"ALTER TABLE {table} DROP COLUMN retired_b")
    spark.sql(f"ALTER TABLE {table} DROP COLUMN schema_error")  # added back by ensure(), with a new id
    run_decode(spark, config, config.pipeline(pipeline_id), "run-1")

    assert _rows(spark, catalog) == sorted(_expected(config, pipeline_id, "run-1"), key=lambda r: r[2:6])
    latest = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC").first()
    assert latest["summary"]["replace-partitions"] == "true"
    paths = [r["file_path"] for r in spark.sql(f"SELECT file_path FROM {table}.files").collect()]
    assert paths
    assert all(FILE_NAME.search(p) for p in paths)


@pytest.mark.parametrize(
    ("columns", "properties", "reason"),
    [
        (
            COLUMNS["change_events"].strip(),
            ", 'write.parquet.compression-codec'='lz4'",
            "decode: change_events' codec lz4 is not one pyarrow writes alike: Spark writes its files",
        ),
        (
            COLUMNS["change_events"].strip().replace("idx INT NOT NULL", "idx BIGINT NOT NULL"),
            "",
            "decode: change_events has another type (long) for column idx: Spark writes its files",
        ),
    ],
    ids=["codec", "column-type"],
)
def test_spark_writes_the_files_where_the_workers_cannot_write_them_alike(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, columns: str, properties: str, reason: str
) -> None:
    config, pipeline_id, catalog = _lake(spark, tmp_path)
    table = _create(spark, catalog, columns, properties)
    with caplog.at_level("INFO", logger="ticdc_lake.decode"):
        run_decode(spark, config, config.pipeline(pipeline_id), "run-1")

    assert reason in caplog.text
    assert _rows(spark, catalog) == sorted(_expected(config, pipeline_id, "run-1"), key=lambda r: r[2:6])
    paths = [r["file_path"] for r in spark.sql(f"SELECT file_path FROM {table}.files").collect()]
    assert paths
    assert not any(FILE_NAME.search(p) for p in paths)


def test_a_required_column_the_events_lack_leaves_the_batch_undecoded(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config, pipeline_id, catalog = _lake(spark, tmp_path)
    table = _create(spark, catalog, COLUMNS["change_events"].strip() + ", shard STRING NOT NULL", "")
    with caplog.at_level("INFO", logger="ticdc_lake.decode"), pytest.raises(Exception, match="shard"):
        run_decode(spark, config, config.pipeline(pipeline_id), "run-1")

    assert "decode: change_events requires column(s) the events lack (['shard']): Spark writes its files" in caplog.text
    assert spark.sql(f"SELECT * FROM {table}").count() == 0
    assert spark.sql(f"SELECT * FROM {catalog}.ticdc_system.decoded_batches").count() == 0


def _create(spark: Any, catalog: str, columns: str, properties: str) -> str:
    table = f"{catalog}.ticdc_system.change_events"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.ticdc_system")
    spark.sql(
        f"CREATE TABLE {table} ({columns}) USING iceberg PARTITIONED BY (pipeline, batch_id) "
        f"TBLPROPERTIES ('format-version'='2'{properties})"
    )
    return table
