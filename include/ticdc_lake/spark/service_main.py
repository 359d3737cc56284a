"""Command line of the Spark run service (``spark_jobs/service.py``; ``docs/spark-service.md``)."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from pyspark.sql import SparkSession

from ticdc_lake.config import lake_home, load_config
from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.redaction import register_secrets
from ticdc_lake.spark.entrypoint import configure_logging
from ticdc_lake.spark.exit_codes import EXIT_NOT_RETRYABLE
from ticdc_lake.spark.local_session import local_driver
from ticdc_lake.spark.service import RunService, ServiceHTTPServer, read_or_create_token
from ticdc_lake.spark.service_sessions import application_settings
from ticdc_lake.spark.session import launched_by_spark_submit
from ticdc_lake.spark_service_client import DEFAULT_PORT

log = logging.getLogger("ticdc_lake.service")

#: The token file's name under the lake home when ``--token-file`` is not given.
TOKEN_FILE = "spark-service.token"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs/service.py", description="TiCDC lake Spark run service")
    parser.add_argument("--config", required=True, help="pipeline YAML file: the Spark settings of its pipelines")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--token-file", help=f"bearer token file, made when missing (default <home>/{TOKEN_FILE})")
    parser.add_argument("--master", default="local[*]", help="Spark master when not started by spark-submit")
    args = parser.parse_args(argv)
    configure_logging()
    try:
        config = load_config(args.config)
        token = read_or_create_token(Path(args.token_file) if args.token_file else lake_home(args.config) / TOKEN_FILE)
        settings = application_settings(config)
    except TicdcLakeError as exc:
        log.error("service: %s", exc)
        return EXIT_NOT_RETRYABLE
    register_secrets(settings)
    builder = SparkSession.builder.appName("ticdc-lake-spark-service")
    if not launched_by_spark_submit():
        # The JVM starts here: a local master's driver gets the serial collector as a run's does
        # (settings.local_driver_conf; docs/spark-service.md, "Memory"), and the class-data archive
        # when there is one (a service lives long: it would write one only when it stops).
        settings = local_driver(settings, args.master, write_archive=False)[0]
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    service = RunService(spark, token)
    server = ServiceHTTPServer((args.host, args.port), service)

    def stop(signum: int, frame: FrameType | None) -> None:
        log.info("service: signal %d, stopping after the current run", signum)
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info(
        "service: listening on %s:%d (ticdc-lake %s, master %s, application %s)",
        args.host,
        server.server_address[1],
        service.version,
        spark.sparkContext.master,
        spark.sparkContext.applicationId,
    )
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
        with service.idle():
            spark.stop()
        log.info("service: stopped after %d run(s)", service.runs)
    return 0
