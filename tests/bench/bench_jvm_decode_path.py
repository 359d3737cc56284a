"""What a JVM Debezium decoder would cost inside Spark, before anyone builds one: the floor parse as a
Spark UDF, between spark-avro's read of the landed files and the hand-over of its rows.

``make bench-jvm-floor`` measures a JVM parse alone (``DebeziumJsonFloor.java``: 3.85 to 4.3 CPU us a
message). A decoder in the decode stage would also pay what is around it: spark-avro reading the
landed Avro files (as ``jvm_decode.frames.landed_messages`` does), Spark converting the decoder's
rows (two maps per event) into its own, and, for the messages it leaves to the Python decoder and for
the typed record carrier, Arrow batches to and from the Python workers. The earlier JVM path (Simple
JSON in Spark SQL) lost to the Python path on exactly these (docs/design.md, "JVM path").

Steps, each over every landed message into Spark's ``noop`` sink on ``local[2]``, run four times (the
last, in a warm JVM, is printed), CPU seconds of the JVM and of its Python workers beside the wall:

1. ``read``: the landed files by spark-avro, the planned offsets kept (``frames.landed_messages``),
   after the files read alone (every record, no join with the planned ranges);
2. ``+ floor UDF``: each message through ``DebeziumFloorUdf.java`` (the floor's untokenized parse,
   returning op, commit TSO, database, table and both images as maps), compiled by this bench
   against Spark's own jars;
3. ``+ Arrow round trip to Python``: the UDF's rows handed to the Python workers and back
   (``mapInArrow`` passing every batch through), as a JVM decoder whose events get the typed record
   carrier in Python, or whose fallback goes to the Python decoder, would hand them;
4. the leanest such path: the files read alone, each message through ``DebeziumFloorUdf$Records``,
   which returns each image as one Avro-encoded record (a binary value, as the typed record carrier
   is) instead of a map;
5. ``+ persisted, the rest to Python``: the same classification persisted once (the raw key and value
   kept only where the UDF returned nothing), counted, its row changes written and the other
   messages handed to the Python workers (``mapInArrow`` passing them through), as
   ``jvm_decode.frames.split_decode`` did (it has since been replaced: docs/jvm-decoder.md), so
   that no message is read or parsed twice.

Then, for the same messages in this process, what the product's decode workers do per message
(``bench_jvm_json_floor.python_side``: reading the landed blocks, the vector decoder and the typed
record carrier). Prints figures; asserts nothing.

``.venv/bin/python tests/bench/bench_jvm_decode_path.py --events 200000`` lands the 10-column table
of ``make bench-jvm-floor``; ``--pipelines run/bench-vs-kc/<time>/lake-N/pipelines.yaml --pipeline
bench_kc`` reads a landing that ``bench_vs_kc.py --keep`` kept (the side-by-side stream).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import psutil  # type: ignore[import-untyped,unused-ignore]
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).parent))
import bench_jvm_json_floor as floor  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake.config import PipelineConfig, load_config
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.spark import decode_job
from ticdc_lake.spark.decode_plan import FileRange
from ticdc_lake.spark.jvm_decode import frames
from ticdc_lake.spark.settings import spark_jars

JAVA_SOURCE = Path(__file__).parent / "jvm" / "DebeziumFloorUdf.java"
#: Runs of each step; the last is printed (the JIT keeps compiling through the first ones).
RUNS = 4
RETURNED = (
    "STRUCT<op: STRING, commit_ts: BIGINT, database: STRING, table: STRING, key_members: INT, "
    "before: MAP<STRING, STRING>, after: MAP<STRING, STRING>>"
)

RECORDS_RETURNED = RETURNED.replace("MAP<STRING, STRING>", "BINARY")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000, help="messages to land (without --pipelines)")
    parser.add_argument("--pipelines", type=Path, help="a pipeline file whose landing to read instead")
    parser.add_argument("--pipeline", default="bench_kc", help="the pipeline of --pipelines")
    parser.add_argument("--no-python", action="store_true", help="skip the product's decode in this process")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-jvm-path-") as workdir:
        if args.pipelines is not None:
            pipeline = load_config(args.pipelines).pipeline(args.pipeline)
            store = LandingStore(pipeline.landing_uri, pipeline.id)
        else:
            store, pipeline = floor.land(Path(workdir), args.events)
        jar = compile_udf(Path(workdir))
        in_spark(store, pipeline, jar)
        if not args.no_python:
            python_path(store, pipeline)


def compile_udf(workdir: Path) -> Path:
    """``DebeziumFloorUdf.java`` compiled against Spark's own jars, as a jar in ``workdir``."""
    if shutil.which("javac") is None or shutil.which("jar") is None:
        raise SystemExit(
            f"error: javac or jar not found: this bench compiles {JAVA_SOURCE.name}; install a JDK "
            "(apt-get install openjdk-17-jdk-headless)"
        )
    import pyspark

    classes = workdir / "udf-classes"
    classes.mkdir()
    jars = Path(pyspark.__file__).parent / "jars"
    subprocess.run(["javac", "-d", str(classes), "-cp", f"{jars}/*", str(JAVA_SOURCE)], check=True)
    jar = workdir / "debezium-floor-udf.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def register_udf(spark: SparkSession) -> None:
    """``floor_decode(key, value)`` (images as maps) and ``floor_records(key, value)`` (images as
    Avro-encoded records): the UDFs of a jar on the session's class path."""
    spark.udf.registerJavaFunction("floor_decode", "DebeziumFloorUdf", RETURNED)
    spark.udf.registerJavaFunction("floor_records", "DebeziumFloorUdf$Records", RECORDS_RETURNED)


