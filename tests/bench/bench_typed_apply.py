"""What apply's net change and typed source cost with text maps against Avro records (a design bench).

    .venv/bin/python tests/bench/bench_typed_apply.py [--changes 1000000] [--tables 10] [--rounds 2]

Step 3 of the wiring plan in docs/typed-row-images.md, measured before it is built: the shape of
apply's grouped net change (one job over every table's changes: the last change per (table, key)
by commit order), then per table the typed MERGE source, materialized with the ``noop`` sink.
The same changes (the study's 10-column table, ``bench_typed_images.image``; 50 % inserts, 30 %
updates, 20 % deletes over ``--tables`` tables) are written by pyarrow as Parquet, as the decode
workers write ``change_events``, once per carrier:

- ``map``: ``before``/``after`` ``MAP<STRING, STRING>`` (today): the key is ``image['id']``, the
  typed source ``merge_sql.typed_projection`` (``try_cast`` per value and the unrepresentable count);
- ``record``: ``before_record``/``after_record`` Avro records (``avro_records``) and the count of
  unrepresentable values per image: the key comes from ``from_avro`` of the image under its
  table's writer schema (a ``CASE`` on the table, as a grouped job over many tables must), the
  typed source is ``from_avro``'s fields;
- ``record+key``: the same, with the key's text written beside the records at decode, so the
  grouped job reads no record.

Each round runs the carriers in turn (A B C A B C) in one local[2] session; it prints the JVM's
CPU seconds and the wall seconds of the net change (with its cache) and of the typed sources, and
the rows each produced (which must agree). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
import bench_support as support  # type: ignore[import-not-found,unused-ignore]
from bench_typed_images import COLUMNS, image, session  # type: ignore[import-not-found,unused-ignore]
from bench_typed_records import as_map  # type: ignore[import-not-found,unused-ignore]

from ticdc_lake.apply.merge_sql import TargetColumn, typed_projection
from ticdc_lake.identifiers import quote, sql_string
from ticdc_lake.spark.arrow_decode.avro_records import encode_records, writer_schema
from ticdc_lake.spark.arrow_decode.typed_columns import typed_column

CARRIERS = ("map", "record", "record+key")
BATCH = 65_536


def _texts(rows: np.ndarray) -> list[pa.Array]:
    made = [image(int(i)) for i in rows]
    return [pa.array([m[c.name] for m in made], pa.string()) for c in COLUMNS]


def write_changes(folder: Path, changes: int, tables: int, seed: int = 7) -> None:
    """The changes as Parquet per carrier under ``folder/<carrier>``."""
    rng = np.random.default_rng(seed)
    for carrier in CARRIERS:
        (folder / carrier).mkdir(parents=True)
    writers: dict[str, pq.ParquetWriter] = {}
    for start in range(0, changes, BATCH):
        count = min(BATCH, changes - start)
        numbers = np.arange(start, start + count)
        table = pa.array([f"t{n % tables}" for n in numbers.tolist()])
        kind = rng.choice(np.array(["I", "U", "D"]), size=count, p=[0.5, 0.3, 0.2])
        # an insert makes row n; an update or delete hits an earlier row of the same table
        earlier = numbers - tables * rng.integers(1, 50, count)
        target = np.where((kind == "I") | (earlier < 0), numbers, earlier)
        texts = _texts(target)
        has_before, has_after = kind != "I", kind != "D"
        common = {"table": table, "commit_ts": pa.array(numbers, pa.int64()), "op": pa.array(kind)}
        mask_before, mask_after = pa.array(~has_before), pa.array(~has_after)
        maps = as_map(texts)
        typed = [typed_column(t, c.iceberg_type) for t, c in zip(texts, COLUMNS, strict=True)]
        records = encode_records([t.values for t in typed])
        bad = pa.array(np.sum([t.unrepresentable for t in typed], axis=0).astype(np.int32))
        key = texts[0]
        batches = {
            "map": {**common, "before": _masked(maps, mask_before), "after": _masked(maps, mask_after)},
            "record": {
                **common,
                "before_record": _masked(records, mask_before),
                "after_record": _masked(records, mask_after),
                "bad": bad,
            },
        }
        batches["record+key"] = {**batches["record"], "key": key}
        for carrier, columns in batches.items():
            frame = pa.table(columns)
            if carrier not in writers:
                writers[carrier] = pq.ParquetWriter(
                    folder / carrier / "part-0.parquet", frame.schema, compression="zstd"
                )
            writers[carrier].write_table(frame)
    for writer in writers.values():
        writer.close()


def _masked(values: pa.Array, mask: pa.Array) -> pa.Array:
    return pc.if_else(mask, pa.scalar(None, values.type), values)


def net_changes(spark: Any, folder: Path, carrier: str, tables: int) -> Any:
    """The last change per (table, key), cached: apply's grouped net change, simplified."""
    frame = spark.read.parquet(str(folder / carrier))
    if carrier == "map":
        frame = frame.selectExpr("table", "op", "commit_ts", "CASE WHEN op = 'D' THEN before ELSE after END AS image")
        key = "image['id']"
    else:
        frame = frame.selectExpr(
            "table",
            "op",
            "commit_ts",
            "bad",
            "CASE WHEN op = 'D' THEN before_record ELSE after_record END AS image",
            *(["key"] if carrier == "record+key" else []),
        )
        if carrier == "record+key":
            key = "key"
        else:
            schema = sql_string(json.dumps(writer_schema([c.iceberg_type for c in COLUMNS])))
            branches = " ".join(
                f"WHEN 't{t}' THEN CAST(from_avro(image, {schema}).c0 AS STRING)" for t in range(tables)
            )
            key = f"CASE table {branches} END"
    ranked = frame.selectExpr("*", f"row_number() OVER (PARTITION BY table, {key} ORDER BY commit_ts DESC) AS n")
    return ranked.where("n = 1").drop("n").persist()


