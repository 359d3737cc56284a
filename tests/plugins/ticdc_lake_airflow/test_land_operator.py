"""LandKafkaBatchOperator: errors a retry cannot fix fail the task at once."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from textwrap import dedent
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk.exceptions import AirflowFailException

from ticdc_lake.errors import ConfigError
from ticdc_lake_airflow.land_operator import LandKafkaBatchOperator

if TYPE_CHECKING:
    from airflow_sandbox import AirflowSandbox


def _config(tmp_path: Path, connection_id: str) -> Path:
    path = tmp_path / "pipelines.yaml"
    path.write_text(
        dedent(f"""\
            catalogs:
              lake: {{uri: "jdbc:sqlite:{tmp_path}/c.db", warehouse: "file://{tmp_path}/w"}}
            pipelines:
              - id: demo
                protocol: simple-json
                kafka: {{connection_id: {connection_id}, topics: [ticdc-demo]}}
                landing_uri: file://{tmp_path}/landing
                catalog: lake
        """),
        encoding="utf-8",
    )
    return path


def test_missing_connection_fails_without_retry(tmp_path: Path) -> None:
    operator = LandKafkaBatchOperator(
        task_id="land", config_path=str(_config(tmp_path, "kafka_undefined")), pipeline_id="demo"
    )
    with pytest.raises(AirflowFailException, match=r"'kafka_undefined'.*is not defined") as raised:
        operator.execute({})
    assert isinstance(raised.value.__cause__, ConfigError)


def test_unknown_pipeline_fails_without_retry(tmp_path: Path) -> None:
    operator = LandKafkaBatchOperator(
        task_id="land", config_path=str(_config(tmp_path, "kafka_default")), pipeline_id="other"
    )
    with pytest.raises(AirflowFailException, match="no pipeline 'other' \\(configured: demo\\)"):
        operator.execute({})


PROBE_DAG = """\
from datetime import UTC, datetime

from airflow.sdk import DAG

from ticdc_lake_airflow.land_operator import LandKafkaBatchOperator

with DAG("land_fail_fast", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=UTC), default_args={{"retries": 2}}):
    LandKafkaBatchOperator(task_id="land", config_path={config!r}, pipeline_id="demo")
"""


@pytest.mark.airflow
def test_non_retryable_error_fails_the_run_at_the_first_try(airflow_sandbox: AirflowSandbox, tmp_path: Path) -> None:
    """Through Airflow's task runner: retries=2, yet the task ends `failed`, not `up_for_retry`."""
    config = _config(tmp_path, "kafka_undefined")
    (airflow_sandbox.dags / "land_fail_fast.py").write_text(PROBE_DAG.format(config=str(config)), encoding="utf-8")

    result = airflow_sandbox.dags_test("land_fail_fast")

    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "AirflowFailException" in output
    assert "Airflow connection 'kafka_undefined'" in output
    assert airflow_sandbox.task_states("land_fail_fast") == {"land": "failed"}


def _context(run_type: str, start: datetime, end: datetime) -> Any:
    return {"dag_run": SimpleNamespace(run_type=run_type), "data_interval_start": start, "data_interval_end": end}


def test_scheduled_and_backfill_runs_land_their_interval_manual_runs_land_everything() -> None:
    from ticdc_lake_airflow.land_operator import landing_interval

    start, end = datetime(2026, 11, 20, 10, tzinfo=UTC), datetime(2026, 11, 20, 11, tzinfo=UTC)
    assert landing_interval(_context("scheduled", start, end)) == (start, end)
    assert landing_interval(_context("backfill", start, end)) == (start, end)
    assert landing_interval(_context("manual", start, end)) is None
    assert landing_interval(_context("asset_triggered", start, end)) is None
    assert landing_interval({"dag_run": SimpleNamespace(run_type="scheduled")}) is None
