"""TiCDC ``avro`` writer schemas and column values → canonical text (docs/protocols.md, docs/canonical-values.md).

TiCDC builds one Avro record per table version (``pkg/sink/codec/avro/avro.go``,
``columns2AvroSchema``/``columnToAvroSchema``): record ``name`` = the sanitised table name,
``namespace`` = ``<sanitised changefeed namespace>.<sanitised database>`` (``getAvroNamespace``),
one field per column named by ``common.SanitizeName`` (``pkg/sink/codec/common/helper.go``). The
original column name is **not** kept anywhere in the schema, so names with characters outside
``[A-Za-z0-9_]`` (or a leading digit) arrive changed: ``中文`` → ``__``, ``1a`` → ``_1a``.

Each column field's type is ``{"type": <avro type>, "connect.parameters": {"tidb_type": …}}``
(plus ``logicalType``/``precision``/``scale`` for precise DECIMAL, ``length`` for BIT and
``allowed`` for ENUM/SET). A nullable column is a two-branch union with ``"null"`` first when the
column default is NULL, else second (``[T, "null"]``); decimals are always ``["null", T]``.

Values (``columnToAvroData``) and their canonical texts (``docs/canonical-values.md``):

=================  ===================  ============================================================
``tidb_type``      Avro                 canonical text
=================  ===================  ============================================================
INT                int                  integer (TINYINT … INT share this type: int32 bounds)
INT UNSIGNED       int / long (INT)     integer, 0 … 2^32-1
BIGINT             long                 integer
BIGINT UNSIGNED    long / string        ``long`` is ``int64(u)`` (two's complement), read back as
                                        unsigned; ``string`` with ``avro-bigint-unsigned-handling-
                                        mode=string``
FLOAT / DOUBLE     float / double       Go's ``strconv.FormatFloat(v, 'f', -1, 32|64)``, as the
                                        Simple Avro decoder writes it
DECIMAL            bytes+decimal /      unscaled two's-complement big-endian integer written with
                   string               exactly ``scale`` fraction digits (``precise`` mode), or the
                                        text as sent (``avro-decimal-handling-mode=string``)
TEXT               string               the string
BLOB               bytes                standard base64
BIT                bytes                big-endian minimal bytes → the unsigned integer
ENUM / SET         string               member name(s), as sent
JSON / VECTOR      string               the string
DATE/DATETIME/TIME string               checked texts, fraction digits as TiDB wrote them
TIMESTAMP          string               TiCDC server wall time (``codec.server_time_zone``) → UTC
YEAR               int                  integer, 0 or up to 2155
=================  ===================  ============================================================
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from zoneinfo import ZoneInfo

from ticdc_lake.canonical import (
    MAX_UNSIGNED_BIGINT,
    YEAR_BOUNDS,
    bit_bounds,
    date_text,
    datetime_text,
    decimal_text,
    integer_text,
    time_text,
    timestamp_utc_text,
)
from ticdc_lake.protocols.common import go_float_text

_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT32 = (0, (1 << 32) - 1)

#: ``tidb_type`` → the Avro types TiCDC writes for it (``columnToAvroSchema``). ``decimal`` is
#: the ``bytes`` type with ``logicalType: decimal``. FLOAT also accepts ``double``: the design
#: document (2022-05-12-ticdc-avro-protocol-refactor.md) says FLOAT/DOUBLE → double.
ALLOWED_AVRO_TYPES: dict[str, frozenset[str]] = {
    "INT": frozenset({"int"}),
    "INT UNSIGNED": frozenset({"int", "long"}),
    "BIGINT": frozenset({"long"}),
    "BIGINT UNSIGNED": frozenset({"long", "string"}),
    "FLOAT": frozenset({"float", "double"}),
    "DOUBLE": frozenset({"double"}),
    "DECIMAL": frozenset({"decimal", "string"}),
    "TEXT": frozenset({"string"}),
    "BLOB": frozenset({"bytes"}),
    "BIT": frozenset({"bytes"}),
    "ENUM": frozenset({"string"}),
    "SET": frozenset({"string"}),
    "JSON": frozenset({"string"}),
    "DATE": frozenset({"string"}),
    "DATETIME": frozenset({"string"}),
    "TIMESTAMP": frozenset({"string"}),
    "TIME": frozenset({"string"}),
    "YEAR": frozenset({"int"}),
    "TiDBVECTORFloat32": frozenset({"string"}),
}
_PRIMITIVES = frozenset({"int", "long", "float", "double", "string", "bytes", "boolean"})

Converter = Callable[[object], str]


@dataclass(frozen=True, slots=True)
class AvroColumn:
    """One column field of a TiCDC writer schema."""

    #: The Avro field name: the sanitised column name.
    name: str
    #: ``connect.parameters.tidb_type`` (``INT UNSIGNED``, ``TEXT``, ``BLOB``, …).
    tidb_type: str
    #: ``int``, ``long``, ``float``, ``double``, ``string``, ``bytes`` or ``decimal``.
    avro_type: str
    nullable: bool
    #: Where ``"null"`` is in a nullable union: 0 (``["null", T]``) or 1 (``[T, "null"]``).
    null_branch: int | None
    precision: int | None = None
    scale: int | None = None
    #: BIT display length (``connect.parameters.length``).
    length: int | None = None
    #: ENUM/SET members as TiCDC wrote them (``allowed``, commas inside members escaped ``\\,``).
    allowed: str | None = None


def parse_column(field: Mapping[str, Any]) -> AvroColumn:
    """An :class:`AvroColumn` from one field of a TiCDC record; ValueError naming the problem."""
    name = field.get("name")
    if not isinstance(name, str):
        raise ValueError(f"a field has no string 'name' ({_show(name)})")
    spec = field.get("type")
    nullable, null_branch = False, None
    if isinstance(spec, list):
        if len(spec) != 2 or spec.count("null") != 1:
            raise ValueError(f'field {name!r}: a union must be two branches, one of them "null", got {_show(spec)}')
        null_branch = spec.index("null")
        nullable, spec = True, spec[1 - null_branch]
    if not isinstance(spec, dict):
        raise ValueError(
            f'field {name!r}: type {_show(spec)} carries no "connect.parameters" with a tidb_type, '
            "so it is not a TiCDC column"
        )
    base = spec.get("type")
    parameters = spec.get("connect.parameters")
    if not isinstance(parameters, dict) or not isinstance(parameters.get("tidb_type"), str):
        raise ValueError(f'field {name!r}: type has no "connect.parameters"."tidb_type" string')
    tidb_type: str = parameters["tidb_type"]
    avro_type = "decimal" if base == "bytes" and spec.get("logicalType") == "decimal" else base
    if not isinstance(avro_type, str) or avro_type not in _PRIMITIVES | {"decimal"}:
        raise ValueError(f"field {name!r}: unsupported Avro type {_show(base)}")
    allowed_types = ALLOWED_AVRO_TYPES.get(tidb_type)
    if allowed_types is None:
        raise ValueError(f"field {name!r}: unknown tidb_type {tidb_type!r} (known: {', '.join(ALLOWED_AVRO_TYPES)})")
    if avro_type not in allowed_types:
        raise ValueError(
            f"field {name!r}: tidb_type {tidb_type} is never written as Avro {avro_type} "
            f"(TiCDC writes {' or '.join(sorted(allowed_types))})"
        )
    column = AvroColumn(name, tidb_type, avro_type, nullable, null_branch, allowed=_string_param(parameters, "allowed"))
    if avro_type == "decimal":
        precision, scale = spec.get("precision"), spec.get("scale", 0)
        if not isinstance(precision, int) or not isinstance(scale, int) or not 0 <= scale <= precision:
            raise ValueError(f"field {name!r}: decimal needs integer precision >= scale >= 0, got {precision}, {scale}")
        column = replace(column, precision=precision, scale=scale)
    if tidb_type == "BIT":
        length = _string_param(parameters, "length")
        column = replace(column, length=int(length) if length is not None and length.isdigit() else None)
    return column


def _string_param(parameters: Mapping[str, Any], key: str) -> str | None:
    value = parameters.get(key)
    return value if isinstance(value, str) else None


def converter_for(column: AvroColumn, zone: ZoneInfo) -> Converter:
    """The function that turns one decoded (non-null) value of ``column`` into canonical text."""
    tidb_type, avro_type = column.tidb_type, column.avro_type
    if tidb_type in ("INT", "INT UNSIGNED", "BIGINT", "YEAR"):
        bounds = {"INT": _INT32, "INT UNSIGNED": _UINT32, "BIGINT": _INT64, "YEAR": YEAR_BOUNDS}[tidb_type]
        return _integer(avro_type, *bounds)
    if tidb_type == "BIGINT UNSIGNED":
        return _unsigned_bigint if avro_type == "long" else _text(lambda v: integer_text(v, 0, MAX_UNSIGNED_BIGINT))
    if tidb_type in ("FLOAT", "DOUBLE"):
        return _float(avro_type)
    if tidb_type == "DECIMAL":
        return _decimal(column.scale or 0) if avro_type == "decimal" else _text(decimal_text)
    if tidb_type == "BLOB":
        return _blob
    if tidb_type == "BIT":
        return _bit(column.length)
    checks: dict[str, Callable[[str], str]] = {
        "DATE": date_text,
        "DATETIME": datetime_text,
        "TIME": time_text,
        "TIMESTAMP": lambda text: timestamp_utc_text(text, zone),
    }
    return _text(checks.get(tidb_type, _same))


def describe_value(value: object) -> str:
    """A short description of a decoded Avro value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {value}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"float/double {value!r}"
    if isinstance(value, bytes):
        return f"bytes of length {len(value)}"
    if isinstance(value, str):
        return f'string "{value if len(value) <= 40 else value[:40] + "…"}"'
    return type(value).__name__


