"""Kafka client settings (librdkafka) and schema registry settings from Airflow connections.

The connection is the only place for broker addresses and credentials; pipeline YAML names it
by id. Rules, in order:

* keys of the connection's extra JSON that are librdkafka settings pass through unchanged
  (``bootstrap.servers``, ``security.protocol``, ``sasl.mechanism``, ``ssl.ca.location``...);
  lists become comma-separated strings, booleans ``true``/``false``;
* ``host[:port]`` becomes ``bootstrap.servers`` when the extra has none (``host`` may itself be
  a comma-separated broker list);
* ``login``/``password`` become ``sasl.username``/``sasl.password``.

Works with any connection type (``kafka``, ``generic``), from the UI, the CLI or
``AIRFLOW_CONN_<ID>`` (URI or JSON form).

Secrets (the password, sensitive extra keys such as ``ssl.key.password`` or
``sasl.oauthbearer.client.secret``) are registered with Airflow's secret masker and with
:mod:`ticdc_lake.redaction`, and never logged. With a SASL or SSL ``security.protocol`` the
credentials are checked against the brokers once (:func:`check_kafka_credentials`): a refused
login or certificate fails the task at once, naming the connection, instead of timing out
retry after retry.

:func:`schema_registry_client_config` does the same for the Confluent schema registry of an
``avro`` pipeline (see its docstring).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from airflow.sdk import BaseHook, Connection
from airflow.sdk.exceptions import AirflowNotFoundException
from airflow.sdk.log import mask_secret

from ticdc_lake.errors import ConfigError
from ticdc_lake.redaction import register_secrets, sensitive_values
from ticdc_lake_airflow.kafka_auth import CHECKED_PROTOCOLS, check_kafka_credentials

log = logging.getLogger(__name__)

#: librdkafka property names: lowercase words joined by dots (``socket.keepalive.enable``).
_PROPERTY = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")
#: The librdkafka properties without a dot that make sense in a connection.
_DOTLESS_PROPERTIES = frozenset({"debug", "acks", "retries", "partitioner"})
#: Prefixes of dotted keys that belong to other clients, never to librdkafka.
_FOREIGN_PREFIXES = ("schema.registry.",)
#: Old Airflow UI form fields were stored as ``extra__<conn_type>__<field>``.
_FORM_FIELD = re.compile(r"^extra__[a-z0-9_]+__(?P<field>.+)$")
#: For messages: a connection of the Kafka provider's type (librdkafka settings as its extra).
_EXAMPLE_EXTRA = '{"bootstrap.servers": "broker:9092"}'
_EXAMPLE_CONNECTION = '{"conn_type": "kafka", "extra": {"bootstrap.servers": "broker:9092"}}'


def kafka_client_config(conn_id: str) -> dict[str, str]:
    """librdkafka settings from the Airflow connection ``conn_id``; secrets are never logged."""
    try:
        connection = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise ConfigError(
            f"Airflow connection {conn_id!r} (the pipeline's kafka.connection_id) is not defined; "
            f"create it in the UI (Admin > Connections: type Apache Kafka, 'bootstrap.servers' in its Config Dict), "
            f"with "
            f"`airflow connections add {conn_id} --conn-type kafka --conn-extra "
            f"'{_EXAMPLE_EXTRA}'`, or as the environment variable "
            f"AIRFLOW_CONN_{conn_id.upper()}='{_EXAMPLE_CONNECTION}'"
        ) from None
    config = client_config_from_connection(connection)
    log.info(
        "Kafka connection %r: bootstrap.servers=%s, settings: %s",
        conn_id,
        config["bootstrap.servers"],
        ", ".join(sorted(config)),
    )
    if config.get("security.protocol", "").upper() in CHECKED_PROTOCOLS:
        check_kafka_credentials(conn_id, config)
    return config


def mask_secrets(settings: Mapping[str, Any]) -> None:
    """Register the values of ``settings``' sensitive keys with Airflow's masker and our redaction."""
    for value in sensitive_values(settings):
        mask_secret(value)
    register_secrets(settings)


def client_config_from_connection(connection: Connection) -> dict[str, str]:
    """The rules of :func:`kafka_client_config` applied to an already resolved connection."""
    where = f"Airflow connection {connection.conn_id!r}"
    config: dict[str, str] = {}
    for raw_key, value in _extra(connection, where).items():
        form_field = _FORM_FIELD.match(raw_key)
        key = form_field.group("field") if form_field else raw_key
        if not _is_librdkafka_property(key):
            log.warning("%s: ignoring extra key %r, not a librdkafka setting", where, raw_key)
            continue
        config[key] = _setting(value, where, raw_key)

    if not config.get("bootstrap.servers") and connection.host:
        host = connection.host.strip()
        config["bootstrap.servers"] = f"{host}:{connection.port}" if connection.port else host
    if not config.get("bootstrap.servers"):
        raise ConfigError(
            f"{where} gives no Kafka broker address: set 'bootstrap.servers' in its extra (Admin > "
            f"Connections: the Config Dict of an Apache Kafka connection, the Extra of another type), or its host "
            f"and port; as an environment "
            f"variable: AIRFLOW_CONN_{str(connection.conn_id).upper()}='{_EXAMPLE_CONNECTION}'"
        )

    credentials = (
        ("login", connection.login, "sasl.username"),
        ("password", connection.password, "sasl.password"),
    )
    for field, value, key in credentials:
        if not value:
            continue
        if key in config and config[key] != value:
            raise ConfigError(f"{where}: {field} and extra '{key}' are both set and differ; keep only one of them")
        config[key] = value
    if "sasl.username" in config and not config.get("security.protocol", "").upper().startswith("SASL"):
        raise ConfigError(
            f"{where} has SASL credentials but its extra sets no SASL security.protocol, so they "
            f'would be ignored; add "security.protocol": "SASL_SSL" (or "SASL_PLAINTEXT") and '
            f'"sasl.mechanism" (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) to the extra'
        )
    return config


def _extra(connection: Connection, where: str) -> dict[str, Any]:
    """The extra JSON; registers it and the password as secrets first (every caller reads both)."""
    if connection.password:
        mask_secret(connection.password)
        register_secrets({"password": connection.password})
    if not connection.extra:
        return {}
    try:
        extra = json.loads(connection.extra)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: its extra is not valid JSON ({exc.msg} at {exc.pos})") from None
    if not isinstance(extra, dict):
        raise ConfigError(f"{where}: its extra must be a JSON object of librdkafka settings")
    # Registers the values of sensitive keys (*password*, *secret*...) with the log masker,
    # and those our own redaction knows as sensitive (ssl.key.pem, sasl.jaas.config...) too.
    mask_secret(extra)
    mask_secrets({k: v for k, v in extra.items() if isinstance(v, str)})
    return extra


def _is_librdkafka_property(key: str) -> bool:
    if key.startswith(_FOREIGN_PREFIXES):
        return False
    return key in _DOTLESS_PROPERTIES or _PROPERTY.match(key) is not None


def _setting(value: Any, where: str, key: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str | int) for v in value):
        return ",".join(str(v) for v in value)
    raise ConfigError(
        f"{where}: extra key '{key}' must be a string, number, boolean or list of strings, not {type(value).__name__}"
    )


#: ``SchemaRegistryClient`` settings a registry connection's extra may carry.
_REGISTRY_SETTINGS = frozenset(
    {
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "timeout",
        "max.retries",
        "retries.wait.ms",
        "retries.max.wait.ms",
        "proxy",
    }
)


def schema_registry_client_config(conn_id: str) -> dict[str, str]:
    """``confluent_kafka`` ``SchemaRegistryClient`` settings from the Airflow connection ``conn_id``.

    The connection (type ``http``) gives the registry's base URL as its host: a full URL
    (``https://registry:8081/apis/ccompat/v7``), or a host name completed with the connection's
    schema (``http``/``https``, default ``http``) and port, as Airflow's HTTP hook does.
    ``login``/``password`` become basic auth (``basic.auth.user.info``). The extra JSON may
    set ``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``,
    ``ssl.key.password``, ``timeout``, ``max.retries``, ``retries.wait.ms``,
    ``retries.max.wait.ms`` and ``proxy``; other keys are ignored with a warning. The password
    is registered with Airflow's secret masker and never logged.
    """
    try:
        connection = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise ConfigError(
            f"Airflow connection {conn_id!r} (the pipeline's kafka.schema_registry_connection_id, needed by "
            f"protocol avro) is not defined; create it in the UI (Admin > Connections), with `airflow "
            f"connections add {conn_id} --conn-type http --conn-host http://REGISTRY:8081`, or as the "
            f"environment variable AIRFLOW_CONN_{conn_id.upper()}"
        ) from None
    config = registry_config_from_connection(connection)
    log.info(
        "schema registry connection %r: %s, settings: %s",
        conn_id,
        _public_url(config["url"]),
        ", ".join(sorted(config)),
    )
    return config


def registry_config_from_connection(connection: Connection) -> dict[str, str]:
    """The rules of :func:`schema_registry_client_config` applied to a resolved connection."""
    where = f"Airflow connection {connection.conn_id!r}"
    host = (connection.host or "").strip().rstrip("/")
    if not host:
        raise ConfigError(
            f"{where} gives no schema registry address: set its host to the registry's base URL, "
            "e.g. http://registry:8081"
        )
    if "://" in host:
        url = host
    else:
        scheme = (connection.schema or "http").strip() or "http"
        url = f"{scheme}://{host}"
    if connection.port and not _has_port(url):
        scheme, _, rest = url.partition("://")
        authority, slash, path = rest.partition("/")
        url = f"{scheme}://{authority}:{connection.port}{slash}{path}"
    config = {"url": url}
    for raw_key, value in _extra(connection, where).items():
        form_field = _FORM_FIELD.match(raw_key)
        key = form_field.group("field") if form_field else raw_key
        if key not in _REGISTRY_SETTINGS:
            log.warning("%s: ignoring extra key %r, not a schema registry client setting", where, raw_key)
            continue
        config[key] = _setting(value, where, raw_key)
    if connection.login or connection.password:
        if connection.password:
            mask_secret(connection.password)
        config["basic.auth.user.info"] = f"{connection.login or ''}:{connection.password or ''}"
    return config


def _has_port(url: str) -> bool:
    authority = url.partition("://")[2].partition("/")[0]
    return ":" in authority.rpartition("@")[2]


def _public_url(url: str) -> str:
    """``url`` without user info, for logs."""
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"
