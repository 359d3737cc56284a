"""Airflow connection → librdkafka settings, with Airflow's own Connection objects and env vars."""

from __future__ import annotations

import json
import logging
import warnings

import pytest
from airflow.sdk import Connection

from ticdc_lake.errors import ConfigError
from ticdc_lake_airflow.hooks import client_config_from_connection, kafka_client_config


def test_host_and_port_become_bootstrap_servers() -> None:
    conn = Connection(conn_id="k", conn_type="kafka", host="broker", port=9092)
    assert client_config_from_connection(conn) == {"bootstrap.servers": "broker:9092"}


def test_host_may_hold_a_broker_list() -> None:
    conn = Connection(conn_id="k", conn_type="generic", host="b1:9092,b2:9092")
    assert client_config_from_connection(conn) == {"bootstrap.servers": "b1:9092,b2:9092"}


def test_extra_librdkafka_settings_pass_through_and_win_over_host() -> None:
    extra = {
        "bootstrap.servers": ["b1:9093", "b2:9093"],
        "security.protocol": "SSL",
        "ssl.ca.location": "/etc/ssl/ca.pem",
        "enable.ssl.certificate.verification": True,
        "socket.timeout.ms": 30000,
        "debug": "broker",
    }
    conn = Connection(conn_id="k", conn_type="kafka", host="ignored", port=1, extra=json.dumps(extra))
    assert client_config_from_connection(conn) == {
        "bootstrap.servers": "b1:9093,b2:9093",
        "security.protocol": "SSL",
        "ssl.ca.location": "/etc/ssl/ca.pem",
        "enable.ssl.certificate.verification": "true",
        "socket.timeout.ms": "30000",
        "debug": "broker",
    }


def test_keys_that_are_not_librdkafka_settings_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    extra = {
        "bootstrap.servers": "b:9092",
        "description": "x",
        "schema.registry.url": "http://registry:8081",
        "extra__kafka__sasl.mechanism": "PLAIN",
    }
    conn = Connection(conn_id="k", conn_type="kafka", extra=json.dumps(extra))
    with caplog.at_level(logging.WARNING):
        config = client_config_from_connection(conn)
    # Old UI form fields (extra__<type>__<key>) are librdkafka settings under a prefix.
    assert config == {"bootstrap.servers": "b:9092", "sasl.mechanism": "PLAIN"}
    assert "'description'" in caplog.text
    assert "'schema.registry.url'" in caplog.text


def test_login_and_password_become_sasl_credentials() -> None:
    conn = Connection(
        conn_id="k",
        conn_type="kafka",
        host="broker",
        port=9094,
        login="ingest",
        password="s3cret-value",
        extra=json.dumps({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}),
    )
    assert client_config_from_connection(conn) == {
        "bootstrap.servers": "broker:9094",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "ingest",
        "sasl.password": "s3cret-value",
    }


def test_credentials_without_a_sasl_protocol_are_refused_without_showing_the_password() -> None:
    conn = Connection(conn_id="kafka_prod", conn_type="kafka", host="b", login="u", password="s3cret-value")
    with pytest.raises(ConfigError, match=r"'kafka_prod'.*security\.protocol") as raised:
        client_config_from_connection(conn)
    assert "s3cret-value" not in str(raised.value)


def test_password_and_extra_password_that_differ_are_refused() -> None:
    extra = {"security.protocol": "SASL_SSL", "sasl.password": "other-secret"}
    conn = Connection(conn_id="k", conn_type="kafka", host="b", password="s3cret-value", extra=json.dumps(extra))
    with pytest.raises(ConfigError, match=r"password and extra 'sasl\.password'") as raised:
        client_config_from_connection(conn)
    assert "s3cret-value" not in str(raised.value)
    assert "other-secret" not in str(raised.value)


def test_no_broker_address_names_the_connection() -> None:
    conn = Connection(conn_id="kafka_empty", conn_type="kafka", extra=json.dumps({"security.protocol": "SSL"}))
    with pytest.raises(ConfigError, match="'kafka_empty' gives no Kafka broker address"):
        client_config_from_connection(conn)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("{not json", "extra is not valid JSON"),
        ('["a"]', "must be a JSON object"),
        ('{"bootstrap.servers": {"a": 1}}', "'bootstrap.servers' must be a string"),
    ],
)
def test_malformed_extra_is_reported(extra: str, message: str) -> None:
    conn = Connection(conn_id="k", conn_type="kafka", host="b", extra=extra)
    with pytest.raises(ConfigError, match=message):
        client_config_from_connection(conn)


