"""Put simulator messages on a real Kafka broker (confluent-kafka), partition by partition in order."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from ticdc_lake.errors import ServiceError
from ticdc_sim.simulator import OutMessage

_HINT = "start it with `make services-up` (include/scripts/kafka.sh start) or fix the bootstrap address"


def create_topic(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30.0) -> None:
    """Create ``topic`` with ``partitions`` partitions (replication 1) and wait until every partition
    has a leader. An existing topic with the same partition count is accepted as is."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10_000})
    existing = _partition_count(admin, bootstrap, topic, timeout_s)
    if existing is None:
        future = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic]
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if not (isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS):
                raise ServiceError(f"Kafka broker {bootstrap}: creating topic {topic!r} failed: {exc}") from exc
    elif existing != partitions:
        raise ServiceError(
            f"Kafka broker {bootstrap}: topic {topic!r} already exists with {existing} partitions, not "
            f"{partitions}; delete it or use another topic name"
        )
    deadline = time.monotonic() + timeout_s
    while _ready_partitions(admin, bootstrap, topic, timeout_s) < partitions:
        if time.monotonic() > deadline:
            raise ServiceError(
                f"Kafka broker {bootstrap}: topic {topic!r} has no leader for all {partitions} partitions "
                f"after {timeout_s:g} s; check the broker log"
            )
        time.sleep(0.1)


def create_topics(bootstrap: str, topics: Iterable[str], partitions: int, timeout_s: float = 30.0) -> None:
    """:func:`create_topic` for each of ``topics`` (e.g. ``sim.topics`` of a topic-per-table
    changefeed); call it again after more transactions, as new tables bring new topics."""
    for topic in dict.fromkeys(topics):
        create_topic(bootstrap, topic, partitions, timeout_s)


def produce_all(bootstrap: str, messages: Sequence[OutMessage], partitions: int) -> list[tuple[int, int]]:
    """Create every topic ``messages`` go to (``partitions`` each), then :func:`produce` them."""
    create_topics(bootstrap, sorted({m.topic for m in messages}), partitions)
    return produce(bootstrap, messages)


def _partition_count(admin: AdminClient, bootstrap: str, topic: str, timeout_s: float) -> int | None:
    metadata = _metadata(admin, bootstrap, timeout_s)
    entry = metadata.topics.get(topic)
    if entry is None or entry.error is not None:
        return None
    return len(entry.partitions)


def _ready_partitions(admin: AdminClient, bootstrap: str, topic: str, timeout_s: float) -> int:
    entry = _metadata(admin, bootstrap, timeout_s).topics.get(topic)
    if entry is None or entry.error is not None:
        return 0
    return sum(1 for p in entry.partitions.values() if p.leader >= 0 and p.error is None)


def _metadata(admin: AdminClient, bootstrap: str, timeout_s: float) -> Any:
    try:
        return admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise ServiceError(f"Kafka broker {bootstrap} is unreachable ({exc}); {_HINT}") from exc


def produce(
    bootstrap: str, messages: Sequence[OutMessage], timeout_s: float = 60.0, *, timestamp_ms: int | None = None
) -> list[tuple[int, int]]:
    """Produce each message to its exact partition, in order; returns ``(partition, offset)`` per message.

    The producer is idempotent with one request in flight, so the order inside each partition is
    the order of ``messages`` even across retries. Kafka record timestamps are the real time of
    producing (simulated times live in the message values only), or ``timestamp_ms`` for every
    record: a stream produced "in the past", for backfills of past data intervals.
    """
    if not messages:
        return []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "max.in.flight.requests.per.connection": 1,
            "linger.ms": 5,
            "message.timeout.ms": int(timeout_s * 1000),
        }
    )
    results: list[tuple[int, int] | None] = [None] * len(messages)
    failures: list[str] = []

    def delivered(index: int) -> Any:
        def callback(error: KafkaError | None, record: Any) -> None:
            if error is not None:
                m = messages[index]
                failures.append(f"message {index} ({m.kind}) to {m.topic!r} partition {m.partition}: {error}")
            else:
                results[index] = (record.partition(), record.offset())

        return callback

    for index, message in enumerate(messages):
        while True:
            try:
                producer.produce(
                    message.topic,
                    value=message.value,
                    key=message.key,
                    partition=message.partition,
                    timestamp=timestamp_ms or 0,
                    on_delivery=delivered(index),
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    # message.timeout.ms fails every undelivered message within timeout_s; the margin lets those
    # failures (with their reason) arrive before flush gives up.
    remaining = producer.flush(timeout_s + 10)
    if remaining:
        producer.purge()
        producer.flush(0)
    if failures or remaining:
        detail = "; ".join(failures[:5]) or f"{remaining} messages still queued after {timeout_s:g} s"
        raise ServiceError(f"Kafka broker {bootstrap}: delivery failed: {detail}; {_HINT}")
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        raise ServiceError(f"Kafka broker {bootstrap}: no delivery report for messages {missing[:10]}")
    return [r for r in results if r is not None]
