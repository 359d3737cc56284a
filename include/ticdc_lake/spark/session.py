"""SparkSession for a pipeline job."""

from __future__ import annotations

import logging
import os

from pyspark.sql import SparkSession

from ticdc_lake.catalog import prepare_catalog
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.redaction import register_secrets
from ticdc_lake.spark.class_sharing import ClassSharing
from ticdc_lake.spark.local_session import local_driver, publish_at_exit
from ticdc_lake.spark.settings import SPARK_LOG_PROPERTY, spark_conf

log = logging.getLogger(__name__)


def pipeline_session(config: LakeConfig, pipeline: PipelineConfig, stage: str) -> SparkSession:
    """The session for one stage of a pipeline.

    Under ``spark-submit`` the settings arrive on the command line already; setting them again
    here keeps a job runnable on its own (``python spark_jobs/apply.py ...``) with the same result.
    """
    prepare_catalog(pipeline.catalog, config.catalog_for(pipeline))  # a SQLite catalog's folder
    builder = SparkSession.builder.appName(f"ticdc-{pipeline.id}-{stage}")
    settings = spark_conf(pipeline.catalog, config.catalog_for(pipeline), pipeline)
    sharing: ClassSharing | None = None
    if SparkSession.getActiveSession() is None and not launched_by_spark_submit():
        settings, sharing = local_driver(settings, "local[*]")  # this process starts the driver JVM
    register_secrets(settings)  # secrets among them (catalog credentials) are redacted in what we print
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    publish_at_exit(sharing)
    if not task_log_file(spark):
        spark.sparkContext.setLogLevel("WARN")
    # else: a task's log4j2 configuration keeps Spark's INFO in its file, warnings on the console.
    return spark


def task_log_file(spark: SparkSession) -> str | None:
    """The file Spark's own log goes to under an Airflow task (``settings.driver_log_conf``), else None."""
    jvm = spark.sparkContext._jvm
    value = jvm.java.lang.System.getProperty(SPARK_LOG_PROPERTY) if jvm is not None else None
    return str(value) if value else None


def launched_by_spark_submit() -> bool:
    # spark-submit runs a Python application from its own JVM and hands it the gateway's port.
    # (A SparkConf() made before the SparkContext has no JVM behind it and is always empty, so
    # it cannot tell: asking it forced every submitted job onto local[*], whatever --master said.)
    return "PYSPARK_GATEWAY_PORT" in os.environ
