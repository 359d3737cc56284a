"""``ticdc-lake sql``: run Spark SQL against the configured Iceberg catalogs."""

from __future__ import annotations

from pyspark.sql import SparkSession

from ticdc_lake.config import LakeConfig
from ticdc_lake.spark.local_session import local_driver, publish_at_exit
from ticdc_lake.spark.settings import catalog_conf, spark_conf


def session(config: LakeConfig, app_name: str) -> SparkSession:
    """A local Spark session with every catalog of the file available by name (quiet: errors only)."""
    first, *others = config.catalogs.items()
    builder = SparkSession.builder.appName(app_name)
    settings = spark_conf(*first)
    for name, catalog in others:
        settings.update(catalog_conf(name, catalog))
    settings, sharing = local_driver(settings, "local[*]")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    publish_at_exit(sharing)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_sql(config: LakeConfig, statements: list[str], limit: int) -> None:
    """Run each statement and print its result; every catalog of the file is available by name."""
    spark = session(config, "ticdc-lake-sql")
    try:
        for statement in statements:
            print(f"-- {statement}")
            spark.sql(statement).show(limit, truncate=False)
    finally:
        spark.stop()
