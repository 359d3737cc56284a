"""One run of a pipeline's stages in one process, as a separate process of the crash and concurrency tests.

``python tests/e2e/pipeline_run.py --config F --pipeline P --run-id R --bootstrap HOST:PORT
[--stages land,decode,schema_history,apply] [--ready FILE --barrier FILE]``: land from the broker
and the Spark stages in one local session (started first, and only when a Spark stage is asked
for). With ``--ready``/``--barrier`` the process says it is ready and waits for the barrier file, so
a test starts the stages of several runs at the same moment. Errors
are reported as ``spark_jobs/`` do (``ERROR: <stage> failed: <message>`` on stderr, exit code
from ``ticdc_lake.spark.exit_codes``), so the tests see what Airflow would.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ticdc_lake.config import load_config
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.landing.lander import land
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE, EXIT_RETRYABLE

STAGES = ("land", "decode", "schema_history", "apply")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pipeline_run.py")
    parser.add_argument("--config", required=True)
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--ready", help="file created once the Spark session is up")
    parser.add_argument("--barrier", help="file whose creation starts the stages (runs started at once)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(levelname)s [%(name)s] %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    config = load_config(args.config)
    pipeline = config.pipeline(args.pipeline)
    spark: Any = None
    stages = args.stages.split(",")
    stage = stages[0]
    try:
        if any(s != "land" for s in stages):
            from ticdc_lake.spark.session import pipeline_session

            spark = pipeline_session(config, pipeline, "run")
        _meet(args.ready, args.barrier)
        for stage in stages:
            if stage == "land":
                land(pipeline, {"bootstrap.servers": args.bootstrap}, args.run_id, None)
            else:
                _spark_stage(stage)(spark, config, pipeline, args.run_id)
    except TicdcLakeError as exc:
        print(f"ERROR: {stage} failed: {exc}", file=sys.stderr)
        return EXIT_RETRYABLE if exc.retryable else EXIT_NOT_RETRYABLE
    finally:
        if spark is not None:
            spark.stop()
    return 0


def _meet(ready: str | None, barrier: str | None) -> None:
    """Say this run is ready, then wait for the barrier: the test starts the runs' stages at once."""
    if ready:
        Path(ready).touch()
    deadline = time.monotonic() + 600
    while barrier and not Path(barrier).exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"barrier {barrier} did not appear within 600 s")
        time.sleep(0.005)


def _spark_stage(stage: str) -> Callable[..., Any]:
    from ticdc_lake.spark.apply_job import run_apply
    from ticdc_lake.spark.decode_job import run_decode
    from ticdc_lake.spark.schema_history_job import run_schema_history

    jobs: dict[str, Callable[..., Any]] = {
        "decode": run_decode,
        "schema_history": run_schema_history,
        "apply": run_apply,
    }
    return jobs[stage]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
