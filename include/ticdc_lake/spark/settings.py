"""Spark settings for a pipeline's jobs: the Iceberg catalog, the session time zone, the jars.

Plain Python (no pyspark import) so the Airflow side can pass the same settings to
``spark-submit`` that the jobs would build for themselves.
"""

from __future__ import annotations

import os
from pathlib import Path

from ticdc_lake.config import CatalogConfig, PipelineConfig
from ticdc_lake.errors import ServiceError

JARS_ENV = "TICDC_LAKE_JARS"
DEFAULT_JARS_DIR = Path(__file__).resolve().parents[3] / ".jars"


def jars_dir() -> Path:
    return Path(os.environ.get(JARS_ENV) or DEFAULT_JARS_DIR)


def spark_jars() -> list[str]:
    """Absolute paths of the jars Spark needs (Iceberg runtime, JDBC drivers)."""
    folder = jars_dir() / "spark"
    jars = sorted(str(p) for p in folder.glob("*.jar"))
    if not any("iceberg-spark-runtime" in Path(j).name for j in jars):
        raise ServiceError(
            f"the Iceberg Spark runtime jar is missing from {folder}; run `make jars` "
            f"(or set {JARS_ENV} to the folder that holds spark/*.jar)"
        )
    return jars


def catalog_conf(name: str, catalog: CatalogConfig) -> dict[str, str]:
    """``spark.sql.catalog.<name>.*`` settings for an Iceberg catalog."""
    prefix = f"spark.sql.catalog.{name}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": catalog.type,
        f"{prefix}.uri": catalog.uri,
        f"{prefix}.warehouse": catalog.warehouse,
    }
    if catalog.type == "jdbc":
        # V1 adds view support and is what pyiceberg's SqlCatalog reads as well.
        conf[f"{prefix}.jdbc.schema-version"] = "V1"
    for key, value in catalog.properties.items():
        conf[f"{prefix}.{key}"] = value
    return conf


def spark_conf(catalog_name: str, catalog: CatalogConfig, pipeline: PipelineConfig | None = None) -> dict[str, str]:
    """All Spark settings a pipeline job needs, jars excluded (``spark.jars`` is passed apart)."""
    conf = {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "8",
        "spark.ui.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.memory": "2g",
        **catalog_conf(catalog_name, catalog),
    }
    if pipeline is not None:
        conf.update(pipeline.spark_conf)
    return conf