def test_uri_connection_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_KAFKA_URI_TEST",
        "kafka://ingest:p%40ss-word@b1:9093/?security.protocol=SASL_SSL&sasl.mechanism=PLAIN",
    )
    assert kafka_client_config("kafka_uri_test") == {
        "bootstrap.servers": "b1:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "ingest",
        "sasl.password": "p@ss-word",
    }


def test_json_connection_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {"conn_type": "kafka", "extra": {"bootstrap.servers": "kafka:9092", "client.id": "lake"}}
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_JSON_TEST", json.dumps(conn))
    assert kafka_client_config("kafka_json_test") == {"bootstrap.servers": "kafka:9092", "client.id": "lake"}


def test_missing_connection_says_how_to_create_it() -> None:
    with pytest.raises(ConfigError, match=r"'kafka_nowhere'.*is not defined.*AIRFLOW_CONN_KAFKA_NOWHERE"):
        kafka_client_config("kafka_nowhere")


def test_the_password_is_not_logged(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    conn = {
        "conn_type": "kafka",
        "host": "b1",
        "port": 9092,
        "login": "ingest",
        "password": "s3cret-value",
        "extra": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_LOG_TEST", json.dumps(conn))
    with caplog.at_level(logging.DEBUG):
        kafka_client_config("kafka_log_test")
    assert "b1:9092" in caplog.text
    assert "s3cret-value" not in caplog.text


def test_a_connection_made_for_the_kafka_provider_works_as_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider's ``kafka`` type keeps the whole librdkafka config as the extra (its "Config Dict")."""
    extra = {
        "bootstrap.servers": "b1:9094,b2:9094",
        "group.id": "airflow",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "ingest",
        "sasl.password": "s3cret-value",
    }
    conn = Connection(conn_id="kafka_provider", conn_type="kafka", extra=json.dumps(extra))
    assert client_config_from_connection(conn) == extra


def test_no_broker_address_says_how_to_set_it() -> None:
    conn = Connection(conn_id="kafka_empty", conn_type="kafka", extra=json.dumps({"group.id": "g"}))
    with pytest.raises(ConfigError) as raised:
        client_config_from_connection(conn)
    assert str(raised.value) == (
        "Airflow connection 'kafka_empty' gives no Kafka broker address: set 'bootstrap.servers' in its extra "
        "(Admin > Connections: the Config Dict of an Apache Kafka connection, the Extra of another type), or its "
        "host and port; as an environment "
        """variable: AIRFLOW_CONN_KAFKA_EMPTY='{"conn_type": "kafka", "extra": {"bootstrap.servers": "broker:9092"}}'"""
    )


def test_missing_connection_message_gives_a_working_example() -> None:
    with pytest.raises(ConfigError) as raised:
        kafka_client_config("kafka_nowhere")
    assert str(raised.value) == (
        "Airflow connection 'kafka_nowhere' (the pipeline's kafka.connection_id) is not defined; create it in "
        "the UI (Admin > Connections: type Apache Kafka, 'bootstrap.servers' in its Config Dict), with "
        """`airflow connections add kafka_nowhere --conn-type kafka --conn-extra """
        """'{"bootstrap.servers": "broker:9092"}'`, or as the """
        """environment variable AIRFLOW_CONN_KAFKA_NOWHERE='{"conn_type": "kafka", "extra": """
        """{"bootstrap.servers": "broker:9092"}}'"""
    )


def test_the_ui_offers_a_connection_type_the_message_names() -> None:
    """The message names a connection type the UI offers: the project installs the Apache Kafka provider
    (requirements.in), whose ``kafka`` type is "Apache Kafka" in the UI. A Generic connection with the
    same extra works too."""
    from airflow.providers_manager import ProvidersManager

    with pytest.raises(ConfigError) as raised:
        kafka_client_config("kafka_nowhere")
    ui_part = str(raised.value).split("create it in the UI (", 1)[1].split(")", 1)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ProvidersManager.hooks is deprecated in favour of the task SDK's
        hooks = ProvidersManager().hooks
    offered = {hook.hook_name for hook in hooks.values() if hook is not None}
    assert "Apache Kafka" in offered
    assert "type Apache Kafka" in ui_part
    kafka_hook = hooks["kafka"]
    assert kafka_hook is not None
    assert kafka_hook.connection_type == "kafka"
    conn = Connection(conn_id="kafka_generic", conn_type="generic", extra=json.dumps({"bootstrap.servers": "b:9092"}))
    assert client_config_from_connection(conn) == {"bootstrap.servers": "b:9092"}
