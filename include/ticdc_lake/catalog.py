"""pyiceberg access to a pipeline's catalog (the same catalog Spark writes), and what a catalog needs locally.

An ``s3://`` warehouse gets its FileIO settings from :func:`ticdc_lake.object_store.catalog_properties`,
the same function Spark's catalog settings use, so both read the same store.

A SQLite catalog (``jdbc:sqlite:PATH``) needs the folder of its file: SQLite creates the file but
not its folder. :func:`prepare_catalog` creates it before Spark or pyiceberg opens the catalog, so a
fresh ``TICDC_LAKE_HOME`` works with the README's catalog; :func:`catalog_failure` turns Iceberg's
``UncheckedSQLException: Failed to connect`` into an error that says what to do (not retryable for
a SQLite file, which no retry can make openable).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ticdc_lake.config import CatalogConfig
from ticdc_lake.errors import ConfigError, ServiceError, TicdcLakeError
from ticdc_lake.object_store import catalog_properties

_SQLITE = "jdbc:sqlite:"
#: Iceberg's JDBC catalog when it cannot open a connection (the Java exception's text).
_CONNECT_FAILED = re.compile(r"UncheckedSQLException: Failed to connect: (?P<uri>\S+)")
#: The JDBC driver's own reason, the line after it (``Caused by: org.sqlite.SQLiteException: ...``).
_CAUSE = re.compile(r"Caused by: (?P<cause>[^\n]+)")


def sqlite_path(jdbc_url: str) -> Path | None:
    """The file of a ``jdbc:sqlite:`` URL (``None``: not SQLite, or an in-memory database)."""
    if not jdbc_url.startswith(_SQLITE):
        return None
    path = jdbc_url.removeprefix(_SQLITE).removeprefix("file:").split("?", 1)[0]
    if not path or path.startswith(":memory:") or "mode=memory" in jdbc_url:
        return None
    return Path(path)


def prepare_catalog(name: str, catalog: CatalogConfig) -> None:
    """Create what the catalog's configuration implies locally: the folder of a SQLite catalog file."""
    path = sqlite_path(catalog.uri) if catalog.type == "jdbc" else None
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"catalog {name!r} (uri {catalog.uri}): cannot create the folder {path.parent} of its SQLite file "
            f"({exc.strerror or exc}); create it with write access for the user running Airflow and Spark, or "
            f"point the catalog's uri at a writable place"
        ) from None


def catalog_failure(name: str, catalog: CatalogConfig, exc: BaseException) -> TicdcLakeError | None:
    """The library error for Iceberg's "Failed to connect" to ``catalog``, else ``None``.

    A SQLite file that cannot be opened (a folder in its place, no write access) stays so until a
    person acts: not retryable. A server database (PostgreSQL) may be down for a while: retryable.
    """
    text = f"{exc}"
    match = _CONNECT_FAILED.search(text)
    if match is None:
        return None
    cause = _CAUSE.search(text, match.end())
    reason = f" ({cause.group('cause').strip()})" if cause else ""
    path = sqlite_path(catalog.uri)
    if path is not None:
        return ConfigError(
            f"catalog {name!r}: Iceberg cannot open its SQLite file {path} (uri {catalog.uri}){reason}; the uri "
            f"must name a file, not a folder, in a folder the user running Spark can write: fix the file or "
            f"folder, or change the catalog's uri. A retry cannot fix this"
        )
    return ServiceError(
        f"catalog {name!r}: Iceberg cannot connect to its JDBC database {match.group('uri')}{reason}; check that "
        f"the database runs and the Spark driver reaches it, and the catalog's uri and jdbc.user/jdbc.password"
    )


def sqlalchemy_url(jdbc_url: str) -> str:
    """The SQLAlchemy URL for an Iceberg JDBC catalog URL (SQLite files for the embedded default)."""
    if jdbc_url.startswith("jdbc:sqlite:"):
        path = jdbc_url.removeprefix("jdbc:sqlite:").removeprefix("file:")
        return f"sqlite:///{path}"
    if jdbc_url.startswith("jdbc:postgresql:"):
        return "postgresql+psycopg2:" + jdbc_url.removeprefix("jdbc:postgresql:")
    raise ConfigError(f"catalog uri {jdbc_url!r}: only jdbc:sqlite: and jdbc:postgresql: JDBC catalogs are supported")


def load_catalog(name: str, catalog: CatalogConfig) -> Any:
    """A pyiceberg catalog for ``catalog`` (read-mostly use: status, demo output, tests)."""
    prepare_catalog(name, catalog)
    try:
        properties = catalog_properties(catalog.warehouse, catalog.properties)
    except ValueError as exc:
        raise ConfigError(f"catalog {name!r} (warehouse {catalog.warehouse}): {exc}") from None
    if catalog.type == "rest":
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog(name, uri=catalog.uri, warehouse=catalog.warehouse, **properties)
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(name, uri=sqlalchemy_url(catalog.uri), warehouse=catalog.warehouse, **properties)