def landed_files(store: LandingStore, pipeline: PipelineConfig) -> list[FileRange]:
    """Every landed file, as the decode stage plans it."""
    return decode_job.landed_files(pipeline, list(store.manifests()))


class _Cpu:
    """CPU seconds of the driver JVM and of the Python workers it started, between two calls."""

    def __init__(self, jvm: psutil.Process) -> None:
        self.jvm = jvm
        self.before = self._sample()

    def _sample(self) -> dict[int, float]:
        found = {self.jvm.pid: sum(self.jvm.cpu_times()[:2])}
        for child in self.jvm.children(recursive=True):
            try:
                found[child.pid] = sum(child.cpu_times()[:2])
            except psutil.Error:
                continue
        return found

    def lap(self) -> tuple[float, float]:
        now = self._sample()
        spent = {pid: cpu - self.before.get(pid, 0.0) for pid, cpu in now.items()}
        self.before = now
        jvm = spent.pop(self.jvm.pid, 0.0)
        return jvm, sum(spent.values())


def in_spark(store: LandingStore, pipeline: PipelineConfig, jar: Path) -> None:
    files = landed_files(store, pipeline)
    total = sum(f.count for f in files)
    root = frames.local_root(pipeline.landing_uri, pipeline.id)
    assert root is not None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers' Python (local masters read only this)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", ",".join(spark_jars()))
        .config("spark.driver.extraClassPath", str(jar))
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register_udf(spark)
    jvm = next(p for p in psutil.Process().children(recursive=True) if p.name() == "java")
    print(f"JVM decode path: {total:,} landed messages, local[2], CPU us per message (warm: the last of {RUNS} runs)")
    print(f"  {'step':44s} {'wall s':>7s} {'JVM CPU s':>10s} {'workers CPU s':>14s} {'CPU us/message':>15s}")

    def timed(name: str, action: Callable[[], object]) -> None:
        for _ in range(RUNS):
            cpu = _Cpu(jvm)
            wall = time.perf_counter()
            action()
            wall = time.perf_counter() - wall
            in_jvm, in_workers = cpu.lap()
        print(f"  {name:44s} {wall:7.2f} {in_jvm:10.2f} {in_workers:14.2f} {(in_jvm + in_workers) / total * 1e6:15.2f}")

    def noop(frame: Callable[[], DataFrame]) -> Callable[[], object]:
        return lambda: frame().write.format("noop").mode("overwrite").save()

    def messages() -> DataFrame:
        return frames.landed_messages(spark, root, files)

    def decoded() -> DataFrame:
        return messages().select(F.expr("floor_decode(key, value)").alias("e")).where("e IS NOT NULL").select("e.*")

    paths = sorted({f"{root}/{f.file}" for f in files})

    def records() -> DataFrame:
        return (
            spark.read.format("avro")
            .load(paths)
            .select("partition", "offset", "key", "value", F.expr("floor_records(key, value)").alias("e"))
        )

    def split() -> None:
        taken = F.col("e").isNotNull()
        classified = records().select(
            "partition", "offset", "e", *(F.when(~taken, F.col(c)).alias(c) for c in ("key", "value"))
        )
        classified = classified.persist(StorageLevel.MEMORY_AND_DISK)
        classified.count()
        classified.where(taken).select("partition", "offset", "e.*").write.format("noop").mode("overwrite").save()
        fallback = classified.where(~taken).select("partition", "offset", "key", "value")
        fallback.mapInArrow(_passed, fallback.schema).write.format("noop").mode("overwrite").save()
        classified.unpersist()

    timed("spark-avro read alone", noop(lambda: spark.read.format("avro").load(paths).select(F.length("value"))))
    timed("read (spark-avro, planned offsets)", noop(lambda: messages().select(F.length("value"), F.length("key"))))
    timed("+ floor UDF (rows with two maps)", noop(decoded))
    schema = decoded().schema
    timed("+ Arrow round trip to Python", noop(lambda: decoded().mapInArrow(_passed, schema)))
    timed(
        "spark-avro read alone + floor UDF, records",
        noop(lambda: records().where("e IS NOT NULL").select("partition", "offset", "e.*")),
    )
    timed("+ persisted, the rest to Python", split)
    spark.stop()


def _passed(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


def python_path(store: LandingStore, pipeline: PipelineConfig) -> None:
    total = sum(f.count for f in landed_files(store, pipeline))
    _, figures = floor.python_side(store, pipeline)
    print(f"The product's decode workers' work, in one process ({total:,} messages; warm: the second of two runs):")
    print(f"  reading the landed blocks          {figures['read_s'] / total * 1e6:7.2f} CPU us/message")
    print(f"  vector decoder and typed carrier   {figures['decode_s'] / total * 1e6:7.2f} CPU us/message")
    print(f"  messages the vector decoder took   {int(figures['taken']):,}")


if __name__ == "__main__":
    main()
