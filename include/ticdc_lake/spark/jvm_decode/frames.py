"""The JVM side of the decode stage: landed messages read by spark-avro and given to the JVM decoder
of the pipeline's protocol (docs/jvm-decoder.md).

:func:`jvm_decoded` reads the landed raw batch files of the run in the JVM (only the offsets the
plan assigns) and lets the protocol's JVM decoder (:mod:`.registry`) decode what it can verify: the
messages come back with event columns (``contract``), NULL where the Python decoders take the
message. The decode workers take that frame in one pass (``decode_worker.decode_jvm_rows``):
they turn the decided rows into ``change_events`` rows, decode the others and write them all, so
the files are read and parsed once, and nothing is persisted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake.config import PipelineConfig
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.spark.decode_plan import FileRange
from ticdc_lake.spark.jvm_decode.registry import jvm_decoder_for

#: Columns only the Python decoders read (``contract.MESSAGE_COLUMNS`` of a message left to them).
_RAW_COLUMNS = ("key", "value", "headers")


def local_root(landing_uri: str, pipeline_id: str) -> str | None:
    """The local folder of the pipeline's landed files, or None where spark-avro cannot read them here
    (object storage: the session has no Hadoop S3 filesystem, so the Python path reads them)."""
    if landing_uri.startswith("file://"):
        landing_uri = landing_uri.removeprefix("file://")
    if not landing_uri.startswith("/"):
        return None
    return f"{landing_uri.rstrip('/')}/{pipeline_id}"


def landed_messages(spark: SparkSession, root: str, files: Sequence[FileRange]) -> DataFrame:
    """The messages of ``files`` whose offsets are in their ranges, with their batch id.

    One spark-avro scan per batch whose files are of distinct topic partitions (as the land stage
    writes a batch), its rows kept by a filter on topic, partition and offset and given the batch
    id as a literal: a row's topic partition names its file, so the filter keeps each file's own
    range. A batch with two files of one partition is read one file at a time. The join with the
    ranges this replaced, testing each row's file path, took 1.23 times the filter's CPU
    (docs/design.md, "What a JVM decoder would cost inside Spark")."""
    if not files:
        raise ValueError("landed_messages needs at least one landed file")
    scans: list[DataFrame] = []
    schema = None
    for group in _scan_groups(files):
        reader = spark.read.format("avro")
        raw = (reader.schema(schema) if schema is not None else reader).load(
            sorted({f"{root}/{f.file}" for f in group})
        )
        schema = raw.schema  # read from the first group's file; the others need not be opened to plan
        kept = reduce(
            lambda either, f: either | f,
            (
                (F.col("topic") == topic) & (F.col("partition") == part) & F.col("offset").between(f.start, f.end - 1)
                for f in group
                for topic, part in [_topic_partition(f)]
            ),
        )
        scans.append(
            raw.where(kept).select(
                F.lit(group[0].batch_id).alias("batch_id"),
                "topic",
                "partition",
                "offset",
                "timestamp",
                "key",
                "value",
                "headers",
            )
        )
    return reduce(DataFrame.union, scans)


def _scan_groups(files: Sequence[FileRange]) -> list[list[FileRange]]:
    """The files of each batch, or each file alone where two of a batch hold one topic partition."""
    by_batch: dict[str, list[FileRange]] = {}
    for f in files:
        by_batch.setdefault(f.batch_id, []).append(f)
    groups: list[list[FileRange]] = []
    for batch_id in sorted(by_batch):
        group = by_batch[batch_id]
        distinct = len({_topic_partition(f) for f in group}) == len(group)
        groups.extend([group] if distinct else [[f] for f in group])
    return groups


def _topic_partition(f: FileRange) -> tuple[str, int]:
    if f.topic is None or f.partition is None:
        raise ValueError(f"landed file {f.file} of batch {f.batch_id} has no topic partition")
    return f.topic, f.partition


@contextmanager
def whole_stage_codegen_off(spark: SparkSession) -> Iterator[None]:
    """Plan a JVM decoder's frame without whole-stage code generation: inside a stage Spark
    does not split a projection's expressions into methods, and the JIT leaves a generated method
    of more than 8,000 bytes of bytecode interpreted; planned alone, each expression is compiled
    in methods of its own (measured 0.7 times the CPU of the Simple JSON classification on 200,000
    messages)."""
    key = "spark.sql.codegen.wholeStage"
    before = spark.conf.get(key) or "true"
    spark.conf.set(key, "false")
    try:
        yield
    finally:
        spark.conf.set(key, before)


def jvm_decoded(
    spark: SparkSession, pipeline: PipelineConfig, files: Sequence[FileRange], lookup: MemorySchemaLookup
) -> DataFrame | None:
    """The landed messages of ``files`` with the JVM decoder's event columns (``contract``), or None when the
    pipeline has no JVM path (its protocol has no JVM decoder, its codec options rule it out, or its
    landed files are not local). The raw key, value and headers are kept only where the message is
    left to the Python decoders: the workers receive no bytes they do not read."""
    decoder = jvm_decoder_for(pipeline.protocol)
    root = local_root(pipeline.landing_uri, pipeline.id)
    if decoder is None or root is None or not files:
        return None
    decoded = decoder(spark, landed_messages(spark, root, files), lookup, pipeline.codec)
    if decoded is None:
        return None
    decided = F.col("kind").isNotNull()
    return decoded.select(
        *(F.when(~decided, F.col(c)).alias(c) if c in _RAW_COLUMNS else F.col(c) for c in decoded.columns)
    )
