"""Simple Avro column values → canonical text, a whole Arrow column at a time.

The vector twins of ``ticdc_lake.protocols.simple_avro_values.avro_converter_for``: the same
dispatch on the column's MySQL type, the same Avro branch of the ``data``/``old`` map values'
union, the same texts. A value of another branch than the one TiCDC writes for the type has no
twin: the scalar raises, but for a FLOAT/DOUBLE value of the other width, which it formats too
(``fastavro`` returns a Python float for both; TiCDC never sends it), so that is only declined.
Each twin says, row by row, whether it vouches for its text (``ok``); ``ok`` is never True
where the scalar converter raises or writes another text. It may be False where the scalar would
accept (the row then only costs the Python path):

* integers, YEAR, BIT: ``long`` checked against the type's bounds (exact, as ``integer_text`` of
  ``str(value)``); BIT, ENUM and SET read the long as unsigned (``value & MAX``) as the scalar does;
* ENUM and SET through ``simple_columns.enum_twin``/``set_twin`` (bitmasks and indexes of at
  least 9 * 10**18 go to Python; SET of more than 62 members has no twin);
* BIGINT UNSIGNED: the ``UnsignedBigint`` record (any long, read unsigned, no bound to check),
  or a string in canonical form within uint64 (``simple_columns.integer_twin``);
* FLOAT/DOUBLE: the ``float``/``double`` branch through ``avro_columns``' Go ``'f'`` text (NaN and
  infinities not ok: the scalar raises);
* binary strings: ``bytes`` as standard base64 (``avro_columns``);
* TIMESTAMP: the ``Timestamp`` record through ``simple_columns.timestamp_twin`` (same zone rules);
* every other type: a ``string`` through the Simple JSON twin of ``simple_columns.column_reader``,
  since the scalar hands the string to the JSON converter; types without such a twin get none.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.canonical import INTEGER_BITS, MAX_UNSIGNED_BIGINT, YEAR_BOUNDS, bit_bounds, integer_bounds
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.schema.type_mapping import is_binary_type
from ticdc_lake.spark.arrow_decode.avro_columns import base64_text as base64_twin
from ticdc_lake.spark.arrow_decode.avro_columns import float_text as float_twin
from ticdc_lake.spark.arrow_decode.debezium_columns import Canonical
from ticdc_lake.spark.arrow_decode.simple_columns import (
    MAX_SET_MEMBERS,
    TIMESTAMP_TYPE,
    column_reader,
    enum_twin,
    finish,
    integer_twin,
    set_twin,
    timestamp_twin,
)

#: Branches of the map values' union ``["null", "long", "float", "double", "string", "bytes",
#: Timestamp, UnsignedBigint]`` (``simple_message.avsc.json``).
NULL, LONG, FLOAT, DOUBLE, STRING, BYTES, TIMESTAMP, UNSIGNED = range(8)
#: The Arrow type each branch's values are read as (``Timestamp``: a struct of its two strings).
BRANCH_TYPES: dict[int, pa.DataType] = {
    LONG: pa.int64(),
    FLOAT: pa.float32(),
    DOUBLE: pa.float64(),
    STRING: pa.string(),
    BYTES: pa.binary(),
    TIMESTAMP: TIMESTAMP_TYPE,
    UNSIGNED: pa.int64(),
}
_STRING = pa.string()


@dataclass(frozen=True, slots=True)
class AvroTwin:
    """A column's twins by the union branch its scalar converter takes (values of ``BRANCH_TYPES[branch]``)."""

    branches: dict[int, Canonical]


def column_twin(column: ColumnSchema, server_time_zone: str) -> AvroTwin | None:
    """The twin of ``avro_converter_for(column, server_time_zone)``; None where the type has none."""
    mysql_type = column.mysql_type
    if mysql_type == "bigint" and column.unsigned:
        return AvroTwin({UNSIGNED: unsigned_twin, STRING: integer_twin(0, MAX_UNSIGNED_BIGINT)})
    if mysql_type in INTEGER_BITS:
        return AvroTwin({LONG: long_twin(*integer_bounds(mysql_type, column.unsigned))})
    if mysql_type == "year":
        return AvroTwin({LONG: long_twin(*YEAR_BOUNDS)})
    if mysql_type == "bit":
        return AvroTwin({LONG: unsigned_long_twin(*bit_bounds(column.length))})
    if mysql_type == "enum":
        return AvroTwin({LONG: as_unsigned_text(enum_twin(column.elements or ()))})
    if mysql_type == "set":
        if len(column.elements or ()) > MAX_SET_MEMBERS:
            return None
        return AvroTwin({LONG: as_unsigned_text(set_twin(column.elements or ()))})
    if mysql_type == "float":
        return AvroTwin({FLOAT: float_twin})
    if mysql_type == "double":
        return AvroTwin({DOUBLE: float_twin})
    if is_binary_type(mysql_type):
        return AvroTwin({BYTES: base64_twin})
    if mysql_type == "timestamp":
        return AvroTwin({TIMESTAMP: timestamp_twin(server_time_zone)})
    reader = column_reader(column, server_time_zone)
    if reader is None or reader.arrow_type != _STRING:
        return None
    return AvroTwin({STRING: reader.canonical})


def long_twin(low: int, high: int) -> Canonical:
    """``integer_text(str(value), low, high)`` of a signed long: the value's text within the bounds."""

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        inside = pc.and_(pc.greater_equal(values, pa.scalar(low, pa.int64())), pc.less_equal(values, high))
        return finish(values, inside, values.cast(_STRING))

    return canonical


def unsigned_long_twin(low: int, high: int) -> Canonical:
    """``integer_text(str(value & MAX), low, high)``: the long read as uint64, within the bounds."""

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        unsigned = _unsigned(values)
        inside = pc.and_(
            pc.greater_equal(unsigned, pa.scalar(low, pa.uint64())),
            pc.less_equal(unsigned, pa.scalar(high, pa.uint64())),
        )
        return finish(values, inside, unsigned.cast(_STRING))

    return canonical


def unsigned_twin(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``UnsignedBigint``: ``str(value & MAX)``, every long taken (no bound is checked)."""
    return finish(values, None, _unsigned(values).cast(_STRING))


def as_unsigned_text(twin: Canonical) -> Canonical:
    """``twin`` (of the JSON text) applied to ``str(value & MAX)`` of each long."""

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        return twin(_unsigned(values).cast(_STRING))

    return canonical


def _unsigned(values: pa.Array) -> pa.Array:
    """An int64 array's values as uint64 (two's complement: ``value & MAX``), nulls kept."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values.view(pa.uint64())
