"""Merge planning: the typed projection and the MERGE statement for one target table.

Values travel as canonical text (``docs/canonical-values.md``); this module turns each into
its Iceberg type with ``try_`` casts, so a value Iceberg cannot hold (a MySQL zero date) becomes
NULL and is counted instead of failing the whole merge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from ticdc_lake.identifiers import quote, sql_string

OP_COLUMN = "__ticdc_lake_op__"
BAD_VALUES_COLUMN = "__ticdc_lake_unrepresentable__"

_SIMPLE_CASTS = {
    "int": "INT",
    "long": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "date": "DATE",
    "timestamp": "TIMESTAMP_NTZ",
    "timestamptz": "TIMESTAMP",
}


def spark_type(iceberg_type: str) -> str:
    """The Spark SQL type for an Iceberg type name from ``type_mapping.iceberg_type``."""
    if iceberg_type in _SIMPLE_CASTS:
        return _SIMPLE_CASTS[iceberg_type]
    if iceberg_type == "string":
        return "STRING"
    if iceberg_type == "binary":
        return "BINARY"
    if iceberg_type.startswith("decimal("):
        return iceberg_type.upper()
    raise ValueError(f"no Spark type for Iceberg type {iceberg_type!r}")


def iceberg_type_of(spark_simple_string: str) -> str:
    """The Iceberg type name of a Spark column type (``DataType.simpleString()``): the inverse of
    :func:`spark_type`; a name it does not know is returned as it is."""
    name = spark_simple_string.lower()
    for iceberg, spark in _SIMPLE_CASTS.items():
        if spark.lower() == name:
            return iceberg
    return name


def bound_literal(value: object, iceberg_type: str) -> str | None:
    """A SQL literal of ``value`` (a key column's min or max in the MERGE source) for the target's
    type, or None where a literal could differ from the stored value (floats, times, binary)."""
    if iceberg_type in ("int", "long") and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if iceberg_type.startswith("decimal(") and isinstance(value, Decimal):
        return f"CAST({sql_string(str(value))} AS {spark_type(iceberg_type)})"
    if iceberg_type == "string" and isinstance(value, str):
        return sql_string(value)
    return None


def typed_value(text_expr: str, iceberg_type: str) -> str:
    """SQL turning a canonical-text expression into the Iceberg type (NULL when impossible)."""
    if iceberg_type == "string":
        return text_expr
    if iceberg_type == "binary":
        return f"try_to_binary({text_expr}, 'base64')"
    return f"try_cast({text_expr} AS {spark_type(iceberg_type)})"


@dataclass(frozen=True, slots=True)
class TargetColumn:
    name: str
    iceberg_type: str


def typed_projection(image_expr: str, columns: Sequence[TargetColumn]) -> list[str]:
    """SELECT items: one typed column per target column, plus the count of unrepresentable values."""
    typed, bad = typed_items(image_expr, columns)
    named = [f"{value} AS {quote(col.name)}" for col, value in zip(columns, typed, strict=True)]
    return [*named, f"{bad} AS {BAD_VALUES_COLUMN}"]


def typed_items(image_expr: str, columns: Sequence[TargetColumn]) -> tuple[list[str], str]:
    """:func:`typed_projection`'s expressions unnamed: per target column its typed value, and the
    count of unrepresentable values (a non-NULL text whose typed value is NULL)."""
    typed_values: list[str] = []
    bad_parts: list[str] = []
    for col in columns:
        text = f"{image_expr}[{sql_string(col.name)}]"
        typed = typed_value(text, col.iceberg_type)
        typed_values.append(typed)
        if typed != text:
            bad_parts.append(f"CASE WHEN {text} IS NOT NULL AND {typed} IS NULL THEN 1 ELSE 0 END")
    return typed_values, f"({' + '.join(bad_parts) if bad_parts else '0'})"


def merge_statement(
    target: str,
    source_view: str,
    columns: Sequence[TargetColumn],
    key: Sequence[str],
    bounds: Mapping[str, tuple[str, str]] | None = None,
) -> str:
    """One MERGE applying net changes: delete where the source says so, else upsert the full row.

    With a key, rows match on key equality (no casts on the target side, so Iceberg can prune);
    without one (multiset tables) on null-safe equality of every column. ``bounds``: per key
    column, SQL literals of the source's lowest and highest value; the range on the target side
    of the condition is pushed into the target scan, where Iceberg skips data files by their
    column bounds (``docs/apply-performance.md``).
    """
    if key:
        condition = " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in key)
        for k, (low, high) in (bounds or {}).items():
            condition += f" AND t.{quote(k)} >= {low} AND t.{quote(k)} <= {high}"
    else:
        condition = " AND ".join(f"t.{quote(c.name)} <=> s.{quote(c.name)}" for c in columns)
    names = [quote(c.name) for c in columns]
    updates = ", ".join(f"t.{n} = s.{n}" for n in names)
    op = quote(OP_COLUMN)
    return (
        f"MERGE INTO {target} t USING {source_view} s ON {condition}\n"
        f"WHEN MATCHED AND s.{op} = 'D' THEN DELETE\n"
        f"WHEN MATCHED THEN UPDATE SET {updates}\n"
        f"WHEN NOT MATCHED AND s.{op} <> 'D' THEN INSERT ({', '.join(names)}) "
        f"VALUES ({', '.join('s.' + n for n in names)})"
    )


def multiset_merge_statement(target: str, source_view: str, columns: Sequence[TargetColumn]) -> str:
    """One MERGE for a table without a key: every copy of a touched row image is deleted (the 'D'
    source row, one per image, matches all of them) and the copies it must have are inserted ('I')."""
    names = [quote(c.name) for c in columns]
    op = quote(OP_COLUMN)
    condition = " AND ".join(f"t.{n} <=> s.{n}" for n in names)
    return (
        f"MERGE INTO {target} t USING {source_view} s ON {condition} AND s.{op} = 'D'\n"
        f"WHEN MATCHED THEN DELETE\n"
        f"WHEN NOT MATCHED AND s.{op} = 'I' THEN INSERT ({', '.join(names)}) "
        f"VALUES ({', '.join('s.' + n for n in names)})"
    )
