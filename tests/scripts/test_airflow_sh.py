"""include/scripts/airflow.sh env: a shell prepared with its export lines runs the `airflow` command
against the local Airflow (its home, database, this checkout's DAGs and the local connections), so
the README's `airflow dags test` and `airflow backfill create` lines work as printed."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "include" / "scripts" / "airflow.sh"


def _home(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / "kafka").mkdir(parents=True)
    (home / "kafka" / "bootstrap").write_text("127.0.0.1:19999\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TICDC_LAKE_"))}
    env["TICDC_LAKE_HOME"] = str(home)
    env["TICDC_LAKE_AIRFLOW_PORT"] = "18123"
    return env


def test_env_prints_the_local_airflows_settings(tmp_path: Path) -> None:
    env = _home(tmp_path)
    done = subprocess.run(["bash", str(SCRIPT), "env"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    exports = dict(shlex.split(line)[1].split("=", 1) for line in done.stdout.splitlines())
    assert exports["AIRFLOW_HOME"] == f"{tmp_path}/home/airflow"
    assert exports["AIRFLOW__CORE__DAGS_FOLDER"] == str(ROOT / "dags")
    assert exports["AIRFLOW__API__PORT"] == "18123"
    assert json.loads(exports["AIRFLOW_CONN_KAFKA_DEFAULT"])["extra"] == {"bootstrap.servers": "127.0.0.1:19999"}


def test_the_airflow_command_of_a_prepared_shell_uses_the_local_airflow(tmp_path: Path) -> None:
    env = _home(tmp_path)
    env["PATH"] = "/usr/bin:/bin"  # no .venv/bin: the exports bring it
    done = subprocess.run(
        ["bash", "-c", f'eval "$(bash {SCRIPT} env)" && airflow config get-value core dags_folder'],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str(ROOT / "dags")
