"""One model value as pyiceberg returns it from ``scan().to_arrow().to_pylist()``.

Written from the type mapping of docs/type-mapping.md only, independently of every decoder:

| MySQL | Iceberg | Python value |
|---|---|---|
| tinyint, smallint, mediumint, int (signed), year | int | int |
| int unsigned, bigint | long | int |
| bigint unsigned | decimal(20,0) | Decimal, scale 0 |
| float / double | float / double | float |
| decimal(p,s), p <= 38 | decimal(p,s) | Decimal with scale s |
| decimal(p,s), p > 38 | string | exact text |
| char, varchar, text family, json, enum, set | string | str (enum/set as member names) |
| binary, varbinary, blob family | binary | bytes |
| bit(n) | long | int |
| date | date | date |
| datetime(fsp) | timestamp | naive datetime (microseconds) |
| timestamp(fsp) | timestamptz | UTC-aware datetime |
| time | string | the TiDB text |
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema

IcebergValue = int | Decimal | float | str | bytes | date | datetime | None
_SMALL_INTS = frozenset({"tinyint", "smallint", "mediumint", "int", "year", "bit"})
_STRINGS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json", "enum", "set", "time"})
_BINARIES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})


def expected_iceberg_value(column: ColumnSchema, value: object) -> IcebergValue:
    """One model value converted to the Python value pyiceberg returns for its Iceberg column."""
    if value is None:
        return None
    tp = column.mysql_type
    where = f"column {column.name!r} ({column.type_text()})"
    if tp in _SMALL_INTS or tp == "bigint":
        if not isinstance(value, int) or isinstance(value, bool):
            raise SchemaError(f"{where}: model value {value!r} is not an int")
        if tp == "bigint" and column.unsigned:
            return Decimal(value)
        return value
    if tp in ("float", "double"):
        if not isinstance(value, float):
            raise SchemaError(f"{where}: model value {value!r} is not a float")
        return value
    if tp == "decimal":
        if not isinstance(value, Decimal):
            raise SchemaError(f"{where}: model value {value!r} is not a Decimal")
        quantized = value.quantize(Decimal(1).scaleb(-(column.scale or 0)))
        return quantized if (column.length or 10) <= 38 else format(quantized, "f")
    if tp in _STRINGS:
        if not isinstance(value, str):
            raise SchemaError(f"{where}: model value {value!r} is not a str")
        return value
    if tp in _BINARIES:
        if not isinstance(value, bytes):
            raise SchemaError(f"{where}: model value {value!r} is not bytes")
        return value
    if tp == "date":
        if not isinstance(value, date) or isinstance(value, datetime):
            raise SchemaError(f"{where}: model value {value!r} is not a date")
        return value
    if tp == "datetime":
        if not isinstance(value, datetime) or value.tzinfo is not None:
            raise SchemaError(f"{where}: model value {value!r} is not a naive datetime")
        return value
    if tp == "timestamp":
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise SchemaError(f"{where}: model value {value!r} is not an aware datetime")
        return value.astimezone(UTC)
    raise SchemaError(f"{where}: no Iceberg mapping for MySQL type {tp!r}")
