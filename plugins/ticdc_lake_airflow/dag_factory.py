"""One DAG per configured pipeline: land → transform (decode, schema history, apply in one Spark application)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, Param
from airflow.sdk.definitions.timetables.interval import CronDataIntervalTimetable

from ticdc_lake.config import CatalogConfig, LakeConfig, PipelineConfig, load_config
from ticdc_lake_airflow.land_operator import LandKafkaBatchOperator
from ticdc_lake_airflow.spark_stages import spark_stage_task

TASK_IDS: tuple[str, ...] = ("land", "transform")


def build_all_dags(config_path: str | Path) -> dict[str, DAG]:
    """Load the pipeline file and build every pipeline's DAG, keyed by dag_id.

    Configuration errors propagate (as :class:`ticdc_lake.errors.ConfigError` naming the file,
    the pipeline and the key), so that a DAG file calling this shows them as its import error.
    """
    config = load_config(config_path)
    return {pipeline.dag_id: build_pipeline_dag(pipeline, config) for pipeline in config.pipelines}


def pipeline_timetable(schedule: str | None) -> str | CronDataIntervalTimetable | None:
    """Cron schedules get real data intervals ``[previous tick, tick)`` (UTC).

    Airflow 3 turns a plain cron string into a trigger timetable whose runs have an empty
    interval; landing needs the interval end to cut each run's offsets deterministically, so
    scheduled runs and backfills of the same interval land the same ranges.
    """
    if schedule is None or schedule in ("@once", "@continuous"):
        return schedule
    return CronDataIntervalTimetable(schedule, timezone="UTC")


def build_pipeline_dag(pipeline: PipelineConfig, config: LakeConfig) -> DAG:
    """The DAG of one pipeline; ``config.source_path`` is the file its tasks load at run time."""
    config_path = str(Path(config.source_path).resolve())
    default_args: dict[str, Any] = {
        "owner": pipeline.owner,
        "retries": 2,
        "retry_delay": timedelta(minutes=2),
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(minutes=30),
    }
    with DAG(
        dag_id=pipeline.dag_id,
        description=pipeline.description or f"TiCDC {pipeline.protocol} topics to Iceberg",
        schedule=pipeline_timetable(pipeline.schedule),
        start_date=pipeline.start_date,
        catchup=pipeline.catchup,
        max_active_runs=1,
        tags=list(dict.fromkeys(["ticdc", str(pipeline.protocol), pipeline.id, *pipeline.tags])),
        default_args=default_args,
        doc_md=_dag_doc(pipeline, config.catalog_for(pipeline), config_path),
        params={"rebuild": rebuild_param()},
    ) as dag:
        land = LandKafkaBatchOperator(
            task_id="land",
            config_path=config_path,
            pipeline_id=pipeline.id,
            doc_md=_LAND_DOC.format(topics=pipeline.kafka.describe(), landing=pipeline.landing_uri),
        )
        transform = spark_stage_task(
            "transform",
            config_path=config_path,
            pipeline_id=pipeline.id,
            doc_md=_TRANSFORM_DOC,
            rebuild="{{ (params.rebuild or []) | tojson }}",  # null (a cleared field): none
            spark_service=pipeline.spark_service,
        )
        land >> transform
    return dag


def rebuild_param() -> Param:
    """Tables the run rebuilds from the landed batches before applying (docs/rebuild.md); empty: none."""
    return Param(
        [],
        # "null" makes the field optional: Airflow's trigger form marks every parameter whose type
        # does not allow null as required.
        type=["null", "array", "string"],
        title="Rebuild tables (optional)",
        description="Leave empty for a normal run. To rebuild tables from the landed raw batches in this run: "
        '["db.table", ...], or "*" for every table of the pipeline. See docs/rebuild.md.',
    )


def _dag_doc(pipeline: PipelineConfig, catalog: CatalogConfig, config_path: str) -> str:
    codec = pipeline.codec
    topics = ", ".join(f"`{t}`" for t in pipeline.kafka.topics)
    if pipeline.kafka.topic_pattern is not None:
        topics = ", ".join(filter(None, [topics, f"topics matching `{pipeline.kafka.topic_pattern}`"]))
    extension = "on" if codec.enable_tidb_extension else "off"
    target = pipeline.target
    spark = (
        f"the Spark run service of Airflow connection `{pipeline.spark_service}` (docs/spark-service.md)"
        if pipeline.spark_service
        else "`spark-submit` per run, master from Airflow connection `spark_default`"
    )
    return f"""\
