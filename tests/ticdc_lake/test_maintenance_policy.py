"""The plain maintenance rules: settings, schedules, table ownership, locks, positions kept."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from ticdc_lake.config import load_config
from ticdc_lake.errors import ConfigError
from ticdc_lake.identifiers import UPSTREAM_DATABASE_PROPERTY, UPSTREAM_TABLE_PROPERTY
from ticdc_lake.maintenance_config import MaintenanceConfig, MaintenanceSchedules, format_duration, parse_duration
from ticdc_lake.maintenance_policy import (
    JOBS,
    SYSTEM_WRITER_STAGES,
    TARGET_WRITER_STAGES,
    MaintenanceStatus,
    TableReport,
    backoff_s,
    carried_position,
    catalog_of,
    catalog_pipelines,
    due_jobs,
    is_conflict,
    jobs_of_run,
    scope_of,
    snapshots_to_retain,
    summary_lines,
)

LIBRARY = Path(__file__).resolve().parents[2] / "include" / "ticdc_lake"


def _config(tmp_path: Path, maintenance: dict[str, object] | None = None) -> Path:
    catalog: dict[str, object] = {"uri": "jdbc:sqlite:/tmp/x.db", "warehouse": "file:///tmp/w"}
    if maintenance is not None:
        catalog["maintenance"] = maintenance

    def pipeline(pid: str, namespace: str, **target: object) -> dict[str, object]:
        return {
            "id": pid,
            "protocol": "simple-json",
            "kafka": {"topics": [pid]},
            "landing_uri": "file:///tmp/l",
            "catalog": "lake",
            "target": {"namespace": namespace, **target},
        }

    document = {
        "catalogs": {"lake": catalog, "other": {"uri": "jdbc:sqlite:/tmp/y.db", "warehouse": "file:///tmp/v"}},
        "pipelines": [
            pipeline("orders", "{database}", exclude=["shop.secret*"]),
            pipeline("crm", "crm_{database}"),
            {**pipeline("elsewhere", "{database}"), "catalog": "other"},
        ],
    }
    path = tmp_path / "pipelines.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_durations() -> None:
    assert parse_duration("90s") == timedelta(seconds=90)
    assert parse_duration("30m") == timedelta(minutes=30)
    assert parse_duration("12h") == timedelta(hours=12)
    assert parse_duration("7d") == timedelta(days=7)
    assert parse_duration("2w") == timedelta(days=14)
    assert parse_duration("1.5h") == timedelta(minutes=90)
    assert parse_duration(" 10 m ") == parse_duration("10m") == timedelta(minutes=10)
    # pydantic's own timedelta forms: ISO 8601 durations, seconds, "7 days".
    assert parse_duration("P7D") == parse_duration("7 days") == timedelta(days=7)
    assert parse_duration("PT12H") == timedelta(hours=12)
    assert parse_duration(90) == timedelta(seconds=90)
    forms = "write a number and a unit: 90s, 30m, 12h, 7d or 2w (or an ISO 8601 duration such as P7D, or seconds)"
    with pytest.raises(ValueError, match=r"^'a week' is not a duration") as err:
        parse_duration("a week")
    assert str(err.value) == f"'a week' is not a duration; {forms}"
    with pytest.raises(ValueError, match=r"^'-1d' is a negative duration") as negative:
        parse_duration("-1d")
    assert str(negative.value) == f"'-1d' is a negative duration; {forms}"
    assert [format_duration(parse_duration(v)) for v in ("90s", "10m", "1.5h", "7d", "P14D", "0.5s")] == [
        "90s",
        "10m",
        "90m",
        "7d",
        "14d",
        "0.5s",
    ]


def test_defaults_are_what_a_production_user_would_pick(tmp_path: Path) -> None:
    settings = load_config(_config(tmp_path)).catalogs["lake"].maintenance
    assert settings == MaintenanceConfig()
    assert (settings.schedules.compact, settings.schedules.expire, settings.schedules.orphans) == (
        "30 1 * * *",
        "30 3 * * *",
        "30 4 * * 0",
    )
    assert (settings.retention_window, settings.min_snapshots, settings.orphan_age) == (
        timedelta(days=7),
        5,
        timedelta(days=3),
    )
    assert (settings.target_file_size_mb, settings.delete_file_threshold, settings.pool) == (
        512,
        1,
        None,  # Airflow's default_pool: a named pool is opt-in (it must exist before a task can run)
    )


def test_settings_are_validated_naming_catalog_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as unsafe:
        load_config(_config(tmp_path, {"orphan_min_age": "10m"}))
    assert "catalog 'lake', key 'maintenance'" in str(unsafe.value)
    assert "orphan_min_age '10m' is below the safe minimum of 1h" in str(unsafe.value)
    with pytest.raises(ConfigError) as cron:
        load_config(_config(tmp_path, {"schedules": {"compact": "every day"}}))
    assert "key 'maintenance.schedules.compact'" in str(cron.value)
    assert "'every day' is not a cron expression or preset" in str(cron.value)
    with pytest.raises(ConfigError) as unknown:
        load_config(_config(tmp_path, {"retension": "7d"}))
    assert "key 'maintenance.retension': unknown key" in str(unknown.value)
    with pytest.raises(ConfigError, match=r"key 'maintenance\.retention'"):
        load_config(_config(tmp_path, {"retention": "a week"}))
    off = load_config(_config(tmp_path, {"schedules": {"orphans": None}, "retention": "2d"})).catalogs["lake"]
    assert off.maintenance.schedule_of("orphans") is None
    assert off.maintenance.retention_window == timedelta(days=2)


def test_scope_owned_tables_lock_their_pipeline_apply_and_system_tables_every_writer(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path))
    pipelines = catalog_pipelines(config, "lake")
    assert [p.id for p in pipelines] == ["crm", "orders"]
    with pytest.raises(
        ConfigError, match=r"pipelines\.yaml: no catalog 'nope' under 'catalogs:' \(configured: lake, other\)"
    ):
        catalog_of(config, "nope")

    def props(database: str, table: str) -> dict[str, str]:
        return {UPSTREAM_DATABASE_PROPERTY: database, UPSTREAM_TABLE_PROPERTY: table}

    scope = scope_of(pipelines, "ticdc_system", "shop", "orders", props("shop", "orders"))
    assert scope is not None
    assert (scope.display, scope.locks, scope.system) == ("shop.orders", (("orders", "apply"),), False)
    crm = scope_of(pipelines, "ticdc_system", "crm_sales", "leads", props("sales", "leads"))
    assert crm is not None
    assert crm.locks == (("crm", "apply"),)
    # Excluded by the pipeline's rules, not written by it, or written by no pipeline: left alone.
    assert scope_of(pipelines, "ticdc_system", "shop", "secrets", props("shop", "secrets")) is None
    assert scope_of(pipelines, "ticdc_system", "shop", "orders", props("other", "orders")) is None
    assert scope_of(pipelines, "ticdc_system", "shop", "by_hand", {}) is None
    system = scope_of(pipelines, "ticdc_system", "ticdc_system", "change_events", {})
    assert system is not None
    assert system.system
    assert system.locks == tuple((p, s) for p in ("crm", "orders") for s in ("decode", "schema_history", "apply"))


def _locked_stages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and getattr(decorator.func, "id", None) == "locked"
                    and isinstance(decorator.args[0], ast.Constant)
                ):
                    found.add(str(decorator.args[0].value))
    return found


def test_lock_stages_are_the_ones_the_writers_take() -> None:
    """If a writer's stage lock is renamed, maintenance would no longer exclude it: fail here."""
    spark = LIBRARY / "spark"
    assert _locked_stages(spark / "apply_job.py") == set(TARGET_WRITER_STAGES)
    writers = set().union(*(_locked_stages(p) for p in spark.glob("*.py")))
    assert writers == set(SYSTEM_WRITER_STAGES)


