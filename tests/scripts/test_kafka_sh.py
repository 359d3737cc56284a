"""include/scripts/kafka.sh: error messages, and a full start/stop of a second broker."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "include" / "scripts" / "kafka.sh"
JARS = Path(os.environ.get("TICDC_LAKE_JARS") or ROOT / ".jars")


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


def _run(command: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "TICDC_LAKE_HOME": str(home), **env}
    return subprocess.run(
        [str(SCRIPT), command], env=environment, capture_output=True, text=True, timeout=180, check=False
    )


def test_usage(tmp_path: Path) -> None:
    result = _run("restart", tmp_path)
    assert (result.returncode, result.stderr) == (2, f"usage: {SCRIPT} start|stop|status\n")


def test_missing_jars_say_make_jars(tmp_path: Path) -> None:
    result = _run("start", tmp_path, TICDC_LAKE_JARS=str(tmp_path / "nothing"), KAFKA_PORT=str(_free_port()))
    assert result.returncode == 1
    assert result.stderr == (
        f"kafka.sh: error: Kafka jars not found in {tmp_path}/nothing/kafka: run make jars (or set TICDC_LAKE_JARS)\n"
    )


def test_bad_port_number(tmp_path: Path) -> None:
    result = _run("start", tmp_path, KAFKA_PORT="90000")
    assert (result.returncode, result.stderr) == (
        1,
        "kafka.sh: error: KAFKA_PORT=90000 is not a TCP port number (1-65535)\n",
    )


@pytest.mark.skipif(not (JARS / "kafka").is_dir(), reason="Kafka jars not fetched (make jars)")
def test_port_taken_names_the_port_and_the_way_out(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        result = _run(
            "start",
            tmp_path,
            KAFKA_PORT=str(port),
            KAFKA_CONTROLLER_PORT=str(_free_port()),
            KAFKA_SASL_PORT=str(_free_port()),
            KAFKA_SSL_PORT=str(_free_port()),
        )
    assert result.returncode == 1
    assert result.stderr.startswith(f"kafka.sh: error: port {port} on 127.0.0.1 is already taken by another process")
    assert f"e.g. KAFKA_PORT={port + 100} include/scripts/kafka.sh start" in result.stderr
    assert not (tmp_path / "kafka" / "broker.pid").exists()


def test_stop_and_status_when_not_running(tmp_path: Path) -> None:
    stopped = _run("stop", tmp_path)
    assert (stopped.returncode, stopped.stdout) == (0, "kafka.sh: not running\n")
    status = _run("status", tmp_path)
    assert (status.returncode, status.stdout) == (1, "kafka.sh: not running\n")


@pytest.fixture
def second_broker(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    if not (JARS / "kafka").is_dir() or shutil.which("java") is None:
        pytest.skip("needs java and the Kafka jars (make jars)")
    # Every listener on its own free port: the shared broker of the test run holds the defaults.
    env = {
        name: str(_free_port()) for name in ("KAFKA_PORT", "KAFKA_CONTROLLER_PORT", "KAFKA_SASL_PORT", "KAFKA_SSL_PORT")
    }
    yield tmp_path, env
    _run("stop", tmp_path, **env)


@pytest.mark.kafka
def test_start_is_idempotent_and_stop_is_graceful(second_broker: tuple[Path, dict[str, str]]) -> None:
    home, env = second_broker
    port = env["KAFKA_PORT"]
    ready = (
        f"Kafka broker ready on 127.0.0.1:{port} (SASL_PLAINTEXT 127.0.0.1:{env['KAFKA_SASL_PORT']}, "
        f"SASL_SSL 127.0.0.1:{env['KAFKA_SSL_PORT']})\n"
    )
    started = _run("start", home, **env)
    assert started.returncode == 0, started.stderr
    assert started.stdout.endswith(ready)
    assert "formatting broker storage" in started.stdout
    assert (home / "kafka" / "bootstrap").read_text() == f"127.0.0.1:{port}\n"
    assert "Kafka Server started" in (home / "kafka" / "broker.log").read_text()
    pid = int((home / "kafka" / "broker.pid").read_text())

    again = _run("start", home, **env)
    assert (again.returncode, again.stdout) == (
        0,
        f"kafka.sh: already running (pid {pid}) and healthy\nKafka broker ready on 127.0.0.1:{port}\n",
    )
    assert _run("status", home, **env).returncode == 0

    other_port = _run("start", home, **{**env, "KAFKA_PORT": str(_free_port())})
    assert other_port.returncode == 1
    assert f"is already running on 127.0.0.1:{port} (pid {pid})" in other_port.stderr

    stopped = _run("stop", home, **env)
    assert (stopped.returncode, stopped.stdout) == (
        0,
        f"kafka.sh: stopping the Kafka broker (pid {pid})\nkafka.sh: stopped\n",
    )
    assert not (home / "kafka" / "bootstrap").exists()
    assert not _alive(pid)

    restarted = _run("start", home, **env)  # storage is formatted once
    assert restarted.returncode == 0, restarted.stderr
    assert "formatting broker storage" not in restarted.stdout
