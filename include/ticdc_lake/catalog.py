"""pyiceberg access to a pipeline's catalog (the same catalog Spark writes).

An ``s3://`` warehouse gets its FileIO settings from :func:`ticdc_lake.object_store.catalog_properties`,
the same function Spark's catalog settings use, so both read the same store.
"""

from __future__ import annotations

from typing import Any

from ticdc_lake.config import CatalogConfig
from ticdc_lake.errors import ConfigError
from ticdc_lake.object_store import catalog_properties


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
    try:
        properties = catalog_properties(catalog.warehouse, catalog.properties)
    except ValueError as exc:
        raise ConfigError(f"catalog {name!r} (warehouse {catalog.warehouse}): {exc}") from None
    if catalog.type == "rest":
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog(name, uri=catalog.uri, warehouse=catalog.warehouse, **properties)
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(name, uri=sqlalchemy_url(catalog.uri), warehouse=catalog.warehouse, **properties)
