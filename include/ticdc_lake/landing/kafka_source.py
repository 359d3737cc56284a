"""Kafka access for the land stage (confluent-kafka): partitions, watermarks, time lookups and
reading an exact offset range.

The consumer only ever ``assign``s partitions: no group membership, no offset commits (offsets are
the product's own state, the manifests). It reads with ``isolation.level=read_committed``, so
records of aborted or still open transactions are never landed; the high watermark it reports is
then Kafka's last stable offset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Mapping
from types import TracebackType
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from ticdc_lake.config import KafkaSource
from ticdc_lake.errors import LandingError, OffsetGapError, ServiceError
from ticdc_lake.landing.record_chunks import RecordChunk

#: Settings the land stage needs whatever the connection says.
FORCED_SETTINGS: dict[str, Any] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "auto.offset.reset": "error",
    "enable.partition.eof": True,
    "isolation.level": "read_committed",
}
#: Defaults the connection may override (docs/landing.md, "Kafka settings"):
#:
#: - a short fetch wait: partitions are read one after the other, and each new assignment waits for
#:   the previous partition's pending fetch to return;
#: - a short fetch queue backoff: librdkafka stops fetching a partition whose queue holds 64 MiB
#:   (``queued.max.messages.kbytes``) and, by default, asks again only after 1,000 ms, while the
#:   consumer empties that queue in about a quarter of it (Debezium messages with their schema):
#:   the land stage then waited most of its time. 10 ms: 2.8 times the messages per second, for
#:   the same CPU.
DEFAULT_SETTINGS: dict[str, Any] = {"fetch.wait.max.ms": 50, "fetch.queue.backoff.ms": 10}
_OFFSET_UNKNOWN = -1
_CONSUME_BATCH = 1000


def consumer_settings(kafka_config: Mapping[str, str], group_id: str) -> dict[str, Any]:
    """The land consumer's librdkafka settings: :data:`DEFAULT_SETTINGS` and ``group.id`` unless the
    connection's ``kafka_config`` sets them, then :data:`FORCED_SETTINGS` whatever it says."""
    return {**DEFAULT_SETTINGS, "group.id": group_id, **kafka_config, **FORCED_SETTINGS}


