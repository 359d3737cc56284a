"""Partition dispatch of row events (TiCDC ``sink.dispatchers``), protocol-free.

TiCDC hashes with its own CRC32-based "position inertia" hasher. We use ``zlib.crc32`` over a
documented byte layout instead: a deterministic stand-in with the same properties that matter
to a consumer (all rows of a table, or of a key, land in one partition; the choice is stable), not
TiCDC's exact partition numbers.

* ``table`` (TiCDC's default): ``crc32(database \\0 table) % partitions``.
* ``index-value``: ``crc32(database \\0 table \\0 col1 \\0 text1 \\0 col2 \\0 text2 ...) %
  partitions`` over the handle-key columns, with :func:`key_value_bytes` as the value text.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum

from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.column_types import Value


class DispatchRule(StrEnum):
    TABLE = "table"
    INDEX_VALUE = "index-value"


def key_value_bytes(value: Value) -> bytes:
    """The bytes hashed for one key value: its plain text (bytes as they are, NULL as empty)."""
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, Decimal):
        return format(value, "f").encode()
    if isinstance(value, datetime):
        return value.isoformat(sep=" ").encode()
    if isinstance(value, date):
        return value.isoformat().encode()
    return str(value).encode()


def table_partition(database: str, table: str, partitions: int) -> int:
    return zlib.crc32(database.encode() + b"\0" + table.encode()) % partitions


def index_value_partition(schema: TableSchema, row: Mapping[str, Value], partitions: int) -> int:
    data = schema.database.encode() + b"\0" + schema.table.encode()
    for name in schema.handle_key():
        data += b"\0" + name.encode() + b"\0" + key_value_bytes(row[name])
    return zlib.crc32(data) % partitions


def row_partition(rule: DispatchRule, schema: TableSchema, row: Mapping[str, Value], partitions: int) -> int:
    """The partition of a row event; ``row`` is the new image, or the old one for DELETE."""
    if partitions < 1:
        raise ValueError(f"a topic needs at least one partition, got {partitions}")
    if rule is DispatchRule.TABLE:
        return table_partition(schema.database, schema.table, partitions)
    return index_value_partition(schema, row, partitions)
