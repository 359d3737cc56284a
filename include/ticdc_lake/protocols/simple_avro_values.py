"""Column values of the Simple protocol's Avro encoding (TiCDC
``pkg/sink/codec/simple/avro.go`` ``encodeValue4Avro``).

Each value is checked against the Avro branch TiCDC uses for its column type, then turned into the
JSON encoding's text and checked by the JSON decoder's converter
(:func:`ticdc_lake.protocols.simple_rows.converter_for`), so both encodings share one set of rules.
"""

from __future__ import annotations

import base64

from ticdc_lake.canonical import INTEGER_BITS, MAX_UNSIGNED_BIGINT
from ticdc_lake.protocols.common import go_float_text
from ticdc_lake.protocols.simple_rows import Converter, converter_for
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.schema.type_mapping import is_binary_type

NAMESPACE = "com.pingcap.simple.avro."


def avro_converter_for(column: ColumnSchema, server_time_zone: str) -> Converter:
    """The function that makes one Simple Avro value of ``column`` canonical.

    The Avro value is first checked against the branch TiCDC uses for the type, then turned into
    the JSON encoding's text and checked by the JSON decoder's converter (ranges, ENUM/SET
    members, TIMESTAMP zone), so both encodings share one set of rules.
    """
    text_converter = converter_for(column, server_time_zone)
    mysql_type = column.mysql_type
    if mysql_type == "bigint" and column.unsigned:
        return _unsigned_bigint(text_converter)
    if mysql_type in INTEGER_BITS or mysql_type == "year":
        return _long(text_converter, unsigned64=False)
    if mysql_type in ("bit", "enum", "set"):
        return _long(text_converter, unsigned64=True)
    if mysql_type == "float":
        return _float(32)
    if mysql_type == "double":
        return _float(64)
    if is_binary_type(mysql_type):
        return _bytes
    if mysql_type == "timestamp":
        return _timestamp(text_converter)
    return _string(text_converter)


def describe_avro(value: object) -> str:
    """A short description of a decoded Avro value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, tuple):
        return f"a {value[0]} record"
    if isinstance(value, int):
        return f"long {value}"
    if isinstance(value, float):
        return f"float/double {value!r}"
    if isinstance(value, bytes):
        return f"bytes of length {len(value)}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "…"
        return f'string "{shown}"'
    return type(value).__name__


def _expected(branch: str, value: object) -> ValueError:
    return ValueError(f"expected Avro {branch}, got {describe_avro(value)}")


def _long(text_converter: Converter, *, unsigned64: bool) -> Converter:
    def convert(value: object) -> str:
        if not isinstance(value, int):
            raise _expected("long", value)
        return text_converter(str(value & MAX_UNSIGNED_BIGINT if unsigned64 else value))

    return convert


def _unsigned_bigint(text_converter: Converter) -> Converter:
    def convert(value: object) -> str:
        if isinstance(value, tuple) and value[0] == NAMESPACE + "UnsignedBigint":
            return str(value[1]["value"] & MAX_UNSIGNED_BIGINT)
        if isinstance(value, str):  # the protocol document's table shows large values as text
            return text_converter(value)
        raise _expected(f"record {NAMESPACE}UnsignedBigint", value)

    return convert


def _float(bits: int) -> Converter:
    def convert(value: object) -> str:
        if not isinstance(value, float):
            raise _expected("float" if bits == 32 else "double", value)
        return go_float_text(value, bits)

    return convert


def _bytes(value: object) -> str:
    if not isinstance(value, bytes):
        raise _expected("bytes", value)
    return base64.b64encode(value).decode("ascii")


def _timestamp(text_converter: Converter) -> Converter:
    def convert(value: object) -> str:
        if not (isinstance(value, tuple) and value[0] == NAMESPACE + "Timestamp"):
            raise _expected(f"record {NAMESPACE}Timestamp", value)
        return text_converter(value[1])

    return convert


def _string(text_converter: Converter) -> Converter:
    def convert(value: object) -> str:
        if not isinstance(value, str):
            raise _expected("string", value)
        return text_converter(value)

    return convert
