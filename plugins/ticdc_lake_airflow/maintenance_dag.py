"""One maintenance DAG per Iceberg catalog: ``ticdc_maintenance_<catalog>``, compact → expire → orphans.

One DAG with three schedules: its timetable ticks on each job's cron (a
``MultipleCronTriggerTimetable``) and each task runs only when its own cron ticks at the run's
logical date (else it is skipped), so each job keeps its own schedule while the three never run
at once for a catalog (``max_active_runs=1``, tasks in sequence). A manual run executes the jobs
its conf names (``{"jobs": ["compact"]}``), else those due at its logical date, else all.

Each task is one ``spark-submit`` of ``spark_jobs/maintenance.py``. Apply never commits to a
table while maintenance rewrites it: maintenance holds the pipeline's ``apply`` lock per table
(``ticdc_lake.spark.maintenance_job``). The tasks run in Airflow's ``default_pool`` unless
``maintenance.pool`` names another (opt-in, to bound how many run at once across catalogs): a pool
must exist before a task of it can run, and the DAG file cannot create one (no database access
from a DAG file in Airflow 3), so a required pool would leave every run waiting on a fresh install.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Context, Param
from airflow.sdk.definitions.timetables.trigger import MultipleCronTriggerTimetable
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from ticdc_lake.catalog import prepare_catalog
from ticdc_lake.config import CatalogConfig, LakeConfig, load_config
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.maintenance_config import format_duration
from ticdc_lake.maintenance_policy import JOBS, catalog_pipelines, jobs_of_run
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE
from ticdc_lake.spark.settings import spark_conf, spark_jars
from ticdc_lake_airflow.spark_connection import spark_master
from ticdc_lake_airflow.spark_stages import SPARK_CONN_ID, SPARK_JOBS_DIR, submit_environment, task_spark_log

START_DATE = datetime(2026, 1, 1, tzinfo=UTC)


def maintenance_dag_id(catalog: str) -> str:
    return f"ticdc_maintenance_{catalog}"


class MaintenanceSparkSubmitOperator(SparkSubmitOperator):
    """``spark-submit`` of one maintenance job of a catalog; skipped when the job is not due."""

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "config_path", "catalog_name", "job")
    ui_color = "#e2f0fd"

    def __init__(self, *, config_path: str, catalog_name: str, job: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config_path, self.catalog_name, self.job = config_path, catalog_name, job

    def execute(self, context: Context) -> None:
        try:
            config = load_config(self.config_path)
            catalog = config.catalogs[self.catalog_name]
            when = context.get("logical_date") or context["dag_run"].run_after
            requested = (context.get("params") or {}).get("jobs") or None
            jobs = jobs_of_run(catalog.maintenance.schedules, when, requested)
            settings = {**spark_conf(self.catalog_name, catalog), **catalog.maintenance.spark_conf}
            jars = spark_jars()
        except (TicdcLakeError, ValueError, KeyError) as exc:
            if isinstance(exc, TicdcLakeError) and exc.retryable:
                raise
            raise AirflowFailException(str(exc)) from exc
        if self.job not in jobs:
            raise AirflowSkipException(f"maintenance job {self.job!r} is not due at {when} (this run: {jobs})")
        env_vars = {**submit_environment(self.config_path), **(self.env_vars or {})}
        try:
            spark_master(self._conn_id, env_vars)
            prepare_catalog(self.catalog_name, catalog)  # the driver runs here (client mode)
        except TicdcLakeError as exc:
            raise AirflowFailException(str(exc)) from exc
        self.conf = {**settings, **(self.conf or {})}
        self.conf.update(task_spark_log(self, self.config_path, context))
        self.jars = ",".join([*jars, *([self.jars] if self.jars else [])])
        self.env_vars = env_vars
        self._hook = None  # built from the settings above by SparkSubmitOperator.execute
        try:
            super().execute(context)
        except AirflowException as exc:
            if f"Error code is: {EXIT_NOT_RETRYABLE}." in str(exc):
                raise AirflowFailException(
                    f"maintenance {self.job} of catalog {self.catalog_name!r} failed with an error a retry cannot "
                    "fix (table and reason in the log above)"
                ) from exc
            raise


def build_maintenance_dags(config_path: str | Path) -> dict[str, DAG]:
    """A maintenance DAG for every catalog with ``maintenance.enabled``, keyed by dag_id."""
    config = load_config(config_path)
    return {
        maintenance_dag_id(name): build_maintenance_dag(name, catalog, config)
        for name, catalog in config.catalogs.items()
        if catalog.maintenance.enabled
    }


def maintenance_timetable(catalog: CatalogConfig) -> MultipleCronTriggerTimetable | None:
    crons = [c for c in (catalog.maintenance.schedule_of(j) for j in JOBS) if c is not None]
    return MultipleCronTriggerTimetable(*crons, timezone="UTC") if crons else None


def build_maintenance_dag(catalog_name: str, catalog: CatalogConfig, config: LakeConfig) -> DAG:
    config_path = str(Path(config.source_path).resolve())
    settings = catalog.maintenance
    default_args: dict[str, Any] = {
        "owner": "data-engineering",
        # Airflow's default_pool unless one is configured (see the module docstring).
        **({"pool": settings.pool} if settings.pool else {}),
        # A retry helps when a pipeline lock stayed busy or a conflict outlasted the commit retries.
        "retries": 2,
        "retry_delay": timedelta(minutes=5),
    }
    with DAG(
        dag_id=maintenance_dag_id(catalog_name),
        description=f"Iceberg table maintenance of catalog {catalog_name}: compaction, snapshot expiry, orphans",
        schedule=maintenance_timetable(catalog),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["ticdc", "maintenance", catalog_name],
        default_args=default_args,
        params={
            "jobs": Param(
                [],
                type="array",
                items={"type": "string", "enum": list(JOBS)},
                description="Jobs to run now; empty: those due at the logical date, else all",
            )
        },
        doc_md=_dag_doc(catalog_name, catalog, config, config_path),
    ) as dag:
        tasks = [
            MaintenanceSparkSubmitOperator(
                task_id=job,
                config_path=config_path,
                catalog_name=catalog_name,
                job=job,
                application=str((SPARK_JOBS_DIR / "maintenance.py").resolve()),
                application_args=[
                    "--config",
                    config_path,
                    "--catalog",
                    catalog_name,
                    "--job",
                    job,
                    "--run-id",
                    "{{ run_id }}",
                ],
                conn_id=SPARK_CONN_ID,
                name=f"ticdc-maintenance-{catalog_name}-{job}",
                # Run after the jobs before it, whether they ran or were not due; not after a failure.
                trigger_rule="none_failed" if index else "all_success",
                doc_md=_JOB_DOCS[job],
            )
            for index, job in enumerate(JOBS)
        ]
        tasks[0] >> tasks[1] >> tasks[2]
    return dag


def _dag_doc(catalog_name: str, catalog: CatalogConfig, config: LakeConfig, config_path: str) -> str:
    m = catalog.maintenance
    pipelines = ", ".join(f"`{p.id}`" for p in catalog_pipelines(config, catalog_name)) or "none"
    sort = ", sorted by key" if m.sort_by_key else ""
    return f"""\
