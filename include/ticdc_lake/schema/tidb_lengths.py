"""TiDB's default display lengths (``flen``), for columns declared without one."""

from __future__ import annotations

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema

_SIGNED_INT_LENGTH = {"tinyint": 4, "smallint": 6, "mediumint": 9, "int": 11, "bigint": 20}
_FIXED = {
    "float": 12,
    "double": 22,
    "decimal": 10,
    "date": 10,
    "year": 4,
    "bit": 1,
    "char": 1,
    "binary": 1,
    "json": 4294967295,
}
#: TiDB's byte limits of the TEXT/BLOB family (also their default display length).
LOB_BYTES = {
    "tinytext": 255,
    "text": 65535,
    "mediumtext": 16777215,
    "longtext": 4294967295,
    "tinyblob": 255,
    "blob": 65535,
    "mediumblob": 16777215,
    "longblob": 4294967295,
}


def tidb_default_length(column: ColumnSchema) -> int:
    """TiDB's display length (``flen``) for a column declared without one.

    Integers: tinyint 4, smallint 6, mediumint 9, int 11, bigint 20 (one less when unsigned,
    except bigint). DATETIME/TIMESTAMP 19, plus 1 + fsp with a fraction; DECIMAL 10; FLOAT 12;
    DOUBLE 22; JSON and LONGTEXT 4294967295; ENUM the longest member; SET all members joined.
    """
    tp = column.mysql_type
    if tp in _SIGNED_INT_LENGTH:
        signed = _SIGNED_INT_LENGTH[tp]
        return signed - 1 if column.unsigned and tp != "bigint" else signed
    fsp = column.fsp or 0
    fraction = fsp + 1 if fsp else 0
    if tp in _FIXED:
        return _FIXED[tp]
    if tp in ("datetime", "timestamp"):
        return 19 + fraction
    if tp == "time":
        return 10 + fraction
    if tp in LOB_BYTES:
        return LOB_BYTES[tp]
    if tp == "enum":
        return max((len(e) for e in column.elements or ()), default=0)
    if tp == "set":
        return len(",".join(column.elements or ()))
    raise SchemaError(f"column {column.name!r}: type {tp!r} needs an explicit length")
