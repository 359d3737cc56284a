"""Spark entrypoint of the schema_history stage (arguments: --config FILE --pipeline ID --run-id RUN)."""

import sys

from ticdc_lake.spark.entrypoint import run_stage
from ticdc_lake.spark.schema_history_job import run_schema_history

if __name__ == "__main__":
    sys.exit(run_stage("schema_history", run_schema_history, sys.argv[1:]))
