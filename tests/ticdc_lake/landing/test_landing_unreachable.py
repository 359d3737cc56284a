"""Kafka that cannot be reached is a retryable ServiceError naming the address (no broker needed)."""

from __future__ import annotations

import socket

import pytest

from ticdc_lake.errors import LandingError, ServiceError
from ticdc_lake.landing.kafka_source import KafkaPartitionReader


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_unreachable_broker_is_retryable() -> None:
    address = f"127.0.0.1:{_closed_port()}"
    with (
        KafkaPartitionReader({"bootstrap.servers": address}, group_id="g", request_timeout_s=1) as kafka,
        pytest.raises(ServiceError) as caught,
    ):
        kafka.partitions("orders")
    assert caught.value.retryable
    message = str(caught.value)
    assert message.startswith(f"Kafka at {address}: reading metadata of topic 'orders' failed (")
    assert message.endswith(
        "check that the brokers are reachable and the Kafka connection's settings are right, then retry"
    )


def test_invalid_settings_are_a_landing_error() -> None:
    with pytest.raises(LandingError) as caught:
        KafkaPartitionReader({"bootstrap.servers": "x:1", "no.such.setting": "1"}, group_id="g")
    assert str(caught.value).startswith("cannot create a Kafka consumer for x:1: ")
    assert "No such configuration property" in str(caught.value)
