"""The Spark stages by name: what ``spark_jobs/<stage>.py`` runs, and what a Spark run service runs."""

from __future__ import annotations

from ticdc_lake.spark.apply_job import run_apply
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.entrypoint import Stage
from ticdc_lake.spark.schema_history_job import run_schema_history
from ticdc_lake.spark.transform_job import run_transform

STAGE_JOBS: dict[str, Stage] = {
    "transform": run_transform,
    "decode": run_decode,
    "schema_history": run_schema_history,
    "apply": run_apply,
}
