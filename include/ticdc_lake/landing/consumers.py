"""Landing a run's planned ranges with one or several Kafka consumers.

A run's ranges are split by partition across ``N`` consumers (:func:`consumer_count`), each with
its own Kafka consumer and its own raw batch files; the lander publishes the run's single manifest
once every consumer has finished (docs/landing.md, "Parallel consumers"). With one consumer the
ranges are landed in the calling thread, as before. Several consumers run as threads of the task's
process: librdkafka fetches, zstandard, SHA-256 and file writes release the GIL, and on the shared
2-core machine threads landed faster than worker processes, which pay about 1.5 CPU seconds to
start and twice the memory (measured with ``make bench-land``, docs/landing.md), so the
product has no process mode.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import closing
from dataclasses import dataclass, field

from ticdc_lake import failpoints
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.landing.kafka_source import KafkaPartitionReader
from ticdc_lake.landing.manifest import LandedRange
from ticdc_lake.landing.ranges import PlannedRange
from ticdc_lake.landing.raw_batch import BLOCK_BYTES, CODEC, SchemaTest
from ticdc_lake.landing.record_chunks import RecordChunk
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.landing.writer_schemas import SchemaIdCollector, SchemaReference

#: With ``kafka.consumers`` unset, a run with fewer offsets to land than this uses one consumer: it
#: lands in a few seconds anyway, and its log keeps the ranges in plan order.
AUTO_MIN_OFFSETS = 50_000

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LandTuning:
    """Knobs of the land stage that benchmarks and tests turn; the product runs the defaults."""

    #: Avro codec of new raw batch files (:data:`ticdc_lake.landing.raw_batch.CODEC`).
    codec: str = CODEC
    #: Uncompressed bytes of an Avro block (:data:`ticdc_lake.landing.raw_batch.BLOCK_BYTES`).
    block_bytes: int = BLOCK_BYTES


#: What the product runs.
DEFAULT_TUNING = LandTuning()


@dataclass(frozen=True, slots=True)
class ConsumerJob:
    """What one consumer lands: whole partitions, each partition's ranges in offset order."""

    landing_uri: str
    pipeline_id: str
    kafka_config: dict[str, str] = field(repr=False)  # may carry secrets: never logged
    group_id: str
    plans: tuple[PlannedRange, ...]
    codec: str = CODEC
    block_bytes: int = BLOCK_BYTES
    collect_schema_ids: bool = False
    #: The pipeline decoder's schema block test (``lander.schema_test``): each file written lists the blocks it keeps.
    schema_test: SchemaTest | None = None

    def describe(self) -> str:
        parts = sorted({f"{plan.topic}[{plan.partition}]" for plan in self.plans})
        return f"{len(self.plans)} range(s) of {', '.join(parts)}"


@dataclass(frozen=True, slots=True)
class ConsumerResult:
    landed: tuple[LandedRange, ...]
    references: tuple[SchemaReference, ...]


def consumer_count(setting: int | None, plans: Iterable[PlannedRange], cpus: int | None = None) -> int:
    """How many consumers land ``plans``: never more than their partitions.

    ``setting`` is ``kafka.consumers``; unset, it is the number of CPUs, or 1 when the run lands
    fewer than :data:`AUTO_MIN_OFFSETS` offsets.
    """
    todo = [plan for plan in plans if not plan.is_empty]
    partitions = len({plan.key for plan in todo})
    if setting is None:
        if sum(plan.end - plan.start for plan in todo) < AUTO_MIN_OFFSETS:
            return 1
        setting = cpus if cpus is not None else (os.cpu_count() or 1)
    return max(1, min(setting, partitions))