def typed_source(net: Any, carrier: str, table: str) -> Any:
    rows = net.where(f"table = {sql_string(table)}")
    if carrier == "map":
        return rows.selectExpr(
            *typed_projection("image", [TargetColumn(c.name, c.iceberg_type) for c in COLUMNS]), "op"
        )
    schema = sql_string(json.dumps(writer_schema([c.iceberg_type for c in COLUMNS])))
    fields = [f"r.c{i} AS {quote(c.name)}" for i, c in enumerate(COLUMNS)]
    return rows.selectExpr(f"from_avro(image, {schema}) AS r", "bad", "op").selectExpr(*fields, "bad", "op")


def measured(sampler: Any, action: Callable[[], Any]) -> tuple[Any, float, float]:
    sampler.sample()
    before = sampler.cpu().get("jvm", 0.0)
    started = time.perf_counter()
    result = action()
    wall = time.perf_counter() - started
    sampler.sample()
    return result, wall, sampler.cpu().get("jvm", 0.0) - before


def run(spark: Any, sampler: Any, folder: Path, carrier: str, tables: int) -> dict[str, float]:
    net, net_s, net_cpu = measured(sampler, lambda: (n := net_changes(spark, folder, carrier, tables), n.count())[0])
    typed_s = typed_cpu = 0.0
    rows = 0
    for t in range(tables):
        source = typed_source(net, carrier, f"t{t}")
        _, wall, cpu = measured(sampler, source.write.format("noop").mode("overwrite").save)
        typed_s, typed_cpu = typed_s + wall, typed_cpu + cpu
        rows += source.count()
    net.unpersist()
    return {"net_s": net_s, "net_cpu": net_cpu, "typed_s": typed_s, "typed_cpu": typed_cpu, "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-typed-apply-") as name:
        folder = Path(name)
        started = time.perf_counter()
        write_changes(folder, args.changes, args.tables)
        print(f"{args.changes:,} changes over {args.tables} tables written in {time.perf_counter() - started:.1f} s")
        for carrier in CARRIERS:
            size = sum(p.stat().st_size for p in (folder / carrier).iterdir())
            print(f"  {carrier:10s} {size / args.changes:.1f} Parquet bytes per change")
        sampler = support.TreeSampler().start()
        spark = session(folder)
        try:
            run(spark, sampler, folder, "map", args.tables)  # warm-up: classes, first compiles
            results: dict[str, list[dict[str, float]]] = {c: [] for c in CARRIERS}
            for round_ in range(args.rounds):
                print(f"round {round_ + 1}, load average {os.getloadavg()[0]:.2f}", flush=True)
                for carrier in CARRIERS:
                    result = run(spark, sampler, folder, carrier, args.tables)
                    results[carrier].append(result)
                    print(
                        f"  {carrier:10s} net change {result['net_cpu']:6.1f} JVM CPU s {result['net_s']:6.1f} s;"
                        f" typed sources {result['typed_cpu']:6.1f} JVM CPU s {result['typed_s']:6.1f} s;"
                        f" {int(result['rows']):,} rows",
                        flush=True,
                    )
            base = sum(r["net_cpu"] + r["typed_cpu"] for r in results["map"])
            for carrier in CARRIERS[1:]:
                total = sum(r["net_cpu"] + r["typed_cpu"] for r in results[carrier])
                print(f"{carrier} / map, JVM CPU of net change + typed sources: {total / base:.2f}")
        finally:
            spark.stop()
            sampler.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
