"""Where the JVM Simple JSON decoder's CPU goes: each step of its classification timed alone.

``.venv/bin/python tests/bench/bench_jvm_decode_steps.py --events 200000`` lands the messages of
``bench_decode`` (one 10-column table, 3 partitions x 2 batches, the real LandingStore), then on
local Spark (2 cores) runs each step of ``jvm_decode`` over them into Spark's ``noop`` sink, twice
(the second, warm JVM, is printed), with the JVM's CPU seconds beside the wall seconds. It prints
figures; it asserts nothing. docs/design.md (Decode stage performance, JVM path) gives them.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import bench_support as support  # type: ignore[import-not-found,unused-ignore]  # beside this file
import psutil  # type: ignore[import-untyped,unused-ignore]
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.schema_scan import announced_schemas
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.spark import decode_job
from ticdc_lake.spark.jvm_decode import frames
from ticdc_lake.spark.jvm_decode import simple_json as sj
from ticdc_lake.spark.settings import spark_jars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-jvm-steps-") as workdir:
        run(Path(workdir), args.events)


def run(workdir: Path, events: int) -> None:
    found = support.encoder_for_protocol("simple-json")
    assert found is not None
    config = support.write_config(workdir, "simple-json")
    pipeline = config.pipeline(support.PIPELINE)
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    support.land(store, support.build_messages(found[0], events, 3, 2, 30_000))
    files = decode_job.landed_files(pipeline, list(store.manifests()))
    head = next(iter(store.read_messages(files[0].file)))
    decoder = decoder_for(Protocol.SIMPLE_JSON, CodecOptions(), None)
    lookup = MemorySchemaLookup(announced_schemas(decoder, [head]))
    spark = SparkSession.builder.master("local[2]").config("spark.jars", ",".join(spark_jars())).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = next(p for p in psutil.Process().children(recursive=True) if p.name() == "java")
    root = frames.local_root(pipeline.landing_uri, pipeline.id)
    assert root is not None
    total = sum(f.count for f in files)
    print(f"JVM decode steps: {total:,} landed messages, local[2], CPU us per message of the JVM (warm)")

    def timed(name: str, action: Callable[[], object]) -> None:
        for _ in range(2):
            cpu, wall = sum(jvm.cpu_times()[:2]), time.perf_counter()
            action()
            wall, cpu = time.perf_counter() - wall, sum(jvm.cpu_times()[:2]) - cpu
        print(f"  {name:52s} {wall:6.2f} s wall {cpu:6.2f} CPU s {cpu / total * 1e6:7.1f} CPU us/message")

    def noop(frame: Callable[[], DataFrame]) -> Callable[[], object]:
        return lambda: frame().write.format("noop").mode("overwrite").save()

    def messages() -> DataFrame:
        return frames.landed_messages(spark, root, files)

    text = F.col("value").cast("string")
    timed("read landed files, keep planned offsets", noop(lambda: messages().select(F.length("value"))))
    timed(
        "+ UTF-8 check and cast",
        noop(lambda: messages().select(F.length(F.when(F.expr("is_valid_utf8(value)"), text)))),
    )
    timed("+ the message regular expression", noop(lambda: messages().select(text.rlike(sj.MESSAGE))))
    envelope = F.when(text.rlike(sj.MESSAGE), F.from_json(text, sj.ENVELOPE))
    timed("+ from_json", noop(lambda: messages().select(F.size(envelope["data"]))))

    def decoded() -> DataFrame:
        frame = sj.decode_simple_json(spark, messages(), lookup, CodecOptions())
        assert frame is not None
        return frame

    for codegen in ("true", "false"):
        spark.conf.set("spark.sql.codegen.wholeStage", codegen)
        timed(f"classification, whole-stage codegen {codegen}", noop(lambda: decoded().select(F.length("kind"))))
    spark.conf.set("spark.sql.codegen.wholeStage", "true")

    def handed_over() -> None:
        found = frames.jvm_decoded(spark, pipeline, files, lookup)
        assert found is not None
        found.mapInArrow(_drop, "n BIGINT").collect()

    timed("jvm_decoded handed to the Python workers (dropped)", handed_over)
    spark.stop()


def _drop(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A ``mapInArrow`` function that reads every batch and returns one row: the hand-over's cost alone."""
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pylist([{"n": 1}])


if __name__ == "__main__":
    main()
