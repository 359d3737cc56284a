"""The run report: built from ledger rows, logged as a table, turned into asset events, metrics and lineage."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from airflow.sdk.execution_time.context import OutletEventAccessors

from ticdc_lake import tso
from ticdc_lake.config import load_config
from ticdc_lake.landing.manifest import LandedRange, Manifest
from ticdc_lake_airflow.assets import (
    emit_asset_events,
    pipeline_asset,
    table_asset,
    table_asset_uri,
    table_extra,
    tables_alias,
    transform_outlets,
)
from ticdc_lake_airflow.lineage import kafka_namespace, land_lineage, location_dataset, transform_lineage
from ticdc_lake_airflow.metrics import land_metrics, metric_name, transform_metrics
from ticdc_lake_airflow.run_report import build_report, summary_lines
from ticdc_lake_airflow.spark_stages import spark_stage_task

CONFIG = """\
catalogs:
  lake: {uri: "jdbc:sqlite:/data/catalog.db", warehouse: "file:///data/warehouse"}
pipelines:
  - id: shop
    protocol: simple-json
    kafka: {topics: [ticdc-shop]}
    landing_uri: s3://bucket/landing
    catalog: lake
    target: {namespace: "db_{database}"}
"""
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
W1 = tso.from_datetime(NOW - timedelta(seconds=90), 3)
W2 = tso.from_datetime(NOW - timedelta(seconds=30), 7)
RUN = "scheduled__2026-11-21T11:00:00+00:00"


def _pipeline(tmp_path: Path) -> Any:
    path = tmp_path / "pipelines.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    config = load_config(path)
    return config, config.pipeline("shop")


def _ledger(run_id: str = RUN) -> list[dict[str, Any]]:
    def row(stage: str, database: str | None, table: str | None, status: str, **values: Any) -> dict[str, Any]:
        base = dict.fromkeys(
            ("events_in", "rows_inserted", "rows_updated", "rows_deleted", "window_end", "watermark", "snapshot_id")
        )
        return {
            **base,
            "run_id": run_id,
            "stage": stage,
            "database": database,
            "table": table,
            "status": status,
            "message": None,
            "duration_ms": 1500,
            **values,
        }

    return [
        row("decode", None, None, "OK", events_in=12),
        row("schema_history", None, None, "NOOP"),
        row(
            "apply",
            "shop",
            "orders",
            "APPLIED",
            events_in=9,
            rows_inserted=4,
            rows_updated=3,
            rows_deleted=1,
            window_end=Decimal(W2),
            snapshot_id=8_000_000_000_000_000_001,
        ),
        row("apply", "shop", "a.b", "NOOP", events_in=0, window_end=Decimal(W2)),
        row("apply", "shop", "users", "HELD", events_in=0, window_end=Decimal(W1), message="held: quarantined\nmore"),
        row("apply", "shop", None, "APPLIED", message="CREATE DATABASE"),
        row("apply", None, None, "OK", watermark=Decimal(W2)),
        row("apply", "other", "t", "APPLIED", events_in=5, rows_inserted=5) | {"run_id": "another run"},
    ]


DECODED = [
    {"batch_id": "000000000003", "run_id": RUN, "messages": 10, "events": 7, "quarantined": 1, "pending": 0},
    {"batch_id": "000000000003", "run_id": RUN, "messages": 6, "events": 5, "quarantined": 0, "pending": 2},
    {"batch_id": "000000000002", "run_id": "older", "messages": 99, "events": 99, "quarantined": 9, "pending": 9},
]


def test_report_holds_only_this_runs_rows_with_iceberg_names(tmp_path: Path) -> None:
    _, pipeline = _pipeline(tmp_path)
    report = build_report(pipeline, RUN, _ledger(), DECODED)
    assert report.steps == {"decode": "OK", "schema_history": "NOOP", "apply": "OK"}
    assert report.watermark == W2
    assert (report.batches, report.messages, report.events, report.quarantined, report.pending) == (1, 16, 12, 1, 2)
    assert [(t.identifier, t.status, t.applied_ts) for t in report.tables] == [
        ("lake.db_shop.a%2Eb", "NOOP", W2),
        ("lake.db_shop.orders", "APPLIED", W2),
        ("lake.db_shop.users", "HELD", W1),
    ]
    assert [t.name for t in report.changed] == ["orders"]
    assert (report.total("inserted"), report.total("updated"), report.total("deleted")) == (4, 3, 1)
    assert report.notes == [("database shop", "APPLIED", "CREATE DATABASE")]
    assert report.lag_seconds(NOW) == 30.0


def test_a_retried_run_reports_its_newest_rows(tmp_path: Path) -> None:
    _, pipeline = _pipeline(tmp_path)
    first_try = [r | {"started_at": NOW - timedelta(minutes=5)} for r in _ledger()]
    failed = next(r for r in first_try if r["table"] == "orders")
    failed.update(status="FAILED", rows_inserted=0, message="commit conflict")
    retry = [r | {"started_at": NOW} for r in _ledger()]
    report = build_report(pipeline, RUN, [*retry, *first_try], DECODED)
    assert [(t.name, t.status, t.inserted) for t in report.tables] == [
        ("a%2Eb", "NOOP", 0),
        ("orders", "APPLIED", 4),
        ("users", "HELD", 0),
    ]


def test_summary_is_a_table_with_one_line_per_target_table(tmp_path: Path) -> None:
    _, pipeline = _pipeline(tmp_path)
    lines = summary_lines(build_report(pipeline, RUN, _ledger(), DECODED), now=NOW)
    assert lines[0] == f"run summary: pipeline 'shop' run {RUN!r}: decode OK, schema_history NOOP, apply OK"
    assert lines[1] == "  decoded 1 batch(es), 16 message(s) -> 12 event(s), 1 quarantined, 2 pending"
    assert lines[2] == f"  watermark {W2} ({tso.to_datetime(W2).isoformat()}), 30 s behind now"
    assert lines[3] == "  3 table(s): 1 changed, +4 ~3 -1 rows"
    assert lines[4].split() == [
        "table", "status", "events", "inserted", "updated", "deleted", "applied_ts", "applied_at", "(UTC)", "seconds"
    ]  # fmt: skip
    orders = next(line for line in lines if "orders" in line).split()
    assert orders == [
        "lake.db_shop.orders",
        "APPLIED",
        "9",
        "4",
        "3",
        "1",
        str(W2),
        "2026-11-21",
        "11:59:30.000",
        "1.5",
    ]
    held = next(line for line in lines if "users" in line)
    assert held.endswith("  held: quarantined")
    assert lines[-1] == "  database shop: APPLIED CREATE DATABASE"


def test_asset_events_for_the_pipeline_and_each_changed_table(tmp_path: Path) -> None:
    _, pipeline = _pipeline(tmp_path)
    report = build_report(pipeline, RUN, _ledger(), DECODED)
    events = OutletEventAccessors()
    uris = emit_asset_events(events, report)
    assert uris == ["iceberg://lake/db_shop/orders"]
    assert events[pipeline_asset("shop")].extra == {
        "pipeline": "shop",
        "run_id": RUN,
        "watermark": str(W2),
        "watermark_at": tso.to_datetime(W2).isoformat(),
        "tables_changed": ["lake.db_shop.orders"],
        "tables_held": ["lake.db_shop.users"],
        "events_decoded": 12,
        "quarantined": 1,
        "rows_inserted": 4,
        "rows_updated": 3,
        "rows_deleted": 1,
    }
    alias_events = events[tables_alias("shop")].asset_alias_events
    assert [(e.source_alias_name, e.dest_asset_key.uri, e.extra) for e in alias_events] == [
        ("ticdc_lake.shop.tables", "iceberg://lake/db_shop/orders", table_extra(report, report.changed[0]))
    ]
    assert alias_events[0].extra["applied_ts"] == str(W2)
    assert alias_events[0].extra["applied_at"] == "2026-11-21T11:59:30+00:00"
    assert alias_events[0].extra["snapshot_id"] == "8000000000000000001"
    assert (alias_events[0].extra["rows_inserted"], alias_events[0].extra["upstream"]) == (4, "shop.orders")


def test_asset_uris_escape_what_a_uri_cannot_hold() -> None:
    assert table_asset_uri("lake", "db_shop", "a%2Eb") == "iceberg://lake/db_shop/a%252Eb"
    assert table_asset_uri("lake", "ns", "naïve table") == "iceberg://lake/ns/na%C3%AFve%20table"
    assert table_asset("lake", "ns", "t").name == "iceberg://lake/ns/t"
    assert pipeline_asset("shop").uri == "ticdc-lake://pipeline/shop"


def test_the_transform_task_declares_its_outlets(tmp_path: Path) -> None:
    task = spark_stage_task("transform", config_path=tmp_path / "p.yaml", pipeline_id="shop")
    assert task.report is True
    assert task.outlets == transform_outlets("shop") == [pipeline_asset("shop"), tables_alias("shop")]
    probe = spark_stage_task("transform", config_path=tmp_path / "p.yaml", pipeline_id="shop", application="x.py")
    assert (probe.report, probe.outlets) == (False, [])


def test_metric_names_and_values(tmp_path: Path) -> None:
    _, pipeline = _pipeline(tmp_path)
    metrics = {
        (m.kind, m.name): m.value for m in transform_metrics(build_report(pipeline, RUN, _ledger(), DECODED), NOW)
    }
    assert metrics == {
        ("counter", "ticdc_lake.shop.decode.batches"): 1,
        ("counter", "ticdc_lake.shop.decode.messages"): 16,
        ("counter", "ticdc_lake.shop.decode.events"): 12,
        ("counter", "ticdc_lake.shop.decode.quarantined"): 1,
        ("gauge", "ticdc_lake.shop.decode.pending"): 2,
        ("counter", "ticdc_lake.shop.apply.rows_inserted"): 4,
        ("counter", "ticdc_lake.shop.apply.rows_updated"): 3,
        ("counter", "ticdc_lake.shop.apply.rows_deleted"): 1,
        ("gauge", "ticdc_lake.shop.apply.tables_changed"): 1,
        ("gauge", "ticdc_lake.shop.apply.tables_held"): 1,
        ("gauge", "ticdc_lake.shop.apply.tables_failed"): 0,
        ("gauge", "ticdc_lake.shop.apply.watermark_lag_seconds"): 30.0,
        ("counter", "ticdc_lake.shop.table.db_shop.orders.rows_inserted"): 4,
        ("counter", "ticdc_lake.shop.table.db_shop.orders.rows_updated"): 3,
        ("counter", "ticdc_lake.shop.table.db_shop.orders.rows_deleted"): 1,
        ("gauge", "ticdc_lake.shop.table.db_shop.a_2Eb.lag_seconds"): 30.0,
        ("gauge", "ticdc_lake.shop.table.db_shop.orders.lag_seconds"): 30.0,
        ("gauge", "ticdc_lake.shop.table.db_shop.users.lag_seconds"): 90.0,
    }
    assert metric_name("p", "table", "ns", "naïve t.x") == "ticdc_lake.p.table.ns.na_ve_t_x"


def _manifest() -> Manifest:
    def landed(partition: int, start: int, end: int) -> LandedRange:
        return LandedRange(
            topic="ticdc-shop",
            partition=partition,
            start=start,
            end=end,
            count=end - start,
            file=f"data/topic=ticdc-shop/partition={partition}/{start:020d}-{end:020d}.avro",
            sha256="0" * 64,
            size_bytes=100 * (end - start),
            first_timestamp_ms=1,
            last_timestamp_ms=2,
        )

    return Manifest(
        pipeline="shop",
        sequence=3,
        batch_id="000000000003",
        run_id=RUN,
        interval_start=None,
        interval_end=None,
        created_at=NOW,
        ranges=(landed(0, 10, 15), landed(2, 0, 3)),
    )


def test_land_metrics_count_what_was_written() -> None:
    fresh = {(m.kind, m.name): m.value for m in land_metrics("shop", _manifest(), reused=False)}
    assert fresh == {
        ("counter", "ticdc_lake.shop.land.messages"): 8,
        ("counter", "ticdc_lake.shop.land.bytes"): 800,
        ("gauge", "ticdc_lake.shop.land.partitions"): 2,
    }
    assert [m.value for m in land_metrics("shop", _manifest(), reused=True)] == [0, 0, 0]
    assert [m.value for m in land_metrics("shop", None, reused=False)] == [0, 0, 0]


def test_lineage_names_topics_landing_folder_and_tables(tmp_path: Path) -> None:
    config, pipeline = _pipeline(tmp_path)
    assert kafka_namespace("SASL_SSL://user@broker-1:9093,broker-2:9093") == "kafka://broker-1:9093"
    assert location_dataset("file:///data/warehouse/ns/t") == ("file", "/data/warehouse/ns/t")
    assert location_dataset("s3://bucket/landing/") == ("s3://bucket", "landing")

    land = land_lineage(pipeline, "127.0.0.1:19092", _manifest())
    assert [(d.namespace, d.name) for d in land.inputs] == [("kafka://127.0.0.1:19092", "ticdc-shop")]
    assert [(d.namespace, d.name) for d in land.outputs] == [("s3://bucket", "landing/shop")]

    report = build_report(pipeline, RUN, _ledger(), DECODED)
    lineage = transform_lineage(pipeline, config.catalog_for(pipeline), report)
    assert [(d.namespace, d.name) for d in lineage.inputs] == [("s3://bucket", "landing/shop")]
    assert [(d.namespace, d.name) for d in lineage.outputs] == [("file", "/data/warehouse/db_shop/orders")]
    symlink = lineage.outputs[0].facets["symlinks"].identifiers[0]
    assert (symlink.namespace, symlink.name, symlink.type) == ("iceberg://lake", "db_shop.orders", "TABLE")
    assert lineage.outputs[0].outputFacets["outputStatistics"].rowCount == 8


def test_the_report_s_imports_can_be_loaded_ahead_in_a_thread() -> None:
    # A fresh interpreter: this test process has imported pyiceberg long ago.
    code = (
        "import sys\n"
        "from ticdc_lake_airflow.run_report import prefetch_report_imports\n"
        "assert 'pyiceberg.table' not in sys.modules\n"
        "prefetch_report_imports().join()\n"
        "print(sorted(m for m in ('pyarrow', 'pyiceberg.catalog.sql', 'pyiceberg.table', 'ticdc_lake.run_ledger') "
        "if m in sys.modules))\n"
    )
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "include"), str(root / "plugins")])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['pyarrow', 'pyiceberg.catalog.sql', 'pyiceberg.table', 'ticdc_lake.run_ledger']"
