"""Landing the Avro writer schemas that TiCDC's ``avro`` messages refer to by registry id.

TiCDC's avro protocol (``pkg/sink/codec/avro/confluent_schema_registry.go``) frames every key and
value as ``0x00`` + a 4-byte big-endian Confluent schema registry id + Avro binary. Decoding needs
the writer schema of each id, and decoding and replays must not depend on the registry being up,
so the land task fetches every id its batch refers to (``GET /schemas/ids/{id}`` through
``confluent_kafka``'s :class:`SchemaRegistryClient`) and stores it beside the raw batches
(:meth:`LandingStore.write_writer_schema`) **before** the batch's manifest is published. An id the
registry does not know fails the run (:class:`LandingError` naming topic, partition, offset and
id): the batch is not published, and the next run tries again.

Registry settings are a ``SchemaRegistryClient`` configuration (``url``,
``basic.auth.user.info``, ``ssl.*``…), built from an Airflow connection by
``ticdc_lake_airflow.hooks.schema_registry_client_config``; they are never logged.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from ticdc_lake.errors import ConfigError, LandingError, ServiceError
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.record_chunks import RecordChunk

MAGIC_BYTE = 0x00
HEADER_SIZE = 5
#: SchemaRegistryClient settings that are numbers (an Airflow connection gives strings).
_NUMERIC_SETTINGS = frozenset(
    {"timeout", "cache.capacity", "cache.latest.ttl.sec", "max.retries", "retries.wait.ms", "retries.max.wait.ms"}
)
#: Confluent error code of "schema not found" (``GET /schemas/ids/{id}``, HTTP 404).
_SCHEMA_NOT_FOUND = 40403
_log = logging.getLogger(__name__)


def _transport_errors() -> tuple[type[Exception], ...]:
    """Connection-level errors of the HTTP client ``confluent_kafka`` uses (httpx2, else httpx)."""
    found: list[type[Exception]] = []
    for module in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(module).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def _registry_error(exc: Any, reference: SchemaReference, name: str) -> Exception:
    """The library error for a ``SchemaRegistryError`` of ``GET /schemas/ids/{id}``."""
    status, schema_id = exc.http_status_code, reference.schema_id
    if status == 404 or exc.error_code == _SCHEMA_NOT_FOUND:
        return LandingError(
            f"schema registry {name} does not know schema id {schema_id}, which {reference.where()} refers "
            "to. The changefeed registers its schemas in another registry, or this one lost them: point the "
            "pipeline's kafka.schema_registry_connection_id at the changefeed's registry. The batch was not "
            "published"
        )
    if status in (401, 403):
        return ConfigError(
            f"schema registry {name} refused the credentials (HTTP {status}) while fetching schema id "
            f"{schema_id}: check the login/password of the pipeline's schema registry connection"
        )
    message = (
        f"schema registry {name} failed fetching schema id {schema_id} for {reference.where()}: "
        f"HTTP {status} ({exc.error_message})"
    )
    if isinstance(status, int) and 400 <= status < 500:
        return LandingError(message)
    return ServiceError(message + "; the run can be retried")


def confluent_schema_id(data: bytes | None) -> int | None:
    """The registry id of a Confluent-framed key or value (``0x00`` + 4 bytes), else None."""
    if data is None or len(data) < HEADER_SIZE or data[0] != MAGIC_BYTE:
        return None
    return int.from_bytes(data[1:HEADER_SIZE], "big")


@dataclass(frozen=True, slots=True)
class SchemaReference:
    """Where a schema id was first seen in this run."""

    schema_id: int
    topic: str
    partition: int
    offset: int
    #: ``key`` or ``value``.
    side: str

    def where(self) -> str:
        return f"the {self.side} of topic {self.topic!r} partition {self.partition} offset {self.offset}"


class SchemaIdCollector:
    """Collects the schema ids of keys and values that start with the Confluent magic byte."""

    def __init__(self) -> None:
        self._first: dict[int, SchemaReference] = {}

    def add(self, message: RawMessage) -> None:
        self._add(message.topic, message.partition, message.offset, message.key, message.value)

    def _add(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None) -> None:
        for side, data in (("key", key), ("value", value)):
            schema_id = confluent_schema_id(data)
            if schema_id is not None and schema_id not in self._first:
                self._first[schema_id] = SchemaReference(schema_id, topic, partition, offset, side)

    def watch(self, chunks: Iterable[RecordChunk]) -> Iterator[RecordChunk]:
        """Pass ``chunks`` through unchanged, collecting their records' schema ids on the way."""
        for chunk in chunks:
            for offset, key, value in zip(chunk.offsets, chunk.keys, chunk.values, strict=True):
                self._add(chunk.topic, chunk.partition, offset, key, value)
            yield chunk

    def references(self) -> list[SchemaReference]:
        """One reference per id, by id."""
        return [self._first[schema_id] for schema_id in sorted(self._first)]

    def __len__(self) -> int:
        return len(self._first)