def _expected(what: str, value: object) -> ValueError:
    return ValueError(f"expected Avro {what}, got {describe_value(value)}")


def _same(text: str) -> str:
    return text


def _integer(avro_type: str, low: int, high: int) -> Converter:
    def convert(value: object) -> str:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _expected(avro_type, value)
        if not low <= value <= high:
            raise ValueError(f"{value} is outside the range {low}..{high}")
        return str(value)

    return convert


def _unsigned_bigint(value: object) -> str:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _expected("long", value)
    return str(value & MAX_UNSIGNED_BIGINT)


def _float(avro_type: str) -> Converter:
    bits = 32 if avro_type == "float" else 64

    def convert(value: object) -> str:
        if not isinstance(value, float):
            raise _expected(avro_type, value)
        return go_float_text(value, bits)

    return convert


def _decimal(scale: int) -> Converter:
    def convert(value: object) -> str:
        if not isinstance(value, bytes):
            raise _expected("bytes (decimal)", value)
        if not value:
            raise ValueError("a decimal needs at least one byte of unscaled value")
        unscaled = int.from_bytes(value, "big", signed=True)
        digits = str(abs(unscaled)).rjust(scale + 1, "0")
        sign = "-" if unscaled < 0 else ""
        return f"{sign}{digits[: len(digits) - scale]}.{digits[len(digits) - scale :]}" if scale else sign + digits

    return convert


def _blob(value: object) -> str:
    if not isinstance(value, bytes):
        raise _expected("bytes", value)
    return base64.b64encode(value).decode("ascii")


def _bit(length: int | None) -> Converter:
    low, high = bit_bounds(length)

    def convert(value: object) -> str:
        if not isinstance(value, bytes):
            raise _expected("bytes", value)
        if not value:
            raise ValueError("a BIT value needs at least one byte")
        number = int.from_bytes(value, "big")
        if not low <= number <= high:
            raise ValueError(f"{number} (bytes {value.hex()}) is outside BIT({length}) range {low}..{high}")
        return str(number)

    return convert


def _text(check: Callable[[str], str]) -> Converter:
    def convert(value: object) -> str:
        if not isinstance(value, str):
            raise _expected("string", value)
        return check(value)

    return convert


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"