def test_carried_position_is_what_readers_find_now() -> None:
    summaries = [
        {"operation": "replace", "ticdc.maintenance": "compact", "ticdc.applied-ts": "300", "ticdc.pipeline": "p"},
        {"operation": "overwrite", "ticdc.applied-ts": "200", "ticdc.run-id": "r2", "ticdc.watermark": "250"},
        {"operation": "append", "ticdc.applied-offsets": '{"t/0":5}', "ticdc.run-id": "r1"},
    ]
    assert carried_position(summaries) == {
        "ticdc.applied-ts": "300",
        "ticdc.pipeline": "p",
        "ticdc.run-id": "r2",
        "ticdc.watermark": "250",
        "ticdc.applied-offsets": '{"t/0":5}',
    }
    assert carried_position([{"operation": "append"}]) == {}


def test_expiry_keeps_the_newest_snapshot_with_each_position_key() -> None:
    plain: dict[str, str] = {"operation": "replace"}
    applied = {"ticdc.applied-ts": "1"}
    offsets = {"ticdc.applied-offsets": "{}"}
    assert snapshots_to_retain([applied, plain, plain], 1) == 1
    assert snapshots_to_retain([plain, plain, applied, plain], 1) == 3
    assert snapshots_to_retain([plain, applied, plain, offsets], 2) == 4
    assert snapshots_to_retain([plain, applied], 5) == 5
    assert snapshots_to_retain([plain, plain], 1) == 1


