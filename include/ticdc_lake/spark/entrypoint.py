"""Shared command line of the Spark stage entrypoints in ``spark_jobs/``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import SparkSession

from ticdc_lake.config import LakeConfig, PipelineConfig, load_config
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE, EXIT_RETRYABLE
from ticdc_lake.spark.session import pipeline_session

Stage = Callable[[SparkSession, LakeConfig, PipelineConfig, str], Any]


def run_stage(stage: str, job: Stage, argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"spark_jobs/{stage}.py", description=f"TiCDC lake {stage} stage")
    parser.add_argument("--config", required=True, help="pipeline YAML file")
    parser.add_argument("--pipeline", required=True, help="pipeline id")
    parser.add_argument("--run-id", required=True, help="Airflow run id (recorded in the ledger)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(levelname)s [%(name)s] %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    log = logging.getLogger(f"ticdc_lake.{stage}")
    try:
        config = load_config(args.config)
        pipeline = config.pipeline(args.pipeline)
        spark = pipeline_session(config, pipeline, stage)
        try:
            job(spark, config, pipeline, args.run_id)
        finally:
            spark.stop()
    except TicdcLakeError as exc:
        log.error("%s failed: %s", stage, exc)
        print(f"ERROR: {stage} failed: {exc}", file=sys.stderr)
        return EXIT_RETRYABLE if exc.retryable else EXIT_NOT_RETRYABLE
    return 0
