"""Checking a Kafka connection's credentials against the brokers before landing.

librdkafka reports a refused SASL login or an untrusted certificate only through its error
callback and then keeps retrying, so without this check the land stage would see a metadata
timeout (a retryable error) and Airflow would retry in vain.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from ticdc_lake.errors import ConfigError
from ticdc_lake.redaction import redact, sensitive_values

log = logging.getLogger(__name__)

#: Security protocols whose credentials or certificates :func:`check_kafka_credentials` checks.
CHECKED_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL", "SSL"})
#: librdkafka error names that mean "the brokers refuse these credentials / this TLS setup".
_REFUSED = frozenset({"_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "_SSL", "ILLEGAL_SASL_STATE"})


def check_kafka_credentials(conn_id: str, config: Mapping[str, str], timeout_s: float = 20.0) -> None:
    """Raise :class:`ConfigError` when the brokers refuse the connection's credentials or TLS setup.

    librdkafka only reports a refused SASL login or certificate through its error callback and
    then keeps retrying, so the land stage would see a metadata timeout (a retryable error) and
    Airflow would retry in vain. One metadata request settles it: success returns, a refusal
    raises (naming the connection, never the secret), anything else (brokers unreachable) returns
    and is left to the land stage's own, retryable, errors.
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[KafkaError] = []
    settings: dict[str, Any] = {
        **config,
        "error_cb": errors.append,
        "logger": logging.getLogger(f"{__name__}.librdkafka"),
    }
    try:
        client = AdminClient(settings)
    except (KafkaException, ValueError, TypeError) as exc:
        raise ConfigError(
            f"Airflow connection {conn_id!r}: its Kafka settings are not valid librdkafka settings "
            f"({redact(str(exc), sensitive_values(config))}); fix the connection's login, password and extra"
        ) from None
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.list_topics(timeout=1.0)
            return
        except KafkaException:
            pass
        client.poll(0)  # serves error_cb
        refused = next((e for e in errors if e.name() in _REFUSED), None)
        if refused is not None:
            raise ConfigError(_refused_message(conn_id, config, refused.name(), refused.str())) from None
        if time.monotonic() >= deadline:
            log.warning(
                "Kafka connection %r: no answer from %s within %.0fs while checking its credentials; "
                "leaving it to the land stage",
                conn_id,
                config.get("bootstrap.servers"),
                timeout_s,
            )
            return


def _refused_message(conn_id: str, config: Mapping[str, str], name: str, reason: str) -> str:
    protocol = config.get("security.protocol", "")
    what = f"security.protocol {protocol}"
    if "sasl.mechanism" in config or protocol.upper().startswith("SASL"):
        what += f", sasl.mechanism {config.get('sasl.mechanism', 'GSSAPI')}"
    if "sasl.username" in config:
        what += f", user {config['sasl.username']!r}"
    if name == "_SSL":
        fix = (
            "check the connection's ssl.ca.location (the CA that signed the brokers' certificates), "
            "ssl.certificate.location / ssl.key.location and the broker address it names"
        )
    else:
        fix = "fix the connection's login and password (or the sasl.* keys of its extra)"
    return (
        f"Kafka at {config.get('bootstrap.servers')} refused Airflow connection {conn_id!r} ({what}): "
        f"{redact(reason, sensitive_values(config))}. A retry cannot fix this: {fix}, then clear the task"
    )
