"""The UI path end to end through Airflow's REST API, with Airflow started the documented way.

`include/scripts/airflow.sh start` (what `make airflow-ui` and `make demo` run) starts the API
server and the scheduler; through the REST API (a JWT from the simple auth manager's login) the
pipeline's DAG is listed, a run is triggered and awaited, and the transform task's log, the one
the UI's Logs tab shows, carries the per-table run summary that matches the data produced.
(`make test-ui` walks the same path in a browser: browser_ui.py.)
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import yaml
from airflow_ui_support import expected_summary_rows, produce_workload, run_to_success, started_airflow, summary_rows
from e2e_support import Pipeline

from ticdc_lake import tso
from ticdc_lake.cli.airflow_service import AirflowApi

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]


def test_a_run_triggered_through_the_rest_api_has_its_summary_in_the_transform_log(
    e2e_pipeline: Callable[..., Pipeline], kafka_bootstrap: str
) -> None:
    pipeline = e2e_pipeline()
    document = yaml.safe_load(pipeline.config_path.read_text())
    document["catalogs"]["lake"]["maintenance"] = {"pool": "ticdc_maintenance"}  # created by airflow.sh
    pipeline.config_path.write_text(yaml.safe_dump(document, sort_keys=False))
    sim, watermark = produce_workload(pipeline, kafka_bootstrap)
    with started_airflow(pipeline, kafka_bootstrap) as login:
        api = AirflowApi(login)
        assert sorted(api.dag_ids()) == sorted([pipeline.dag_id, "ticdc_maintenance_lake"])
        pool = api.pool("ticdc_maintenance")
        assert (pool["slots"], pool["description"]) == (1, "TiCDC lake table maintenance")
        run_id = run_to_success(api, pipeline)
        log = api.task_log(pipeline.dag_id, run_id, "transform")
    pipeline.assert_equals_model(sim, watermark)

    expected = expected_summary_rows(pipeline, sim, watermark)
    assert summary_rows(log) == expected, log[-5000:]
    lines = log.splitlines()
    assert f"run summary: pipeline {pipeline.id!r} run {run_id!r}: decode OK, schema_history OK, apply OK" in lines
    total = sum(int(cells[2]) for cells in expected.values())
    assert f"  {len(expected)} table(s): {len(expected)} changed, +{total} ~0 -0 rows" in lines
    lag_line = next(line for line in lines if line.startswith(f"  watermark {watermark} "))
    lag = re.fullmatch(rf"  watermark {watermark} \((\S+)\), (-?\d+) s behind now", lag_line)
    assert lag is not None, lag_line
    assert lag.group(1) == tso.to_datetime(watermark).isoformat()
    assert 0 <= int(lag.group(2)) < 1800  # the upstream clock is real time: minutes, not years
