"""Kafka SASL/SSL from an Airflow connection, on the local broker's real SASL listeners, and no
secret in anything a run leaves behind.

Through Airflow's own test runner (``airflow dags test``): the land task reads the connection
from ``AIRFLOW_CONN_...`` (JSON form) and lands over SASL_SSL (PLAIN over TLS, the broker's
certificate checked against the local CA); the transform task, whose catalog carries secret
properties, submits with them on its command line and writes the run ledger. The Kafka
password and the catalog secrets must appear nowhere: not in the runner's output, the task logs,
the landing files or the ledger. Wrong credentials (on the SASL_PLAINTEXT listener) fail the
land task at the first try, with a message that names the connection and not the password.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from textwrap import dedent
from typing import TYPE_CHECKING

import pytest

from ticdc_lake.config import load_config
from ticdc_lake.errors import ConfigError
from ticdc_lake.run_ledger import ledger_rows
from ticdc_lake_airflow.kafka_auth import check_kafka_credentials
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

if TYPE_CHECKING:
    from airflow_sandbox import AirflowSandbox

pytestmark = [pytest.mark.airflow, pytest.mark.kafka, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[3]
#: Catalog secrets: one the provider's own masking knows (``secret``), two it does not.
CATALOG_SECRETS = {
    "s3.secret-access-key": "catalogSecretKey7431",
    "s3.session-token": "catalogSessionToken9920",
    "credential": "clientid:catalogCredential5513",
}

DAGS = """\
from datetime import UTC, datetime

from airflow.sdk import DAG

from ticdc_lake_airflow.land_operator import LandKafkaBatchOperator
from ticdc_lake_airflow.spark_stages import spark_stage_task

start = datetime(2026, 1, 1, tzinfo=UTC)
with DAG("secure_land", schedule=None, start_date=start, default_args={{"retries": 2}}):
    land = LandKafkaBatchOperator(task_id="land", config_path={config!r}, pipeline_id="secure")
    land >> spark_stage_task("transform", config_path={config!r}, pipeline_id="secure")

with DAG("wrong_password", schedule=None, start_date=start, default_args={{"retries": 2}}):
    LandKafkaBatchOperator(task_id="land", config_path={config!r}, pipeline_id="wrong")
