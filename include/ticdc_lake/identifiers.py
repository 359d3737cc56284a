"""Quoting of upstream identifiers in Spark SQL, and Iceberg names for upstream objects."""

from __future__ import annotations


def quote(name: str) -> str:
    """Quote one identifier part for Spark SQL: backticks, embedded backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


def qualified(*parts: str) -> str:
    """A dotted, fully quoted multi-part name: ``quote(a).quote(b)...``."""
    return ".".join(quote(p) for p in parts)


def sql_string(value: str) -> str:
    """A Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