def test_due_jobs_and_the_jobs_of_a_run() -> None:
    schedules = MaintenanceSchedules()
    assert due_jobs(schedules, datetime(2026, 3, 3, 1, 30, tzinfo=UTC)) == ["compact"]
    assert due_jobs(schedules, datetime(2026, 3, 1, 4, 30, tzinfo=UTC)) == ["orphans"]  # a Sunday
    assert due_jobs(schedules, datetime(2026, 3, 2, 4, 30, tzinfo=UTC)) == []
    both = MaintenanceSchedules(compact="@daily", expire="0 0 * * *", orphans=None)
    assert due_jobs(both, datetime(2026, 3, 2, 0, 0, 0, 1, tzinfo=UTC)) == ["compact", "expire"]
    at = datetime(2026, 3, 3, 1, 30, tzinfo=UTC)
    assert jobs_of_run(schedules, at, None) == ["compact"]
    assert jobs_of_run(schedules, at, ["orphans", "expire"]) == ["expire", "orphans"]
    assert jobs_of_run(schedules, datetime(2026, 3, 3, 9, 17, tzinfo=UTC), []) == list(JOBS)
    assert jobs_of_run(both, datetime(2026, 3, 3, 9, 17, tzinfo=UTC), None) == ["compact", "expire"]
    with pytest.raises(ValueError, match=r"unknown maintenance job\(s\) \['vacuum'\]"):
        jobs_of_run(schedules, at, ["vacuum"])


def test_conflicts_are_retried_with_backoff() -> None:
    assert is_conflict(["org.apache.spark.SparkException", "org.apache.iceberg.exceptions.CommitFailedException"])
    assert is_conflict(["org.apache.iceberg.exceptions.ValidationException"])
    assert not is_conflict(["org.apache.iceberg.exceptions.NotFoundException"])
    assert [backoff_s(n, 5.0) for n in (1, 2, 3)] == [5.0, 10.0, 20.0]


def test_summary_lines() -> None:
    ok = TableReport("lake.shop.a", "compact", data_files=(40, 1), delete_files=(12, 0), bytes=(9000, 3000))
    ok.removed_files, ok.seconds, ok.waited, ok.attempts = 52, 3.25, 1.5, 2
    busy = TableReport(
        "lake.shop.b", "compact", status=MaintenanceStatus.BUSY, message="lock held", seconds=1.0, waited=0.5
    )
    lines = summary_lines("lake", "compact", [ok, busy])
    assert lines[0] == (
        "maintenance compact of catalog 'lake': 2 table(s): 1 ok, 0 unchanged, 1 busy, 0 failed; data files "
        "40→1, delete files 12→0, removed files 52, 4.2 s"
    )
    assert lines[1] == (
        "  compact lake.shop.a: OK, data files 40→1, delete files 12→0, snapshots 0→0, bytes 9000→3000, "
        "removed files 52, 3.2 s (waited 1.5 s for the pipeline lock), 2 attempts"
    )
    assert lines[2].endswith("removed files 0, 1.0 s: lock held")
