"""Decoder of the TiCDC Simple protocol, Avro encoding (protocol id ``simple-avro``).

Same message kinds and schema-memo rules as the JSON encoding (:mod:`.simple_json`); only the
bytes differ (REFERENCE §2.1, §2.6). Every value is one ``com.pingcap.simple.avro.Message`` in
the union schema ``message.json`` (copied to ``resources/simple_message.avsc.json``): the
union index 11 (byte ``0x16``), the ``type`` enum (WATERMARK ``00``, BOOTSTRAP ``02``, DDL
``04``, DML ``06``), the payload union index and the payload record. There is no Confluent
header and no registry.

Avro quirks handled here:

* ``TableSchema`` names the database ``database`` (JSON: ``schema``).
* ``dataType.decimal`` is only sent for DECIMAL: the fsp of DATETIME/TIMESTAMP/TIME is lost. It
  is recovered from ``length`` when that matches TiDB's display width (19 or 20 + fsp for
  DATETIME/TIMESTAMP, 10 or 11 + fsp for TIME), else left unknown (``None``). Values keep the
  fraction digits TiDB wrote, so canonical values never depend on it.
* Values are typed: integers, YEAR, BIT, ENUM index and SET bitmask are ``long`` (uint64 sent as
  int64, so BIT(64)/SET bitmasks ≥ 2^63 arrive negative and are read back as unsigned); BIGINT
  UNSIGNED is ``UnsignedBigint{value}`` in two's complement; FLOAT/DOUBLE are native and are
  printed as Go's ``strconv.FormatFloat(v, 'f', -1, 32|64)``, i.e. exactly the text the JSON
  encoding carries; binary strings are ``bytes`` (canonical: base64); TIMESTAMP is
  ``Timestamp{location, value}``.

Canonical values then go through the same per-type checks as the JSON decoder
(:func:`ticdc_lake.protocols.simple_json.converter_for`), so both encodings give identical row
images for the same upstream row.
"""

from __future__ import annotations

import base64
import io
import json
import math
import struct
from dataclasses import replace
from decimal import Decimal
from functools import lru_cache
from importlib.resources import files
from typing import Any, ClassVar

import fastavro

from ticdc_lake.canonical import INTEGER_BITS, MAX_UNSIGNED_BIGINT
from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, RawMessage, SourcePosition
from ticdc_lake.protocols.base import SchemaLookup, WholeValueDecoder
from ticdc_lake.protocols.compression import decompress
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.simple_json import converter_for
from ticdc_lake.protocols.simple_rows import Converter, ConverterCache, row_image
from ticdc_lake.protocols.simple_schema import table_schema_from_simple
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.schema.type_mapping import is_binary_type

PROTOCOL = "simple-avro"
PROTOCOL_VERSION = 1
SCHEMA_RESOURCE = "simple_message.avsc.json"
NAMESPACE = "com.pingcap.simple.avro."
#: Zig-zag varint of union index 11, the ``Message`` record: the first byte of every value.
MESSAGE_UNION_BYTE = 0x16
#: The ``type`` enum byte after 0x16 → message kind; DDL and BOOTSTRAP carry table schemas.
KIND_BYTES = {0x00: "WATERMARK", 0x02: "BOOTSTRAP", 0x04: "DDL", 0x06: "DML"}
_PAYLOADS = {"WATERMARK": "Watermark", "BOOTSTRAP": "Bootstrap", "DDL": "DDL", "DML": "DML"}
DML_TYPES = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
_FSP_BASE_WIDTH = {"datetime": 19, "timestamp": 19, "time": 10}
_INT64_BITS = 64


@lru_cache(maxsize=1)
def message_schema() -> Any:
    """The parsed Simple Avro schema (parsed once per process)."""
    text = files("ticdc_lake").joinpath("resources", SCHEMA_RESOURCE).read_text(encoding="utf-8")
    return fastavro.parse_schema(json.loads(text))


