"""include/scripts/registry.sh and the real schema registry it runs (Apicurio Registry, Confluent API).

The script tests start a second registry on free ports in a temporary home; the API tests talk to
the registry `make test` started (fixture ``schema_registry_url``), through plain HTTP and through
confluent-kafka's own SchemaRegistryClient and Avro serializer.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "include" / "scripts" / "registry.sh"
JARS = Path(os.environ.get("TICDC_LAKE_JARS") or ROOT / ".jars")
HAVE_JARS = any((JARS / "registry").glob("apicurio-registry-app-*-runner.jar"))
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the registry is on loopback


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is not running


def _wait_until_gone(pid: int, port: int) -> None:
    """Until a killed process has released its port (its threads outlive its main thread a little)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if not _alive(pid) and probe.connect_ex(("127.0.0.1", port)) != 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"process {pid} still holds port {port} 10 s after SIGKILL")


def _run(command: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "TICDC_LAKE_HOME": str(home), **env}
    return subprocess.run(
        [str(SCRIPT), command], env=environment, capture_output=True, text=True, timeout=180, check=False
    )


def _http(method: str, url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": CONTENT_TYPE})
    try:
        with _NO_PROXY.open(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _avro_schema(name: str) -> str:
    return json.dumps(
        {
            "type": "record",
            "name": name,
            "namespace": "ticdc_lake.test",
            "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}],
        }
    )


def _subject(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}-value"  # storage survives restarts: fresh subjects per run


# --- the script -------------------------------------------------------------------------------


def test_usage(tmp_path: Path) -> None:
    result = _run("restart", tmp_path)
    assert (result.returncode, result.stderr) == (2, f"usage: {SCRIPT} start|stop|status\n")


def test_missing_jars_say_make_install(tmp_path: Path) -> None:
    result = _run(
        "start", tmp_path, TICDC_LAKE_JARS=str(tmp_path / "nothing"), TICDC_LAKE_REGISTRY_PORT=str(_free_port())
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"registry.sh: error: schema registry jars not found in {tmp_path}/nothing/registry:"
        " run make install (or set TICDC_LAKE_JARS)\n"
    )


def test_bad_port_number(tmp_path: Path) -> None:
    result = _run("start", tmp_path, TICDC_LAKE_REGISTRY_PORT="90000")
    assert (result.returncode, result.stderr) == (
        1,
        "registry.sh: error: TICDC_LAKE_REGISTRY_PORT=90000 is not a TCP port number (1-65535)\n",
    )


@pytest.mark.skipif(not HAVE_JARS, reason="schema registry jars not fetched (make install)")
def test_port_taken_names_the_port_and_the_way_out(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        result = _run("start", tmp_path, TICDC_LAKE_REGISTRY_PORT=str(port))
    assert result.returncode == 1
    assert result.stderr.startswith(f"registry.sh: error: port {port} on 127.0.0.1 is already taken by another process")
    assert f"e.g. TICDC_LAKE_REGISTRY_PORT={port + 100} include/scripts/registry.sh start" in result.stderr
    assert not (tmp_path / "registry" / "registry.pid").exists()


def test_stop_and_status_when_not_running(tmp_path: Path) -> None:
    stopped = _run("stop", tmp_path)
    assert (stopped.returncode, stopped.stdout) == (0, "registry.sh: not running\n")
    status = _run("status", tmp_path)
    assert (status.returncode, status.stdout) == (1, "registry.sh: not running\n")


@pytest.fixture
def second_registry(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    if not HAVE_JARS or shutil.which("java") is None:
        pytest.skip("needs java and the schema registry jars (make install)")
    env = {"TICDC_LAKE_REGISTRY_PORT": str(_free_port())}
    yield tmp_path, env
    _run("stop", tmp_path, **env)


def test_start_is_idempotent_stop_is_graceful_and_schemas_survive(
    second_registry: tuple[Path, dict[str, str]],
) -> None:
    home, env = second_registry
    url = f"http://127.0.0.1:{env['TICDC_LAKE_REGISTRY_PORT']}/apis/ccompat/v7"
    started = _run("start", home, **env)
    assert started.returncode == 0, started.stderr
    assert started.stdout.endswith(f"Schema registry ready on {url}\n")
    assert (home / "registry" / "url").read_text() == f"{url}\n"
    pid = int((home / "registry" / "registry.pid").read_text())
    status, registered = _http("POST", f"{url}/subjects/kept-value/versions", {"schema": _avro_schema("Kept")})
    assert status == 200

    again = _run("start", home, **env)
    assert (again.returncode, again.stdout) == (
        0,
        f"registry.sh: already running (pid {pid}) and healthy\nSchema registry ready on {url}\n",
    )
    status_run = _run("status", home, **env)
    assert (status_run.returncode, status_run.stdout) == (
        0,
        f"registry.sh: running (pid {pid}) and healthy on {url}\n",
    )

    other_port = _run("start", home, TICDC_LAKE_REGISTRY_PORT=str(_free_port()))
    assert other_port.returncode == 1
    assert f"already running on 127.0.0.1:{env['TICDC_LAKE_REGISTRY_PORT']} (pid {pid})" in other_port.stderr

    stopped = _run("stop", home, **env)
    assert (stopped.returncode, stopped.stdout) == (
        0,
        f"registry.sh: stopping the schema registry (pid {pid})\nregistry.sh: stopped\n",
    )
    assert not (home / "registry" / "url").exists()
    assert not _alive(pid)

    restarted = _run("start", home, **env)  # the H2 database under <home>/registry/data is kept
    assert restarted.returncode == 0, restarted.stderr
    assert _http("GET", f"{url}/schemas/ids/{registered['id']}")[0] == 200
    assert _http("GET", f"{url}/subjects")[1] == ["kept-value"]

    # A registered id is on disk when the registry answers: a killed registry must never hand the
    # same id to another schema after a restart.
    status, durable = _http("POST", f"{url}/subjects/durable-value/versions", {"schema": _avro_schema("Durable")})
    assert status == 200
    killed = int((home / "registry" / "registry.pid").read_text())
    os.kill(killed, signal.SIGKILL)
    _wait_until_gone(killed, int(env["TICDC_LAKE_REGISTRY_PORT"]))
    after_kill = _run("start", home, **env)
    assert after_kill.returncode == 0, after_kill.stderr
    status, fetched = _http("GET", f"{url}/schemas/ids/{durable['id']}")
    assert (status, json.loads(fetched["schema"])) == (200, json.loads(_avro_schema("Durable")))


# --- the running registry: the Confluent API ----------------------------------------------------


def test_status_of_the_registry_make_test_started(schema_registry_url: str) -> None:
    home = Path(os.environ.get("TICDC_LAKE_HOME") or ROOT / "run")
    recorded = home / "registry" / "url"
    if not recorded.exists() or recorded.read_text().strip() != schema_registry_url:
        pytest.skip(f"{schema_registry_url} was not started by registry.sh in {home}")
    result = _run("status", home)
    assert result.returncode == 0, result.stdout
    assert result.stdout.endswith(f"and healthy on {schema_registry_url}\n")


def test_register_fetch_by_id_and_register_again(schema_registry_url: str) -> None:
    subject, schema = _subject("orders"), _avro_schema("Orders")
    status, registered = _http("POST", f"{schema_registry_url}/subjects/{subject}/versions", {"schema": schema})
    assert status == 200, registered
    schema_id = registered["id"]
    assert isinstance(schema_id, int)

    status, fetched = _http("GET", f"{schema_registry_url}/schemas/ids/{schema_id}")
    assert status == 200
    assert json.loads(fetched["schema"]) == json.loads(schema)

    again = _http("POST", f"{schema_registry_url}/subjects/{subject}/versions", {"schema": schema})
    assert again == (200, {"id": schema_id})
    reformatted = json.dumps(json.loads(schema), indent=2)  # same schema, other text: same id, as in Confluent
    assert _http("POST", f"{schema_registry_url}/subjects/{subject}/versions", {"schema": reformatted}) == (
        200,
        {"id": schema_id},
    )
    status, latest = _http("GET", f"{schema_registry_url}/subjects/{subject}/versions/latest")
    assert (status, latest["version"], latest["id"]) == (200, 1, schema_id)


def test_unknown_id_is_404_with_confluent_error_code(schema_registry_url: str) -> None:
    status, error = _http("GET", f"{schema_registry_url}/schemas/ids/2147483647")
    assert status == 404
    assert error["error_code"] == 40403


def test_confluent_kafka_client_and_avro_wire_format(schema_registry_url: str) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": schema_registry_url})
    subject, schema = _subject("client"), _avro_schema("Client")
    schema_id = client.register_schema(subject, Schema(schema, "AVRO"))
    fetched = client.get_schema(schema_id)
    assert fetched.schema_str is not None
    assert json.loads(fetched.schema_str) == json.loads(schema)
    assert client.register_schema(subject, Schema(schema, "AVRO")) == schema_id
    assert client.get_versions(subject) == [1]  # (get_subjects lists only the first 1000 subjects)
    with pytest.raises(SchemaRegistryError) as unknown:
        client.get_schema(2147483646)
    assert (unknown.value.http_status_code, unknown.value.error_code) == (404, 40403)

    # Confluent wire format, as TiCDC's avro protocol writes it: magic 0, 4-byte big-endian id, Avro binary.
    topic = subject.removesuffix("-value")
    context = SerializationContext(topic, MessageField.VALUE)
    serialize = AvroSerializer(client, schema, conf={"auto.register.schemas": False, "use.latest.version": True})
    payload = serialize({"id": 42, "note": "hello"}, context)
    assert payload is not None
    assert payload[:5] == b"\x00" + struct.pack(">I", schema_id)
    assert AvroDeserializer(client)(payload, context) == {"id": 42, "note": "hello"}
