"""build_pipeline_dag / build_all_dags: shape, schedule semantics and documentation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from textwrap import dedent

import pytest
from airflow.sdk import DAG
from airflow.serialization.encoders import coerce_to_core_timetable

from ticdc_lake.config import load_config
from ticdc_lake.errors import ConfigError
from ticdc_lake_airflow.dag_factory import TASK_IDS, build_all_dags, build_pipeline_dag

ROOT = Path(__file__).resolve().parents[3]
DEMO_CONFIG = ROOT / "include" / "pipelines.yaml"


def _summary(dag: DAG) -> str:
    summary: str = coerce_to_core_timetable(dag.timetable).summary
    return summary


def _two_pipelines(tmp_path: Path) -> Path:
    path = tmp_path / "pipelines.yaml"
    path.write_text(
        dedent(f"""\
            catalogs:
              lake: {{uri: "jdbc:sqlite:{tmp_path}/c.db", warehouse: "file://{tmp_path}/w"}}
            pipelines:
              - id: orders
                owner: team-orders
                protocol: debezium
                kafka: {{connection_id: kafka_orders, topics: [tidb.orders, tidb.items]}}
                schedule: "*/15 * * * *"
                catchup: true
                landing_uri: file://{tmp_path}/landing
                catalog: lake
                target: {{namespace: "raw_{{database}}"}}
                tags: [orders, debezium]
              - id: manual_only
                protocol: canal-json
                kafka: {{topics: [canal]}}
                schedule: null
                landing_uri: file://{tmp_path}/landing
                catalog: lake
        """),
        encoding="utf-8",
    )
    return path


def test_one_dag_per_pipeline(tmp_path: Path) -> None:
    dags = build_all_dags(_two_pipelines(tmp_path))
    assert sorted(dags) == ["ticdc_manual_only", "ticdc_orders"]
    orders = dags["ticdc_orders"]
    assert orders.catchup is True
    assert orders.max_active_runs == 1
    assert set(orders.tags) == {"ticdc", "debezium", "orders"}
    assert [t.task_id for t in orders.topological_sort()] == list(TASK_IDS)
    land = orders.get_task("land")
    assert land.owner == "team-orders"
    assert land.retries == 2
    assert land.retry_delay == timedelta(minutes=2)
    assert land.retry_exponential_backoff == 2.0
    assert _summary(dags["ticdc_manual_only"]) == "None"


def test_schedule_is_the_pipelines(tmp_path: Path) -> None:
    dags = build_all_dags(_two_pipelines(tmp_path))
    assert _summary(dags["ticdc_orders"]) == "*/15 * * * *"
    assert dags["ticdc_orders"].start_date == datetime(2026, 1, 1, tzinfo=UTC)


def test_docs_say_what_runs_where_and_how_to_backfill(tmp_path: Path) -> None:
    config = load_config(_two_pipelines(tmp_path))
    dag = build_pipeline_dag(config.pipeline("orders"), config)
    assert dag.doc_md is not None
    for fact in (
        "`tidb.orders`, `tidb.items`",
        "`kafka_orders`",
        "`debezium`",
        f"file://{tmp_path}/landing",
        "namespace `raw_{database}`",
        "namespace `ticdc_system`",
        "airflow backfill create --dag-id ticdc_orders",
        "airflow dags test ticdc_orders",
        str(tmp_path / "pipelines.yaml"),
        # A backfill of a paused DAG stays queued without a word from Airflow; the form pre-ticks unpause.
        "Unpause\nthe DAG first (`airflow dags unpause ticdc_orders`)",
        "untick it to run once without starting the schedule. `rebuild` is optional",
        "Two runs of this pipeline never overlap, whatever started them",
    ):
        assert fact in dag.doc_md, fact
    docs = {t.task_id: t.doc_md or "" for t in dag.tasks}
    assert "tidb.orders, tidb.items" in docs["land"]
    assert "spark_jobs/transform.py" in docs["transform"]
    for step in ("`decode`", "`schema_history`", "`apply`"):
        assert step in docs["transform"], step


def test_demo_pipeline_is_hourly_with_the_default_policies() -> None:
    dag = build_all_dags(DEMO_CONFIG)["ticdc_demo"]
    assert _summary(dag) == "0 * * * *"
    assert dag.start_date == datetime(2026, 1, 1, tzinfo=UTC)
    assert dag.catchup is False
    assert dag.doc_md is not None
    assert "policy `halt`" in dag.doc_md


def test_config_errors_propagate(tmp_path: Path) -> None:
    path = _two_pipelines(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace("catalog: lake\n", "catalog: nope\n", 1))
    with pytest.raises(ConfigError, match="pipeline 'orders', key 'catalog': unknown catalog 'nope'"):
        build_all_dags(path)


def test_cron_schedules_get_real_data_intervals() -> None:
    from airflow.sdk.definitions.timetables.interval import CronDataIntervalTimetable

    from ticdc_lake_airflow.dag_factory import pipeline_timetable

    hourly = pipeline_timetable("@hourly")
    assert isinstance(hourly, CronDataIntervalTimetable)
    assert (hourly.expression, str(hourly.timezone)) == ("0 * * * *", "UTC")
    assert pipeline_timetable(None) is None
    assert pipeline_timetable("@once") == "@once"
