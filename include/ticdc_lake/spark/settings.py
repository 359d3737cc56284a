"""Spark settings for a pipeline's jobs: the Iceberg catalog, the session time zone, the jars.

Plain Python (no pyspark import) so the Airflow side can pass the same settings to
``spark-submit`` that the jobs would build for themselves.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from ticdc_lake.config import CatalogConfig, PipelineConfig
from ticdc_lake.errors import ConfigError, ServiceError

JARS_ENV = "TICDC_LAKE_JARS"
DEFAULT_JARS_DIR = Path(__file__).resolve().parents[3] / ".jars"
#: log4j2 configuration of a task's Spark driver: Spark's own log to a file, warnings also to the console.
TASK_LOG4J2 = Path(__file__).resolve().parents[1] / "resources" / "log4j2-spark-task.properties"
#: The JVM system property naming that file (``TASK_LOG4J2`` reads it).
SPARK_LOG_PROPERTY = "ticdc.spark.log.file"
#: ``spark.python.daemon.module``: the Python workers' daemon (``ticdc_lake.spark.python_daemon``, which
#: imports pyspark, so it is named here, not imported).
PYTHON_DAEMON_MODULE = "ticdc_lake.spark.python_daemon"
#: ``spark.sql.codegen.cache.maxEntries`` (static, Spark's default 100): the generated classes the
#: application keeps by their source. One run at the side-by-side's size compiles about 110, the same
#: each run; with the default a Spark run service compiled 60 to 99 of them again in every run, and
#: its JIT compiled those again (docs/spark-service.md, "Generated code kept across runs").
CODEGEN_CACHE_ENTRIES = 1000
#: ``spark.python.sql.dataFrameDebugging.enabled`` (PySpark's default true): with it, every PySpark
#: function call also asks the JVM for the active session and the stack depth setting, and sets and
#: clears the Python call site it records for error messages: about ten py4j round trips more per
#: ``F.col``, ``F.when`` or ``.alias``. The grouped net changes of 10 tables took 3,070 calls and 0.38 s
#: to build with it, 1,155 and 0.18 s without (docs/apply-performance.md, "PySpark's call-site capture off").
#: What is lost: Spark's error messages no longer name the Python line that built the failing
#: expression (the stage's own messages say where). PySpark reads it once per Python process, so a
#: Spark run service holds it for the whole application (``service_sessions``).
DATAFRAME_DEBUGGING = "false"
#: Set (to ``1``) in the environment of a job whose output an Airflow task log relays: that log stamps
#: every line itself, so the job's own lines carry no time stamp.
TASK_LOG_ENV = "TICDC_LAKE_TASK_LOG"


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
    # Imported here: object_store loads pyarrow (about 0.3 s), and the DAG files import this module.
    from ticdc_lake.object_store import catalog_properties

    try:  # an s3:// warehouse: S3FileIO settings (never credentials), docs/object-storage.md
        properties = catalog_properties(catalog.warehouse, catalog.properties)
    except ValueError as exc:
        raise ConfigError(f"catalog {name!r} (warehouse {catalog.warehouse}): {exc}") from None
    for key, value in properties.items():
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
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
        "spark.python.sql.dataFrameDebugging.enabled": DATAFRAME_DEBUGGING,
        # Python workers fork from a daemon that has the decode path imported already (python_daemon).
        "spark.python.daemon.module": PYTHON_DAEMON_MODULE,
        **catalog_conf(catalog_name, catalog),
        **_object_store_executor_env(catalog, pipeline),
    }
    if pipeline is not None:
        conf.update(pipeline.spark_conf)
    return conf


def _object_store_executor_env(catalog: CatalogConfig, pipeline: PipelineConfig | None) -> dict[str, str]:
    """S3 settings for executors (not credentials) when the pipeline or its warehouse uses ``s3://``."""
    from ticdc_lake.object_store import S3Settings, is_object_store  # pyarrow: see catalog_conf

    uris = [catalog.warehouse]
    if pipeline is not None:
        uris += [pipeline.landing_uri, pipeline.codec.claim_check_storage_uri or "", pipeline.schema_baseline_uri or ""]
    if not any(is_object_store(uri) for uri in uris):
        return {}
    try:
        return S3Settings.from_environment().spark_executor_env()
    except ValueError as exc:
        who = f"pipeline {pipeline.id!r}" if pipeline is not None else f"warehouse {catalog.warehouse}"
        raise ConfigError(f"S3 settings for the s3:// locations of {who}: {exc}") from None


