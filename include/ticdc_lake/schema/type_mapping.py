"""MySQL/TiDB column type → Iceberg type, the default mapping (``docs/type-mapping.md``).

Type names are Iceberg's own type strings (``int``, ``long``, ``decimal(P,S)``, ``timestamptz``),
so the apply stage can hand them to pyiceberg or Spark DDL unchanged.
"""

from __future__ import annotations

import re

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema

#: Largest decimal precision Iceberg can hold.
MAX_DECIMAL_PRECISION = 38

#: Types whose Iceberg type depends on nothing but the name (binary strings are recognised by
#: the ``binary``/``blob`` substring, see :func:`iceberg_type`).
FIXED_TYPES: dict[str, str] = {
    "tinyint": "int",
    "smallint": "int",
    "mediumint": "int",
    "year": "int",
    "float": "float",
    "double": "double",
    "bit": "long",
    "char": "string",
    "varchar": "string",
    "var_string": "string",
    "tinytext": "string",
    "text": "string",
    "mediumtext": "string",
    "longtext": "string",
    "json": "string",
    "enum": "string",
    "set": "string",
    "vector": "string",
    "time": "string",
    "date": "date",
    "datetime": "timestamp",
    "timestamp": "timestamptz",
}
#: Types whose Iceberg type also depends on the column's attributes.
ATTRIBUTE_TYPES = frozenset({"int", "bigint", "decimal", "numeric"})

_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def is_binary_type(mysql_type: str) -> bool:
    """BINARY, VARBINARY and the BLOB family, decided on the type name (never the charset)."""
    return "binary" in mysql_type or "blob" in mysql_type


def iceberg_type(column: ColumnSchema, *, table: str | None = None) -> str:
    """The Iceberg type of ``column``; :class:`SchemaError` when the MySQL type has no mapping.

    ``table`` (``db.table``) only makes the error message more precise.
    """
    mysql_type = column.mysql_type.lower()
    fixed = FIXED_TYPES.get(mysql_type)
    if fixed is not None:
        return fixed
    if is_binary_type(mysql_type):
        return "binary"
    if mysql_type == "int":
        return "long" if column.unsigned else "int"
    if mysql_type == "bigint":
        return "decimal(20,0)" if column.unsigned else "long"
    if mysql_type in ("decimal", "numeric"):
        return _decimal_type(column, table)
    where = f" of table {table}" if table else ""
    raise SchemaError(
        f"column {column.name!r}{where} has MySQL type {column.mysql_type!r}, which has no Iceberg "
        "mapping; exclude the table from the pipeline (target.exclude) or ask for the type to be "
        "supported"
    )


def _decimal_type(column: ColumnSchema, table: str | None) -> str:
    precision = column.length
    scale = column.scale or 0
    if precision is None or precision <= 0 or precision > MAX_DECIMAL_PRECISION:
        return "string"
    if scale > precision:
        where = f" of table {table}" if table else ""
        raise SchemaError(
            f"column {column.name!r}{where} is DECIMAL({precision},{scale}): the scale exceeds the "
            "precision, so the table schema is inconsistent; check the DDL or BOOTSTRAP that announced it"
        )
    return f"decimal({precision},{scale})"


def is_lossless_widening(old: str, new: str) -> bool:
    """True when Iceberg can change a column from ``old`` to ``new`` keeping every value.

    Exactly Iceberg's allowed promotions: ``int`` → ``long``, ``float`` → ``double`` and
    ``decimal(P,S)`` → ``decimal(P2,S)`` with ``P2 > P``. Identical types are no widening: False.
    """
    old_type = old.strip().lower()
    new_type = new.strip().lower()
    if (old_type, new_type) in (("int", "long"), ("float", "double")):
        return True
    old_decimal = _DECIMAL.fullmatch(old_type)
    new_decimal = _DECIMAL.fullmatch(new_type)
    if old_decimal is None or new_decimal is None:
        return False
    old_precision, old_scale = int(old_decimal[1]), int(old_decimal[2])
    new_precision, new_scale = int(new_decimal[1]), int(new_decimal[2])
    return new_scale == old_scale and old_precision < new_precision <= MAX_DECIMAL_PRECISION
