"""From Debezium values as a vector decoder reads them to the carrier of a batch's images, per image.

    .venv/bin/python tests/bench/bench_typed_sources.py [--images 200000] [--rounds 2]

One Python process, no Spark: the 10-column table of the typed-image benchmark as TiCDC's Debezium
encoder sends it and ``debezium_columns``' readers read it (BIGINT, VARCHAR, DECIMAL as a double,
INT, DOUBLE, DATE as epoch days, DATETIME(6) as epoch µs, TIMESTAMP(3) as a zoned text, VARBINARY
as base64, BIGINT UNSIGNED as the int64 of its bits), 4,096 images per batch. Each round, A B C:

- ``map``: every column's canonical text (``ColumnReader.canonical``), then the map (today);
- ``record from text``: the same texts typed (``typed_columns.typed_column``), then Avro records;
- ``record at source``: the columns whose reader has a typed converter typed from the values read
  (``typed_sources``), the others from their texts, then Avro records;

built and written as one Parquet column with zstd, a row group per 32 MiB of Arrow (as
``bench_typed_records``). Prints CPU / wall µs per image and the ratios. Asserts nothing.
"""

from __future__ import annotations

import argparse
import base64
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parent))
from bench_typed_images import COLUMNS  # type: ignore[import-not-found,unused-ignore]
from bench_typed_records import as_map, measure  # type: ignore[import-not-found,unused-ignore]

from ticdc_lake.protocols.debezium_values import field_type
from ticdc_lake.spark.arrow_decode.avro_records import encode_records
from ticdc_lake.spark.arrow_decode.debezium_columns import ColumnReader, column_reader
from ticdc_lake.spark.arrow_decode.typed_columns import typed_column

BATCH = 4096
#: Connect field schemas of the columns, in ``COLUMNS`` order, as TiCDC's Debezium encoder writes them.
SPECS = (
    {"type": "int64", "tidb_type": "bigint"},
    {"type": "string"},
    {"type": "double", "tidb_type": "decimal"},
    {"type": "int32", "tidb_type": "int"},
    {"type": "double"},
    {"type": "int32", "name": "io.debezium.time.Date"},
    {"type": "int64", "name": "io.debezium.time.MicroTimestamp"},
    {"type": "string", "name": "io.debezium.time.ZonedTimestamp"},
    {"type": "bytes", "tidb_type": "varbinary"},
    {"type": "int64", "tidb_type": "bigint unsigned"},
)


def readers() -> list[ColumnReader]:
    found = [column_reader(field_type(spec)) for spec in SPECS]
    assert all(r is not None for r in found)
    return [r for r in found if r is not None]


def read_batches(images: int) -> list[list[pa.Array]]:
    """Per batch, each column as its reader reads it."""
    batches = []
    for start in range(0, images, BATCH):
        i = np.arange(start, min(start + BATCH, images))
        day0 = 1950 * 365 - 1970 * 365
        batches.append(
            [
                pa.array(i, pa.int64()),
                pa.array([f"customer {n % 977} Zürich" for n in i.tolist()]),
                pa.array(i % 100000 + (i % 100) / 100, pa.float64()),
                pa.array(i % 1000, pa.int64()),
                pa.array((i % 1000) / 8, pa.float64()),
                pa.array(day0 + i % 20000, pa.int64()),
                pa.array(1_795_000_000_000_000 + i * 7_000_123, pa.int64()),
                pa.array([f"2026-11-21T08:{n % 60:02d}:00.{n % 1000:03d}Z" for n in i.tolist()]),
                pa.array([base64.b64encode(bytes([n % 256, 0xAD, 0xBE, 0xEF])).decode() for n in i.tolist()]),
                pa.array(-1 - i, pa.int64()),  # 2**64 - 1 - i as the int64 of its bits
            ]
        )
    return batches


def builds(column_readers: list[ColumnReader]) -> dict[str, Callable[[list[pa.Array]], pa.Array]]:
    types = [c.iceberg_type for c in COLUMNS]

    def texts(values: list[pa.Array]) -> list[pa.Array]:
        return [r.canonical(v)[0] for r, v in zip(column_readers, values, strict=True)]

    def as_map_(values: list[pa.Array]) -> pa.Array:
        return as_map(texts(values))

    def from_text(values: list[pa.Array]) -> pa.Array:
        return encode_records([typed_column(t, k).values for t, k in zip(texts(values), types, strict=True)])

    def at_source(values: list[pa.Array]) -> pa.Array:
        typed = []
        for reader, column, kind in zip(column_readers, values, types, strict=True):
            value = reader.typed(column, kind) if reader.typed is not None else None
            typed.append(value if value is not None else typed_column(reader.canonical(column)[0], kind).values)
        return encode_records(typed)

    return {"map": as_map_, "record from text": from_text, "record at source": at_source}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    column_readers = readers()
    typed_at_source = [c.name for c, r in zip(COLUMNS, column_readers, strict=True) if r.typed is not None]
    batches = read_batches(args.images)
    variants = builds(column_readers)
    assert variants["record from text"](batches[0]).equals(variants["record at source"](batches[0]))
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, build in variants.items():
            results[name].append(measure(batches, build, True))
    per = 1e6 / args.images
    print(f"{args.images:,} Debezium images of {len(COLUMNS)} columns; typed at source: {', '.join(typed_at_source)}")
    print(f"{args.rounds} rounds A B C, build + Parquet zstd, CPU / wall µs per image")
    for name, runs in results.items():
        figures = " ".join(f"{c * per:.2f}/{w * per:.2f}" for c, w, _ in runs)
        print(f"  {name:17s} {figures}, {runs[-1][2] / args.images:.1f} Parquet bytes per image")
    base = sum(c for c, _, _ in results["map"])
    for name in list(variants)[1:]:
        print(f"  {name} / map CPU: {sum(c for c, _, _ in results[name]) / base:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
