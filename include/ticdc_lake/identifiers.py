"""Quoting of upstream identifiers in Spark SQL, and Iceberg names for upstream objects.

Upstream TiDB names may hold any character. Spark SQL takes them all once quoted
(:func:`quote`), but Iceberg namespace and table names also become catalog keys and warehouse
paths, where a few characters break things (measured with the JDBC catalog, Spark and pyiceberg;
``docs/identifiers.md``):

* ``.`` in a namespace: the JDBC catalog keeps namespaces dot-joined, so ``a.b`` is listed as
  ``a`` and looks like a child of namespace ``a``; table names ``.`` and ``..`` are path
  segments that point at the parent folder; pyiceberg's ``"ns.table"`` form splits on dots;
* ``/`` and ``\\`` are path separators (table ``a/b`` is stored under folder ``a``), ``:`` is
  refused by HDFS and read as a scheme by Hadoop paths;
* ``#`` and ``?`` end the path of a location URI: pyiceberg cannot read such a table;
* control characters (U+0000..U+001F, U+007F): Spark refuses NUL, pyiceberg loses a TAB;
* ``%`` is the escape character itself.

Exactly these are written as ``%XX`` (upper-case hex of the ASCII code, i.e. URL
percent-encoding of those characters only); every other character, non-ASCII included, is kept,
so readable names stay readable and the mapping is reversible (:func:`upstream_name`). Column
names need no mapping: every column name that was tried works in CREATE TABLE, MERGE, ALTER
TABLE and identifier fields once quoted, and reads back from pyiceberg.
"""

from __future__ import annotations

import re

from ticdc_lake.errors import SchemaError

#: The characters :func:`iceberg_table_name` and :func:`iceberg_namespace_name` escape.
ESCAPED_CHARACTERS = frozenset("%./\\:#?\x7f") | frozenset(chr(c) for c in range(0x20))

#: Table properties that hold the exact upstream names of a target table (for analysts and tools).
UPSTREAM_DATABASE_PROPERTY = "ticdc.upstream-database"
UPSTREAM_TABLE_PROPERTY = "ticdc.upstream-table"

_ESCAPE = re.compile(r"%([0-9A-F]{2})")


def quote(name: str) -> str:
    """Quote one identifier part for Spark SQL: backticks, embedded backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


def qualified(*parts: str) -> str:
    """A dotted, fully quoted multi-part name: ``quote(a).quote(b)...``."""
    return ".".join(quote(p) for p in parts)


def sql_string(value: str) -> str:
    """A Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _escape(upstream: str, kind: str) -> str:
    if not upstream:
        raise SchemaError(f"an upstream {kind} name is empty; MySQL and TiDB do not allow that, check the message")
    return "".join(f"%{ord(ch):02X}" if ch in ESCAPED_CHARACTERS else ch for ch in upstream)


def iceberg_table_name(upstream: str) -> str:
    """The Iceberg table name of upstream table ``upstream`` (the escaping in the module docstring)."""
    return _escape(upstream, "table")


def iceberg_namespace_name(upstream_database: str) -> str:
    """The ``{database}`` part of the Iceberg namespace of an upstream database (same escaping)."""
    return _escape(upstream_database, "database")


def iceberg_column_name(upstream: str) -> str:
    """The Iceberg column name of an upstream column: the name itself (no character needs escaping)."""
    return upstream


def upstream_name(iceberg_name: str) -> str:
    """The upstream name of an Iceberg table or namespace name made by this module (its inverse).

    Raises :class:`SchemaError` for a name the mapping cannot have produced: a ``%`` not followed
    by two upper-case hex digits naming an escaped character, or an escaped character left bare.
    """

    def unescape(match: re.Match[str]) -> str:
        ch = chr(int(match[1], 16))
        if ch not in ESCAPED_CHARACTERS:
            raise SchemaError(_not_mapped(iceberg_name, f"{match[0]!r} escapes {ch!r}, which is never escaped"))
        return ch

    bare = sorted({ch for ch in _ESCAPE.sub("", iceberg_name) if ch in ESCAPED_CHARACTERS})
    if bare or not iceberg_name:
        reason = f"it holds {', '.join(map(repr, bare))} unescaped" if bare else "it is empty"
        raise SchemaError(_not_mapped(iceberg_name, reason))
    return _ESCAPE.sub(unescape, iceberg_name)


def _not_mapped(iceberg_name: str, reason: str) -> str:
    return (
        f"Iceberg name {iceberg_name!r} was not made by ticdc_lake.identifiers ({reason}); read the upstream name "
        f"from the table property {UPSTREAM_TABLE_PROPERTY!r} instead (docs/identifiers.md)"
    )


def upstream_properties(database: str, table: str) -> dict[str, str]:
    """Table properties recording the exact upstream names, to set when a target table is created."""
    return {UPSTREAM_DATABASE_PROPERTY: database, UPSTREAM_TABLE_PROPERTY: table}


def table_comment(database: str, table: str) -> str:
    """A Spark SQL string literal commenting a target table with its upstream name, exactly."""
    return sql_string(f"TiCDC {qualified(database, table)}")  # MySQL quotes with backticks too
