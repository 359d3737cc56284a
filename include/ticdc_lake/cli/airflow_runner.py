"""Run a pipeline DAG in-process with Airflow's own test runner (``airflow dags test``).

Used by the end-to-end tests; its environment (:meth:`AirflowRunner.env`) is also the base of the
local Airflow that ``include/scripts/airflow.sh`` starts for the UI and the demo
(:mod:`ticdc_lake.cli.airflow_service`). It only starts the ``airflow`` command line of the Python
environment it runs in; nothing here imports Airflow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ticdc_lake.errors import ServiceError

PROJECT_ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True, slots=True)
class DagRunResult:
    dag_id: str
    logical_date: datetime
    returncode: int
    output: str
    seconds: float

    @property
    def succeeded(self) -> bool:
        return self.returncode == 0


class AirflowRunner:
    """An isolated Airflow home wired to this project's dags/ and plugins/."""

    def __init__(
        self,
        home: Path,
        config_path: Path,
        kafka_bootstrap: str,
        spark_master: str = "local[2]",
        schema_registry_url: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.home = home
        self.config_path = config_path
        self.kafka_bootstrap = kafka_bootstrap
        self.spark_master = spark_master
        self.schema_registry_url = schema_registry_url
        #: Added last to every ``airflow`` command's environment (e.g. ``AIRFLOW__METRICS__*``).
        self.extra_env = dict(extra_env or {})

    def env(self) -> dict[str, str]:
        bin_dir = str(Path(sys.executable).parent)
        env = dict(os.environ)
        env.update(
            {
                "AIRFLOW_HOME": str(self.home),
                "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_ROOT / "dags"),
                "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT_ROOT / "plugins"),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
                "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}",
                "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(
                    {"conn_type": "kafka", "extra": {"bootstrap.servers": self.kafka_bootstrap}}
                ),
                "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": self.spark_master}),
                "TICDC_LAKE_CONFIG": str(self.config_path),
                "PATH": bin_dir + os.pathsep + env.get("PATH", ""),
                "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT / "plugins"), env.get("PYTHONPATH")])),
            }
        )
        if self.schema_registry_url:
            env["AIRFLOW_CONN_SCHEMA_REGISTRY_DEFAULT"] = json.dumps(
                {"conn_type": "http", "host": self.schema_registry_url}
            )
        env.update(self.extra_env)
        return env

    def _airflow(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        airflow = Path(sys.executable).parent / "airflow"
        if not airflow.exists():
            raise ServiceError(f"the airflow command is missing from {airflow.parent}; run `make install`")
        return subprocess.run(
            [str(airflow), *args], env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
        )

    #: A migrated metadata database to copy instead of migrating again (``airflow db migrate`` costs
    #: 10-20 s of CPU): set by the test suite, once per process; None migrates every home.
    template_db: Path | None = None

    def migrate(self) -> None:
        """Create or upgrade the metadata database (SQLite) once."""
        marker = self.home / ".migrated"
        if marker.exists():
            return
        self.home.mkdir(parents=True, exist_ok=True)
        template = type(self).template_db
        if template is not None and template.exists():
            shutil.copyfile(template, self.home / "airflow.db")
            marker.write_text("ok (copied)\n")
            return
        done = self._airflow("db", "migrate")
        if done.returncode != 0:
            raise ServiceError(
                f"`airflow db migrate` failed in {self.home}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        if template is not None:
            template.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.home / "airflow.db", template)
        marker.write_text("ok\n")

    def test_dag(self, dag_id: str, logical_date: datetime, conf: dict[str, Any] | None = None) -> DagRunResult:
        """``airflow dags test DAG DATE [--conf JSON]``: every task in this process, no scheduler needed.

        ``conf`` is the run's configuration; it overrides the DAG's params (e.g. ``{"rebuild": ["db.t"]}``).
        """
        self.migrate()
        started = time.monotonic()
        extra = ["--conf", json.dumps(conf)] if conf else []
        done = self._airflow("dags", "test", dag_id, logical_date.isoformat(), *extra)
        output = done.stdout + "\n" + done.stderr
        return DagRunResult(dag_id, logical_date, done.returncode, output, time.monotonic() - started)