class KafkaPartitionReader:
    """One consumer for one land run. Use as a context manager."""

    def __init__(
        self,
        kafka_config: Mapping[str, str],
        *,
        group_id: str,
        logger: logging.Logger | None = None,
        request_timeout_s: float = 30.0,
        idle_timeout_s: float = 120.0,
    ) -> None:
        self._log = logger or logging.getLogger(__name__)
        self.bootstrap = kafka_config.get("bootstrap.servers", "(bootstrap.servers not set)")
        settings = consumer_settings(kafka_config, group_id)
        self._timeout = request_timeout_s
        self._idle_timeout = idle_timeout_s
        try:
            self._consumer = Consumer(settings, logger=self._log)
        except (KafkaException, ValueError, TypeError) as exc:
            raise LandingError(
                f"cannot create a Kafka consumer for {self.bootstrap}: {exc}; check the Kafka connection's "
                "settings (librdkafka names such as bootstrap.servers, security.protocol, sasl.mechanism)"
            ) from None

    def __enter__(self) -> KafkaPartitionReader:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._consumer.close()

    def _unreachable(self, what: str, exc: BaseException) -> ServiceError:
        return ServiceError(
            f"Kafka at {self.bootstrap}: {what} failed ({exc}); check that the brokers are reachable and "
            "the Kafka connection's settings are right, then retry"
        )

    def topics(self, source: KafkaSource) -> list[str]:
        """The listed topics, plus every topic on the cluster matching ``topic_pattern`` (sorted)."""
        if source.topic_pattern is None:
            return list(source.topics)
        try:
            metadata = self._consumer.list_topics(timeout=self._timeout)
        except KafkaException as exc:
            raise self._unreachable("listing topics", exc) from None
        matched = sorted(t for t in metadata.topics if t not in source.topics and source.wants_topic(t))
        return list(source.topics) + matched

    def partitions(self, topic: str) -> list[int]:
        """Partition numbers of ``topic``; :class:`LandingError` if it does not exist."""
        try:
            metadata = self._consumer.list_topics(topic, timeout=self._timeout)
        except KafkaException as exc:
            raise self._unreachable(f"reading metadata of topic {topic!r}", exc) from None
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            reason = found.error.str() if found is not None and found.error is not None else "not found"
            raise LandingError(
                f"Kafka at {self.bootstrap}: topic {topic!r} is not available ({reason}); create the topic "
                "or fix kafka.topics in the pipeline configuration (and check the ACLs of the connection)"
            )
        return sorted(found.partitions)

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """``(low, high)``: the first offset Kafka still holds and the next offset to be written."""
        try:
            low, high = self._consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=self._timeout, cached=False
            )
        except KafkaException as exc:
            raise self._unreachable(f"reading watermarks of topic {topic!r} partition {partition}", exc) from None
        return int(low), int(high)

    def offsets_for_time(self, topic: str, partitions: list[int], timestamp_ms: int) -> dict[int, int | None]:
        """Per partition, the first offset whose timestamp is >= ``timestamp_ms``, None if none yet."""
        request = [TopicPartition(topic, p, timestamp_ms) for p in partitions]
        try:
            answer = self._consumer.offsets_for_times(request, timeout=self._timeout)
        except KafkaException as exc:
            raise self._unreachable(f"looking up offsets of topic {topic!r} by time {timestamp_ms}", exc) from None
        result: dict[int, int | None] = {}
        for tp in answer:
            if tp.error is not None:
                raise LandingError(
                    f"Kafka at {self.bootstrap}: topic {topic!r} partition {tp.partition}: offset lookup by "
                    f"timestamp {timestamp_ms} failed: {tp.error}"
                )
            result[tp.partition] = None if tp.offset < 0 else int(tp.offset)
        return result

    def read_range(self, topic: str, partition: int, start: int, end: int) -> Generator[RecordChunk, None, None]:
        """Yield every committed record with offset in ``[start, end)``, in offset order, a chunk
        (the records of one ``consume()``) at a time; no chunk is empty.

        Stops once the consumer's position reaches ``end``, which also covers offsets that hold
        no record for the application (transaction markers, aborted or compacted records).
        """
        where = f"topic {topic!r} partition {partition} range [{start}, {end})"
        self._consumer.assign([TopicPartition(topic, partition, start)])
        try:
            position = start
            last_progress = time.monotonic()
            while position < end:
                # consume() waits until it has num_messages or the timeout passed: never ask for
                # more than the range still holds, or every range would end with a full timeout.
                wanted = max(1, min(_CONSUME_BATCH, end - position))
                messages = self._consumer.consume(num_messages=wanted, timeout=1.0)
                records, position = self._records(messages, where, position, end)
                yield from _chunks(records)
                if position < end:
                    position = max(position, self._position(topic, partition))
                if messages:
                    last_progress = time.monotonic()
                elif time.monotonic() - last_progress > self._idle_timeout:
                    raise ServiceError(
                        f"Kafka at {self.bootstrap}: reading {where} made no progress for "
                        f"{self._idle_timeout:.0f} s at offset {position}; check the brokers and retry"
                    )
        finally:
            self._consumer.unassign()

    def _records(self, messages: list[Any], where: str, position: int, end: int) -> tuple[list[Any], int]:
        """The records of one ``consume()`` below ``end`` and the position after them; raises on errors."""
        if messages and all(error is None for error in map(_error, messages)):
            offsets = [message.offset() for message in messages]
            if None not in offsets and offsets[-1] < end:  # the usual case: nothing to skip or cut
                return messages, max(position, offsets[-1] + 1)
        records = []
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    position = max(position, message.offset() or 0)
                    continue
                if error.code() == KafkaError._AUTO_OFFSET_RESET:
                    raise OffsetGapError(
                        f"{where}: Kafka no longer holds offset {position} ({error.str()}): retention "
                        "deleted it while this run was landing. Run again: the run then fails with the "
                        "exact missing offsets and what to do."
                    )
                raise LandingError(
                    f"Kafka at {self.bootstrap}: reading {where} failed at offset {position}: {error.str()}"
                )
            offset = message.offset()
            if offset is None:
                continue
            position = max(position, offset + 1)
            if offset >= end:
                break
            records.append(message)
        return records, position

    def _position(self, topic: str, partition: int) -> int:
        (tp,) = self._consumer.position([TopicPartition(topic, partition)])
        return int(tp.offset) if tp.offset >= 0 else _OFFSET_UNKNOWN


def _error(message: Any) -> Any:
    return message.error()


def _chunks(messages: list[Any]) -> list[RecordChunk]:
    """Records as read, as chunks of one topic partition each: one chunk, since the consumer is
    assigned one partition; a record of another would start a chunk that the writer refuses."""
    if not messages:
        return []
    places = [(message.topic(), message.partition()) for message in messages]
    if places.count(places[0]) == len(places):
        return [_chunk(messages, *places[0])]
    chunks: list[RecordChunk] = []
    first = 0
    for index in range(1, len(places) + 1):
        if index == len(places) or places[index] != places[first]:
            chunks.append(_chunk(messages[first:index], *places[first]))
            first = index
    return chunks


def _chunk(messages: list[Any], topic: str, partition: int) -> RecordChunk:
    """Records of one topic partition as a chunk: one list per field (no object per record)."""
    stamps = [message.timestamp() for message in messages]
    raw_headers = [message.headers() for message in messages]  # None for a record without headers
    return RecordChunk(
        topic=topic,
        partition=int(partition),
        offsets=[message.offset() for message in messages],
        timestamps=[timestamp for _, timestamp in stamps],
        timestamp_types=[kind for kind, _ in stamps],
        keys=[message.key() for message in messages],
        values=[message.value() for message in messages],
        headers=[tuple((str(k), v) for k, v in h) if h else () for h in raw_headers] if any(raw_headers) else None,
    )
