"""Spark entrypoint of a pipeline run's Spark work: decode, schema history and apply in one application.

Arguments: --config FILE --pipeline ID --run-id RUN. The DAG's ``transform`` task submits this;
``decode.py``, ``schema_history.py`` and ``apply.py`` run one step alone (by hand, for debugging).
"""

import sys

from ticdc_lake.spark.entrypoint import run_stage
from ticdc_lake.spark.transform_job import run_transform

if __name__ == "__main__":
    sys.exit(run_stage("transform", run_transform, sys.argv[1:]))