### Table maintenance of catalog `{catalog_name}`

Every table of the pipelines {pipelines} and the system tables (`{catalog.system_namespace}`), one
table at a time, each holding its pipeline's `apply` lock while it is maintained (apply waits, or
maintenance waits, up to the pipeline's `lock_wait_s`). See docs/maintenance.md.

| job | schedule (UTC) | what |
|---|---|---|
| `compact` | `{m.schedules.compact}` | small data files and files with deletes rewritten \
(target {m.target_file_size_mb} MiB{sort}), dangling deletes dropped, manifests rewritten |
| `expire` | `{m.schedules.expire}` | snapshots older than {format_duration(m.retention)} expired \
(at least {m.min_snapshots} kept) |
| `orphans` | `{m.schedules.orphans}` | unreferenced files older than {format_duration(m.orphan_min_age)} deleted |

{_pool_doc(m.pool)}
Configuration: `{config_path}`.

**Run one job now**: trigger with conf `{{"jobs": ["compact"]}}`, or by hand:
`python spark_jobs/maintenance.py --config {config_path} --catalog {catalog_name} --job compact [--table ns.t]`
"""


def _pool_doc(pool: str | None) -> str:
    if not pool:
        return "Pool: Airflow's `default_pool` (set `maintenance.pool` to bound maintenance across catalogs)."
    return (
        f"Pool `{pool}`: it must exist, else the tasks never run "
        f'(`airflow pools set {pool} 1 "TiCDC lake table maintenance"`).'
    )


_JOB_DOCS = {
    "compact": "Rewrites small data files and data files with delete files; every commit carries the table's "
    "applied position (`ticdc.applied-ts`) so expiry can never lose it.",
    "expire": "Expires snapshots older than the time-travel window, keeping `min_snapshots` and the newest "
    "snapshot carrying the applied position; deletes the files only they referenced.",
    "orphans": "Deletes files in the tables' folders that no snapshot references and that are older than "
    "`orphan_min_age` (never files of a write still running).",
}
