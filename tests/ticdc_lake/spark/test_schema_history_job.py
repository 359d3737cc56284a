"""Decode + schema history on real Spark for a Canal-JSON stream whose DDL is text only.

One table goes through CREATE, ALTERs (two sharing a commit TSO, one re-delivered), RENAME, an
unreadable ALTER and DROP; two tables are met mid-stream, one named in the baseline folder, one
not. Messages are hand-built Canal-JSON (TiDB extension on) landed with the real LandingStore.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyspark.sql import functions as F

from ticdc_lake.config import PipelineConfig, load_config
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.landing.raw_batch import ConsumedRecord
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.event_images import readable
from ticdc_lake.spark.record_images import history_layouts
from ticdc_lake.spark.schema_history_job import run_schema_history
from ticdc_lake.spark.schema_history_table import history_of
from ticdc_lake.spark.system_tables import SystemTables

pytestmark = pytest.mark.spark

T = 450_000_000_000_000_000
CREATE = "CREATE TABLE `orders` (`id` BIGINT NOT NULL PRIMARY KEY, `amount` DECIMAL(12,2), `note` VARCHAR(20))"
ADD_PAID = "ALTER TABLE `orders` ADD COLUMN `paid` TINYINT(1) NOT NULL DEFAULT 0"
DROP_NOTE = "ALTER TABLE `orders` DROP COLUMN `note`"
ADD_STATE = "ALTER TABLE `orders` ADD COLUMN `state` ENUM('new','paid','sent') DEFAULT 'new'"
RENAME = "RENAME TABLE `orders` TO `orders_v2`"
BAD = "ALTER TABLE `orders_v2` FROBNICATE EVERYTHING"
DROP = "DROP TABLE `orders_v2`"
BASELINE = "CREATE TABLE `customers` (`cid` INT NOT NULL, `tier` ENUM('gold','silver') NOT NULL, PRIMARY KEY (`cid`));"


def _ddl(ts: int, kind: str, table: str, sql: str) -> dict[str, Any]:
    return {
        "id": 0,
        "database": "shop",
        "table": table,
        "pkNames": None,
        "isDdl": True,
        "type": kind,
        "es": ts >> 18,
        "ts": 1700000000123,
        "sql": sql,
        "sqlType": None,
        "mysqlType": None,
        "data": None,
        "old": None,
        "_tidb": {"commitTs": ts},
    }


def _insert(ts: int, table: str, row: dict[str, str], types: dict[str, str], key: list[str]) -> dict[str, Any]:
    return {
        "id": 0,
        "database": "shop",
        "table": table,
        "pkNames": key,
        "isDdl": False,
        "type": "INSERT",
        "es": ts >> 18,
        "ts": 1700000000123,
        "sql": "",
        "sqlType": {name: 4 for name in types},
        "mysqlType": types,
        "old": None,
        "data": [row],
        "_tidb": {"commitTs": ts},
    }


ORDERS_1 = {"id": "bigint", "amount": "decimal", "note": "varchar"}
ORDERS_3 = {"id": "bigint", "amount": "decimal", "paid": "tinyint", "state": "enum"}
PARTITION_0 = [
    _ddl(T + 100, "CREATE", "orders", CREATE),
    _insert(T + 101, "orders", {"id": "1", "amount": "9.50", "note": "a"}, ORDERS_1, ["id"]),
    _ddl(T + 200, "ALTER", "orders", ADD_PAID),
    _ddl(T + 200, "ALTER", "orders", ADD_PAID),  # re-delivered copy
    _ddl(T + 300, "ALTER", "orders", DROP_NOTE),
    _ddl(T + 300, "ALTER", "orders", ADD_STATE),  # same commit TSO, second
    _insert(T + 301, "orders", {"id": "2", "amount": "1.00", "paid": "1", "state": "2"}, ORDERS_3, ["id"]),
    _ddl(T + 400, "RENAME", "orders_v2", RENAME),
    _insert(T + 401, "orders_v2", {"id": "3", "amount": "2.00", "paid": "0", "state": "3"}, ORDERS_3, ["id"]),
    _ddl(T + 500, "ALTER", "orders_v2", BAD),
    _ddl(T + 600, "ERASE", "orders_v2", DROP),
]
PARTITION_1 = [
    _insert(
        T + 150,
        "legacy",
        {"k": "7", "price": "3.25", "kind": "2"},
        {"k": "int", "price": "decimal", "kind": "enum"},
        ["k"],
    ),
    _insert(T + 160, "customers", {"cid": "5", "tier": "2"}, {"cid": "int", "tier": "enum"}, ["cid"]),
]


def _pipeline(tmp_path: Path, lake_home: Path, baseline: Path) -> tuple[Any, PipelineConfig, str]:
    suffix = uuid.uuid4().hex[:8]
    topic, pipeline_id = f"canal-{suffix}", f"canal_{suffix}"
    config_file = tmp_path / "pipelines.yaml"
    catalog = {"uri": f"jdbc:sqlite:{lake_home}/catalog/lake.db", "warehouse": f"file://{lake_home}/warehouse"}
    doc = {
        "id": pipeline_id,
        "protocol": "canal-json",
        "kafka": {"topics": [topic]},
        "landing_uri": f"file://{tmp_path}/landing",
        "catalog": "lake",
        "schema_baseline_uri": f"file://{baseline}",
    }
    config_file.write_text(yaml.safe_dump({"catalogs": {"lake": catalog}, "pipelines": [doc]}))
    config = load_config(config_file)
    return config, config.pipeline(pipeline_id), topic


RECREATE = "CREATE TABLE `orders_v2` (`k` VARCHAR(8) NOT NULL PRIMARY KEY)"
ADD_Z = "ALTER TABLE `orders_v2` ADD COLUMN `z` INT"
#: The second batch, landed and decoded in a second run: a copy of the DROP landed in the first.
BATCH_2 = [
    _ddl(T + 600, "ERASE", "orders_v2", DROP),
    _ddl(T + 700, "CREATE", "orders_v2", RECREATE),
    _insert(T + 701, "orders_v2", {"k": "a"}, {"k": "varchar"}, ["k"]),
    _ddl(T + 800, "ALTER", "orders_v2", ADD_Z),
    _insert(T + 801, "orders_v2", {"k": "b", "z": "1"}, {"k": "varchar", "z": "int"}, ["k"]),
]


def _land(store: LandingStore, topic: str, sequence: int, partitions: dict[int, tuple[int, list[Any]]]) -> None:
    ranges = []
    for partition, (start, docs) in sorted(partitions.items()):
        records = [
            ConsumedRecord(
                RawMessage(topic, partition, start + o, 0, None, json.dumps(d, separators=(",", ":")).encode())
            )
            for o, d in enumerate(docs)
        ]
        end = start + len(records)
        ranges.append(store.write_batch(records, topic=topic, partition=partition, start=start, end=end))
    store.publish(
        Manifest(
            pipeline=store.pipeline_id,
            sequence=sequence,
            batch_id=f"{sequence:012d}",
            run_id="land-1",
            interval_start=None,
            interval_end=None,
            created_at=datetime.now(UTC),
            ranges=tuple(ranges),
        )
    )


def _columns(text: str | None) -> list[str] | None:
    return None if text is None else [c.name for c in TableSchema.from_json(text).columns]


def _version(text: str | None) -> int | None:
    return None if text is None else TableSchema.from_json(text).version


def test_ddl_text_folds_into_change_events_and_schema_history(spark: Any, lake_home: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline" / "shop"
    baseline.mkdir(parents=True)
    (baseline / "customers.sql").write_text(BASELINE)
    config, pipeline, topic = _pipeline(tmp_path, lake_home, baseline.parent)
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    _land(store, topic, 1, {0: (0, PARTITION_0), 1: (0, PARTITION_1)})
    tables = SystemTables.of(config, pipeline)

    summary = run_decode(spark, config, pipeline, "run-1")
    assert (summary.events, summary.pending, summary.quarantined) == (13, 0, 0)
    ddl_rows = spark.sql(
        f"SELECT `offset`, ddl_type, `table`, table_schema, pre_table_schema, schema_error FROM {tables.change_events} "
        f"WHERE pipeline = '{pipeline.id}' AND kind = 'DDL' ORDER BY `offset`"
    ).collect()
    got = [
        (
            r["offset"],
            r["table"],
            _version(r["table_schema"]) and _version(r["table_schema"]) - T,  # type: ignore[operator]
            _columns(r["table_schema"]),
            _version(r["pre_table_schema"]) and _version(r["pre_table_schema"]) - T,  # type: ignore[operator]
            r["schema_error"] is not None,
        )
        for r in ddl_rows
    ]
    assert got == [
        (0, "orders", 100, ["id", "amount", "note"], None, False),
        (2, "orders", 200, ["id", "amount", "note", "paid"], 100, False),
        (3, "orders", 200, ["id", "amount", "note", "paid"], 100, False),
        (4, "orders", 300, ["id", "amount", "paid"], 200, False),
        (5, "orders", 300, ["id", "amount", "paid", "state"], 300, False),
        (7, "orders_v2", 400, ["id", "amount", "paid", "state"], 300, False),
        (9, "orders_v2", None, None, 400, True),
        (10, "orders_v2", None, None, 400, False),
    ]
    bad = next(r for r in ddl_rows if r["offset"] == 9)["schema_error"]
    assert BAD in bad

    assert run_schema_history(spark, config, pipeline, "run-1") == 5
    # The row changes' images as text (rows with a typed record keep no map: read from the record
    # with the layouts the schema history gives).
    layouts = history_layouts(history_of(spark, tables, pipeline), pipeline.policies)
    dml = (
        readable(spark.table(tables.change_events), layouts)
        .where((F.col("pipeline") == pipeline.id) & (F.col("kind") == "DML"))
        .orderBy("commit_ts")
        .collect()
    )
    assert [(r["table"], int(r["schema_version"]) and int(r["schema_version"]) - T, r["after"]) for r in dml] == [
        ("orders", 100, {"id": "1", "amount": "9.50", "note": "a"}),
        ("legacy", 0, {"k": "7", "price": "3.25", "kind": "2"}),  # members unknown: the number is kept
        ("customers", 0, {"cid": "5", "tier": "silver"}),  # named with the baseline's members
        ("orders", 300, {"id": "2", "amount": "1.00", "paid": "1", "state": "paid"}),
        ("orders_v2", 400, {"id": "3", "amount": "2.00", "paid": "0", "state": "sent"}),
    ]
    assert all(r["after_record"] is not None for r in dml)  # every one of them carries its record
    assert run_schema_history(spark, config, pipeline, "run-2") == 0
    # Run 2 read nothing: change_events and the history are as run 1 left them (one Iceberg
    # metadata look, no Spark job); run 3 below reads again after a decode wrote new events.
    noop = spark.sql(
        f"SELECT status, events_in, message FROM {tables.run_ledger} "
        f"WHERE pipeline = '{pipeline.id}' AND run_id = 'run-2' AND stage = 'schema_history'"
    ).collect()
    assert [tuple(r) for r in noop] == [("NOOP", 0, "change_events unchanged since the last run")]
    history = spark.sql(
        f"SELECT `database`, `table`, schema_version, event, source, dropped, ddl_query, handle_key, table_schema "
        f"FROM {tables.schema_history} WHERE pipeline = '{pipeline.id}' ORDER BY schema_version, `table`"
    ).collect()
    assert [
        (
            r["table"],
            int(r["schema_version"]) and int(r["schema_version"]) - T,
            r["event"],
            r["source"],
            bool(r["dropped"]),
            r["ddl_query"],
            list(r["handle_key"]),
            _columns(r["table_schema"]),
        )
        for r in history
    ] == [
        ("customers", 0, "inferred", "baseline", False, None, ["cid"], ["cid", "tier"]),
        ("legacy", 0, "inferred", "inferred-from-rows", False, None, ["k"], ["k", "price", "kind"]),
        ("orders", 100, "CREATE", "canal-json-ddl", False, CREATE, ["id"], ["id", "amount", "note"]),
        ("orders", 200, "ALTER", "canal-json-ddl", False, ADD_PAID, ["id"], ["id", "amount", "note", "paid"]),
        ("orders", 300, "ALTER", "canal-json-ddl", False, ADD_STATE, ["id"], ["id", "amount", "paid", "state"]),
        ("orders_v2", 400, "RENAME", "canal-json-ddl", False, RENAME, ["id"], ["id", "amount", "paid", "state"]),
        ("orders_v2", 600, "ERASE", "canal-json-ddl", True, DROP, ["id"], ["id", "amount", "paid", "state"]),
    ]
    legacy = TableSchema.from_json(next(r for r in history if r["table"] == "legacy")["table_schema"])
    assert legacy.extra["missing_facts"][:2] == [
        "column 'price': DECIMAL precision and scale unknown; the Iceberg column is a string",
        "column 'kind': ENUM members unknown; values are kept as the numbers the rows send",
    ]

    # Run 2: the DROP copy folds again onto the history; the table is created afresh and altered.
    _land(store, topic, 2, {0: (len(PARTITION_0), BATCH_2)})
    assert run_decode(spark, config, pipeline, "run-2").events == 5
    rows = spark.sql(
        "SELECT `offset`, kind, schema_version, table_schema, pre_table_schema, schema_error "
        f"FROM {tables.change_events} WHERE pipeline = '{pipeline.id}' AND batch_id = '000000000002' ORDER BY `offset`"
    ).collect()
    assert [
        (
            r["offset"] - len(PARTITION_0),
            r["kind"],
            r["schema_version"] and int(r["schema_version"]) - T,
            _columns(r["table_schema"]),
            _version(r["pre_table_schema"]) and _version(r["pre_table_schema"]) - T,  # type: ignore[operator]
            r["schema_error"],
        )
        for r in rows
    ] == [
        (0, "DDL", None, None, 400, None),
        (1, "DDL", None, ["k"], None, None),
        (2, "DML", 700, None, None, None),
        (3, "DDL", None, ["k", "z"], 700, None),
        (4, "DML", 800, None, None, None),
    ]
    # The history's rows are read once per snapshot of the table in an application (the three stages share them).
    before = history_of(spark, tables, pipeline)
    assert history_of(spark, tables, pipeline) is before
    assert run_schema_history(spark, config, pipeline, "run-3") == 2
    after = history_of(spark, tables, pipeline)
    assert after is not before
    assert len(after) == len(before) + 2
    added = spark.sql(
        f"SELECT schema_version, event, dropped FROM {tables.schema_history} "
        f"WHERE pipeline = '{pipeline.id}' AND `table` = 'orders_v2' ORDER BY schema_version"
    ).collect()
    assert [(int(r["schema_version"]) - T, r["event"], r["dropped"]) for r in added] == [
        (400, "RENAME", False),
        (600, "ERASE", True),
        (700, "CREATE", False),
        (800, "ALTER", False),
    ]


def test_ensure_adds_the_new_columns_to_tables_created_before(spark: Any) -> None:
    namespace = f"old_{uuid.uuid4().hex[:8]}"
    tables = SystemTables("lake", namespace)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{namespace}")
    spark.sql(f"CREATE TABLE {tables.change_events} (pipeline STRING NOT NULL, batch_id STRING NOT NULL) USING iceberg")
    spark.sql(f"CREATE TABLE {tables.schema_history} (pipeline STRING NOT NULL) USING iceberg")
    tables.ensure(spark)
    tables.ensure(spark)  # idempotent
    assert spark.table(tables.change_events).columns == [
        "pipeline",
        "batch_id",
        "schema_error",
        "before_record",
        "after_record",
        "before_untyped",
        "after_untyped",
        "before_key",
        "after_key",
        "record_layout",
    ]
    kinds = {f.name: f.dataType.simpleString() for f in spark.table(tables.change_events).schema.fields}
    assert (kinds["after_record"], kinds["after_untyped"], kinds["after_key"], kinds["record_layout"]) == (
        "binary",
        "map<string,string>",
        "array<string>",
        "bigint",
    )
    assert spark.table(tables.schema_history).columns == ["pipeline", "dropped"]
