"""What TiDB and TiCDC know about a column before any protocol encodes it.

Shared by the Debezium, Canal-JSON and Open Protocol encoders, and independent of every decoder:

* the MySQL type byte (docs/type-mapping.md) and TiCDC's column flag bits (``cdc/model/sink.go``
  ``ColumnFlagType``, set by ``TableInfo.initColumnsFlag`` in ``cdc/model/schema_storage.go``);
* TiDB's column flags that matter here (``ddl.processColumnFlags``: BIT gets UNSIGNED, YEAR gets
  ZEROFILL and therefore UNSIGNED; numeric, date and JSON columns have the charset ``binary``);
* the full type text ``ColumnInfo.GetTypeDesc`` (``FieldType.CompactStr`` + ``unsigned``);
* the mounter's text of string-valued types (``cdc/entry/mounter.go`` ``formatColVal``): DECIMAL
  with the column scale, DATE, DATETIME/TIMESTAMP with exactly fsp fraction digits (TIMESTAMP as
  wall time in the TiCDC server's zone), TIME and JSON as TiDB prints them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim.column_types import (
    INTEGER_TYPES,
    TEXT_TYPES,
    Value,
    decimal_text,
    display_length,
    format_datetime_text,
)

#: MySQL type byte per TiDB type name (``parser/mysql/type.go``).
TYPE_CODES: dict[str, int] = {
    "tinyint": 1,
    "smallint": 2,
    "int": 3,
    "float": 4,
    "double": 5,
    "timestamp": 7,
    "bigint": 8,
    "mediumint": 9,
    "date": 10,
    "time": 11,
    "datetime": 12,
    "year": 13,
    "varchar": 15,
    "varbinary": 15,
    "bit": 16,
    "json": 245,
    "decimal": 246,
    "enum": 247,
    "set": 248,
    "tinytext": 249,
    "tinyblob": 249,
    "mediumtext": 250,
    "mediumblob": 250,
    "longtext": 251,
    "longblob": 251,
    "text": 252,
    "blob": 252,
    "char": 254,
    "binary": 254,
}

FLAG_BINARY = 1
FLAG_HANDLE_KEY = 2
FLAG_PRIMARY_KEY = 8
FLAG_UNIQUE_KEY = 16
FLAG_MULTIPLE_KEY = 32
FLAG_NULLABLE = 64
FLAG_UNSIGNED = 128

#: TiDB's default display length and decimal per type (``mysql.GetDefaultFieldLengthAndDecimal``).
DEFAULT_LENGTH_AND_DECIMAL: dict[str, tuple[int, int]] = {
    "bit": (1, 0),
    "tinyint": (4, 0),
    "smallint": (6, 0),
    "mediumint": (9, 0),
    "int": (11, 0),
    "bigint": (20, 0),
    "double": (22, -1),
    "float": (12, -1),
    "decimal": (10, 0),
    "time": (10, 0),
    "date": (10, 0),
    "timestamp": (19, 0),
    "datetime": (19, 0),
    "year": (4, 0),
    "char": (1, 0),
    "binary": (1, 0),
    "varchar": (5, 0),
    "varbinary": (5, 0),
    "tinytext": (255, 0),
    "tinyblob": (255, 0),
    "text": (65535, 0),
    "blob": (65535, 0),
    "mediumtext": (16777215, 0),
    "mediumblob": (16777215, 0),
    "longtext": (4294967295, 0),
    "longblob": (4294967295, 0),
    "json": (4294967295, 0),
    "set": (-1, 0),
    "enum": (-1, 0),
}


def type_code(column: ColumnSchema) -> int:
    """The MySQL type byte of ``column`` (CHAR/BINARY share 254, VARCHAR/VARBINARY 15, …)."""
    try:
        return TYPE_CODES[column.mysql_type]
    except KeyError:
        raise SchemaError(f"column {column.name!r}: type {column.mysql_type!r} has no MySQL type code") from None


def has_binary_charset(column: ColumnSchema) -> bool:
    """TiDB gives every non-text column (numbers, dates, JSON, binary strings) the charset ``binary``."""
    if column.charset:
        return column.charset == "binary"
    return not (column.mysql_type in TEXT_TYPES or column.mysql_type in ("enum", "set"))


def is_unsigned(column: ColumnSchema) -> bool:
    """TiDB's UNSIGNED flag: declared, or implied for BIT and YEAR (``processColumnFlags``)."""
    return column.unsigned or column.mysql_type in ("bit", "year")


def has_zerofill(column: ColumnSchema) -> bool:
    """TiDB's ZEROFILL flag: only YEAR here (the simulator has no ZEROFILL columns)."""
    return column.mysql_type == "year"


