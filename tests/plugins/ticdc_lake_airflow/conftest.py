"""An isolated Airflow installation for tests that run DAGs through Airflow's own test runner.

Everything runs in subprocesses (``airflow db migrate``, ``airflow dags test``) with their own
AIRFLOW_HOME under tmp, so the test process's Airflow configuration is never touched. The
virtualenv's bin folder is removed from PATH: the tasks must find ``spark-submit`` on their own.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from airflow_sandbox import ROOT, VENV_BIN, AirflowSandbox


@pytest.fixture(scope="session")
def airflow_sandbox(tmp_path_factory: pytest.TempPathFactory) -> AirflowSandbox:
    base = tmp_path_factory.mktemp("airflow")
    home, dags = base / "home", base / "dags"
    home.mkdir()
    dags.mkdir()
    path = [p for p in os.environ.get("PATH", os.defpath).split(os.pathsep) if p and Path(p) != VENV_BIN]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TICDC_LAKE", "PYSPARK", "VIRTUAL_ENV"))}
    env.update(
        {
            "PATH": os.pathsep.join(path),
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "TICDC_LAKE_HOME": str(base / "lake"),
        }
    )
    sandbox = AirflowSandbox(home=home, dags=dags, env=env)
    started = time.monotonic()
    migrated = sandbox.airflow("db", "migrate")
    assert migrated.returncode == 0, migrated.stdout[-3000:] + migrated.stderr[-3000:]
    print(f"airflow db migrate: {time.monotonic() - started:.1f} s")
    return sandbox
