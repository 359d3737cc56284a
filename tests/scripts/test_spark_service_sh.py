"""include/scripts/spark_service.sh: usage, status of a service that never ran, a full start/stop of a
real service, and the connection include/scripts/airflow.sh env exports from its token file."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
from pathlib import Path

import pytest

from ticdc_lake.spark_service_client import SparkServiceClient

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "include" / "scripts" / "spark_service.sh"
AIRFLOW_SCRIPT = ROOT / "include" / "scripts" / "airflow.sh"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(script: Path, command: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TICDC_LAKE_"))}
    environment.update({"TICDC_LAKE_HOME": str(home), **env})
    return subprocess.run(
        [str(script), command], env=environment, capture_output=True, text=True, timeout=240, check=False
    )


def test_usage(tmp_path: Path) -> None:
    result = _run(SCRIPT, "reload", tmp_path)
    assert (result.returncode, result.stderr) == (2, f"usage: {SCRIPT} start|stop|restart|status\n")


def test_a_service_that_never_ran_is_not_running(tmp_path: Path) -> None:
    assert (_run(SCRIPT, "status", tmp_path).returncode, _run(SCRIPT, "status", tmp_path).stdout) == (
        1,
        "spark_service.sh: not running\n",
    )
    assert (_run(SCRIPT, "stop", tmp_path).returncode, _run(SCRIPT, "stop", tmp_path).stdout) == (
        0,
        "spark_service.sh: not running\n",
    )


def test_airflow_env_exports_the_connection_once_the_token_file_exists(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "kafka").mkdir(parents=True)
    (home / "kafka" / "bootstrap").write_text("127.0.0.1:19999\n")

    def exports() -> dict[str, str]:
        done = _run(AIRFLOW_SCRIPT, "env", home, TICDC_LAKE_SPARK_SERVICE_PORT="18123")
        assert done.returncode == 0, done.stderr
        return dict(shlex.split(line)[1].split("=", 1) for line in done.stdout.splitlines())

    assert "AIRFLOW_CONN_TICDC_SPARK_SERVICE" not in exports()
    (home / "spark-service.token").write_text("t0ken-'quoted'\n")
    connection = json.loads(exports()["AIRFLOW_CONN_TICDC_SPARK_SERVICE"])
    assert connection == {"conn_type": "generic", "host": "127.0.0.1", "port": 18123, "password": "t0ken-'quoted'"}
    (home / "spark-service").mkdir()
    (home / "spark-service" / "port").write_text("18124\n")  # the port the running service was started on
    assert json.loads(exports()["AIRFLOW_CONN_TICDC_SPARK_SERVICE"])["port"] == 18124


@pytest.mark.spark
def test_start_status_stop_of_a_real_service(tmp_path: Path) -> None:
    port = str(_free_port())
    started = _run(SCRIPT, "start", tmp_path, TICDC_LAKE_SPARK_SERVICE_PORT=port)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        pid = (tmp_path / "spark-service" / "service.pid").read_text().strip()
        assert started.stdout.splitlines()[-1] == (
            f"spark_service.sh: ready on 127.0.0.1:{port} (pid {pid}); token in {tmp_path}/spark-service.token; "
            "pipelines use it with spark_service: ticdc_spark_service"
        )
        token_file = tmp_path / "spark-service.token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        health = SparkServiceClient("127.0.0.1", int(port), token_file.read_text().strip()).health()
        assert (health["runs"], health["busy"], health["master"]) == (0, None, "local[*]")
        status = _run(SCRIPT, "status", tmp_path, TICDC_LAKE_SPARK_SERVICE_PORT=port)
        assert (status.returncode, status.stdout) == (
            0,
            f"spark_service.sh: running (pid {pid}) and healthy on 127.0.0.1:{port}\n",
        )
        again = _run(SCRIPT, "start", tmp_path, TICDC_LAKE_SPARK_SERVICE_PORT=port)
        assert (again.returncode, again.stdout) == (
            0,
            f"spark_service.sh: already running (pid {pid}) on 127.0.0.1:{port}\n",
        )
    finally:
        stopped = _run(SCRIPT, "stop", tmp_path, TICDC_LAKE_SPARK_SERVICE_PORT=port)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert stopped.stdout.splitlines()[-1] == "spark_service.sh: stopped"
    assert _run(SCRIPT, "status", tmp_path).returncode == 1
    assert "service: stopped after 0 run(s)" in (tmp_path / "spark-service" / "service.log").read_text()
