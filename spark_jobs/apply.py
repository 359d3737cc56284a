"""Spark entrypoint of the apply stage (arguments: --config FILE --pipeline ID --run-id RUN)."""

import sys

from ticdc_lake.spark.apply_job import run_apply
from ticdc_lake.spark.entrypoint import run_stage

if __name__ == "__main__":
    sys.exit(run_stage("apply", run_apply, sys.argv[1:]))
