"""SparkSession for a pipeline job."""

from __future__ import annotations

import logging
import os
import sys

from pyspark.sql import SparkSession

from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.spark.settings import spark_conf, spark_jars

log = logging.getLogger(__name__)


def pipeline_session(config: LakeConfig, pipeline: PipelineConfig, stage: str) -> SparkSession:
    """The session for one stage of a pipeline.

    Under ``spark-submit`` the settings arrive on the command line already; setting them again
    here keeps a job runnable on its own (``python spark_jobs/apply.py ...``) with the same result.
    """
    builder = SparkSession.builder.appName(f"ticdc-{pipeline.id}-{stage}")
    active = SparkSession.getActiveSession()
    if active is None and not _launched_by_spark_submit():
        builder = builder.config("spark.jars", ",".join(spark_jars())).master("local[*]")
        # Python workers must import ticdc_lake: run them with this interpreter (PySpark reads
        # the variable, not the spark.pyspark.python setting, when it starts them).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in spark_conf(pipeline.catalog, config.catalog_for(pipeline), pipeline).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _launched_by_spark_submit() -> bool:
    from pyspark import SparkConf

    return SparkConf().contains("spark.master")
