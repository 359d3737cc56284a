"""Shared command line of the Spark stage entrypoints in ``spark_jobs/``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from ticdc_lake.catalog import catalog_failure
from ticdc_lake.config import LakeConfig, PipelineConfig, load_config
from ticdc_lake.errors import ConfigError, TicdcLakeError
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE, EXIT_RETRYABLE
from ticdc_lake.spark.session import pipeline_session
from ticdc_lake.spark.settings import TASK_LOG_ENV

#: ``job(spark, config, pipeline, run_id, **options)``; ``rebuild=[...]`` is passed only when given.
Stage = Callable[..., Any]


def run_stage(stage: str, job: Stage, argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"spark_jobs/{stage}.py", description=f"TiCDC lake {stage} stage")
    parser.add_argument("--config", required=True, help="pipeline YAML file")
    parser.add_argument("--pipeline", required=True, help="pipeline id")
    parser.add_argument("--run-id", required=True, help="Airflow run id (recorded in the ledger)")
    parser.add_argument(
        "--rebuild",
        default="",
        help='JSON list of tables to rebuild from the landed batches, or "*" (transform only; docs/rebuild.md)',
    )
    args = parser.parse_args(argv)
    configure_logging()
    log = logging.getLogger(f"ticdc_lake.{stage}")

    def stop(spark: SparkSession) -> None:
        stopping = time.monotonic()
        spark.stop()
        log.info("%s: Spark stopped in %.1f s", stage, time.monotonic() - stopping)

    return execute_stage(
        stage,
        job,
        StageCall(args.config, args.pipeline, args.run_id, args.rebuild),
        lambda config, pipeline: pipeline_session(config, pipeline, stage),
        stop,
    )


@dataclass(frozen=True, slots=True)
class StageCall:
    """The arguments of one stage run (the entrypoints' command line, or a Spark run service request)."""

    config_path: str
    pipeline_id: str
    run_id: str
    #: ``--rebuild``: JSON list, JSON string or plain name (:func:`rebuild_names`); empty: none.
    rebuild: str = ""


def execute_stage(
    stage: str,
    job: Stage,
    call: StageCall,
    open_session: Callable[[LakeConfig, PipelineConfig], SparkSession],
    release_session: Callable[[SparkSession], None],
) -> int:
    """Run ``job`` for ``call`` in the session ``open_session`` gives; the exit code of a ``spark-submit``.

    Library errors are logged and become :data:`EXIT_RETRYABLE` or :data:`EXIT_NOT_RETRYABLE`; so do
    Spark or Iceberg errors that name a catalog problem; anything else propagates.
    """
    log = logging.getLogger(f"ticdc_lake.{stage}")
    pipeline: PipelineConfig | None = None
    try:
        names = rebuild_names(call.rebuild)
        options = {"rebuild": names} if names else {}  # only the transform job takes it
        config = load_config(call.config_path)
        pipeline = config.pipeline(call.pipeline_id)
        spark = open_session(config, pipeline)
        try:
            job(spark, config, pipeline, call.run_id, **options)
        finally:
            release_session(spark)
    except TicdcLakeError as exc:
        return _failed(stage, exc, log)
    except Exception as exc:
        # Errors from Spark or Iceberg that a retry cannot fix become library errors that say so.
        failure = catalog_failure(pipeline.catalog, config.catalog_for(pipeline), exc) if pipeline else None
        if failure is None:
            raise
        return _failed(stage, failure, log)
    return 0


def _failed(stage: str, exc: TicdcLakeError, log: logging.Logger) -> int:
    log.error("%s failed: %s", stage, exc)
    print(f"ERROR: {stage} failed: {exc}", file=sys.stderr)
    return EXIT_RETRYABLE if exc.retryable else EXIT_NOT_RETRYABLE


def configure_logging() -> None:
    """The job's own log on stdout; without a time stamp when an Airflow task log relays it (it stamps each line)."""
    stamp = "" if os.environ.get(TASK_LOG_ENV) else "%(asctime)s "
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format=f"{stamp}%(levelname)s [%(name)s] %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)


def rebuild_names(text: str) -> list[str]:
    """The ``--rebuild`` value: a JSON list or string (the DAG passes its parameter as JSON), or plain names."""
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v.strip()]
    raise ConfigError(f'--rebuild {text!r}: expected a JSON list of table names (database.table) or "*"')
