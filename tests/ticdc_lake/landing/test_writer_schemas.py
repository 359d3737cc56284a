"""Landing Avro writer schemas: ids in landed messages → the real registry → the landing store.

The registry tests use the local Confluent-compatible registry (``include/scripts/registry.sh
start``, fixture ``schema_registry_url``) and the land tests also the local Kafka broker.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import Connection
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import ConfigError, LandingError, ServiceError
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.lander import land
from ticdc_lake.landing.layout import writer_schema_file
from ticdc_lake.landing.raw_batch import ConsumedRecord, as_chunks
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.landing.writer_schemas import (
    SchemaIdCollector,
    SchemaReference,
    confluent_schema_id,
    land_writer_schemas,
    registry_client,
    registry_name,
)
from ticdc_lake_airflow.hooks import registry_config_from_connection

SCHEMA_TEXT = (
    '{"type":"record","name":"t","namespace":"default.shop","fields":['
    '{"name":"id","type":{"type":"long","connect.parameters":{"tidb_type":"BIGINT"}}}]}'
)


def _message(key: bytes | None, value: bytes | None, offset: int = 0, partition: int = 0) -> RawMessage:
    return RawMessage("shop.t", partition, offset, 0, key, value)


def _framed(schema_id: int, body: bytes = b"\x02") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def _record_schema(table: str) -> str:
    return SCHEMA_TEXT.replace('"name":"t"', f'"name":"{table}"')


# ------------------------------------------------------------------------------ schema ids
def test_confluent_schema_id() -> None:
    assert confluent_schema_id(_framed(258)) == 258
    assert confluent_schema_id(b"\x00\xff\xff\xff\xff") == (1 << 32) - 1
    for data in (None, b"", b"\x00\x00\x00\x01", b"\x01{}", b"\x02" + bytes(8), b"\x16\x06"):
        assert confluent_schema_id(data) is None


def test_collector_keeps_the_first_place_of_each_id() -> None:
    collector = SchemaIdCollector()
    records = [
        ConsumedRecord(_message(_framed(7), _framed(8), offset=10)),
        ConsumedRecord(_message(_framed(7), None, offset=11)),  # tombstone
        ConsumedRecord(_message(None, b"\x02" + bytes(8), offset=12)),  # watermark
        ConsumedRecord(_message(_framed(9), _framed(8), offset=13, partition=2)),
    ]
    chunks = list(as_chunks(records))
    assert list(collector.watch(chunks)) == chunks
    assert collector.references() == [
        SchemaReference(7, "shop.t", 0, 10, "key"),
        SchemaReference(8, "shop.t", 0, 10, "value"),
        SchemaReference(9, "shop.t", 2, 13, "key"),
    ]
    assert len(collector) == 3
    assert SchemaReference(9, "shop.t", 2, 13, "key").where() == "the key of topic 'shop.t' partition 2 offset 13"


# ------------------------------------------------------------------------------ the store
def test_store_writes_a_writer_schema_once(tmp_path: Path) -> None:
    store = LandingStore(f"file://{tmp_path}", "p1")
    assert not store.has_writer_schema(42)
    assert store.write_writer_schema(42, SCHEMA_TEXT) is True
    assert store.has_writer_schema(42)
    assert (tmp_path / "p1" / writer_schema_file(42)).read_text(encoding="utf-8") == SCHEMA_TEXT
    assert store.writer_schemas() == {42: SCHEMA_TEXT}
    assert store.write_writer_schema(42, SCHEMA_TEXT) is False
    reformatted = json.dumps(json.loads(SCHEMA_TEXT), indent=2)
    assert store.write_writer_schema(42, reformatted) is False  # the same JSON document
    assert store.writer_schemas() == {42: SCHEMA_TEXT}
    assert not [p.name for p in (tmp_path / "p1" / "schemas" / "registry").iterdir() if p.name.startswith(".")]


def test_store_refuses_another_schema_under_a_landed_id(tmp_path: Path) -> None:
    store = LandingStore(f"file://{tmp_path}", "p1")
    store.write_writer_schema(42, SCHEMA_TEXT)
    with pytest.raises(LandingError) as err:
        store.write_writer_schema(42, _record_schema("u"), source="the schema registry http://r:8081")
    assert str(err.value) == (
        f"writer schema id 42: file://{tmp_path}/p1/schemas/registry/42.json already holds a different schema "
        "than the one the schema registry http://r:8081 now returns for that id. Schema ids must never be reused: "
        "the registry was reset or replaced. Point the pipeline back at the registry that issued the landed "
        "schemas, or land into a new pipeline"
    )
    assert store.writer_schemas() == {42: SCHEMA_TEXT}


# ---------------------------------------------------------------------- registry settings
def test_registry_client_settings() -> None:
    client = registry_client(
        {
            "url": "https://registry:8081/apis/ccompat/v7",
            "basic.auth.user.info": "user:secret",
            "max.retries": "1",
            "timeout": "2.5",
            "ssl.ca.location": "false",
        }
    )
    rest = client._rest_client
    assert (rest.max_retries, rest.timeout, rest.auth) == (1, 2.5, ("user", "secret"))
    with pytest.raises(ConfigError, match=r"^the schema registry settings have no 'url'"):
        registry_client({})
    with pytest.raises(ConfigError, match=r"^schema registry setting 'timeout' must be a number, got 'soon'$"):
        registry_client({"url": "http://r", "timeout": "soon"})
    with pytest.raises(ConfigError, match="Unrecognized properties: nope"):
        registry_client({"url": "http://r", "nope": "1"})
    assert registry_name({"url": "https://user:pw@registry:8081/apis/ccompat/v7"}) == (
        "https://registry:8081/apis/ccompat/v7"
    )


def test_airflow_connection_to_registry_settings(caplog: pytest.LogCaptureFixture) -> None:
    full = Connection(conn_id="sr", conn_type="http", host="https://registry:8081/apis/ccompat/v7")
    assert registry_config_from_connection(full) == {"url": "https://registry:8081/apis/ccompat/v7"}
    parts = Connection(conn_id="sr", conn_type="http", host="registry", port=8081, schema="https")
    assert registry_config_from_connection(parts) == {"url": "https://registry:8081"}
    extra = {"ssl.ca.location": "/etc/ca.pem", "timeout": 10, "headers": {"x": "y"}}
    secured = Connection(
        conn_id="sr", conn_type="http", host="http://r/", port=18081, login="u", password="p:w", extra=json.dumps(extra)
    )
    with caplog.at_level(logging.WARNING):
        config = registry_config_from_connection(secured)
    assert config == {
        "url": "http://r:18081",
        "ssl.ca.location": "/etc/ca.pem",
        "timeout": "10",
        "basic.auth.user.info": "u:p:w",
    }
    assert "ignoring extra key 'headers'" in caplog.text
    assert "p:w" not in caplog.text
    with pytest.raises(ConfigError, match="gives no schema registry address"):
        registry_config_from_connection(Connection(conn_id="sr", conn_type="http"))


# ------------------------------------------------------------------------- with the registry
@pytest.fixture
def registry(schema_registry_url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": schema_registry_url})


def _register(registry: SchemaRegistryClient, side: str = "value", text: str | None = None) -> int:
    subject = f"landing_{uuid.uuid4().hex[:12]}-{side}"
    schema_id: int = registry.register_schema(
        subject, Schema(text or _record_schema(f"t{uuid.uuid4().hex[:8]}"), "AVRO")
    )
    return schema_id


def test_land_writer_schemas_from_the_registry(
    tmp_path: Path, schema_registry_url: str, registry: SchemaRegistryClient
) -> None:
    first, second = _register(registry), _register(registry, "key")
    store = LandingStore(f"file://{tmp_path}", "p1")
    references = [SchemaReference(first, "t", 0, 3, "value"), SchemaReference(second, "t", 1, 0, "key")]
    settings = {"url": schema_registry_url}
    assert land_writer_schemas(store, references, settings) == sorted([first, second])
    landed = store.writer_schemas()
    assert landed == {first: registry.get_schema(first).schema_str, second: registry.get_schema(second).schema_str}
    # Landed ids are not fetched again: an unreachable registry does not matter any more.
    assert land_writer_schemas(store, references, {"url": "http://127.0.0.1:1"}) == []


def test_unknown_id_fails_naming_where_it_was_seen(tmp_path: Path, schema_registry_url: str) -> None:
    store = LandingStore(f"file://{tmp_path}", "p1")
    unknown = 2_000_000_000
    with pytest.raises(LandingError) as err:
        land_writer_schemas(store, [SchemaReference(unknown, "shop.t", 2, 17, "value")], {"url": schema_registry_url})
    assert str(err.value) == (
        f"schema registry {schema_registry_url} does not know schema id {unknown}, which the value of topic "
        "'shop.t' partition 2 offset 17 refers to. The changefeed registers its schemas in another registry, or "
        "this one lost them: point the pipeline's kafka.schema_registry_connection_id at the changefeed's "
        "registry. The batch was not published"
    )
    assert store.writer_schemas() == {}


def test_unreachable_registry_is_retryable(tmp_path: Path) -> None:
    store = LandingStore(f"file://{tmp_path}", "p1")
    with pytest.raises(ServiceError) as err:
        land_writer_schemas(
            store, [SchemaReference(5, "t", 0, 0, "key")], {"url": "http://127.0.0.1:1", "max.retries": "0"}
        )
    assert str(err.value) == (
        "schema registry http://127.0.0.1:1 cannot be reached (ConnectError) while fetching schema id 5 for the "
        "key of topic 't' partition 0 offset 0; the run can be retried"
    )
    assert err.value.retryable


# ------------------------------------------------------------------- land() with Kafka too
@pytest.fixture
def topic(kafka_bootstrap: str) -> Iterator[str]:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    name = f"avro-landing-{uuid.uuid4().hex[:10]}"
    admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])[name].result(30)
    yield name
    admin.delete_topics([name])[name].result(30)


def _produce(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes | None]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, key, value in records:
        producer.produce(topic, value, key, partition=partition)
    assert producer.flush(30) == 0


def _avro_pipeline(tmp_path: Path, topic: str, **kafka: Any) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "id": "avro_land",
            "protocol": "avro",
            "kafka": {"topics": [topic], **kafka},
            "landing_uri": f"file://{tmp_path}/landing",
            "catalog": "lake",
        }
    )


@pytest.mark.kafka
def test_land_fetches_the_schemas_of_its_batch_before_publishing(
    tmp_path: Path, kafka_bootstrap: str, topic: str, schema_registry_url: str, registry: SchemaRegistryClient
) -> None:
    key_id, value_id = _register(registry, "key"), _register(registry, "value")
    _produce(
        kafka_bootstrap,
        topic,
        [
            (0, _framed(key_id), _framed(value_id)),
            (0, _framed(key_id), None),
            (1, None, b"\x02" + (5).to_bytes(8, "big")),
        ],
    )
    pipeline = _avro_pipeline(tmp_path, topic)
    kafka = {"bootstrap.servers": kafka_bootstrap}
    with pytest.raises(ConfigError) as err:
        land(pipeline, kafka, "run-0", None)
    assert str(err.value) == (
        "pipeline 'avro_land' uses protocol avro, whose messages refer to writer schemas in a schema registry, "
        "but no registry settings were given; define the Airflow connection 'schema_registry_default' "
        "(kafka.schema_registry_connection_id)"
    )
    result = land(pipeline, kafka, "run-1", None, registry={"url": schema_registry_url})
    assert result.manifest is not None
    assert result.messages == 3
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    assert sorted(store.writer_schemas()) == sorted([key_id, value_id])


@pytest.mark.kafka
def test_land_with_an_unknown_id_publishes_nothing(
    tmp_path: Path, kafka_bootstrap: str, topic: str, schema_registry_url: str
) -> None:
    _produce(kafka_bootstrap, topic, [(1, _framed(2_000_000_001), _framed(2_000_000_001))])
    pipeline = _avro_pipeline(tmp_path, topic)
    with pytest.raises(LandingError, match=r"does not know schema id 2000000001, which the key of topic .* offset 0"):
        land(pipeline, {"bootstrap.servers": kafka_bootstrap}, "run-1", None, registry={"url": schema_registry_url})
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    assert store.manifests() == []
    assert store.writer_schemas() == {}
