"""Decoder of the TiCDC Simple protocol, Avro encoding (protocol id ``simple-avro``).

Same message kinds and schema-memo rules as the JSON encoding (:mod:`.simple_json`); only the
bytes differ (tiflow ``simple/avro.go``). Every value is one ``com.pingcap.simple.avro.Message`` in
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

Large messages work as in the JSON encoding (``pkg/sink/codec/simple/encoder.go``): a DML with a
``claimCheckLocation`` is replaced by the stored original message (:mod:`.claim_check`), a DML with
``handleKeyOnly`` and no location is a decode error.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import replace
from functools import lru_cache
from importlib.resources import files
from typing import Any, ClassVar

import fastavro

from ticdc_lake.canonical import MAX_UNSIGNED_BIGINT
from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, RawMessage, SourcePosition
from ticdc_lake.protocols.base import MessageLocation, SchemaLookup, WholeValueDecoder
from ticdc_lake.protocols.claim_check import (
    ClaimCheckReader,
    Reference,
    handle_key_only_error,
    nested_reference_error,
    resolve,
)
from ticdc_lake.protocols.compression import decompress, undeclared_compression
from ticdc_lake.protocols.location import AvroPrefix, location
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.simple_avro_values import NAMESPACE, avro_converter_for
from ticdc_lake.protocols.simple_rows import ConverterCache, row_image
from ticdc_lake.protocols.simple_schema import ddl_event, table_schema_from_simple
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema

PROTOCOL = "simple-avro"
PROTOCOL_VERSION = 1
SCHEMA_RESOURCE = "simple_message.avsc.json"
#: Zig-zag varint of union index 11, the ``Message`` record: the first byte of every value.
MESSAGE_UNION_BYTE = 0x16
#: The ``type`` enum byte after 0x16 → message kind; DDL and BOOTSTRAP carry table schemas.
KIND_BYTES = {0x00: "WATERMARK", 0x02: "BOOTSTRAP", 0x04: "DDL", 0x06: "DML"}
_PAYLOADS = {"WATERMARK": "Watermark", "BOOTSTRAP": "Bootstrap", "DDL": "DDL", "DML": "DML"}
DML_TYPES = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
_FSP_BASE_WIDTH = {"datetime": 19, "timestamp": 19, "time": 10}


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
        self._claims = ClaimCheckReader(PROTOCOL, options)

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self.resources = DecodeResources()
        self._converters = ConverterCache(avro_converter_for)
        self._claims = ClaimCheckReader(PROTOCOL, self.options)

    def value_may_carry_schema(self, value: bytes) -> bool:
        """True for BOOTSTRAP and DDL messages (the ``type`` byte after 0x16), and for a ``type``
        written as a longer (non-minimal) varint, which Avro readers accept too."""
        return len(value) >= 2 and value[0] == MESSAGE_UNION_BYTE and (value[1] in (0x02, 0x04) or value[1] >= 0x80)

    def decode(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        return self._decode(message, schemas, stored=False)

    def find_location(self, message: RawMessage) -> MessageLocation | None:
        """The names leading the payload record, read in place: a cut or corrupt tail does not hide them."""
        value = decompress(message.value or b"", self.options.compression, PROTOCOL, "the value")
        return simple_avro_location(value, MESSAGE_UNION_BYTE)

    def _decode(self, message: RawMessage, schemas: SchemaLookup, *, stored: bool) -> list[ChangeEvent]:
        """``stored``: ``message`` came from a claim-check object, so it must not be a reference."""
        kind, payload = self._load(message)
        position = SourcePosition(message.topic, message.partition, message.offset, 0)
        if kind == "DML":
            return self._dml(payload, message, position, schemas, stored=stored)
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
            compressed = undeclared_compression(value, self.options.compression, PROTOCOL, "the value")
            if compressed is not None:
                raise compressed
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
        self,
        payload: dict[str, Any],
        message: RawMessage,
        position: SourcePosition,
        schemas: SchemaLookup,
        *,
        stored: bool,
    ) -> list[ChangeEvent]:
        kind = payload["type"]
        database, table = payload["database"], payload["table"]
        context = f"the {kind} message for table {database}.{table}"
        commit_ts = _uint64(payload["commitTs"])
        version = _uint64(payload["schemaVersion"])
        op = DML_TYPES[kind]
        # TiCDC sets handleKeyOnly on claim-check references too: the location is checked first.
        if payload["claimCheckLocation"] is not None:
            where = f"{context} at commit ts {commit_ts}"
            if stored:
                raise nested_reference_error(PROTOCOL, where)
            reference = Reference(
                payload["claimCheckLocation"], "claimCheckLocation", where, position, database, table, commit_ts, op
            )
            return resolve(self._claims, lambda inner: self._decode(inner, schemas, stored=True), message, reference)
        if payload["handleKeyOnly"]:
            raise handle_key_only_error(PROTOCOL, database, table, commit_ts, "handleKeyOnly: true")
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
            return [event]
        converters = self._converters.get(schema, database, table, version, self.options.server_time_zone)
        where = f"{database}.{table} (schema version {version})"
        if new_row is not None:
            event.after = row_image(PROTOCOL, new_row, "data", converters, schema, where)
        if old_row is not None:
            event.before = row_image(PROTOCOL, old_row, "old", converters, schema, where)
        return [event]


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
    # Go writes an empty string when the DDL has no query text; JSON omits it.
    return ddl_event(payload["type"], payload["sql"] or None, _uint64(payload["commitTs"]), after, before, position)


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


#: Simple Avro ``MessageType`` and ``DDLType`` enum indexes (``message.json``).
_AVRO_WATERMARK, _AVRO_BOOTSTRAP, _AVRO_DDL, _AVRO_DML = range(4)
_AVRO_DDL_RENAME = 3


def simple_avro_location(value: bytes, union_byte: int) -> MessageLocation | None:
    """A Simple Avro value: the names and commit TSO that lead the payload record."""
    if not value or value[0] != union_byte:
        return None
    reader = AvroPrefix(value[1:])
    kind = reader.long()
    if reader.long() != kind:  # the payload union index names the record of that kind
        return None
    reader.long()  # version
    if kind == _AVRO_DML:
        database, table = reader.string(), reader.string()
        reader.long()  # tableID
        reader.long()  # type
        return location(database, table, reader.long() % (1 << 64))
    if kind == _AVRO_WATERMARK:
        return location(None, None, reader.long() % (1 << 64))
    if kind == _AVRO_BOOTSTRAP:
        reader.long()  # buildTs
        return location(reader.string(), reader.string())
    if kind != _AVRO_DDL:
        return None
    rename = reader.long() == _AVRO_DDL_RENAME
    reader.string()  # sql
    commit_ts = reader.long() % (1 << 64)
    reader.long()  # buildTs
    if reader.long() != 1:  # tableSchema is null: a database DDL
        return location(None, None, commit_ts)
    return location(reader.string(), reader.string(), commit_ts, rename=rename)
