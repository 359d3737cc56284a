"""Spark entrypoint of table maintenance: one job over every table of a catalog that a pipeline owns.

Arguments: --config FILE --catalog NAME --job compact|expire|orphans [--table NAMESPACE.TABLE]
[--run-id RUN]. The maintenance DAG (``ticdc_maintenance_<catalog>``) submits this; it runs by
hand the same way (``python spark_jobs/maintenance.py ...``). Exit 0: done; 1: retryable (a
pipeline lock stayed busy, a commit conflict outlasted the retries); 3: not retryable.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from ticdc_lake.config import load_config
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.maintenance_policy import JOBS
from ticdc_lake.spark.entrypoint import configure_logging
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE, EXIT_RETRYABLE
from ticdc_lake.spark.maintenance_job import maintenance_session, run_maintenance


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs/maintenance.py", description="TiCDC lake table maintenance")
    parser.add_argument("--config", required=True, help="pipeline YAML file")
    parser.add_argument("--catalog", required=True, help="catalog name (a key of 'catalogs:')")
    parser.add_argument("--job", required=True, choices=JOBS)
    parser.add_argument("--table", help="only this table, NAMESPACE.TABLE")
    parser.add_argument("--run-id", default="manual", help="Airflow run id (names the lock holder)")
    args = parser.parse_args(argv)
    configure_logging()
    log = logging.getLogger("ticdc_lake.maintenance")
    try:
        config = load_config(args.config)
        spark = maintenance_session(config, args.catalog, args.job)
        try:
            run_maintenance(spark, config, args.catalog, args.job, args.run_id, args.table)
        finally:
            spark.stop()
    except TicdcLakeError as exc:
        log.error("maintenance %s failed: %s", args.job, exc)
        print(f"ERROR: maintenance {args.job} failed: {exc}", file=sys.stderr)
        return EXIT_RETRYABLE if exc.retryable else EXIT_NOT_RETRYABLE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
