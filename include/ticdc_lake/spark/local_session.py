"""The driver JVM that this Python process starts itself: a local session of the CLI, of a job run
as ``python spark_jobs/<stage>.py``, of the run service, and of the tests.

Such a JVM gets what ``spark-submit`` drivers get under Airflow: the local collector
(``settings.local_driver_conf``) and class-data sharing (``class_sharing``). The first JVM with a
given Java and Spark writes the class-data archive when it exits; this process then outlives it:
at its own exit it stops Spark, closes the JVM's standard input (PySpark's JVM exits on that), waits
for the dump and publishes the archive.
"""

from __future__ import annotations

import atexit
import logging
import os
import subprocess
import sys
from collections.abc import Mapping

from pyspark import SparkContext

from ticdc_lake.spark.class_sharing import ClassSharing, class_sharing
from ticdc_lake.spark.settings import local_driver_conf, spark_jars, with_java_options

log = logging.getLogger(__name__)

#: How long this process waits at exit for its JVM to write the class-data archive.
ARCHIVE_WAIT_S = 300


def local_driver(
    settings: Mapping[str, str], master: str, *, write_archive: bool = True
) -> tuple[dict[str, str], ClassSharing | None]:
    """``settings`` for a driver JVM that this process starts: ``master``, the project's jars, the
    local collector when ``master`` is local and class-data sharing; and that sharing, which
    :func:`publish_at_exit` completes once the session is up. ``write_archive=False``: map an archive
    if there is one, never write one (a JVM that lives as long as a test session would write it only
    at the end). The Python workers run with this interpreter, which imports ``ticdc_lake`` (PySpark
    reads ``PYSPARK_PYTHON``, not the ``spark.pyspark.python`` setting, when it starts them)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = {"spark.master": master, "spark.jars": ",".join(spark_jars()), **settings}  # as given, they win
    conf.update(local_driver_conf(conf, master))
    sharing = class_sharing(conf, write=write_archive)
    if sharing is not None:
        conf.update(with_java_options(conf, sharing.options))
    return conf, sharing


def publish_at_exit(sharing: ClassSharing | None) -> None:
    """When ``sharing`` writes the archive: at exit, end the JVM, wait for its dump and publish it."""
    if sharing is not None and sharing.pending is not None:
        log.info("driver JVM: writes its class-data archive at exit (first run with this Java and Spark)")
        atexit.register(_end_jvm_and_publish, sharing)


def _end_jvm_and_publish(sharing: ClassSharing) -> None:
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)  # the JVM PySpark started (None: not started here)
    if process is None or process.stdin is None:
        sharing.publish(exited_by_itself=False)
        return
    active = SparkContext._active_spark_context
    if active is not None:
        active.stop()
    process.stdin.close()  # PySpark's JVM exits when its standard input ends
    try:
        code = process.wait(ARCHIVE_WAIT_S)
    except subprocess.TimeoutExpired:  # a JVM still dumping: no archive from it, nothing else
        sharing.publish(exited_by_itself=False)
        return
    if sharing.publish(exited_by_itself=code >= 0):
        log.info("driver JVM: class-data archive %s written for later runs", sharing.archive)