def driver_log_conf(log_file: Path, conf: Mapping[str, str]) -> dict[str, str]:
    """``spark.driver.extraJavaOptions`` sending the driver's Spark log to ``log_file`` (``TASK_LOG4J2``).

    Options already in ``conf`` come after these, so a ``-Dlog4j2.configurationFile`` of the
    pipeline's own ``spark_conf`` wins (the JVM keeps the last value of a property).
    """
    ours = [f"-Dlog4j2.configurationFile={TASK_LOG4J2.as_uri()}", f"-D{SPARK_LOG_PROPERTY}={log_file}"]
    # spark-submit splits the value on blanks outside double quotes.
    quoted = [f'"{option}"' if any(c.isspace() for c in option) else option for option in ours]
    theirs = conf.get("spark.driver.extraJavaOptions", "").strip()
    return {"spark.driver.extraJavaOptions": " ".join([*quoted, *([theirs] if theirs else [])])}


#: The driver JVM's collector when Spark runs inside it (a ``local`` master: the embedded default):
#: the serial collector keeps the heap near what is live, where G1 grows it to the 2 GiB
#: ``spark.driver.memory`` allows, for no less CPU (docs/design.md, "JVM options and memory of the
#: embedded session").
LOCAL_DRIVER_JAVA_OPTIONS = ("-XX:+UseSerialGC",)
#: The same driver's JIT: the optimizing compiler (C2) takes a method only once it ran ten times as
#: often as the JVM's default asks (loops: three times), so code a run goes through a few thousand
#: times (query planning, catalog commits, task set-up) stays with the quick compiler, while the
#: per-row code of the jobs still reaches C2. A fresh driver JVM per run spent about a third of its
#: CPU compiling; docs/design.md, "JIT thresholds of the embedded session".
LOCAL_DRIVER_JIT_OPTIONS = (
    "-XX:Tier4InvocationThreshold=50000",
    "-XX:Tier4CompileThreshold=150000",
    "-XX:Tier4BackEdgeThreshold=120000",
)
#: A JVM option that chooses (or refuses) a garbage collector: the JVM refuses two collectors at once.
_COLLECTOR_OPTION = re.compile(r"-XX:[+-]Use\w+GC(?![\w=])")
#: A JVM option that chooses how the JIT compiles (tiers, thresholds): then that choice holds alone.
_JIT_OPTION = re.compile(r"-XX:[+-]?(Tier\w*|\w*CompileThreshold\w*)")


def is_local_master(master: str) -> bool:
    """Whether ``master`` runs executors in the driver JVM: ``local``, ``local[N]``, ``local[*]``, ``local[N,F]``."""
    return master == "local" or master.startswith("local[")


#: Where else a driver JVM's options come from: Spark settings and environment variables.
_OTHER_JAVA_OPTIONS = ("spark.driver.defaultJavaOptions",)
_JAVA_OPTIONS_ENV = ("SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS")


def local_driver_conf(conf: Mapping[str, str], master: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``spark.driver.extraJavaOptions`` with :data:`LOCAL_DRIVER_JAVA_OPTIONS` and
    :data:`LOCAL_DRIVER_JIT_OPTIONS` before the options already in ``conf``, when ``master`` is
    local; ``{}`` for any other master. Each of the two is left out when the driver's Java options
    in ``conf`` or ``SPARK_SUBMIT_OPTS``, ``JAVA_TOOL_OPTIONS`` or ``JDK_JAVA_OPTIONS`` in ``env``
    (default: this process's environment) choose already: a collector (``-XX:+UseG1GC``,
    ``-XX:-UseSerialGC``, ...; the JVM refuses to start with two), or the JIT's tiers or thresholds
    (``-XX:TieredStopAtLevel=1``, ``-XX:Tier4InvocationThreshold=...``, ...); that choice holds alone."""
    env = os.environ if env is None else env
    given = [conf.get(key, "") for key in ("spark.driver.extraJavaOptions", *_OTHER_JAVA_OPTIONS)]
    given += [env.get(name, "") for name in _JAVA_OPTIONS_ENV]
    if not is_local_master(master):
        return {}
    options = [
        *([] if any(_COLLECTOR_OPTION.search(o) for o in given) else LOCAL_DRIVER_JAVA_OPTIONS),
        *([] if any(_JIT_OPTION.search(o) for o in given) else LOCAL_DRIVER_JIT_OPTIONS),
    ]
    return with_java_options(conf, options) if options else {}


def with_java_options(conf: Mapping[str, str], options: list[str]) -> dict[str, str]:
    """``spark.driver.extraJavaOptions`` with ``options`` before those already in ``conf`` (quoted for spark-submit)."""
    quoted = [f'"{option}"' if any(c.isspace() for c in option) else option for option in options]
    theirs = conf.get("spark.driver.extraJavaOptions", "").strip()
    return {"spark.driver.extraJavaOptions": " ".join([*quoted, *([theirs] if theirs else [])])}
