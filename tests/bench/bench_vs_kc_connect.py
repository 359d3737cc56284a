"""Side B of `make bench-vs-kc`: Kafka Connect standalone with the Apache Iceberg sink.

One round = a fresh state folder (offsets file, JDBC catalog on SQLite, warehouse, log), a fresh
connector name (so a fresh consumer group) and a fresh control topic. Connect runs with every jar
of ``.jars/connect`` on its classpath (``make bench-vs-kc`` fetches them, include/jvm/connect).
The round ends when the sink has committed one row per change: the sum of ``total-records`` of
the tables' current snapshots; its wall end is the newest of those snapshots' commit times.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench_vs_kc_changelog as changelog  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake.catalog import load_catalog
from ticdc_lake.config import CatalogConfig

SINK = "org.apache.iceberg.connect.IcebergSinkConnector"
#: The sink's settings for a Debezium CDC stream, as its documentation gives them; everything else
#: is a default. Apache's 1.12.0 sink has no upsert mode: it appends every change (see the docs page).
CDC_SETTINGS = {
    "transforms": "debezium",
    "transforms.debezium.type": "org.apache.iceberg.connect.transforms.DebeziumTransform",
    "iceberg.tables.dynamic-enabled": "true",
    "iceberg.tables.route-field": "_cdc.target",
    "iceberg.tables.auto-create-enabled": "true",
    "iceberg.tables.default-id-columns": "id",
    "iceberg.control.commit.interval-ms": "5000",
    # TiCDC's DDL and watermark messages have no row image: DebeziumTransform throws on them, and
    # Connect's error tolerance skips exactly those records (every row change is counted below).
    "errors.tolerance": "all",
}
HEAP = "-Xmx2g"
#: The sink's catalog name (``iceberg.catalog`` default): the JDBC catalog's rows carry it.
CATALOG_NAME = "iceberg"  # as Kafka's connect-standalone.sh


def sink_catalog(folder: Path) -> CatalogConfig:
    """The catalog of the sink round in ``folder``: Iceberg's JDBC catalog on a SQLite file."""
    return CatalogConfig(
        type="jdbc", uri=f"jdbc:sqlite:{folder}/catalog/sink.db", warehouse=f"file://{folder}/warehouse"
    )


