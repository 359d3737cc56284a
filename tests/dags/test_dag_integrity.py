"""The DAG folder as Airflow's DagBag sees it, with the demo config and with broken ones."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
DEMO_CONFIG = ROOT / "include" / "pipelines.yaml"
TASK_ORDER = ["land", "transform"]


def _bag(monkeypatch: pytest.MonkeyPatch, config: Path) -> DagBag:
    monkeypatch.setenv("TICDC_LAKE_CONFIG", str(config))
    return DagBag(dag_folder=str(DAGS))


def _import_error_text(bag: DagBag) -> str:
    """The pipelines DAG file's import error (the maintenance DAG file reads the same config and fails too)."""
    assert {Path(f).name for f in bag.import_errors} == {"ticdc_pipelines.py", "ticdc_maintenance.py"}, (
        bag.import_errors
    )
    return next(text for file, text in bag.import_errors.items() if file.endswith("ticdc_pipelines.py"))


def test_demo_config_imports_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    bag = _bag(monkeypatch, DEMO_CONFIG)
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == ["ticdc_demo", "ticdc_maintenance_lake"]


def test_every_dag_is_operable(monkeypatch: pytest.MonkeyPatch) -> None:
    bag = _bag(monkeypatch, DEMO_CONFIG)
    pipelines = {dag_id: dag for dag_id, dag in bag.dags.items() if "maintenance" not in dag.tags}
    assert pipelines
    for dag_id, dag in pipelines.items():
        assert {"ticdc", "simple-json", "demo"} <= set(dag.tags), dag_id
        assert dag.max_active_runs == 1, dag_id
        assert dag.doc_md
        assert f"airflow backfill create --dag-id {dag_id}" in dag.doc_md
        assert [t.task_id for t in dag.topological_sort()] == TASK_ORDER
        for upstream, downstream in itertools.pairwise(TASK_ORDER):
            assert dag.get_task(upstream).downstream_task_ids == {downstream}
        for task in dag.tasks:
            assert (task.retries or 0) >= 1, task.task_id
            assert task.owner, task.task_id
            assert task.owner != "airflow", task.task_id
            assert task.doc_md, task.task_id


def test_unknown_key_is_an_import_error_naming_file_pipeline_and_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        DEMO_CONFIG.read_text(encoding="utf-8").replace("    catchup: false\n", "    catchup: false\n    retires: 3\n"),
        encoding="utf-8",
    )
    text = _import_error_text(_bag(monkeypatch, broken))
    assert str(broken) in text
    assert "pipeline 'demo'" in text
    assert "key 'retires': unknown key" in text


def test_missing_config_file_is_an_import_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    text = _import_error_text(_bag(monkeypatch, tmp_path / "absent.yaml"))
    assert "absent.yaml: pipeline configuration file not found" in text


def test_dags_load_before_the_jars_are_fetched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TICDC_LAKE_JARS", str(tmp_path / "no-jars-here"))
    bag = _bag(monkeypatch, DEMO_CONFIG)
    assert bag.import_errors == {}
    assert "ticdc_demo" in bag.dag_ids


def test_parsing_imports_neither_kafka_nor_spark_clients(tmp_path: Path) -> None:
    """The DAG processor parses this file every few seconds: it must stay import-light."""
    probe = (
        "import json, sys\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        f"bag = DagBag(dag_folder={str(DAGS)!r})\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'confluent_kafka', 'pyspark', 'fastavro', 'py4j'})\n"
        "print(json.dumps({'dags': bag.dag_ids, 'errors': bag.import_errors, 'heavy': heavy}))\n"
    )
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "PYTHONPATH": str(ROOT / "plugins"),
        "TICDC_LAKE_CONFIG": str(DEMO_CONFIG),
    }
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["dags"] = sorted(result["dags"])
    assert result == {"dags": ["ticdc_demo", "ticdc_maintenance_lake"], "errors": {}, "heavy": []}