def primary_key(schema: TableSchema) -> tuple[str, ...]:
    """The primary key columns in index order (empty when the table has none)."""
    for index in schema.indexes:
        if index.primary:
            return index.columns
    return ()


def pk_is_handle(schema: TableSchema) -> bool:
    """True when the primary key is one integer column: TiDB's row handle is its value."""
    key = primary_key(schema)
    column = schema.column(key[0]) if len(key) == 1 else None
    return column is not None and column.mysql_type in INTEGER_TYPES


def column_flags(schema: TableSchema, column: ColumnSchema) -> int:
    """TiCDC's flag bits of ``column`` (binary 1, handle 2, primary 8, unique 16, multiple 32,
    nullable 64, unsigned 128), marking every column of an index as ``initColumnsFlag`` does."""
    flags = FLAG_BINARY if has_binary_charset(column) else 0
    if column.nullable:
        flags |= FLAG_NULLABLE
    if is_unsigned(column):
        flags |= FLAG_UNSIGNED
    if column.name in schema.handle_key():
        flags |= FLAG_HANDLE_KEY
    for index in schema.indexes:
        if column.name not in index.columns:
            continue
        if index.primary:
            flags |= FLAG_PRIMARY_KEY
        elif index.unique:
            flags |= FLAG_UNIQUE_KEY
        # TiDB marks the first column of a plain index MultipleKey; TiCDC every column of a
        # multi-column index.
        if len(index.columns) > 1 or (not index.unique and not index.primary and index.columns[0] == column.name):
            flags |= FLAG_MULTIPLE_KEY
    return flags


def ordered_columns(schema: TableSchema, names: tuple[str, ...]) -> list[ColumnSchema]:
    """The columns named in ``names``, in table column order (how TiCDC walks a row)."""
    return [c for c in schema.columns if c.name in names]


def type_desc(column: ColumnSchema) -> str:
    """TiDB ``ColumnInfo.GetTypeDesc``: ``int(11)``, ``decimal(12,2)``, ``datetime(3)``,
    ``enum('a','b')``, ``bigint(20) unsigned``; YEAR and BIT never show ``unsigned``."""
    tp = column.mysql_type
    if tp in ("enum", "set"):
        members = "','".join(_output_format(e) for e in column.elements or ())
        text = f"{tp}('{members}')"
    elif tp in ("datetime", "timestamp", "time"):
        text = f"{tp}({column.fsp})" if column.fsp else tp
    elif tp == "decimal":
        text = f"decimal({display_length(column)},{column.scale or 0})"
    elif tp in INTEGER_TYPES or tp in ("bit", "char", "binary", "varchar", "varbinary", "year"):
        text = f"{tp}({display_length(column)})"
    else:
        text = tp  # float, double (no (M,D) in the simulator), date, TEXT/BLOB, JSON
    if column.unsigned and tp not in ("bit", "year"):
        text += " unsigned"
    return text


def _output_format(member: str) -> str:
    """TiDB ``format.OutputFormat`` of an ENUM/SET member inside ``'…'``."""
    return member.replace("'", "''").replace("\0", "\\0").replace("\n", "\\n").replace("\r", "\\r")


def mounter_text(column: ColumnSchema, value: Value, zone: ZoneInfo) -> str:
    """The string the TiCDC mounter hands encoders for DECIMAL, DATE, DATETIME, TIMESTAMP, TIME,
    JSON and text columns (TIMESTAMP as wall time in the server zone ``zone``)."""
    tp = column.mysql_type
    if tp == "decimal" and isinstance(value, Decimal):
        return decimal_text(column, value)
    if tp == "date" and isinstance(value, date) and not isinstance(value, datetime):
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if tp == "datetime" and isinstance(value, datetime):
        return format_datetime_text(value, column.fsp or 0)
    if tp == "timestamp" and isinstance(value, datetime):
        return format_datetime_text(value.astimezone(zone).replace(tzinfo=None), column.fsp or 0)
    if isinstance(value, str) and (tp in TEXT_TYPES or tp in ("time", "json")):
        return value
    raise SchemaError(f"column {column.name!r} ({column.type_text()}): cannot encode {value!r}")


def unsigned_int64(value: int) -> int:
    """Go ``int64(u)`` of a uint64: two's complement from 2^63 on (max → -1)."""
    return value - (1 << 64) if value >= 1 << 63 else value


@contextmanager
def table_context(database: str, table: str, commit_ts: int) -> Iterator[None]:
    """Prefix a SchemaError raised while encoding a row with the table and commit TSO."""
    try:
        yield
    except SchemaError as exc:
        where = f"{database}.{table}"
        if str(exc).startswith(where):
            raise
        raise SchemaError(f"{where} at commit_ts {commit_ts}: {exc}") from None
