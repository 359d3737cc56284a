"""In-process pipeline runs for tests: a pipeline file on the shared test lake, and the four stages
(land from the real broker, decode, schema history, apply) in this process's Spark session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ticdc_lake.config import LakeConfig, load_config
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.lander import land
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.landing.raw_batch import ConsumedRecord, SchemaTest
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.spark.apply_job import run_apply
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.schema_history_job import run_schema_history


def stage_config(home: Path, lake_home: Path, pipeline: dict[str, Any]) -> LakeConfig:
    """Write ``home/pipelines.yaml`` with catalog ``lake`` on the session's test lake and one pipeline.

    ``pipeline`` needs ``id``, ``protocol`` and ``kafka``; landing defaults to ``home/landing``.
    """
    document = {
        "catalogs": {
            "lake": {"uri": f"jdbc:sqlite:{lake_home}/catalog/lake.db", "warehouse": f"file://{lake_home}/warehouse"}
        },
        "pipelines": [{"landing_uri": f"file://{home}/landing", "catalog": "lake", **pipeline}],
    }
    path = home / "pipelines.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_config(path)


def simple_json_config(tmp_path: Path, lake_home: Path, pipeline_id: str, topic: str) -> LakeConfig:
    """A simple-json pipeline of ``topic`` in the session catalog, tables in ``<pipeline_id>_<database>``."""
    home = tmp_path / "pipeline"
    home.mkdir()
    return simple_json_pipeline(home, lake_home, pipeline_id, topic)


def simple_json_pipeline(home: Path, lake_home: Path, pipeline_id: str, topic: str) -> LakeConfig:
    """:func:`simple_json_config` with its files in ``home`` (which must exist)."""
    return topic_pipeline(home, lake_home, pipeline_id, topic, "simple-json")


def topic_pipeline(home: Path, lake_home: Path, pipeline_id: str, topic: str, protocol: str) -> LakeConfig:
    """A ``protocol`` pipeline of ``topic`` with its files in ``home`` (which must exist), tables in
    ``<pipeline_id>_<database>``."""
    return stage_config(
        home,
        lake_home,
        {
            "id": pipeline_id,
            "protocol": protocol,
            "kafka": {"topics": [topic]},
            "target": {"namespace": f"{pipeline_id}_{{database}}"},
        },
    )


def run_stages(
    spark: Any,
    config: LakeConfig,
    pipeline_id: str,
    kafka_bootstrap: str,
    run_id: str,
    registry: dict[str, str] | None = None,
) -> None:
    """Land everything the topics hold now, then decode, record schema history and apply."""
    pipeline = config.pipeline(pipeline_id)
    land(pipeline, {"bootstrap.servers": kafka_bootstrap}, run_id, None, registry=registry)
    run_decode(spark, config, pipeline, run_id)
    run_schema_history(spark, config, pipeline, run_id)
    run_apply(spark, config, pipeline, run_id)


def land_messages(
    store: LandingStore,
    topic: str,
    by_partition: Mapping[int, Sequence[tuple[bytes | None, bytes | None]]],
    schema_test: SchemaTest | None = None,
) -> list[Any]:
    """Land (key, value) messages per partition of ``topic`` as batch ``000000000001`` without a
    broker (offsets from 0), and publish its manifest; returns the landed ranges. ``schema_test``:
    count the blocks it keeps, as the land stage does (``lander.schema_test``)."""
    ranges = []
    for partition, items in sorted(by_partition.items()):
        records = [
            ConsumedRecord(RawMessage(topic, partition, offset, 1_700_000_000_000, key, value))
            for offset, (key, value) in enumerate(items)
        ]
        ranges.append(
            store.write_batch(
                records, topic=topic, partition=partition, start=0, end=len(items), schema_test=schema_test
            )
        )
    store.publish(
        Manifest(
            pipeline=store.pipeline_id,
            sequence=1,
            batch_id="000000000001",
            run_id="land-1",
            interval_start=None,
            interval_end=None,
            created_at=datetime.now(UTC),
            ranges=tuple(ranges),
        )
    )
    return ranges


def pipeline_rows(
    spark: Any, table: str, pipeline: str, key: Sequence[str], drop: Sequence[str] = ()
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """A system table's rows of ``pipeline`` by the columns ``key``, without the columns ``drop``; maps
    as lists of entries, so that their order counts too (the decode stage's differential tests)."""
    from pyspark.sql import functions as F

    frame = spark.table(table).where(F.col("pipeline") == pipeline).drop("pipeline", *drop)
    maps = [f.name for f in frame.schema.fields if f.dataType.typeName() == "map"]
    frame = frame.select(*(F.map_entries(c).alias(c) if c in maps else F.col(c) for c in frame.columns))
    return {tuple(r[k] for k in key): r.asDict(recursive=True) for r in frame.collect()}