"""


def _connection(security: dict[str, str], listener: str, password: str) -> str:
    extra = {
        "bootstrap.servers": security[listener.lower()],
        "security.protocol": listener,
        "sasl.mechanism": security["sasl_mechanism"],
    }
    if listener == "SASL_SSL":
        extra["ssl.ca.location"] = security["ssl_ca_location"]
    return json.dumps({"conn_type": "kafka", "login": security["username"], "password": password, "extra": extra})


def _files_containing(root: Path, secrets: list[str]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {s}" for s in secrets if s.encode() in data]
    return found


def test_land_over_sasl_from_a_connection_and_no_secret_is_printed(
    airflow_sandbox: AirflowSandbox, kafka_security: dict[str, str], tmp_path: Path
) -> None:
    topic = f"secure-{uuid.uuid4().hex[:8]}"
    properties = "".join(f"\n                  {k}: {v}" for k, v in CATALOG_SECRETS.items())
    config = tmp_path / "pipelines.yaml"
    config.write_text(
        dedent(f"""\
            catalogs:
              lake:
                uri: "jdbc:sqlite:{tmp_path}/catalog.db"
                warehouse: "file://{tmp_path}/warehouse"
                properties:{properties}
            pipelines:
              - id: secure
                protocol: simple-json
                kafka: {{connection_id: kafka_sasl, topics: [{topic}]}}
                landing_uri: file://{tmp_path}/landing
                catalog: lake
              - id: wrong
                protocol: simple-json
                kafka: {{connection_id: kafka_wrong, topics: [{topic}]}}
                landing_uri: file://{tmp_path}/landing
                catalog: lake
        """),
        encoding="utf-8",
    )
    (airflow_sandbox.dags / "kafka_security.py").write_text(DAGS.format(config=str(config)), encoding="utf-8")
    # The topic and its messages go in through the PLAINTEXT listener of the same broker.
    create_topic(security_plaintext := kafka_security["plaintext"], topic, 2)
    sim = TicdcSimulator(seed=61, topic=topic, partitions=2, workload=WorkloadConfig(tables=1))
    sim.setup()
    sim.run_transactions(10)
    sim.flush_watermark()
    messages = sim.take()
    produce(security_plaintext, messages)

    password = kafka_security["password"]
    wrong_password = "wrong-" + password[::-1]
    env = {
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[1]"}),
        "AIRFLOW_CONN_KAFKA_SASL": _connection(kafka_security, "SASL_SSL", password),
        "AIRFLOW_CONN_KAFKA_WRONG": _connection(kafka_security, "SASL_PLAINTEXT", wrong_password),
        "TICDC_LAKE_JARS": str(ROOT / ".jars"),
    }

    good = airflow_sandbox.dags_test("secure_land", env=env)
    good_output = good.stdout + good.stderr
    assert good.returncode == 0, good_output[-5000:]
    assert airflow_sandbox.task_states("secure_land") == {"land": "success", "transform": "success"}
    manifests = sorted((tmp_path / "landing" / "secure" / "manifests").glob("*.json"))
    assert len(manifests) == 1, good_output[-3000:]
    landed = json.loads(manifests[0].read_text())
    assert sum(int(r["end"]) - int(r["start"]) for r in landed["ranges"]) == len(messages), landed
    ledger = ledger_rows(load_config(config), load_config(config).pipeline("secure"))
    assert {(r["stage"], r["status"]) for r in ledger if r["table"] is None} >= {("apply", "OK")}, ledger

    bad = airflow_sandbox.dags_test("wrong_password", env=env)
    bad_output = bad.stdout + bad.stderr
    assert bad.returncode != 0
    assert airflow_sandbox.task_states("wrong_password") == {"land": "failed"}  # not up_for_retry
    assert "AirflowFailException" in bad_output
    refused = (
        f"Kafka at {kafka_security['sasl_plaintext']} refused Airflow connection 'kafka_wrong' "
        f"(security.protocol SASL_PLAINTEXT, sasl.mechanism PLAIN, user 'ticdc'): "
        f"sasl_plaintext://{kafka_security['sasl_plaintext']}/bootstrap: SASL authentication error: "
        "Authentication failed: Invalid username or password"
    )
    assert refused in bad_output, bad_output[-5000:]
    assert "A retry cannot fix this: fix the connection's login and password" in bad_output

    secrets = [password, wrong_password, *CATALOG_SECRETS.values()]
    for name, text in (("secure_land output", good_output), ("wrong_password output", bad_output)):
        lines = [line[:300] for line in text.splitlines() if any(s in line for s in secrets)]
        assert not lines, f"a secret is printed in the {name}:\n" + "\n".join(lines[:5])
    assert not [s for s in secrets if s in repr(ledger)], "a secret is in the run ledger"
    leaks = _files_containing(airflow_sandbox.home / "logs", secrets) + _files_containing(tmp_path / "landing", secrets)
    assert not leaks, leaks


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_credentials_are_checked_on_both_listeners(kafka_security: dict[str, str], listener: str) -> None:
    config = {
        "bootstrap.servers": kafka_security[listener.lower()],
        "security.protocol": listener,
        "sasl.mechanism": "PLAIN",
        "sasl.username": kafka_security["username"],
        "sasl.password": kafka_security["password"],
    }
    if listener == "SASL_SSL":
        config["ssl.ca.location"] = kafka_security["ssl_ca_location"]
    check_kafka_credentials("kafka_ok", config)  # accepted: returns

    wrong = {**config, "sasl.password": "not-" + kafka_security["password"]}
    with pytest.raises(ConfigError) as refused:
        check_kafka_credentials("kafka_bad", wrong)
    assert str(refused.value).startswith(
        f"Kafka at {config['bootstrap.servers']} refused Airflow connection 'kafka_bad' (security.protocol "
        f"{listener}, sasl.mechanism PLAIN, user 'ticdc'): {listener.lower()}://{config['bootstrap.servers']}/"
        "bootstrap: SASL authentication error: Authentication failed: Invalid username or password"
    )
    assert kafka_security["password"] not in str(refused.value)
    assert not refused.value.retryable


def test_a_certificate_the_ca_does_not_trust_is_refused(kafka_security: dict[str, str], tmp_path: Path) -> None:
    other_ca = tmp_path / "other-ca.pem"
    other_ca.write_text(Path("/etc/ssl/certs/ca-certificates.crt").read_text())
    config = {
        "bootstrap.servers": kafka_security["sasl_ssl"],
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": kafka_security["username"],
        "sasl.password": kafka_security["password"],
        "ssl.ca.location": str(other_ca),
    }
    with pytest.raises(ConfigError, match=r"refused Airflow connection 'kafka_tls'.*check the connection's ssl.ca"):
        check_kafka_credentials("kafka_tls", config)


def test_unreachable_brokers_are_left_to_the_land_stage(caplog: pytest.LogCaptureFixture) -> None:
    config = {
        "bootstrap.servers": "127.0.0.1:9",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "p4ssw0rd",
    }
    check_kafka_credentials("kafka_down", config, timeout_s=2)
    assert "Kafka connection 'kafka_down': no answer from 127.0.0.1:9 within 2s" in caplog.text


def test_settings_librdkafka_refuses_are_a_config_error() -> None:
    config = {"bootstrap.servers": "127.0.0.1:9", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
    with pytest.raises(ConfigError) as refused:
        check_kafka_credentials("kafka_half", config, timeout_s=2)
    assert str(refused.value) == (
        "Airflow connection 'kafka_half': its Kafka settings are not valid librdkafka settings "
        '(KafkaError{code=_INVALID_ARG,val=-186,str="Failed to create admin client: sasl.username and '
        "sasl.password must be set\"}); fix the connection's login, password and extra"
    )
