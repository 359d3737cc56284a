"""The Spark sessions of a Spark run service: one application, one session per pipeline setting.

A pipeline's Spark settings (``settings.spark_conf``) are of two kinds here:

- **per session**: ``spark.sql.*`` settings that are not static (the catalogs, the session time
  zone, shuffle partitions, adaptive execution). Each distinct set of them gets its own
  ``SparkSession`` of the one application (``newSession``: its own SQL settings and catalogs),
  kept for the next runs with the same settings;
- **per application**: everything else (driver memory, the Python daemon, executor environment,
  static SQL settings such as the Iceberg extensions). The service starts with those of every
  pipeline of its configuration file; a run whose pipeline asks for another value fails with a
  message that says to restart the service, instead of running with settings it did not ask for.

Before each run the Iceberg catalogs of its session forget the tables they cache: a table stays
in Iceberg's catalog cache while it is used (``CachingCatalog``, 30 s after the last access), and
a long-lived session would otherwise read what another process (table maintenance, a rebuild by
hand) replaced, where a ``spark-submit`` per run starts with an empty cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import SparkSession

from ticdc_lake.catalog import prepare_catalog
from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.errors import ConfigError
from ticdc_lake.redaction import redact, register_secrets
from ticdc_lake.spark.settings import spark_conf

log = logging.getLogger(__name__)

_CACHING_CATALOG = "org.apache.iceberg.CachingCatalog"
_CATALOG_MANAGER = "org.apache.spark.sql.connector.catalog.CatalogManager"


def application_settings(config: LakeConfig) -> dict[str, str]:
    """The settings to start the service's application with, from every pipeline of ``config``.

    A setting outside ``spark.sql.*`` holds for the whole application: two pipelines that give it
    different values cannot share a service (ConfigError). A ``spark.sql.*`` setting on which every
    pipeline agrees is started with too (static ones such as ``spark.sql.extensions`` must be);
    the others are set per session, and :meth:`ServiceSessions.session_for` refuses a static one.
    """
    values: dict[str, dict[str, str]] = {}  # key -> value -> the first pipeline that set it
    for pipeline in config.pipelines:
        for key, value in spark_conf(pipeline.catalog, config.catalog_for(pipeline), pipeline).items():
            values.setdefault(key, {}).setdefault(value, pipeline.id)
    chosen: dict[str, str] = {}
    for key, by_value in values.items():
        if len(by_value) == 1:
            chosen[key] = next(iter(by_value))
        elif not key.startswith("spark.sql."):
            (first, a), (second, b) = list(by_value.items())[:2]
            raise ConfigError(
                f"{config.source_path}: pipelines {a!r} and {b!r} set {key} to {first!r} and {second!r}; it holds "
                "for a whole Spark application, so one Spark run service cannot serve both. Give them the same "
                "value, or run a service per pipeline (docs/spark-service.md)"
            )
    return chosen


class ServiceSessions:
    """The sessions of one long-lived application, by the per-session settings they were made with."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._sessions: dict[str, SparkSession] = {}
        self._static: dict[str, bool] = {}

    def per_session(self, key: str) -> bool:
        """Whether ``key`` can differ between sessions of the application: a ``spark.sql.*`` not static."""
        if not key.startswith("spark.sql."):
            return False
        if key not in self._static:
            jvm = self.spark.sparkContext._jvm
            assert jvm is not None
            self._static[key] = bool(jvm.org.apache.spark.sql.internal.SQLConf.isStaticConfigKey(key))
        return not self._static[key]

    def session_for(self, config: LakeConfig, pipeline: PipelineConfig) -> SparkSession:
        """The session of ``pipeline``'s settings, its catalogs' table caches emptied."""
        prepare_catalog(pipeline.catalog, config.catalog_for(pipeline))  # a SQLite catalog's folder
        settings = spark_conf(pipeline.catalog, config.catalog_for(pipeline), pipeline)
        register_secrets(settings)
        application = self.spark.sparkContext.getConf()
        differing = sorted(
            key for key, value in settings.items() if not self.per_session(key) and application.get(key) != value
        )
        if differing:
            shown = redact(", ".join(f"{k}={settings[k]!r} (service: {application.get(k)!r})" for k in differing))
            raise ConfigError(
                f"pipeline {pipeline.id!r} needs Spark settings this running service was not started with: {shown}. "
                "They hold for the whole application: restart the service (include/scripts/spark_service.sh "
                "restart) so it reads the configuration again (docs/spark-service.md)"
            )
        own = {k: v for k, v in settings.items() if self.per_session(k)}
        digest = hashlib.sha256(json.dumps(sorted(own.items())).encode()).hexdigest()
        session = self._sessions.get(digest)
        if session is None:
            session = self.spark.newSession()
            for key, value in own.items():
                session.conf.set(key, value)
            self._sessions[digest] = session
            log.info("service: new Spark session for pipeline %r (%d session setting(s))", pipeline.id, len(own))
        forget_cached_tables(session, catalog_names(own))
        return session


def catalog_names(settings: Mapping[str, str]) -> list[str]:
    """The catalogs ``settings`` define (``spark.sql.catalog.<name>`` = the plugin class)."""
    prefix = "spark.sql.catalog."
    return sorted(k[len(prefix) :] for k in settings if k.startswith(prefix) and "." not in k[len(prefix) :])


def forget_cached_tables(session: SparkSession, catalogs: Iterable[str]) -> int:
    """Empty the Iceberg table cache of each of ``catalogs`` this session has loaded; the tables forgotten."""
    manager = session._jsparkSession.sessionState().catalogManager()
    # The catalogs this session has loaded. Not ``isCatalogRegistered``: it loads a catalog it does not
    # find, with the settings of the session active on this thread (Spark's ``SQLConf.get``), not this
    # session's, and the session would then keep a catalog of another location for all its runs.
    loaded = _field(manager, _CATALOG_MANAGER, "catalogs")
    forgotten = 0
    for name in catalogs:
        if not loaded.contains(name):
            continue  # not loaded in this session yet: nothing cached
        plugin = loaded.apply(name)
        iceberg = plugin.icebergCatalog() if _has_method(plugin, "icebergCatalog") else None
        if iceberg is None or not _is_class(iceberg, _CACHING_CATALOG):
            continue  # cache-enabled=false, or not an Iceberg catalog
        cache = _field(iceberg, _CACHING_CATALOG, "tableCache")
        forgotten += int(cache.estimatedSize())
        cache.invalidateAll()
    return forgotten


def _has_method(obj: Any, name: str) -> bool:
    return any(str(m.getName()) == name for m in obj.getClass().getMethods())


def _is_class(obj: Any, class_name: str) -> bool:
    cls = obj.getClass()
    while cls is not None:
        if str(cls.getName()) == class_name:
            return True
        cls = cls.getSuperclass()
    return False


def _field(obj: Any, class_name: str, field: str) -> Any:
    cls = obj.getClass()
    while str(cls.getName()) != class_name:
        cls = cls.getSuperclass()
    declared = cls.getDeclaredField(field)
    declared.setAccessible(True)
    return declared.get(obj)