@dataclass(frozen=True)
class ConnectRound:
    folder: Path
    name: str
    topic: str
    bootstrap: str
    rest_port: int
    tasks: int
    #: Worker settings over the defaults (the ``kc-sink-flush`` side sets ``offset.flush.interval.ms``).
    worker_settings: tuple[tuple[str, str], ...] = ()
    #: The log of the long-running worker this round's connector runs in (``--connect-service``).
    service_log: Path | None = None

    @property
    def catalog(self) -> CatalogConfig:
        return sink_catalog(self.folder)

    @property
    def log(self) -> Path:
        return self.service_log or self.folder / "connect.log"

    def write_files(self) -> list[Path]:
        """Worker, connector and log settings; returns the command-line files."""
        (self.folder / "catalog").mkdir(parents=True, exist_ok=True)
        worker = worker_settings(self.folder, self.bootstrap, self.rest_port, self.worker_settings)
        files = []
        for stem, settings in (("worker", worker), ("connector", self.connector_settings())):
            files.append(write_properties(self.folder / f"{stem}.properties", settings))
        write_properties(self.folder / "log4j.properties", log4j_settings(self.log))
        return files

    def connector_settings(self) -> dict[str, str]:
        """The sink connector of this round: its name, catalog, control topic and the CDC settings."""
        return {
            "name": self.name,
            "connector.class": SINK,
            "tasks.max": str(self.tasks),
            "topics": self.topic,
            "iceberg.catalog.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            "iceberg.catalog.uri": self.catalog.uri,
            "iceberg.catalog.warehouse": self.catalog.warehouse,
            "iceberg.catalog.jdbc.schema-version": "V1",
            "iceberg.control.topic": f"{self.name}-control",
            **CDC_SETTINGS,
        }

    def prepare_catalog(self) -> None:
        """Create the catalog's tables (JDBC schema V1) before Connect starts: each sink task
        initializes the catalog, and two doing so at once on a new SQLite file race (``duplicate
        column name: iceberg_type``)."""
        (self.folder / "catalog").mkdir(parents=True, exist_ok=True)
        load_catalog(CATALOG_NAME, self.catalog)

    def start(self, jars: Path) -> subprocess.Popen[bytes]:
        worker, connector = self.write_files()
        return start_standalone(jars, self.folder, worker, connector)

    def committed(self, tables: list[tuple[str, str]]) -> tuple[int, float]:
        """Rows committed so far over ``tables`` and the newest commit time (epoch s; 0 if none)."""
        catalog = load_catalog(CATALOG_NAME, self.catalog)
        rows, newest = 0, 0.0
        for database, table in tables:
            try:
                snapshot = catalog.load_table((database, table)).current_snapshot()
            except Exception:  # not created yet (or the catalog is busy): nothing committed there
                continue
            if snapshot is not None:
                rows += int(snapshot.summary.get("total-records") or 0)
                newest = max(newest, snapshot.timestamp_ms / 1000)
        return rows, newest

    def wait_committed(
        self, process: subprocess.Popen[bytes], tables: list[tuple[str, str]], rows: int, stall_s: float
    ) -> float:
        """Poll until ``rows`` rows are committed; returns the last commit time (epoch s).

        Fails when Connect exits or nothing new is committed for ``stall_s`` seconds."""
        last_change, seen = time.monotonic(), -1
        while True:
            count, newest = self.committed(tables)
            if count >= rows:
                return newest
            if count != seen:
                seen, last_change = count, time.monotonic()
            if process.poll() is not None:
                raise SystemExit(f"Kafka Connect exited ({process.returncode}) at {count}/{rows} rows; see {self.log}")
            if time.monotonic() - last_change > stall_s:
                raise SystemExit(
                    f"the sink committed nothing new for {stall_s:g} s at {count}/{rows} rows; see {self.log}"
                )
            time.sleep(1.0)

    def current_rows(self, table: tuple[str, str]) -> dict[Hashable, tuple[Any, ...]]:
        """The table's changelog reduced to current rows by key (id -> (k, c, pad))."""
        data = load_catalog(CATALOG_NAME, self.catalog).load_table(table).scan().to_arrow()
        cdc = data.column("_cdc").combine_chunks()
        ops, offsets = cdc.field("op").to_pylist(), cdc.field("offset").to_pylist()
        ids, ks, cs, pads = (data.column(n).to_pylist() for n in ("id", "k", "c", "pad"))
        rows = (
            changelog.ChangelogRow(i, op, offset, (k, c, pad))
            for i, op, offset, k, c, pad in zip(ids, ops, offsets, ks, cs, pads, strict=True)
        )
        return dict(changelog.current_rows(".".join(table), rows))


def worker_settings(
    folder: Path, bootstrap: str, rest_port: int, overrides: tuple[tuple[str, str], ...] = ()
) -> dict[str, str]:
    """A standalone worker's settings: JSON with schemas, its offsets file in ``folder``, its REST port."""
    return {
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "true",
        "value.converter.schemas.enable": "true",
        "offset.storage.file.filename": str(folder / "connect.offsets"),
        "listeners": f"http://127.0.0.1:{rest_port}",
        "plugin.discovery": "hybrid_warn",
        **dict(overrides),
    }


def log4j_settings(log: Path) -> dict[str, str]:
    return {
        "log4j.rootLogger": "INFO, file",
        "log4j.appender.file": "org.apache.log4j.FileAppender",
        "log4j.appender.file.File": str(log),
        "log4j.appender.file.layout": "org.apache.log4j.PatternLayout",
        "log4j.appender.file.layout.ConversionPattern": "[%d] %p %m (%c)%n",
    }


def write_properties(path: Path, settings: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return path


def start_standalone(jars: Path, folder: Path, *properties: Path) -> subprocess.Popen[bytes]:
    """Kafka Connect standalone with every jar of ``jars``, ``folder``'s log4j settings, the worker's
    properties and any connector's (none: connectors come through its REST API)."""
    require_sink(jars)
    command = [
        "java",
        HEAP,
        f"-Dlog4j.configuration=file:{folder / 'log4j.properties'}",
        "-cp",
        f"{jars}/*",
        "org.apache.kafka.connect.cli.ConnectStandalone",
        *map(str, properties),
    ]
    with open(folder / "connect.out", "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))


def require_sink(jars: Path) -> None:
    """Stop with what to do when the sink's jars are not fetched (``make bench-vs-kc`` fetches them)."""
    if not any(jars.glob("iceberg-kafka-connect-*.jar")):
        raise SystemExit(f"the Iceberg Kafka Connect sink is missing from {jars}; run `make bench-vs-kc`")
