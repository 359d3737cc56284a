"""Spark entrypoint of the decode stage (arguments: --config FILE --pipeline ID --run-id RUN)."""

import sys

from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.entrypoint import run_stage

if __name__ == "__main__":
    sys.exit(run_stage("decode", run_decode, sys.argv[1:]))
