"""What the decode workers pay to carry typed images: text maps against Avro records, per image.

    .venv/bin/python tests/bench/bench_typed_records.py [--images 200000] [--rounds 2]

One Python process, no Spark: the images of the typed-image benchmark's 10-column table
(``bench_typed_images.image``) as the vector decoders hold them, one Arrow array of canonical
texts per column, 4,096 images per batch (``decode_worker.VECTOR_ROWS``). Each round, A B A B:

- ``map``: the images as ``MAP<STRING, STRING>`` (what ``row_batches.image_map`` builds today);
- ``record``: every column typed (``typed_columns.typed_column``) and the images encoded as
  Avro records (``avro_records.encode_records``);

each also written as one Parquet column with zstd into memory, a row group per 32 MiB of Arrow
(the workers write ``change_events`` themselves, ``event_files``). Prints CPU µs
(``time.process_time``) and wall µs per image for building and for building + writing, and the
Parquet bytes per image. Asserts nothing; docs/typed-row-images.md has the figures and the read side.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from bench_typed_images import COLUMNS, image  # type: ignore[import-not-found,unused-ignore]

from ticdc_lake.spark.arrow_decode.avro_records import encode_records
from ticdc_lake.spark.arrow_decode.typed_columns import typed_column
from ticdc_lake.spark.decode_arrow import MAP_ARROW
from ticdc_lake.spark.event_files import ROW_GROUP_ARROW_BYTES

BATCH = 4096


def text_batches(images: int) -> list[list[pa.Array]]:
    """The images as per-column arrays of canonical text, one list per batch."""
    batches = []
    for start in range(0, images, BATCH):
        rows = [image(i) for i in range(start, min(start + BATCH, images))]
        batches.append([pa.array([row[c.name] for row in rows], pa.string()) for c in COLUMNS])
    return batches


def as_map(texts: list[pa.Array]) -> pa.Array:
    """The columns as one map per image, keys in column order (``row_batches.image_map``'s layout)."""
    count, width = len(texts[0]), len(texts)
    items = pa.concat_arrays(texts).take(
        pa.array((np.arange(width)[None, :] * count + np.arange(count)[:, None]).ravel())
    )
    keys = pa.array([c.name for c in COLUMNS]).take(pa.array(np.tile(np.arange(width), count)))
    offsets = pa.array(np.arange(0, (count + 1) * width, width, dtype=np.int32))
    return pa.MapArray.from_arrays(offsets, keys, items, type=MAP_ARROW)


def as_records(texts: list[pa.Array]) -> pa.Array:
    return encode_records([typed_column(t, c.iceberg_type).values for t, c in zip(texts, COLUMNS, strict=True)])


def measure(
    batches: list[list[pa.Array]], build: Callable[[list[pa.Array]], pa.Array], write: bool
) -> tuple[float, float, int]:
    """(CPU s, wall s, Parquet bytes) of building (and writing) every batch; written as the workers
    write ``change_events``: a row group per ``event_files.ROW_GROUP_ARROW_BYTES`` of Arrow."""
    sink = pa.BufferOutputStream()
    wall, cpu = time.perf_counter(), time.process_time()
    writer = None
    pending: list[pa.Array] = []
    for texts in batches:
        pending.append(build(texts))
        if write and (sum(a.nbytes for a in pending) >= ROW_GROUP_ARROW_BYTES or texts is batches[-1]):
            table = pa.table({"after": pa.chunked_array(pending)}).combine_chunks()
            writer = writer or pq.ParquetWriter(sink, table.schema, compression="zstd")
            writer.write_table(table, row_group_size=table.num_rows)
            pending = []
        elif not write:
            pending = []
    if writer is not None:
        writer.close()
    return time.process_time() - cpu, time.perf_counter() - wall, sink.getvalue().size if write else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    batches = text_batches(args.images)
    builds = {"map": as_map, "record": as_records}
    for build in builds.values():  # warm up: imports, first calls
        build(batches[0])
    results: dict[tuple[str, bool], list[tuple[float, float, int]]] = {}
    for _ in range(args.rounds):
        for name, build in builds.items():
            for write in (False, True):
                results.setdefault((name, write), []).append(measure(batches, build, write))
    per = 1e6 / args.images
    print(f"{args.images:,} images of {len(COLUMNS)} columns, {args.rounds} rounds A B A B, CPU / wall µs per image")
    for (name, write), runs in results.items():
        what = "build + Parquet zstd" if write else "build"
        cpu = " ".join(f"{c * per:.2f}/{w * per:.2f}" for c, w, _ in runs)
        size = f", {runs[-1][2] / args.images:.1f} Parquet bytes per image" if write else ""
        print(f"  {name:7s} {what:21s} {cpu}{size}")
    for write in (False, True):
        ratio = sum(c for c, _, _ in results[("record", write)]) / sum(c for c, _, _ in results[("map", write)])
        print(f"  record / map CPU, {'build + write' if write else 'build'}: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