def split(plans: Iterable[PlannedRange], consumers: int) -> list[tuple[PlannedRange, ...]]:
    """``plans`` in ``consumers`` groups of whole partitions, balanced by offsets to land.

    Largest partition first to the group with the fewest offsets so far; inside a group the
    partitions keep the plan's order and each partition's ranges go by offset. No group is empty.
    """
    by_partition: dict[tuple[str, int], list[PlannedRange]] = {}  # in the plan's order
    for plan in plans:
        if not plan.is_empty:
            by_partition.setdefault(plan.key, []).append(plan)
    count = max(1, min(consumers, len(by_partition)))
    loads = [0] * count
    groups: list[list[tuple[str, int]]] = [[] for _ in range(count)]
    sizes = {key: sum(plan.end - plan.start for plan in ranges) for key, ranges in by_partition.items()}
    for key in sorted(by_partition, key=lambda k: (-sizes[k], k)):
        slot = loads.index(min(loads))
        loads[slot] += sizes[key]
        groups[slot].append(key)
    return [
        tuple(plan for key in by_partition if key in group for plan in sorted(by_partition[key], key=lambda p: p.start))
        for group in groups
        if group
    ]


def run_consumer(job: ConsumerJob, logger: logging.Logger | None = None) -> ConsumerResult:
    """Land every range of ``job`` with one Kafka consumer: raw batch files, no manifest."""
    log = logger or _LOG
    store = LandingStore(job.landing_uri, job.pipeline_id, logger=log)
    collector = SchemaIdCollector() if job.collect_schema_ids else None
    landed: list[LandedRange] = []
    with KafkaPartitionReader(job.kafka_config, group_id=job.group_id, logger=log) as kafka:
        for plan in job.plans:
            with closing(kafka.read_range(plan.topic, plan.partition, plan.start, plan.end)) as records:
                source: Iterator[RecordChunk] = collector.watch(records) if collector is not None else records
                done = store.write_batch(
                    source,
                    topic=plan.topic,
                    partition=plan.partition,
                    start=plan.start,
                    end=plan.end,
                    codec=job.codec,
                    block_bytes=job.block_bytes,
                    schema_test=job.schema_test,
                )
            landed.append(done)
            failpoints.hit("land.after_data_file")
            log.info("%s", describe_landed(done))
    return ConsumerResult(tuple(landed), tuple(collector.references()) if collector is not None else ())


def describe_landed(done: LandedRange) -> str:
    where = f" → {done.file} ({done.size_bytes} bytes)" if done.file else " (no file: no records)"
    return f"{done.topic}[{done.partition}]: landed [{done.start}, {done.end}) {done.count} records{where}"


def run_consumers(jobs: list[ConsumerJob], *, logger: logging.Logger) -> list[ConsumerResult]:
    """Run ``jobs`` at once, a thread each; raise the first failure once every thread has stopped.

    When a consumer raises, the others finish their ranges (the run that lands them next finds
    their files identical and keeps them). Nothing is published.
    """
    with ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="land-consumer") as executor:
        futures: list[Future[ConsumerResult]] = [executor.submit(run_consumer, job) for job in jobs]
        wait(futures)
    results: list[ConsumerResult] = []
    failures: list[tuple[ConsumerJob, BaseException]] = []
    for job, future in zip(jobs, futures, strict=True):
        error = future.exception()
        if error is None:
            result = future.result()
            results.append(result)
            for done in result.landed:
                logger.info("%s", describe_landed(done))
        else:
            failures.append((job, error))
    if not failures:
        return results
    for job, error in failures:
        logger.error("land consumer of %s failed: %s: %s", job.describe(), type(error).__name__, error)
    raise next((e for _, e in failures if isinstance(e, TicdcLakeError)), failures[0][1])


def merge_references(results: Iterable[ConsumerResult]) -> list[SchemaReference]:
    """One reference per schema id over all consumers (its first place in topic/partition/offset order)."""
    first: dict[int, SchemaReference] = {}
    for result in results:
        for ref in result.references:
            known = first.get(ref.schema_id)
            if known is None or (ref.topic, ref.partition, ref.offset) < (known.topic, known.partition, known.offset):
                first[ref.schema_id] = ref
    return [first[schema_id] for schema_id in sorted(first)]