### TiCDC pipeline `{pipeline.id}`

{pipeline.description or "Replicates a TiCDC changefeed into Apache Iceberg tables."}

Every run lands the new Kafka messages of its data interval, then brings the Iceberg tables to
the exact upstream state as of the newest TiCDC watermark landed so far.

| | |
|---|---|
| topics | {topics} (Airflow connection `{pipeline.kafka.connection_id}`) |
| protocol | `{pipeline.protocol}`: TiDB extension {extension}, compression `{codec.compression}`, \
server time zone `{codec.server_time_zone}` |
| landing | `{pipeline.landing_uri}` |
| catalog | `{pipeline.catalog}` ({catalog.type}, warehouse `{catalog.warehouse}`) |
| Spark (`transform`) | {spark} |
| tables | namespace `{target.namespace}`, include `{target.include}`, exclude `{target.exclude}` |
| system tables | namespace `{catalog.system_namespace}`: change events, quarantine, schema history, ledgers |
| configuration | `{config_path}` |

**Tasks**

1. `land`: lands each partition's offset range of the interval as a raw batch file and a
   manifest (an identical batch is reused, never rewritten).
2. `transform` (one Spark application, three steps, each with its own ledger row):
   `decode` turns the batches into the change events table (undecodable messages go to
   quarantine, policy `{pipeline.policies.on_decode_error}`); `schema_history` records every
   table version from DDL, BOOTSTRAP and inline types; `apply` applies the events up to the
   watermark with one MERGE per table and segment.

Two runs of this pipeline never overlap, whatever started them (schedule, trigger, backfill):
`land` waits for the pipeline's turn, held by the run that started first until it ends. Every
task is idempotent, so clearing and re-running a run is safe.

**Triggering** by hand: Airflow's form ticks "Unpause ... on trigger" when the DAG is paused;
untick it to run once without starting the schedule. `rebuild` is optional: leave it empty.

**Backfill or replay** an interval (the scheduler must be running; it executes the runs). Unpause
the DAG first (`airflow dags unpause {pipeline.dag_id}`): a paused DAG's backfill runs stay queued,
and Airflow does not say why.

```
airflow backfill create --dag-id {pipeline.dag_id} \\
    --from-date 2026-01-01T00:00:00+00:00 --to-date 2026-01-02T00:00:00+00:00 \\
    --reprocess-behavior completed
```

**Rebuild tables** from the landed raw batches (no Kafka; docs/rebuild.md): trigger a run with
the parameter `rebuild` (`["db.table"]`, or `"*"` for every table), e.g.
`airflow dags test {pipeline.dag_id} --conf '{{"rebuild": ["db.table"]}}'`, or run
`ticdc-lake rebuild --pipeline {pipeline.id} --table db.table`.

**One run in-process**, without a scheduler (development, debugging):

```
airflow dags test {pipeline.dag_id} 2026-01-01T01:00:00+00:00
```
"""


_LAND_DOC = """\
Reads the run's data interval from Kafka (topics {topics}) and writes, per partition, the exact
half-open offset range `[start, end)` as an immutable raw batch plus a manifest under
`{landing}`. Ranges continue gap-free from the previous manifest; a gap Kafka can no longer
fill (retention expired) fails the task without retries. Returns the batch id, sequence,
message count and whether an identical batch was reused (XCom `return_value`).
"""

_TRANSFORM_DOC = """\
`spark_jobs/transform.py`: one Spark application that runs three steps, each logged and recorded
in the run ledger under its own name.

1. `decode`: decodes landed batches into the normalized change events table. Re-decoding a batch
   replaces its rows. Messages that cannot be decoded are quarantined with their position and
   reason; under the `halt` policy apply then holds back the tables they can affect (their table,
   or every table of their topic) and names the offsets.
2. `schema_history`: one row per table version (DDL, BOOTSTRAP, inline types), with the MySQL
   columns and the Iceberg schema they map to. Duplicates collapse to one row.
3. `apply`: per table, applies the events with `applied_ts < commit_ts <= watermark` (DDL
   splitting the window into segments), one MERGE per table and segment, and commits the new
   applied position in the same Iceberg snapshot; a re-run is a no-op.

With the run parameter `rebuild` (`["db.table", ...]` or `"*"`) every landed batch is decoded
again and those tables are dropped and applied from the beginning before the apply step
(docs/rebuild.md); the ledger records it under stage `rebuild`.

`spark_jobs/decode.py`, `schema_history.py` and `apply.py` run one step alone.
"""
