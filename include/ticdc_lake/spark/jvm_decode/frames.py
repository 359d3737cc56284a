"""The JVM side of the decode stage: landed messages read by spark-avro, split between the JVM
decoder of the pipeline's protocol and the Python decoders (docs/design.md, Decode).

:func:`split_decode` reads the landed raw batch files of the run in the JVM (only the offsets the
plan assigns), lets the protocol's JVM decoder (:mod:`.registry`) decode what it can verify, and
returns the events it decoded as ``change_events`` rows, the other messages (to be decoded by the
Python decoder exactly as before) and the counts per batch and partition. The classified frame is
persisted once, so the files are read and parsed once for the counts, the events and the fallback.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake.config import PipelineConfig
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.spark.decode_plan import FileRange
from ticdc_lake.spark.jvm_decode.contract import MESSAGE_COLUMNS
from ticdc_lake.spark.jvm_decode.registry import jvm_decoder_for
from ticdc_lake.spark.system_tables import CARRIER_SQL

log = logging.getLogger(__name__)

StatsKey = tuple[str, str, int]
#: Columns only the Python decoders read (``MESSAGE_COLUMNS`` of a message that falls back).
_RAW_COLUMNS = ("key", "value", "headers")


@dataclass
class JvmSplit:
    """What the JVM decoded and what is left for the Python decoders."""

    #: ``change_events`` rows decoded in the JVM (no quarantine, no PENDING: those fall back).
    events: DataFrame
    #: The other messages (:data:`MESSAGE_COLUMNS`), for ``decode_worker.decode_messages``.
    fallback: DataFrame
    #: (batch_id, topic, partition) -> (events decoded in the JVM, messages left to Python).
    counts: dict[StatsKey, tuple[int, int]] = field(default_factory=dict)
    persisted: DataFrame | None = None

    @property
    def jvm_events(self) -> int:
        return sum(n for n, _ in self.counts.values())

    @property
    def fallback_messages(self) -> int:
        return sum(n for _, n in self.counts.values())

    def release(self) -> None:
        if self.persisted is not None:
            self.persisted.unpersist()


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
def _whole_stage_codegen_off(spark: SparkSession) -> Iterator[None]:
    """Plan and fill the classified frame without whole-stage code generation: inside a stage Spark
    does not split a projection's expressions into methods, and the JIT leaves a generated method
    of more than 8,000 bytes of bytecode interpreted; planned alone, each expression is compiled
    in methods of its own (measured 0.7 times the CPU of the classification on 200,000 messages)."""
    key = "spark.sql.codegen.wholeStage"
    before = spark.conf.get(key) or "true"
    spark.conf.set(key, "false")
    try:
        yield
    finally:
        spark.conf.set(key, before)


def _counts(classified: DataFrame) -> dict[StatsKey, tuple[int, int]]:
    """(batch_id, topic, partition) -> (events decoded in the JVM, messages left to Python); fills
    the persisted frame."""
    rows = (
        classified.groupBy("batch_id", "topic", "partition")
        .agg(
            F.sum(F.coalesce(F.size("events"), F.lit(0))).alias("jvm"),
            F.count(F.when(F.col("events").isNull(), 1)).alias("fallback"),
        )
        .collect()
    )
    return {(r["batch_id"], r["topic"], r["partition"]): (int(r["jvm"]), int(r["fallback"])) for r in rows}


def split_decode(
    spark: SparkSession,
    pipeline: PipelineConfig,
    run_id: str,
    files: Sequence[FileRange],
    lookup: MemorySchemaLookup,
) -> JvmSplit | None:
    """The JVM part of the decode pass, or None when the pipeline has none (its protocol has no JVM
    decoder, its codec options rule it out, or its landed files are not local)."""
    decoder = jvm_decoder_for(pipeline.protocol)
    root = local_root(pipeline.landing_uri, pipeline.id)
    if decoder is None or root is None or not files:
        return None
    decoded = decoder(spark, landed_messages(spark, root, files), lookup, pipeline.codec)
    if decoded is None:
        return None
    # The raw columns are kept only for the messages Python decodes: the persisted frame then holds
    # the events of the others, not their bytes as well.
    decided = F.col("events").isNotNull()
    slim = decoded.select(
        *(F.when(~decided, F.col(c)).alias(c) if c in _RAW_COLUMNS else F.col(c) for c in decoded.columns)
    )
    with _whole_stage_codegen_off(spark):
        classified = slim.persist(StorageLevel.MEMORY_AND_DISK)
        counts = _counts(classified)
    event = F.col("event")
    events = (
        classified.where(F.col("events").isNotNull())
        .select("batch_id", "topic", "partition", "offset", F.explode("events").alias("event"))
        .select(
            F.lit(pipeline.id).alias("pipeline"),
            "batch_id",
            "topic",
            "partition",
            "offset",
            event["idx"].alias("idx"),
            event["kind"].alias("kind"),
            event["commit_ts"].alias("commit_ts"),
            event["database"].alias("database"),
            event["table"].alias("table"),
            event["table_id"].alias("table_id"),
            event["op"].alias("op"),
            event["schema_version"].alias("schema_version"),
            event["before"].alias("before"),
            event["after"].alias("after"),
            F.lit(None).cast("map<string,string>").alias("column_types"),
            F.lit(None).cast("string").alias("ddl_type"),
            F.lit(None).cast("string").alias("ddl_query"),
            F.lit(None).cast("string").alias("table_schema"),
            F.lit(None).cast("string").alias("pre_table_schema"),
            F.lit(False).alias("handle_key_only"),
            F.lit(False).alias("claim_check"),
            F.lit("READY").alias("status"),
            F.lit(run_id).alias("run_id"),
            F.lit(None).cast("string").alias("schema_error"),
            # The typed record carrier: the decode job makes it (``record_images.with_carrier``).
            *(F.lit(None).cast(kind).alias(name) for name, kind in CARRIER_SQL),
        )
    )
    fallback = classified.where(F.col("events").isNull()).select(*MESSAGE_COLUMNS)
    split = JvmSplit(events, fallback, counts, classified)
    log.info(
        "decode: %s in the JVM: %d event(s); %d message(s) left to the Python decoder",
        pipeline.protocol.value,
        split.jvm_events,
        split.fallback_messages,
    )
    return split
