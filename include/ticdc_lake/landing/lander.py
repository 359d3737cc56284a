"""The land stage: Kafka → immutable raw batch files + one published manifest per run.

:func:`land` is the one entry point (the Airflow task and the CLI call it). Per partition of
every configured topic it lands the range :mod:`ticdc_lake.landing.ranges` plans, writes all raw
batches first, then publishes the manifest (see :class:`ticdc_lake.landing.store.LandingStore`).
For ``protocol: avro`` it also lands, before publishing, the writer schema of every Confluent
schema id the batches refer to (:mod:`ticdc_lake.landing.writer_schemas`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from ticdc_lake import failpoints
from ticdc_lake.config import PipelineConfig, Protocol
from ticdc_lake.errors import ConfigError
from ticdc_lake.landing.consumers import (
    DEFAULT_TUNING,
    ConsumerJob,
    LandTuning,
    consumer_count,
    merge_references,
    run_consumer,
    run_consumers,
    split,
)
from ticdc_lake.landing.kafka_source import KafkaPartitionReader
from ticdc_lake.landing.layout import check_topic_name
from ticdc_lake.landing.leftovers import remove_leftovers
from ticdc_lake.landing.manifest import Manifest, PartitionOrigin
from ticdc_lake.landing.ranges import (
    LandedIndex,
    PartitionState,
    PlannedRange,
    RunKind,
    interval_ms,
    landed_index,
    origin_offset,
    plan_partition,
)
from ticdc_lake.landing.raw_batch import SchemaTest
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.landing.writer_schemas import land_writer_schemas
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.stage_lock import locked

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LandResult:
    #: The manifest this run published (or had published before); None when nothing was new.
    manifest: Manifest | None
    #: True when this run id had already published a manifest: it was returned, nothing written.
    reused: bool
    #: Records in the manifest's ranges.
    messages: int
    pipeline: str
    run_id: str

    def summary(self) -> str:
        head = f"pipeline {self.pipeline!r} run {self.run_id!r}"
        if self.manifest is None:
            return f"{head}: nothing new to land"
        ranges = len(self.manifest.ranges)
        what = f"{self.messages} messages in {ranges} offset range{'s' if ranges != 1 else ''}"
        if self.reused:
            return f"{head}: already landed {what} as batch {self.manifest.batch_id}; nothing written"
        return f"{head}: landed {what} as batch {self.manifest.batch_id}"


@locked("land")
def land(
    pipeline: PipelineConfig,
    kafka_config: dict[str, str],
    run_id: str,
    interval: tuple[datetime, datetime] | None,
    *,
    registry: Mapping[str, str] | None = None,
    logger: logging.Logger | None = None,
    backfill: bool = False,
    tuning: LandTuning = DEFAULT_TUNING,
) -> LandResult:
    """Land the offsets not landed yet of the pipeline's topics, up to the end of ``interval``.

    ``kafka_config`` holds librdkafka settings (never logged: they may carry secrets). With no
    interval, or an empty one, the run lands up to each partition's current high watermark.
    ``backfill`` lands exactly the interval's offsets (``landing.ranges``: from the first offset
    stamped at or after its start); otherwise everything not landed from each partition's origin.
    ``registry`` is the schema registry's ``SchemaRegistryClient`` configuration (``url``,
    credentials; never logged either), required for ``protocol: avro`` and unused otherwise.
    The planned ranges are landed by ``kafka.consumers`` consumers (:mod:`ticdc_lake.landing.consumers`);
    ``tuning`` changes the codec or the kind of worker for benchmarks and tests.
    """
    log = logger or _LOG
    avro = pipeline.protocol is Protocol.AVRO
    if avro and registry is None:
        raise ConfigError(
            f"pipeline {pipeline.id!r} uses protocol avro, whose messages refer to writer schemas in a schema "
            "registry, but no registry settings were given; define the Airflow connection "
            f"{pipeline.kafka.schema_registry_connection_id!r} (kafka.schema_registry_connection_id)"
        )
    bounds = interval_ms(interval)
    kind = RunKind.MANUAL if bounds is None else RunKind.BACKFILL if backfill else RunKind.SCHEDULED
    first_interval = interval is not None and interval[0] <= pipeline.start_date
    store = LandingStore(pipeline.landing_uri, pipeline.id, logger=log)
    remove_leftovers(pipeline.landing_uri, pipeline.id, logger=log)  # a killed run's temporary files
    manifests = store.manifests()
    for manifest in manifests:
        if manifest.run_id == run_id:
            result = LandResult(manifest, True, manifest.messages, pipeline.id, run_id)
            log.info("%s", result.summary())
            return result

    began = time.monotonic()
    index = landed_index(manifests, where=store.uri)
    bootstrap = kafka_config.get("bootstrap.servers", "?")
    if interval is None or bounds is None:
        window = "everything not landed yet, up to the high watermarks"
    elif kind is RunKind.BACKFILL:
        window = f"exactly the interval [{interval[0].isoformat()}, {interval[1].isoformat()}) (backfill)"
    else:
        window = f"everything not landed yet, before {interval[1].isoformat()}"
    log.info("landing pipeline %r run %r from Kafka %s: %s, into %s", pipeline.id, run_id, bootstrap, window, store.uri)
    group_id = f"ticdc-lake-{pipeline.id}"
    with KafkaPartitionReader(kafka_config, group_id=group_id, logger=log) as kafka:
        plans, origins = _plan(kafka, pipeline, index, bounds, kind, first_interval)
    todo = [plan for plan in plans if not plan.is_empty]
    if not todo:
        log.info("every partition is landed up to where this run ends: nothing new")
        result = LandResult(None, False, 0, pipeline.id, run_id)
        log.info("%s", result.summary())
        return result
    count = consumer_count(pipeline.kafka.consumers, todo)
    block_test = schema_test(pipeline)
    jobs = [
        ConsumerJob(
            pipeline.landing_uri,
            pipeline.id,
            dict(kafka_config),
            group_id,
            group,
            codec=tuning.codec,
            block_bytes=tuning.block_bytes,
            collect_schema_ids=avro,
            schema_test=block_test,
        )
        for group in split(todo, count)
    ]
    if len(jobs) == 1:
        results = [run_consumer(jobs[0], log)]
    else:
        log.info(
            "landing %d offsets of %d partition(s) with %d consumer threads: %s",
            sum(plan.end - plan.start for plan in todo),
            len({plan.key for plan in todo}),
            len(jobs),
            "; ".join(job.describe() for job in jobs),
        )
        results = run_consumers(jobs, logger=log)
    landed = [done for result in results for done in result.landed]

    if avro and registry is not None:
        # Before publishing: a batch is visible only once every schema it needs is landed.
        land_writer_schemas(store, merge_references(results), registry, logger=log)
    sequence = manifests[-1].sequence + 1 if manifests else 1
    manifest = Manifest(
        pipeline=pipeline.id,
        sequence=sequence,
        batch_id=f"{sequence:012d}",
        run_id=run_id,
        interval_start=interval[0] if interval is not None else None,
        interval_end=interval[1] if interval is not None else None,
        created_at=datetime.now(UTC),
        ranges=tuple(sorted(landed, key=lambda r: (r.topic, r.partition, r.start))),
        origins=tuple(o for o in origins if any(r.key == (o.topic, o.partition) for r in landed)),
    )
    failpoints.hit("land.before_publish")
    store.publish(manifest)
    result = LandResult(manifest, False, manifest.messages, pipeline.id, run_id)
    log.info("%s in %.1f s", result.summary(), time.monotonic() - began)
    return result


def _plan(
    kafka: KafkaPartitionReader,
    pipeline: PipelineConfig,
    index: LandedIndex,
    bounds: tuple[int, int] | None,
    kind: RunKind,
    first_interval: bool,
) -> tuple[list[PlannedRange], list[PartitionOrigin]]:
    """Plan every partition first, so a gap anywhere fails the run before anything is written.

    Also returns the origins of partitions landed for the first time (recorded in the manifest).
    """
    plans: list[PlannedRange] = []
    origins: list[PartitionOrigin] = []
    topics = kafka.topics(pipeline.kafka)
    for topic in topics:
        check_topic_name(topic)
    for topic in topics:
        partitions = kafka.partitions(topic)
        # Watermarks before the time lookup: when the lookup finds no offset at or after the
        # interval end, every offset below the high watermark read earlier is before that end.
        marks = {partition: kafka.watermarks(topic, partition) for partition in partitions}
        by_end = kafka.offsets_for_time(topic, partitions, bounds[1]) if bounds is not None else {}
        by_start = (
            kafka.offsets_for_time(topic, partitions, bounds[0])
            if bounds is not None and kind is RunKind.BACKFILL
            else {}
        )
        for partition, (low, high) in marks.items():
            state = PartitionState(topic, partition, low, high, by_end.get(partition), by_start.get(partition))
            landed = index.get((topic, partition))
            if landed is None:
                origins.append(
                    PartitionOrigin(
                        topic=topic, partition=partition, offset=origin_offset(state, None, pipeline.kafka.start_offset)
                    )
                )
            planned = plan_partition(state, landed, pipeline.kafka.start_offset, kind, first_interval=first_interval)
            plans.extend(planned)
    return plans, origins


def schema_test(pipeline: PipelineConfig) -> SchemaTest | None:
    """The pipeline decoder's schema block test, which the land stage runs on each block it writes
    (``LandedRange.schema_blocks``); None where the decoder has none (the schema pass then reads
    the files)."""
    decoder = decoder_for(pipeline.protocol, pipeline.codec)
    test, name = decoder.schema_block_test(), decoder.schema_block_test_id()
    return SchemaTest(name, test) if test is not None and name is not None else None