class WriterSchemaSink(Protocol):
    """What this module needs of the landing store."""

    def has_writer_schema(self, schema_id: int) -> bool: ...

    def write_writer_schema(self, schema_id: int, text: str, *, source: str = ...) -> bool: ...


def registry_client(config: Mapping[str, str]) -> Any:
    """A ``confluent_kafka`` :class:`SchemaRegistryClient` from string settings (``url`` required)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    if not config.get("url"):
        raise ConfigError("the schema registry settings have no 'url' (the registry's base URL)")
    settings: dict[str, Any] = {}
    for key, value in config.items():
        if key in _NUMERIC_SETTINGS:
            try:
                settings[key] = float(value) if "." in value else int(value)
            except ValueError:
                raise ConfigError(f"schema registry setting {key!r} must be a number, got {value!r}") from None
        elif key == "ssl.ca.location" and value.lower() == "false":
            settings[key] = False  # the client's way to switch certificate verification off
        else:
            settings[key] = value
    try:
        return SchemaRegistryClient(settings)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"schema registry settings for {registry_name(config)} are invalid: {exc}") from None


def registry_name(config: Mapping[str, str]) -> str:
    """The registry's base URL without credentials, for messages and logs."""
    parts = urlsplit(config.get("url", "").split(",")[0].strip())
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def land_writer_schemas(
    store: WriterSchemaSink,
    references: Iterable[SchemaReference],
    registry: Mapping[str, str],
    *,
    client: Any = None,
    logger: logging.Logger | None = None,
) -> list[int]:
    """Fetch every referenced schema not landed yet and land it; returns the ids written.

    :class:`LandingError` for an id the registry does not know (or not an Avro schema),
    :class:`ServiceError` (retryable) when the registry cannot be reached or fails,
    :class:`ConfigError` when it refuses the credentials.
    """
    log = logger or _log
    name = registry_name(registry)
    missing = [reference for reference in references if not store.has_writer_schema(reference.schema_id)]
    if not missing:
        return []
    registry_client_ = client if client is not None else registry_client(registry)
    written = []
    for reference in missing:
        text = _fetch(registry_client_, reference, name)
        if store.write_writer_schema(reference.schema_id, text, source=f"the schema registry {name}"):
            written.append(reference.schema_id)
    log.info(
        "landed %d writer schema(s) from %s: ids %s", len(written), name, ", ".join(str(i) for i in written) or "-"
    )
    return written


def _fetch(client: Any, reference: SchemaReference, name: str) -> str:
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    schema_id = reference.schema_id
    try:
        schema = client.get_schema(schema_id)
    except SchemaRegistryError as exc:
        raise _registry_error(exc, reference, name) from None
    except _transport_errors() as exc:
        raise ServiceError(
            f"schema registry {name} cannot be reached ({type(exc).__name__}) while fetching schema id "
            f"{schema_id} for {reference.where()}; the run can be retried"
        ) from None
    schema_type = getattr(schema, "schema_type", None) or "AVRO"
    text = getattr(schema, "schema_str", None)
    if schema_type != "AVRO" or not isinstance(text, str):
        raise LandingError(
            f"schema id {schema_id} at {name} ({reference.where()}) is a {schema_type} schema, not Avro: TiCDC's "
            "avro protocol only writes Avro; check the pipeline's protocol"
        )
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise LandingError(
            f"schema id {schema_id} at {name} is not JSON ({exc}); it cannot be an Avro schema"
        ) from None
    if not isinstance(document, dict) or document.get("type") != "record":
        raise LandingError(
            f"schema id {schema_id} at {name} ({reference.where()}) is not an Avro record schema; TiCDC's avro "
            "protocol registers one record per table"
        )
    return text
