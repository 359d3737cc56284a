"""Decode benchmark: Simple-JSON events per second, in one Python process and in the Spark stage.

`make bench` runs it. It prints figures; it asserts nothing. Input: a 10-column table, one
BOOTSTRAP and N INSERT/UPDATE/DELETE messages spread over 3 partitions, landed with the real
LandingStore (no Kafka needed), then decoded by the real decode stage on local Spark.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import yaml

from ticdc_lake.config import CodecOptions, load_config
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.landing.raw_batch import ConsumedRecord
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.simple_json import SimpleJsonDecoder

VERSION = 455000000000000000
COLUMNS: list[tuple[str, str, dict[str, object]]] = [
    ("id", "bigint", {}),
    ("customer", "varchar", {"length": 64}),
    ("amount", "decimal", {"length": 12, "decimal": 2}),
    ("quantity", "int", {}),
    ("status", "enum", {"elements": ["new", "paid", "shipped"]}),
    ("created_at", "datetime", {"decimal": 6}),
    ("updated_at", "timestamp", {"decimal": 3}),
    ("note", "text", {}),
    ("payload", "varbinary", {"length": 64}),
    ("lifetime", "bigint", {"unsigned": True}),
]


def table_schema() -> dict[str, object]:
    return {
        "schema": "bench",
        "table": "orders",
        "tableID": 100,
        "version": VERSION,
        "columns": [
            {
                "name": n,
                "dataType": {"mysqlType": t, "charset": "utf8mb4", "collate": "utf8mb4_bin", **extra},
                "nullable": n != "id",
                "default": None,
            }
            for n, t, extra in COLUMNS
        ],
        "indexes": [{"name": "primary", "unique": True, "primary": True, "nullable": False, "columns": ["id"]}],
    }


def row(i: int) -> dict[str, object]:
    return {
        "id": str(i),
        "customer": f"customer {i % 977} Zürich",
        "amount": f"{i % 100000}.{i % 100:02d}",
        "quantity": str(i % 1000),
        "status": str(1 + i % 3),
        "created_at": f"2026-11-{1 + i % 28:02d} 10:{i % 60:02d}:{(i * 7) % 60:02d}.{i % 1000000:06d}",
        "updated_at": {"location": "UTC", "value": f"2026-11-21 08:{i % 60:02d}:00.{i % 1000:03d}"},
        "note": "lorem ipsum " * (1 + i % 4),
        "payload": "3q2+7w==",
        "lifetime": str(18446744073709551615 - i),
    }


def messages(count: int) -> list[bytes]:
    out = [
        json.dumps(
            {"version": 1, "type": "BOOTSTRAP", "commitTs": 0, "buildTs": 1, "tableSchema": table_schema()},
            separators=(",", ":"),
        ).encode()
    ]
    for i in range(count):
        kind = ("INSERT", "UPDATE", "DELETE")[i % 3]
        body: dict[str, object] = {
            "version": 1,
            "database": "bench",
            "table": "orders",
            "tableID": 100,
            "type": kind,
            "commitTs": VERSION + i + 1,
            "buildTs": 1,
            "schemaVersion": VERSION,
        }
        if kind != "DELETE":
            body["data"] = row(i)
        if kind != "INSERT":
            body["old"] = row(i)
        out.append(json.dumps(body, separators=(",", ":")).encode())
    return out


def bench_decoder(values: list[bytes]) -> None:
    decoder = SimpleJsonDecoder(load_config_for_codec())
    schemas = MemorySchemaLookup()
    raw = [RawMessage("t", 0, i, 0, None, v) for i, v in enumerate(values)]
    for event in decoder.decode(raw[0], schemas):
        if event.table_schema is not None:
            schemas.add(event.table_schema)
    tracemalloc.start()
    started = time.perf_counter()
    events = sum(len(decoder.decode(m, schemas)) for m in raw[1:])
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"simple-json decoder, 1 Python process: {events} events in {seconds:.2f} s = "
        f"{events / seconds:,.0f} events/s (Python heap peak {peak / 2**20:.1f} MiB, under tracemalloc)"
    )


def load_config_for_codec() -> CodecOptions:
    return CodecOptions()


def bench_spark_stage(values: list[bytes], workdir: Path) -> None:
    from ticdc_lake.spark.decode_job import run_decode
    from ticdc_lake.spark.session import pipeline_session

    config_file = workdir / "pipelines.yaml"
    config_file.write_text(
        yaml.safe_dump(
            {
                "catalogs": {
                    "lake": {"uri": f"jdbc:sqlite:{workdir}/lake.db", "warehouse": f"file://{workdir}/warehouse"}
                },
                "pipelines": [
                    {
                        "id": "bench",
                        "protocol": "simple-json",
                        "kafka": {"topics": ["bench"]},
                        "landing_uri": f"file://{workdir}/landing",
                        "catalog": "lake",
                    }
                ],
            }
        )
    )
    config = load_config(config_file)
    pipeline = config.pipeline("bench")
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    partitions = 3
    per_partition: list[list[bytes]] = [[values[0]] for _ in range(partitions)]
    for i, value in enumerate(values[1:]):
        per_partition[i % partitions].append(value)
    ranges = []
    for p, items in enumerate(per_partition):
        records = [ConsumedRecord(RawMessage("bench", p, o, 1_700_000_000_000, None, v)) for o, v in enumerate(items)]
        ranges.append(store.write_batch(records, topic="bench", partition=p, start=0, end=len(items)))
    store.publish(
        Manifest(
            pipeline="bench",
            sequence=1,
            batch_id="000000000001",
            run_id="bench",
            interval_start=None,
            interval_end=None,
            created_at=datetime.now(UTC),
            ranges=tuple(ranges),
        )
    )
    spark = pipeline_session(config, pipeline, "bench")
    started = time.perf_counter()
    summary = run_decode(spark, config, pipeline, "bench")
    seconds = time.perf_counter() - started
    spark.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"simple-json decode stage, Spark local[*] on {os.cpu_count()} cores: {summary.events} events in "
        f"{seconds:.1f} s = {summary.events / seconds:,.0f} events/s including the Iceberg commits "
        f"(driver Python peak RSS {rss:.0f} MiB; JVM and workers not included)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    started = time.perf_counter()
    values = messages(args.events)
    print(
        f"generated {len(values)} messages ({sum(map(len, values)) / 2**20:.1f} MiB) in "
        f"{time.perf_counter() - started:.1f} s"
    )
    bench_decoder(values)
    with tempfile.TemporaryDirectory(prefix="ticdc-lake-bench-") as tmp:
        bench_spark_stage(values, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
