"""Which settings are secret, and secrets removed from text the product writes itself."""

from __future__ import annotations

import pytest

from ticdc_lake.redaction import (
    MASK,
    embedded_secrets,
    is_sensitive_key,
    redact,
    redact_settings,
    register_secret,
    register_secrets,
    sensitive_values,
)


@pytest.mark.parametrize(
    "key",
    [
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.key.pem",
        "sasl.jaas.config",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.config",
        "basic.auth.user.info",
        "spark.sql.catalog.lake.s3.secret-access-key",
        "spark.sql.catalog.lake.s3.session-token",
        "spark.sql.catalog.lake.jdbc.password",
        "spark.sql.catalog.lake.credential",
        "spark.sql.catalog.lake.token",
        "spark.sql.catalog.lake.adls.sas-token.account",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "password",
    ],
)
def test_secret_settings(key: str) -> None:
    assert is_sensitive_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "bootstrap.servers",
        "security.protocol",
        "sasl.mechanism",
        "sasl.username",
        "ssl.ca.location",
        "ssl.key.location",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.endpoint.identification.algorithm",
        "spark.sql.catalog.lake.s3.access-key-id",
        "AWS_ACCESS_KEY_ID",
        "spark.sql.catalog.lake.uri",
        "spark.sql.catalog.lake.warehouse",
    ],
)
def test_settings_that_are_not_secret(key: str) -> None:
    assert not is_sensitive_key(key)


def test_registered_secrets_are_masked_wherever_they_occur() -> None:
    register_secret("Reg1steredSecret")
    register_secret("abc")  # too short to mask: it would hide ordinary words
    assert redact("boom: Reg1steredSecret!Reg1steredSecret abc") == f"boom: {MASK}!{MASK} abc"


def test_register_secrets_takes_sensitive_keys_nested_values_and_embedded_passwords() -> None:
    found = register_secrets(
        {
            "sasl.username": "ticdc",
            "sasl.password": "kafkaPass123",
            "nested": {"ssl.key.password": "keyPass456"},
            "uri": "jdbc:postgresql://db/lake?user=lake&password=dbPass789",
            "port": 9092,
        }
    )
    assert found == ["kafkaPass123", "keyPass456", "dbPass789"]
    assert redact("kafkaPass123 keyPass456 dbPass789 ticdc") == f"{MASK} {MASK} {MASK} ticdc"


def test_credential_looking_text_is_masked_without_registration() -> None:
    text = (
        'failed: sasl.password=abc123xyz and "ssl.key.password": "qwerty12", url '
        "postgresql://bob:pw1234@h:5432/db; ssl.ca.location=/x/ca.pem password: topsecret, "
        'token=abcd&x=1 "sasl.username": "ticdc" s3.secret-access-key=AKs3cr3t'
    )
    assert redact(text) == (
        f'failed: sasl.password={MASK} and "ssl.key.password": "{MASK}", url '
        f"postgresql://bob:{MASK}@h:5432/db; ssl.ca.location=/x/ca.pem password: {MASK}, "
        f'token={MASK}&x=1 "sasl.username": "ticdc" s3.secret-access-key={MASK}'
    )


def test_extra_secrets_and_longest_first() -> None:
    assert redact("x=1 longsecretvalue", ["secretval", "longsecretvalue"]) == f"x=1 {MASK}"


def test_embedded_secrets_of_uris_and_query_strings() -> None:
    assert embedded_secrets("s3://key:verysecret@minio:9000/b, jdbc:mysql://h/db?password=dbpw1&user=u") == [
        "verysecret",
        "dbpw1",
    ]
    assert embedded_secrets("file:///tmp/warehouse") == []


def test_sensitive_values_and_redacted_settings_for_printing() -> None:
    settings = {"sasl.password": "p4ssword", "sasl.username": "u", "ssl.ca.location": "/ca.pem", "empty.secret": ""}
    assert sensitive_values(settings) == ["p4ssword"]
    assert redact_settings(settings) == {
        "sasl.password": MASK,
        "sasl.username": "u",
        "ssl.ca.location": "/ca.pem",
        "empty.secret": "",
    }
