"""The baseline folder: SHOW CREATE TABLE statements for tables the stream meets mid-way.

A pipeline that starts after its tables were created sees rows before any CREATE TABLE. The
user may give ``schema_baseline_uri`` (``file:///abs/path``, ``/abs/path`` or ``s3://bucket/prefix``,
read with ``pyarrow.fs``): a folder of ``*.sql`` files holding the output of ``SHOW CREATE TABLE``
(several statements per file, separated by ``;``, are fine). ``SHOW CREATE TABLE`` does not name
the database, so a file's statements belong to the database named by

* the statement itself (``CREATE TABLE shop.orders ...``), else
* the file's folder below the root (``<root>/shop/orders.sql``), else
* the file name (``<root>/shop.sql``).

Each table becomes a schema with version 0 (in effect from the start; any DDL version wins) and
``source`` ``baseline``. Statements other than CREATE TABLE are ignored; an unreadable statement
is a configuration error naming the file.
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow.fs as pafs

from ticdc_lake.errors import ConfigError
from ticdc_lake.object_store import open_uri
from ticdc_lake.schema.ddl_statements import CreateTableStatement, UnknownStatement
from ticdc_lake.schema.inference import START_VERSION
from ticdc_lake.schema.table_schema import TableSchema

BASELINE_SOURCE = "baseline"


def read_baseline(uri: str) -> list[TableSchema]:
    """Every table of the baseline folder at ``uri``, sorted by (database, table)."""
    filesystem, root = _open(uri)
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(root, recursive=True))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"schema_baseline_uri {uri!r} cannot be listed: {exc}") from exc
    found: dict[tuple[str, str], tuple[str, TableSchema]] = {}
    for info in sorted(infos, key=lambda i: i.path):
        if info.type != pafs.FileType.File or not info.base_name.endswith(".sql"):
            continue
        relative = info.path[len(root) :].strip("/")
        folder = relative.rpartition("/")[0]
        database = folder.split("/")[-1] if folder else info.base_name.removesuffix(".sql")
        with filesystem.open_input_stream(info.path) as stream:
            text = stream.read().decode("utf-8")
        for schema in baseline_schemas(text, database, f"{uri.rstrip('/')}/{relative}"):
            name = (schema.database, schema.table)
            if name in found:
                raise ConfigError(
                    f"schema baseline: table {schema.database}.{schema.table} is defined in {found[name][0]} and in "
                    f"{uri.rstrip('/')}/{relative}; keep one SHOW CREATE TABLE statement per table"
                )
            found[name] = (f"{uri.rstrip('/')}/{relative}", schema)
    return [found[name][1] for name in sorted(found)]


def baseline_schemas(text: str, database: str, where: str) -> list[TableSchema]:
    """The tables one baseline file's statements create (``database`` for unqualified names)."""
    from ticdc_lake.schema.ddl_parser import parse_ddl  # sqlglot (about 1 s) loads only where a baseline is read

    schemas = []
    for statement in parse_ddl(text, database):
        if isinstance(statement, UnknownStatement) and statement.may_change_schema:
            raise ConfigError(
                f"schema baseline file {where}: cannot read statement {statement.sql!r}: {statement.reason}; fix the "
                "file (it must hold SHOW CREATE TABLE output) or remove it"
            )
        if isinstance(statement, CreateTableStatement):
            schemas.append(replace(statement.schema, version=START_VERSION, source=BASELINE_SOURCE))
    return schemas


def _open(uri: str) -> tuple[pafs.FileSystem, str]:
    if "://" not in uri and not uri.startswith("/"):
        raise ConfigError(f"schema_baseline_uri {uri!r} is neither an absolute path nor a URI (file://, s3://)")
    try:
        return open_uri(uri)  # s3:// settings from the environment (docs/object-storage.md)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"schema_baseline_uri {uri!r} cannot be opened: {exc}") from exc
