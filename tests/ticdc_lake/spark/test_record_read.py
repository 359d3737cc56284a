"""Apply's read of the typed record carrier equals what the decode stage wrote, on real decode output.

A simulated stream with DDL (columns added, renamed and dropped, INT to VARCHAR, a column widened
to BIGINT and narrowed back to INT, which keeps it as string, so its INT version's values are
carried as text, a table renamed and another truncated) is landed, decoded by the real decode
stage (which writes the carrier from the carried types its driver derives) and recorded in
schema history by the real stage. Apply's read
(``record_images.with_carrier``) of the same rows as a release before the carrier wrote them
(maps only: the specification's decoder's reading of the landed messages), from the layouts it
derives from the schema history alone (``history_layouts``), must give every row the same bytes,
untyped entries, key texts and layout fingerprint: decode and apply derive the same carried
types, and a row decoded before the carrier existed applies as one decoded after. A table whose
records another layout wrote is held until a rebuild decodes it again.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from tests.stage_runs import land_messages, stage_config
from ticdc_lake.catalog import load_catalog
from ticdc_lake.events import EventKind, EventStatus
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.schema_scan import prepared_lookup
from ticdc_lake.spark.apply_job import run_apply
from ticdc_lake.spark.arrow_decode.image_records import CARRIER_COLUMNS
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.event_rows import event_row
from ticdc_lake.spark.rebuild_job import run_rebuild
from ticdc_lake.spark.record_images import history_layouts, with_carrier
from ticdc_lake.spark.schema_history_job import run_schema_history
from ticdc_lake.spark.schema_history_table import history_of
from ticdc_lake.spark.system_tables import COLUMNS, SystemTables
from ticdc_sim.catalog import column
from ticdc_sim.compare import table_differences
from ticdc_sim.encoders import encoder_for
from ticdc_sim.simulator import OutMessage, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = pytest.mark.spark

DB = "shop"


def _stream(protocol: str, topic: str) -> list[OutMessage]:
    return _simulated(protocol, topic).take()


def _simulated(protocol: str, topic: str) -> TicdcSimulator:
    sim = TicdcSimulator(
        seed=23, topic=topic, partitions=2, workload=WorkloadConfig(tables=3), encoder=encoder_for(protocol)
    )
    sim.setup()
    sim.run_transactions(20)
    sim.add_column(DB, "orders", column("priority", "int", nullable=False, default="3"), after="status")
    sim.run_transactions(10)
    sim.rename_column(DB, "orders", "city", "town")
    sim.drop_column(DB, "orders", "note")
    sim.run_transactions(10)
    sim.modify_column(DB, "accounts", column("lifetime_points", "varchar", length=32, nullable=False))
    sim.run_transactions(10)
    sim.modify_column(DB, "orders", column("priority", "bigint", nullable=False, default="3"))
    sim.run_transactions(10)
    # A narrowing the planner cannot apply: kept as string, so BIGINT's values come as text, and
    # this INT version still carries them as text.
    sim.modify_column(DB, "orders", column("priority", "int", nullable=False, default="3"))
    sim.run_transactions(10)
    sim.rename_table(DB, "accounts", DB, "accounts_moved")
    sim.truncate_table(DB, "order_lines")
    sim.run_transactions(10)
    sim.flush_watermark()
    return sim


def _carriers(frame: Any) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    position = ("topic", "partition", "offset", "idx")
    rows = frame.select(
        *position,
        "table",
        *(F.map_entries(c).alias(c) if c.endswith("_untyped") else F.col(c) for c in CARRIER_COLUMNS),
    ).collect()
    return {
        tuple(r[p] for p in position): (
            r["table"],
            *(bytes(r[c]) if c.endswith("_record") and r[c] is not None else r[c] for c in CARRIER_COLUMNS),
        )
        for r in rows
    }


@pytest.mark.parametrize("protocol", ["simple-json", "canal-json"])
def test_apply_reads_map_rows_as_the_carrier_decode_wrote(
    spark: Any, tmp_path: Path, lake_home: Path, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    topic = f"record-read-{protocol}"
    pipeline_id = f"record_read_{protocol.replace('-', '_')}"
    # Target tables of their own: both protocols' streams have the same tables and commit TSOs.
    target = {"namespace": f"{pipeline_id}_{{database}}"}
    config = stage_config(
        tmp_path, lake_home, {"id": pipeline_id, "protocol": protocol, "kafka": {"topics": [topic]}, "target": target}
    )
    pipeline = config.pipeline(pipeline_id)
    by_partition: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
    for m in _stream(protocol, topic):
        by_partition.setdefault(m.partition, []).append((m.key, m.value))
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    ranges = land_messages(store, topic, by_partition)
    run_decode(spark, config, pipeline, "run-1")
    run_schema_history(spark, config, pipeline, "run-1")
    tables = SystemTables.of(config, pipeline)

    events = spark.table(tables.change_events).where(
        (F.col("pipeline") == pipeline_id) & (F.col("kind") == "DML") & (F.col("status") == "READY")
    )
    written = _carriers(events)
    layouts = history_layouts(history_of(spark, tables, pipeline), pipeline.policies)
    # The same rows as a release before the carrier wrote them: maps only, as the specification's
    # decoder reads the landed messages.
    decoder = decoder_for(pipeline.protocol, pipeline.codec)
    messages = [m for r in ranges for m in store.read_messages(r.file)]
    lookup = prepared_lookup(decoder, messages)
    maps = [
        event_row(pipeline_id, "000000000001", "run-1", e)
        for m in messages
        for e in decoder.read(m, lookup)
        if e.kind == EventKind.DML and e.status == EventStatus.READY
    ]
    read = _carriers(with_carrier(spark.createDataFrame(maps, COLUMNS["change_events"]), layouts))

    assert read.keys() == written.keys()
    differing = [(k, read[k], written[k]) for k in sorted(written) if read[k] != written[k]]
    assert differing[:3] == []
    # The stream has what the test is about: every row change carries a record, the renamed table
    # included, and the narrowed column is carried as string in its INT version.
    assert all(c[1] is not None or c[2] is not None for c in written.values())
    assert any(c[0] == "accounts_moved" for c in written.values())
    orders = layouts[(DB, "orders")][-1]
    assert orders.types[orders.names.index("priority")] == "string"

    # Apply's MERGE source reads those records: every net change of every segment, the segments
    # after each DDL included (their versions' layouts, derived by apply, read decode's records).
    with caplog.at_level(logging.INFO, logger="ticdc_lake.spark.table_apply"):
        summary = run_apply(spark, config, pipeline, "run-1")
    segments = [found for r in caplog.records if (found := _SEGMENT.search(r.getMessage()))]
    assert (summary.failed, summary.held) == ({}, {})
    assert len(segments) >= 8
    assert [(s["table"], s["read"]) for s in segments] == [(s["table"], s["net"]) for s in segments]


_SEGMENT = re.compile(r"apply: \S+\.(?P<table>\w+): segment .* (?P<read>\d+) of (?P<net>\d+) net change")


def test_records_of_another_layout_hold_their_table_until_a_rebuild(
    spark: Any, tmp_path: Path, lake_home: Path
) -> None:
    topic, pipeline_id = "record-layout", "record_layout"
    config = stage_config(
        tmp_path, lake_home, {"id": pipeline_id, "protocol": "simple-json", "kafka": {"topics": [topic]}}
    )
    pipeline = config.pipeline(pipeline_id)
    sim = _simulated("simple-json", topic)
    watermark = min(w for p in range(2) if (w := sim.last_watermark(p)) is not None)
    by_partition: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
    for m in sim.take():
        by_partition.setdefault(m.partition, []).append((m.key, m.value))
    land_messages(LandingStore(pipeline.landing_uri, pipeline.id), topic, by_partition)
    run_decode(spark, config, pipeline, "run-1")
    run_schema_history(spark, config, pipeline, "run-1")
    tables = SystemTables.of(config, pipeline)
    # As if an older release, whose rules carried the orders table's columns otherwise, had decoded them.
    spark.sql(
        f"UPDATE {tables.change_events} SET record_layout = record_layout + 1 "
        f"WHERE pipeline = '{pipeline_id}' AND `table` = 'orders' AND record_layout IS NOT NULL"
    )
    versions = sorted(
        int(r[0])
        for r in spark.table(tables.change_events)
        .where((F.col("pipeline") == pipeline_id) & (F.col("table") == "orders") & F.col("record_layout").isNotNull())
        .select("schema_version")
        .distinct()
        .collect()
    )
    layouts = {v.version: v for v in history_layouts(history_of(spark, tables, pipeline))[(DB, "orders")]}
    parts = []
    for version in versions:
        layout = layouts[version]
        columns = ", ".join(f"{n} {t}" for n, t in zip(layout.names, layout.types, strict=True))
        parts.append(
            f"schema version {version}: written as layout {layout.fingerprint + 1}, "
            f"this release reads it as layout {layout.fingerprint} ({columns})"
        )

    summary = run_apply(spark, config, pipeline, "run-1")
    assert len(versions) >= 3  # the stream's DDLs made versions the rows carry
    assert summary.failed == {}
    assert summary.held == {
        f"{DB}.orders": f"row events of {DB}.orders carry typed records written by another release's layout rules "
        f"({'; '.join(parts)}); read with this release's layout their values would be wrong, so nothing of the "
        "table is applied. Rebuild it from the landed batches, which decodes them again "
        f"(`ticdc-lake rebuild --pipeline {pipeline_id} --table {DB}.orders`, docs/rebuild.md)"
    }
    catalog = load_catalog("lake", config.catalogs["lake"])
    namespace = pipeline.target.namespace_for(DB)

    def differences(table: str) -> list[str]:
        found = catalog.load_table((namespace, table)).scan().to_arrow().to_pylist()
        return table_differences(sim.expected_iceberg_rows(DB, table, watermark), found)

    assert {f"{DB}.accounts_moved", f"{DB}.order_lines"} <= set(summary.applied)
    assert f"{DB}.orders" not in summary.applied
    assert all(differences(t) == [] for t in ("accounts_moved", "order_lines"))
    assert not catalog.table_exists((namespace, "orders"))  # nothing of it applied: not even created

    # The rebuild decodes the landed batches again with this release: the records read as written.
    rebuilt = run_rebuild(spark, config, pipeline, "rebuild-1", [f"{DB}.orders"])
    assert rebuilt.apply is not None
    assert (rebuilt.apply.held, rebuilt.apply.failed) == ({}, {})
    assert differences("orders") == []
