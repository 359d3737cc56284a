"""The Spark run service's client and request format (no service: what a caller sees when there is none)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ticdc_lake import spark_service_client as client_module
from ticdc_lake.errors import ConfigError, ServiceError
from ticdc_lake.spark_service_client import RunRequest, SparkServiceClient, code_version


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_request_round_trips_through_its_json() -> None:
    request = RunRequest("/etc/lake.yaml", "orders", "manual__1", "transform", '["shop.orders"]', "abc")
    assert RunRequest.from_json(request.to_json()) == request


EXPECTED = "expected a JSON object with the strings config, pipeline, run_id and optionally stage, rebuild, version"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[1, 2]", f"run request: got a JSON list; {EXPECTED}"),
        (b'{"config": "c", "pipeline": "p", "stage": "x"}', f"run request: missing run_id; {EXPECTED}"),
        (
            b'{"config": "c", "pipeline": "p", "run_id": 7, "tables": []}',
            f"run request: unknown tables; not a string: run_id; {EXPECTED}",
        ),
        (b"not json", f"run request: not JSON (Expecting value: line 1 column 1 (char 0)); {EXPECTED}"),
    ],
)
def test_a_malformed_request_is_refused_with_what_is_wrong(body: bytes, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        RunRequest.from_json(body)
    assert str(raised.value) == message


def test_the_code_version_changes_with_any_library_source_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "protocols").mkdir()
    (tmp_path / "protocols" / "debezium.py").write_text("A = 1\n")
    (tmp_path / "config.py").write_text("B = 2\n")
    (tmp_path / "notes.txt").write_text("not source")
    monkeypatch.setattr(client_module, "_PACKAGE", tmp_path)
    first = code_version()
    assert len(first) == 16
    (tmp_path / "notes.txt").write_text("still not source")
    assert code_version() == first
    (tmp_path / "protocols" / "debezium.py").write_text("A = 2\n")
    changed = code_version()
    assert changed != first
    (tmp_path / "protocols" / "debezium.py").rename(tmp_path / "protocols" / "canal.py")
    assert code_version() not in (first, changed)


def test_no_service_listening_is_a_retryable_error_that_says_how_to_start_one() -> None:
    port = _free_port()
    client = SparkServiceClient("127.0.0.1", port, "token")
    with pytest.raises(ServiceError) as raised:
        client.health()
    assert raised.value.retryable
    text = str(raised.value)
    assert text.startswith(f"cannot reach the Spark run service at 127.0.0.1:{port} (")
    assert text.endswith(
        "Start it (include/scripts/spark_service.sh start, or the spark-service service of docker-compose.yml), or "
        "remove the pipeline's spark_service setting to run spark-submit per run (docs/spark-service.md)"
    )
