"""The JVM's share of the decode stage: writing ``change_events``, with and without table properties.

Measurement only; it prints figures and asserts nothing. The landed Debezium messages of
``bench_decode`` (one 10-column table, INSERT/UPDATE/DELETE in turn) are decoded in this process
by the real decoder into the stage's Arrow record batches (``events_to_arrow``), handed to one
local Spark session (``bench_local_spark``, ``local[2]``) and cached there, then written into
``change_events`` (created by ``SystemTables.ensure``, written with the stage's write options)
again and again, each variant's table properties set just before its write, variants in turn
(A B C A B C ...), each into its own ``batch_id`` partition, which is then read back and its
images hashed (what apply's first job does with them). The first round warms the JVM and is not
counted. Per variant: driver + JVM CPU microseconds per event of the write and of the read, median
and minimum over the counted rounds, the ratios of the medians to the first variant (no property
set), and the bytes of the written files. It measures Spark's writer, which the decode stage uses
only where its workers cannot write the files themselves (docs/design.md, "The decode workers write
`change_events`"); ``bench_change_events_codec.py`` measures table properties with both writers.

    .venv/bin/python tests/bench/bench_decode_write.py --events 60000 --copies 3 --rounds 4
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from itertools import islice
from pathlib import Path
from typing import Any

import bench_support as support  # type: ignore[import-not-found,unused-ignore]  # beside this file
import pyarrow as pa
from bench_local_spark import local_session  # type: ignore[import-not-found,unused-ignore]
from pyspark.sql.functions import col, lit

from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.schema_scan import announced_schemas
from ticdc_lake.spark.decode_arrow import events_to_arrow
from ticdc_lake.spark.decode_worker import BATCH_ROWS
from ticdc_lake.spark.system_tables import UNSHUFFLED_WRITE, SystemTables

#: name -> table properties of ``change_events`` during its writes (the first: none).
VARIANTS: dict[str, dict[str, str]] = {
    "none": {},
    "metrics counts": {"write.metadata.metrics.default": "counts"},
    "no dictionary, image values": {
        f"write.parquet.dict-encoding-enabled.column.{column}.value": "false" for column in ("before", "after")
    },
    "no dictionary, images": {
        f"write.parquet.dict-encoding-enabled.column.{column}.{part}": "false"
        for column in ("before", "after")
        for part in ("key", "value")
    },
    "no dictionary": {"parquet.enable.dictionary": "false"},
}


def system_tables_and_copies(spark: Any, table: pa.Table, copies: int) -> tuple[SystemTables, Any, int]:
    """The bench's system tables (in ``local_session``'s catalog), made, and ``copies`` copies of the
    decoded events ``table`` as one cached DataFrame with its row count."""
    tables = SystemTables("lake", "bench_system")
    tables.ensure(spark)
    frame = spark.createDataFrame(table)
    for _ in range(copies - 1):
        frame = frame.unionByName(spark.createDataFrame(table))
    frame = frame.cache()
    return tables, frame, frame.count()


def decoded_batches(workdir: Path, events: int) -> pa.Table:
    """Land ``events`` Debezium DML messages and decode them as a worker does, into one Arrow table."""
    found = support.encoder_for_protocol("debezium")
    assert found is not None
    encoder, _ = found
    messages = support.build_messages(encoder, events, 3, 1, min(events, 30_000))
    config = support.write_config(workdir, "debezium")
    pipeline = config.pipeline(support.PIPELINE)
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    support.land(store, messages)
    files = [r.file for m in store.manifests() for r in m.ranges if r.file]
    raw = list(islice((m for f in files for m in store.read_messages(f)), events + 10))
    decoder = decoder_for(pipeline.protocol, pipeline.codec, DecodeResources())
    lookup = MemorySchemaLookup(announced_schemas(decoder, raw))
    decoded = [e for m in raw for e in decoder.read(m, lookup)]
    batches = [
        events_to_arrow(pipeline.id, "000000000001", "bench", decoded[i : i + BATCH_ROWS])
        for i in range(0, len(decoded), BATCH_ROWS)
    ]
    return pa.Table.from_batches(batches)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=60_000, help="DML messages decoded")
    parser.add_argument("--copies", type=int, default=3, help="each write holds the events this many times")
    parser.add_argument("--rounds", type=int, default=4, help="counted rounds (one more warms the JVM)")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-decode-write-"))
    table = decoded_batches(workdir, args.events)
    spark, now = local_session("bench-decode-write-")
    tables, frame, rows = system_tables_and_copies(spark, table, args.copies)
    every = sorted({key for properties in VARIANTS.values() for key in properties})
    write: dict[str, list[float]] = {name: [] for name in VARIANTS}
    read: dict[str, list[float]] = {name: [] for name in VARIANTS}
    sizes: dict[str, int] = {}
    for round_ in range(args.rounds + 1):
        for index, (name, properties) in enumerate(VARIANTS.items()):
            quoted = ", ".join(f"'{key}'" for key in every)
            spark.sql(f"ALTER TABLE {tables.change_events} UNSET TBLPROPERTIES IF EXISTS ({quoted})")
            if properties:
                pairs = ", ".join(f"'{key}'='{value}'" for key, value in properties.items())
                spark.sql(f"ALTER TABLE {tables.change_events} SET TBLPROPERTIES ({pairs})")
            batch = f"{round_:04d}-{index}"
            (_, started) = now()
            frame.withColumn("batch_id", lit(batch)).writeTo(tables.change_events).options(
                **UNSHUFFLED_WRITE
            ).overwritePartitions()
            (_, written) = now()
            # What apply does first with the events: read the batch's images and hash them.
            spark.table(tables.change_events).where(col("batch_id") == batch).selectExpr(
                "max(xxhash64(map_keys(`before`), map_values(`before`), map_keys(`after`), map_values(`after`)))"
            ).collect()
            (_, ended) = now()
            sizes[name] = spark.sql(
                f"SELECT sum(file_size_in_bytes) FROM {tables.change_events}.files WHERE partition.batch_id = '{batch}'"
            ).collect()[0][0]
            if round_:
                write[name].append((written - started) / rows * 1e6)
                read[name].append((ended - written) / rows * 1e6)
            print(
                f"round {round_} {name}: write {(written - started) / rows * 1e6:.1f}, "
                f"read {(ended - written) / rows * 1e6:.1f} CPU us/event",
                flush=True,
            )
    print(f"\n{rows:,} events per write ({args.events:,} decoded x {args.copies}), {args.rounds} counted rounds")
    print("CPU us/event (driver + JVM): median (min); ratio of medians to 'none'; bytes of the written files")
    print(f"{'variant':30} {'write':>14} {'ratio':>6} {'read':>14} {'ratio':>6} {'MiB':>7}")
    base_write, base_read = statistics.median(write["none"]), statistics.median(read["none"])
    for name in VARIANTS:
        w, r = statistics.median(write[name]), statistics.median(read[name])
        print(
            f"{name:30} {w:6.1f} ({min(write[name]):5.1f}) {w / base_write:5.2f}x "
            f"{r:6.1f} ({min(read[name]):5.1f}) {r / base_read:5.2f}x {sizes[name] / 2**20:7.1f}"
        )
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