class SimpleAvroDecoder(WholeValueDecoder):
    """Simple protocol, Avro encoding. Caches per-table converters by (database, table, version)."""

    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, options: CodecOptions, resources: DecodeResources | None = None) -> None:
        super().__init__(options, resources)
        self._converters = ConverterCache(avro_converter_for)

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self._converters = ConverterCache(avro_converter_for)

    def value_may_carry_schema(self, value: bytes) -> bool:
        """True for BOOTSTRAP and DDL messages (the ``type`` byte after 0x16)."""
        return len(value) >= 2 and value[0] == MESSAGE_UNION_BYTE and value[1] in (0x02, 0x04)

    def decode(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        kind, payload = self._load(message)
        position = SourcePosition(message.topic, message.partition, message.offset, 0)
        if kind == "DML":
            return [self._dml(payload, message, position, schemas)]
        if kind == "WATERMARK":
            commit_ts = _uint64(payload["commitTs"])
            return [ChangeEvent(kind=EventKind.WATERMARK, position=position, commit_ts=commit_ts)]
        if kind == "BOOTSTRAP":
            return [_bootstrap(payload, position)]
        return [_ddl(payload, position)]

    def _load(self, message: RawMessage) -> tuple[str, dict[str, Any]]:
        if message.value is None:
            raise DecodeError(PROTOCOL, "the message has no value (a Kafka tombstone); Simple never sends one")
        value = decompress(message.value, self.options.compression, PROTOCOL, "the value")
        if not value or value[0] != MESSAGE_UNION_BYTE:
            got = f"byte 0x{value[0]:02x}" if value else "an empty value"
            raise DecodeError(
                PROTOCOL,
                f"the value must start with union index 11 (byte 0x16, record {NAMESPACE}Message), got {got}; "
                "Simple Avro values have no Confluent header (check that the pipeline's protocol and "
                "codec.compression match the changefeed)",
            )
        buffer = io.BytesIO(value)
        decoded: Any
        try:
            decoded = fastavro.schemaless_reader(
                buffer, message_schema(), return_record_name=True, return_record_name_override=True
            )
        except (EOFError, ValueError, IndexError, KeyError, TypeError, OverflowError, MemoryError) as exc:
            if isinstance(exc, EOFError) or buffer.tell() >= len(value):
                problem = f"the {len(value)}-byte value ends inside the record (truncated)"
            else:
                detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                problem = f"corrupt Avro data before byte {buffer.tell()} of {len(value)} ({detail})"
            raise DecodeError(PROTOCOL, f"value is not a valid {NAMESPACE}Message: {problem}") from None
        if buffer.tell() != len(value):
            raise DecodeError(
                PROTOCOL,
                f"value has {len(value) - buffer.tell()} bytes after the end of the {NAMESPACE}Message record",
            )
        record: dict[str, Any] = decoded[1]
        kind: str = record["type"]
        payload_name: str = record["payload"][0]
        payload: dict[str, Any] = record["payload"][1]
        if payload_name != NAMESPACE + _PAYLOADS[kind]:
            raise DecodeError(
                PROTOCOL,
                f"field 'type' says {kind} but field 'payload' holds a {payload_name} record",
            )
        version = payload["version"]
        if version != PROTOCOL_VERSION:
            raise DecodeError(
                PROTOCOL,
                f"unsupported protocol version {version} in field 'payload.version' of the {kind} message; "
                f"this decoder reads Simple protocol version {PROTOCOL_VERSION}",
            )
        return kind, payload

    def _dml(
        self, payload: dict[str, Any], message: RawMessage, position: SourcePosition, schemas: SchemaLookup
    ) -> ChangeEvent:
        kind = payload["type"]
        database, table = payload["database"], payload["table"]
        context = f"the {kind} message for table {database}.{table}"
        commit_ts = _uint64(payload["commitTs"])
        version = _uint64(payload["schemaVersion"])
        if payload["claimCheckLocation"] is not None:
            raise DecodeError(
                PROTOCOL,
                f"{context} is a claim-check reference (claimCheckLocation "
                f"{payload['claimCheckLocation']!r}): claim-check is not supported yet",
            )
        if payload["handleKeyOnly"]:
            raise DecodeError(
                PROTOCOL,
                "handle-key-only message: the full row must be read from upstream TiDB, which is not "
                f"configured (table {database}.{table}, commitTs {commit_ts})",
            )
        op = DML_TYPES[kind]
        new_row = _row_map(payload, "data", context, wanted=op is not Op.DELETE)
        old_row = _row_map(payload, "old", context, wanted=op is not Op.INSERT)
        event = ChangeEvent(
            kind=EventKind.DML,
            position=position,
            commit_ts=commit_ts,
            database=database,
            table=table,
            table_id=payload["tableID"],
            op=op,
            schema_version=version,
        )
        schema = schemas.get(database, table, version)
        if schema is None:
            event.status = EventStatus.PENDING
            # Binary payload: kept as standard base64 text.
            event.pending_payload = base64.b64encode(message.value or b"").decode("ascii")
            return event
        converters = self._converters.get(schema, database, table, version, self.options.server_time_zone)
        where = f"{database}.{table} (schema version {version})"
        if new_row is not None:
            event.after = row_image(PROTOCOL, new_row, "data", converters, schema, where)
        if old_row is not None:
            event.before = row_image(PROTOCOL, old_row, "old", converters, schema, where)
        return event


def _bootstrap(payload: dict[str, Any], position: SourcePosition) -> ChangeEvent:
    schema = table_schema_from_avro(payload["tableSchema"], source="simple-bootstrap")
    return ChangeEvent(
        kind=EventKind.BOOTSTRAP,
        position=position,
        commit_ts=0,
        database=schema.database,
        table=schema.table,
        table_id=schema.table_id,
        schema_version=schema.version,
        table_schema=schema,
    )


def _ddl(payload: dict[str, Any], position: SourcePosition) -> ChangeEvent:
    after = before = None
    if payload["tableSchema"] is not None:
        after = table_schema_from_avro(payload["tableSchema"], source="simple-ddl")
    if payload["preTableSchema"] is not None:
        before = table_schema_from_avro(payload["preTableSchema"], source="simple-ddl", field="preTableSchema")
    named = after or before
    return ChangeEvent(
        kind=EventKind.DDL,
        position=position,
        commit_ts=_uint64(payload["commitTs"]),
        database=named.database if named else None,
        table=named.table if named else None,
        table_id=named.table_id if named else None,
        schema_version=after.version if after else None,
        ddl_type=payload["type"],
        # Go writes an empty string when the DDL has no query text; JSON omits it.
        ddl_query=payload["sql"] or None,
        table_schema=after,
        pre_table_schema=before,
    )


def table_schema_from_avro(value: dict[str, Any], *, source: str, field: str = "tableSchema") -> TableSchema:
    """A decoded Avro ``TableSchema`` record → :class:`TableSchema` (same checks as the JSON one).

    The DATETIME/TIMESTAMP/TIME fsp, which the Avro encoding does not send, is recovered from
    the display length when that matches TiDB's width formula, else left ``None`` (unknown).
    """
    columns = []
    for column in value["columns"]:
        raw_type = column["dataType"]
        data_type = {key: item for key, item in raw_type.items() if item is not None}
        columns.append({**column, "dataType": data_type})
    document = {
        "schema": value["database"],
        "table": value["table"],
        "tableID": value["tableID"],
        "version": _uint64(value["version"]),
        "columns": columns,
        "indexes": value["indexes"],
    }
    schema = table_schema_from_simple(document, source=source, field=field, protocol=PROTOCOL)
    recovered = tuple(_with_fsp(column) for column in schema.columns)
    return replace(schema, columns=recovered)


def _with_fsp(column: ColumnSchema) -> ColumnSchema:
    base = _FSP_BASE_WIDTH.get(column.mysql_type)
    if base is None:
        return column
    length = column.length
    fsp: int | None = None
    if length == base:
        fsp = 0
    elif length is not None and base + 2 <= length <= base + 7:
        fsp = length - base - 1
    return replace(column, fsp=fsp)


def _row_map(payload: dict[str, Any], key: str, context: str, *, wanted: bool) -> dict[str, Any] | None:
    value: dict[str, Any] | None = payload[key]
    if not wanted:
        if value is not None:
            raise DecodeError(PROTOCOL, f"{context} carries field '{key}', which this message type never has")
        return None
    if value is None:
        raise DecodeError(PROTOCOL, f"{context} has no field '{key}' (it is null)")
    return value


def _uint64(value: int) -> int:
    """An Avro ``long`` that carries a Go uint64 (``int64(u)``): the unsigned value."""
    return value & MAX_UNSIGNED_BIGINT


# --------------------------------------------------------------------------------- values
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


def go_float_text(value: float, bits: int) -> str:
    """Go's ``strconv.FormatFloat(value, 'f', -1, bits)``: the shortest digits that read back
    as the same float32/float64, in fixed notation (never an exponent)."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number (TiCDC sends 0 for NaN and infinities)")
    digits = Decimal(repr(value)) if bits == _INT64_BITS else _shortest_float32(value)
    text = format(digits, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _shortest_float32(value: float) -> Decimal:
    """The shortest decimal that rounds (to nearest, ties to even) to the float32 ``value``;
    among equally short ones, the closest to it."""
    pattern = struct.unpack("<I", struct.pack("<f", value))[0]
    if pattern & 0x7FFFFFFF == 0:
        return Decimal("-0" if pattern >> 31 else "0")
    magnitude = pattern & 0x7FFFFFFF
    exact = Decimal(_f32(magnitude))
    low = (exact + Decimal(_f32(magnitude - 1))) / 2
    high = (exact + Decimal(_f32(magnitude + 1))) / 2 if magnitude < 0x7F7FFFFF else exact + (exact - low)
    inclusive = magnitude % 2 == 0
    for precision in range(1, 10):
        nearest = Decimal(f"{float(exact):.{precision - 1}e}")
        unit = Decimal(1).scaleb(nearest.adjusted() - precision + 1)
        fits = [
            candidate
            for candidate in (nearest - unit, nearest, nearest + unit)
            if low < candidate < high or (inclusive and candidate in (low, high))
        ]
        if fits:
            best = min(fits, key=lambda candidate: (abs(candidate - exact), candidate != nearest))
            return -best if pattern >> 31 else best
    return -exact if pattern >> 31 else exact  # pragma: no cover - 9 digits always suffice


def _f32(pattern: int) -> float:
    result: float = struct.unpack("<f", struct.pack("<I", pattern))[0]
    return result
