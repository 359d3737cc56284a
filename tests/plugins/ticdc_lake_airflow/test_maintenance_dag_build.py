"""The maintenance DAG of a catalog: its schedules, tasks, pool, and the DAG file under DagBag."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from airflow.dag_processing.dagbag import DagBag

from ticdc_lake.config import load_config
from ticdc_lake.maintenance_config import MaintenanceConfig, MaintenanceSchedules
from ticdc_lake_airflow.maintenance_dag import (
    MaintenanceSparkSubmitOperator,
    build_maintenance_dags,
    maintenance_timetable,
)

ROOT = Path(__file__).resolve().parents[3]
DEMO_CONFIG = ROOT / "include" / "pipelines.yaml"


def test_one_dag_per_catalog_with_three_jobs_in_order() -> None:
    dags = build_maintenance_dags(DEMO_CONFIG)
    assert list(dags) == ["ticdc_maintenance_lake"]
    dag = dags["ticdc_maintenance_lake"]
    assert [t.task_id for t in dag.topological_sort()] == ["compact", "expire", "orphans"]  # type: ignore[no-untyped-call]
    assert dag.get_task("compact").downstream_task_ids == {"expire"}
    assert dag.get_task("expire").downstream_task_ids == {"orphans"}
    assert dag.max_active_runs == 1
    assert not dag.catchup
    assert {"ticdc", "maintenance", "lake"} <= set(dag.tags)
    assert dag.doc_md
    assert "apply` lock" in dag.doc_md
    # No pool to create first: a pool that does not exist leaves every run waiting forever.
    assert "Pool: Airflow's `default_pool`" in dag.doc_md
    for task in dag.tasks:
        assert isinstance(task, MaintenanceSparkSubmitOperator)
        assert task.pool == "default_pool"
        assert (task.retries or 0) >= 1
        assert task.doc_md
        assert task.owner == "data-engineering"
        assert task.application == str(ROOT / "spark_jobs" / "maintenance.py")
        assert task.application_args == [
            "--config",
            str(DEMO_CONFIG),
            "--catalog",
            "lake",
            "--job",
            task.task_id,
            "--run-id",
            "{{ run_id }}",
        ]
        assert task.jars is None
        assert task.conf is None
    # Later jobs run when the earlier ones were skipped (not due), never after a failure.
    assert [dag.get_task(j).trigger_rule for j in ("compact", "expire", "orphans")] == [
        "all_success",
        "none_failed",
        "none_failed",
    ]


def test_the_timetable_ticks_on_each_jobs_schedule(tmp_path: Path) -> None:
    document = yaml.safe_load(DEMO_CONFIG.read_text())
    document["catalogs"]["lake"]["maintenance"] = {
        "schedules": {"compact": "0 */6 * * *", "expire": "@daily", "orphans": None},
        "pool": "lake_upkeep",
    }
    document["catalogs"]["quiet"] = {**document["catalogs"]["lake"], "maintenance": {"enabled": False}}
    path = tmp_path / "pipelines.yaml"
    path.write_text(yaml.safe_dump(document))
    config = load_config(path)
    timetable = maintenance_timetable(config.catalogs["lake"])
    assert timetable is not None
    assert [t.expression for t in timetable.timetables] == ["0 */6 * * *", "0 0 * * *"]
    dags = build_maintenance_dags(path)
    assert list(dags) == ["ticdc_maintenance_lake"]
    assert {t.pool for t in dags["ticdc_maintenance_lake"].tasks} == {"lake_upkeep"}
    assert "Pool `lake_upkeep`: it must exist, else the tasks never run (`airflow pools set lake_upkeep 1" in (
        dags["ticdc_maintenance_lake"].doc_md or ""
    )
    silent = MaintenanceConfig(schedules=MaintenanceSchedules(compact=None, expire=None, orphans=None))
    assert maintenance_timetable(config.catalogs["lake"].model_copy(update={"maintenance": silent})) is None


def test_dag_file_loads_under_dagbag(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TICDC_LAKE_CONFIG", str(DEMO_CONFIG))
    monkeypatch.setenv("TICDC_LAKE_JARS", str(tmp_path / "no-jars-yet"))
    bag = DagBag(dag_folder=str(ROOT / "dags" / "ticdc_maintenance.py"))
    assert bag.import_errors == {}
    assert bag.dag_ids == ["ticdc_maintenance_lake"]
    started = datetime(2026, 1, 1, tzinfo=UTC)
    assert bag.dags["ticdc_maintenance_lake"].start_date == started
