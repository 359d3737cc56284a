"""What a catalog needs locally: the folder of a SQLite catalog file, created before anyone opens it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ticdc_lake.catalog import load_catalog, prepare_catalog, sqlite_path
from ticdc_lake.config import CatalogConfig
from ticdc_lake.errors import ConfigError


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("jdbc:sqlite:/home/lake/catalog/lake.db", Path("/home/lake/catalog/lake.db")),
        ("jdbc:sqlite:file:/home/lake/lake.db?journal_mode=WAL", Path("/home/lake/lake.db")),
        ("jdbc:sqlite::memory:", None),
        ("jdbc:sqlite:file:lake?mode=memory&cache=shared", None),
        ("jdbc:postgresql://db:5432/lake", None),
    ],
)
def test_sqlite_path(uri: str, path: Path | None) -> None:
    assert sqlite_path(uri) == path


def test_a_fresh_home_gets_the_catalog_folder_and_pyiceberg_opens_it(tmp_path: Path) -> None:
    """The README's catalog on a home where nothing exists yet (only the demo used to create the folder)."""
    home = tmp_path / "fresh-home"
    catalog = CatalogConfig(uri=f"jdbc:sqlite:{home}/catalog/lake.db", warehouse=f"file://{home}/warehouse")
    pyiceberg = load_catalog("lake", catalog)
    pyiceberg.create_namespace("shop")
    assert pyiceberg.list_namespaces() == [("shop",)]
    assert (home / "catalog" / "lake.db").is_file()
    prepare_catalog("lake", catalog)  # again: nothing to do


def test_a_folder_that_cannot_be_created_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "catalog").write_text("a file where the folder should be")
    catalog = CatalogConfig(uri=f"jdbc:sqlite:{tmp_path}/catalog/lake.db", warehouse=f"file://{tmp_path}/wh")
    with pytest.raises(ConfigError) as raised:
        prepare_catalog("lake", catalog)
    assert str(raised.value) == (
        f"catalog 'lake' (uri jdbc:sqlite:{tmp_path}/catalog/lake.db): cannot create the folder {tmp_path}/catalog "
        "of its SQLite file (File exists); create it with write access for the user running Airflow and Spark, "
        "or point the catalog's uri at a writable place"
    )
