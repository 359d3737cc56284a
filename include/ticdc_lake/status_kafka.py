"""Kafka end offsets for ``ticdc-lake status``, without Airflow.

The pipeline names an Airflow connection (``kafka.connection_id``). Outside Airflow its settings
are read from the ``AIRFLOW_CONN_<ID>`` environment variable, in either of Airflow's forms
(JSON, or a URI whose query holds the extra), with the rules of
``ticdc_lake_airflow.hooks.kafka_client_config``: extra keys that are librdkafka settings pass
through, ``host:port`` becomes ``bootstrap.servers``, login and password become the SASL user and
password. ``--bootstrap-servers`` replaces the broker list. Secrets are never printed: only the
broker list is shown.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import ConfigError, TicdcLakeError

_PROPERTY = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")
_FORM_FIELD = re.compile(r"^extra__[a-z0-9_]+__(?P<field>.+)$")


def connection_env(conn_id: str) -> str:
    return f"AIRFLOW_CONN_{conn_id.upper()}"


def kafka_settings(
    conn_id: str, bootstrap_servers: str | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """librdkafka settings from ``AIRFLOW_CONN_<ID>`` and/or ``bootstrap_servers``; None when neither exists."""
    environ = os.environ if environ is None else environ
    raw = environ.get(connection_env(conn_id))
    settings = _from_connection(raw, connection_env(conn_id)) if raw else {}
    if bootstrap_servers:
        settings["bootstrap.servers"] = bootstrap_servers
    return settings if settings.get("bootstrap.servers") else None


def _from_connection(raw: str, where: str) -> dict[str, str]:
    text = raw.strip()
    if text.startswith("{"):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where} is not valid JSON ({exc.msg} at {exc.pos})") from None
        extra = document.get("extra") or {}
        if isinstance(extra, str):
            extra = json.loads(extra) if extra.strip() else {}
        host, port = document.get("host"), document.get("port")
        login, password = document.get("login"), document.get("password")
    else:
        parts = urlsplit(text)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        extra = json.loads(query.pop("__extra__")) if "__extra__" in query else query
        host, port = (unquote(parts.hostname) if parts.hostname else None), parts.port
        login = unquote(parts.username) if parts.username else None
        password = unquote(parts.password) if parts.password else None
    if not isinstance(extra, dict):
        raise ConfigError(f"{where}: its extra must be a JSON object of librdkafka settings")
    settings: dict[str, str] = {}
    for raw_key, value in extra.items():
        form_field = _FORM_FIELD.match(raw_key)
        key = form_field.group("field") if form_field else raw_key
        if _PROPERTY.match(key) and not key.startswith("schema.registry."):
            settings[key] = _setting(value)
    if not settings.get("bootstrap.servers") and host:
        settings["bootstrap.servers"] = f"{host}:{port}" if port else str(host)
    if login:
        settings["sasl.username"] = str(login)
    if password:
        settings["sasl.password"] = str(password)
    return settings


def _setting(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def end_offsets(
    pipeline: PipelineConfig, settings: Mapping[str, str], timeout_s: float = 10.0
) -> dict[tuple[str, int], int]:
    """Kafka's end offset (high watermark, read committed) of every partition of the pipeline's topics."""
    from ticdc_lake.landing.kafka_source import KafkaPartitionReader

    ends: dict[tuple[str, int], int] = {}
    with KafkaPartitionReader(
        settings, group_id=f"ticdc-lake-status-{pipeline.id}", request_timeout_s=timeout_s
    ) as reader:
        for topic in reader.topics(pipeline.kafka):
            for partition in reader.partitions(topic):
                ends[(topic, partition)] = reader.watermarks(topic, partition)[1]
    return ends


def read_end_offsets(
    pipeline: PipelineConfig,
    bootstrap_servers: str | None = None,
    environ: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
) -> tuple[dict[tuple[str, int], int] | None, str]:
    """(end offsets or None, a sentence saying where they came from or why they are missing)."""
    conn_id = pipeline.kafka.connection_id
    try:
        settings = kafka_settings(conn_id, bootstrap_servers, environ)
    except (ConfigError, ValueError) as exc:
        return None, f"Kafka settings unusable ({exc}): Kafka end offsets not read"
    if settings is None:
        return None, (
            f"no Kafka settings: set {connection_env(conn_id)} (the Airflow connection {conn_id!r}) or pass "
            "--bootstrap-servers to see how far landing is behind Kafka"
        )
    try:
        return end_offsets(pipeline, settings, timeout_s), f"Kafka at {settings['bootstrap.servers']}"
    except TicdcLakeError as exc:
        return None, f"Kafka at {settings['bootstrap.servers']} not readable: {exc}"
