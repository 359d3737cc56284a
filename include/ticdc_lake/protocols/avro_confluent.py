"""Decoder of TiCDC's ``avro`` protocol with the Confluent schema registry (docs/protocols.md).

Source: ``pkg/sink/codec/avro/avro.go`` (encoder), ``confluent_schema_registry.go`` (header,
subjects) and ``decoder.go`` (TiCDC's own consumer side). One Kafka message is one event:

* **row** (INSERT/UPDATE): key and value each in the Confluent wire format, byte ``0x00``, the
  4-byte big-endian registry id of the writer schema, then the Avro binary record. The key holds
  the handle-key columns, the value every (visible, selected) column. With
  ``enable-tidb-extension=true`` the value record ends with ``_tidb_op`` (``"c"`` insert,
  ``"u"`` update), ``_tidb_commit_ts`` and ``_tidb_commit_physical_time``, and with row
  checksums also ``_tidb_row_level_checksum``, ``_tidb_corrupted``, ``_tidb_checksum_version``
  (``nativeValueWithExtension``, ``schemaWithExtension``).
* **delete**: the key record of the old row and a null value, a Kafka tombstone
  (``encodeValue`` returns nil for deletes): only the key columns, no commit TSO, even with
  the extension. TiCDC never writes ``_tidb_op`` ``"d"``.
* **DDL** and **watermark** (only with ``enable-tidb-extension`` and ``avro-enable-watermark``,
  which TiCDC documents as test-only): key null; value ``0x01`` + Go JSON
  ``{"query","type","schema","table","commitTs"}`` (``EncodeDDLEvent``; ``type`` is TiDB's DDL
  action number) or ``0x02`` + the 8-byte big-endian checkpoint TSO (``EncodeCheckpointEvent``).

Writer schemas come from :class:`~ticdc_lake.protocols.resources.DecodeResources` (landed by the
land task from the registry, :mod:`ticdc_lake.landing.writer_schemas`); they are parsed once per
id. Values: :mod:`ticdc_lake.protocols.avro_values`. Database and table are the record
namespace's part after the first dot and the record name (``getAvroNamespace``), both
sanitised by TiCDC (as are the field names); rows are renamed to the upstream table and columns
the folded DDL in the lookup names (``avro_names``), so that DDL and rows meet in one table.

Events carry ``column_types`` (column → ``tidb_type``) and in ``facts``: ``handle_key`` (the key
record's fields, in table order), ``key_schema_id``/``value_schema_id`` (the registry ids) and, for
checksummed rows, ``row_checksum``/``checksum_version``.

**No commit TSO**: tombstone deletes always, and rows of a changefeed without the TiDB
extension, get ``commit_ts`` 0 and ``facts.offset_ordered = True``: they can only be applied
in per-partition offset order, a weaker guarantee than TSO order. Rows without the extension
cannot tell an INSERT from an UPDATE: they are INSERTs with ``facts.upsert = True``.

TiCDC never compresses avro messages (``large-message-handle-compression`` is accepted by the
changefeed but the avro encoder ignores it), so ``codec.compression`` is not applied here; a value
that starts with another byte is rejected with a hint at what it looks like.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, replace
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

import fastavro

from ticdc_lake.canonical import MAX_UNSIGNED_BIGINT, zone_info
from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventFacts, EventKind, Op, RawMessage, RowImage, SourcePosition
from ticdc_lake.protocols.avro_names import UpstreamNames, to_upstream
from ticdc_lake.protocols.avro_values import AvroColumn, Converter, converter_for, describe_value, parse_column
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup, MessageLocation, SchemaLookup
from ticdc_lake.protocols.common import ddl_type_for
from ticdc_lake.protocols.compression import looks_like
from ticdc_lake.protocols.location import json_object, location
from ticdc_lake.protocols.resources import DecodeResources

PROTOCOL = "avro"
#: First byte of a Confluent-framed key or value (``confluent_schema_registry.go``, ``magicByte``).
MAGIC_BYTE = 0x00
#: First byte of the test-only DDL and checkpoint values (``avro.go``, ``ddlByte``/``checkpointByte``).
DDL_BYTE = 0x01
CHECKPOINT_BYTE = 0x02
#: First byte of the AWS Glue registry header (``glue_schema_registry.go``): not supported.
GLUE_HEADER_BYTE = 0x03
HEADER_SIZE = 5
#: ``schemaWithExtension``: appended in this order after the column fields.
EXTENSION_FIELDS = ("_tidb_op", "_tidb_commit_ts", "_tidb_commit_physical_time")
CHECKSUM_FIELDS = ("_tidb_row_level_checksum", "_tidb_corrupted", "_tidb_checksum_version")
OPS = {"c": Op.INSERT, "u": Op.UPDATE}
LAND_HINT = "the land task fetches writer schemas; re-run land or check the registry"
_PHYSICAL_SHIFT = 18
_DDL_KEYS = ("query", "type", "schema", "table", "commitTs")


@dataclass(frozen=True, slots=True)
class WriterSchema:
    """A parsed TiCDC record schema: its columns, converters and the fastavro reader schema."""

    schema_id: int
    full_name: str
    database: str
    table: str
    columns: tuple[AvroColumn, ...]
    converters: tuple[Converter, ...]
    extension: bool
    checksum: bool
    #: fastavro's parsed schema, with ``logicalType`` removed so decimals arrive as raw bytes.
    reader: Any


class AvroDecoder(Decoder):
    """TiCDC ``avro`` (flat Avro, Confluent registry). Caches parsed writer schemas by id."""

    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, options: CodecOptions, resources: DecodeResources | None = None) -> None:
        super().__init__(options, resources)
        self._zone = zone_info(options.server_time_zone)
        self._schemas: dict[int, WriterSchema] = {}
        self._names: tuple[tuple[int, int], UpstreamNames] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "resources": self.resources}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self.resources = state["resources"]
        self._zone = zone_info(self.options.server_time_zone)
        self._schemas = {}
        self._names = None

    def may_carry_schema(self, message: RawMessage) -> bool:
        """True for DDL messages (sent with the TiDB extension and watermarks); writer schemas are landed."""
        return bool(message.value) and message.value[0] == DDL_BYTE  # type: ignore[index]

    def writer_schema_id(self, message: RawMessage) -> int | None:
        """The id of a Confluent-framed value (magic byte 0, 4-byte big-endian id), else None."""
        value = message.value
        if value is None or len(value) < HEADER_SIZE or value[0] != MAGIC_BYTE:
            return None
        return int.from_bytes(value[1:HEADER_SIZE], "big")

    def decode(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        self._upstream_names(schemas)  # also what find_location maps a rejected row's names with
        position = SourcePosition(message.topic, message.partition, message.offset, 0)
        value = message.value
        if not value:
            if message.key is None:
                raise DecodeError(
                    PROTOCOL, "the message has neither key nor value; TiCDC's avro protocol never sends one"
                )
            return [self._upstream(self._delete(message, message.key, position), schemas)]
        if value[0] == MAGIC_BYTE:
            return [self._upstream(self._row(message, value, position), schemas)]
        if value[0] == DDL_BYTE:
            return [_ddl(value, position)]
        if value[0] == CHECKPOINT_BYTE:
            return [_watermark(value, position)]
        raise _bad_first_byte("value", value)

    def find_location(self, message: RawMessage) -> MessageLocation | None:
        """Rows: the writer schema's record names (key and value must agree); DDL: its JSON fields."""
        value = message.value
        if value and value[0] == DDL_BYTE:
            doc = json_object(value[1:]) or {}
            action = doc.get("type")
            renamed = not isinstance(action, int) or ddl_type_for(action) == "RENAME"
            return location(doc.get("schema"), doc.get("table"), doc.get("commitTs"), rename=renamed)
        if value and value[0] == CHECKPOINT_BYTE and len(value) == 9:
            return location(None, None, int.from_bytes(value[1:], "big"))
        names = set()
        for side, data in (("key", message.key), ("value", value)):
            if data:
                if len(data) < HEADER_SIZE or data[0] != MAGIC_BYTE:
                    return None
                schema = self._writer_schema(int.from_bytes(data[1:HEADER_SIZE], "big"), side, message.topic)
                names.add((schema.database, schema.table))
        if len(names) != 1:
            return None
        ((database, table),) = names
        if self._names is not None:  # the upstream table of the lookup the message was decoded with
            upstream = self._names[1].table(database, table, "the row")  # two candidates: raises, locate gives None
            database, table = upstream or (database, table)
        return location(database, table)

    def _upstream(self, event: ChangeEvent, schemas: SchemaLookup) -> ChangeEvent:
        """The row under its upstream table and column names (``avro_names``): DDL name them so."""
        names = self._upstream_names(schemas)
        return event if names is None else to_upstream(event, names)

    def _upstream_names(self, schemas: SchemaLookup) -> UpstreamNames | None:
        if not isinstance(schemas, MemorySchemaLookup) or not len(schemas):
            self._names = None
            return None
        key = (id(schemas), len(schemas))
        if self._names is None or self._names[0] != key:
            self._names = (key, UpstreamNames(schemas.as_mapping().values()))
        return self._names[1]

    # ------------------------------------------------------------------------------- rows
    def _row(self, message: RawMessage, value: bytes, position: SourcePosition) -> ChangeEvent:
        if message.key is None:
            raise DecodeError(
                PROTOCOL,
                "a row value without a key: TiCDC's avro protocol always sends the handle key "
                "(force-replicate is not allowed with avro)",
            )
        key_schema, key_record = self._read(message, "key", message.key)
        schema, record = self._read(message, "value", value)
        if (key_schema.database, key_schema.table) != (schema.database, schema.table):
            raise DecodeError(
                PROTOCOL,
                f"the key record is {key_schema.full_name} (writer schema {key_schema.schema_id}) but the value "
                f"record is {schema.full_name} (writer schema {schema.schema_id}); both must name the same table",
            )
        key = _image(key_schema, key_record, "key")
        after = _image(schema, record, "value")
        for name, text in key.items():
            if name in after and after[name] != text:
                raise DecodeError(
                    PROTOCOL,
                    f"key column {name!r} of {schema.database}.{schema.table} is {text!r} in the key record "
                    f"but {after[name]!r} in the value record",
                )
        event = ChangeEvent(
            kind=EventKind.DML,
            position=position,
            commit_ts=0,
            database=schema.database,
            table=schema.table,
            op=Op.INSERT,
            after=after,
            column_types={column.name: column.tidb_type for column in schema.columns},
        )
        facts = EventFacts(handle_key=tuple(key), key_schema_id=key_schema.schema_id, value_schema_id=schema.schema_id)
        if schema.extension:
            event.op, event.commit_ts = _extension(schema, record)
            if schema.checksum:
                if record["_tidb_corrupted"]:
                    raise DecodeError(
                        PROTOCOL,
                        f"TiCDC marked the row of {schema.database}.{schema.table} at commit ts {event.commit_ts} "
                        f"as corrupted (field '_tidb_corrupted' true, checksum {record['_tidb_row_level_checksum']!r})",
                    )
                facts = replace(
                    facts,
                    row_checksum=record["_tidb_row_level_checksum"],
                    checksum_version=record["_tidb_checksum_version"],
                )
        else:
            facts = replace(facts, offset_ordered=True, upsert=True)
        event.facts = facts
        return event

    def _delete(self, message: RawMessage, key: bytes, position: SourcePosition) -> ChangeEvent:
        schema, record = self._read(message, "key", key)
        before = _image(schema, record, "key")
        event = ChangeEvent(
            kind=EventKind.DML,
            position=position,
            commit_ts=0,
            database=schema.database,
            table=schema.table,
            op=Op.DELETE,
            before=before,
            column_types={column.name: column.tidb_type for column in schema.columns},
        )
        event.facts = EventFacts(handle_key=tuple(before), key_schema_id=schema.schema_id, offset_ordered=True)
        return event

    def _read(self, message: RawMessage, side: str, data: bytes) -> tuple[WriterSchema, dict[str, Any]]:
        """The writer schema and the decoded record of a Confluent-framed key or value."""
        if len(data) < HEADER_SIZE:
            raise DecodeError(
                PROTOCOL,
                f"the {side} has {len(data)} bytes, fewer than the 5-byte Confluent header "
                "(magic byte 0x00 and a 4-byte big-endian schema id)",
            )
        if data[0] != MAGIC_BYTE:
            raise _bad_first_byte(side, data)
        schema = self._writer_schema(int.from_bytes(data[1:HEADER_SIZE], "big"), side, message.topic)
        body = data[HEADER_SIZE:]
        buffer = io.BytesIO(body)
        what = f"the {side} body (writer schema {schema.schema_id}, record {schema.full_name})"
        try:
            record: Any = fastavro.schemaless_reader(buffer, schema.reader)
        except (EOFError, ValueError, IndexError, KeyError, TypeError, OverflowError, MemoryError) as exc:
            if isinstance(exc, UnicodeDecodeError):
                problem = f"a string before byte {buffer.tell()} of {len(body)} is not valid UTF-8 ({exc.reason})"
            elif isinstance(exc, EOFError) or buffer.tell() >= len(body):
                problem = f"the {len(body)}-byte body ends inside the record (truncated)"
            else:
                detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                problem = f"corrupt Avro data before byte {buffer.tell()} of {len(body)} ({detail})"
            raise DecodeError(PROTOCOL, f"{what} is not valid Avro: {problem}") from None
        if buffer.tell() != len(body):
            raise DecodeError(PROTOCOL, f"{what} has {len(body) - buffer.tell()} bytes after the end of the record")
        if not isinstance(record, dict):  # pragma: no cover - a record schema always reads a dict
            raise DecodeError(PROTOCOL, f"{what} did not decode to a record")
        return schema, record

    def _writer_schema(self, schema_id: int, side: str, topic: str) -> WriterSchema:
        cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        text = self.resources.writer_schemas.get(schema_id)
        if text is None:
            subject = topic.replace(".", "_") + f"-{side}"
            raise DecodeError(
                PROTOCOL,
                f"writer schema id {schema_id} of the {side} (registry subject {subject!r}) is not among the "
                f"landed writer schemas; {LAND_HINT}",
            )
        try:
            parsed = parse_writer_schema(schema_id, text, self._zone)
        except ValueError as exc:
            raise DecodeError(
                PROTOCOL, f"writer schema {schema_id} (of the {side}) is not a TiCDC avro record schema: {exc}"
            ) from None
        self._schemas[schema_id] = parsed
        return parsed


def parse_writer_schema(schema_id: int, text: str, zone: ZoneInfo) -> WriterSchema:
    """A :class:`WriterSchema` from the registry's schema text; ValueError naming the problem."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("type") != "record":
        raise ValueError("the top level is not an Avro record")
    name, namespace, fields = document.get("name"), document.get("namespace", ""), document.get("fields")
    if not isinstance(name, str) or not isinstance(namespace, str) or not isinstance(fields, list):
        raise ValueError("the record needs a string 'name', a string 'namespace' and a 'fields' list")
    _, dot, database = namespace.partition(".")
    if not dot or not database:
        raise ValueError(
            f"record namespace {namespace!r} does not name a database (TiCDC writes <changefeed namespace>.<database>)"
        )
    names = [field.get("name") if isinstance(field, dict) else None for field in fields]
    extension = checksum = False
    if tuple(names[-6:]) == EXTENSION_FIELDS + CHECKSUM_FIELDS:
        extension = checksum = True
        fields = fields[:-6]
    elif tuple(names[-3:]) == EXTENSION_FIELDS:
        extension = True
        fields = fields[:-3]
    columns = tuple(parse_column(field) for field in fields)
    try:
        reader = fastavro.parse_schema(_without_logical_types(document), _ignore_default_error=True)
    except Exception as exc:  # fastavro raises its own SchemaParseException and others
        raise ValueError(f"fastavro cannot parse it ({type(exc).__name__}: {exc})") from None
    return WriterSchema(
        schema_id=schema_id,
        full_name=f"{namespace}.{name}",
        database=database,
        table=name,
        columns=columns,
        converters=tuple(converter_for(column, zone) for column in columns),
        extension=extension,
        checksum=checksum,
        reader=reader,
    )


def _without_logical_types(node: Any) -> Any:
    """A copy of a schema without ``logicalType`` keys: decimals are decoded here, exactly."""
    if isinstance(node, dict):
        return {key: _without_logical_types(value) for key, value in node.items() if key != "logicalType"}
    if isinstance(node, list):
        return [_without_logical_types(value) for value in node]
    return node


def _image(schema: WriterSchema, record: dict[str, Any], side: str) -> RowImage:
    image: RowImage = {}
    for column, convert in zip(schema.columns, schema.converters, strict=True):
        value = record[column.name]
        if value is None:
            image[column.name] = None
            continue
        try:
            image[column.name] = convert(value)
        except ValueError as exc:
            raise DecodeError(
                PROTOCOL,
                f"column {column.name!r} ({column.tidb_type}, Avro {column.avro_type}) of "
                f"{schema.database}.{schema.table} in the {side} record (writer schema {schema.schema_id}): {exc}",
            ) from None
    return image


def _extension(schema: WriterSchema, record: dict[str, Any]) -> tuple[Op, int]:
    where = f"{schema.database}.{schema.table} (writer schema {schema.schema_id})"
    op_text = record["_tidb_op"]
    op = OPS.get(op_text)
    if op is None:
        raise DecodeError(
            PROTOCOL,
            f'field \'_tidb_op\' of {where} is {describe_value(op_text)}; TiCDC writes "c" (insert) or "u" '
            "(update), and sends deletes as tombstones",
        )
    commit_ts = record["_tidb_commit_ts"] & MAX_UNSIGNED_BIGINT
    physical = record["_tidb_commit_physical_time"]
    if physical != commit_ts >> _PHYSICAL_SHIFT:
        raise DecodeError(
            PROTOCOL,
            f"field '_tidb_commit_physical_time' of {where} is {physical}, but '_tidb_commit_ts' {commit_ts} "
            f"has physical time {commit_ts >> _PHYSICAL_SHIFT} ms",
        )
    return op, commit_ts


def _ddl(value: bytes, position: SourcePosition) -> ChangeEvent:
    try:
        document = json.loads(value[1:])
    except ValueError as exc:
        raise DecodeError(PROTOCOL, f"the DDL value (byte 0x01) is not followed by JSON ({exc})") from None
    if not isinstance(document, dict):
        raise DecodeError(PROTOCOL, "the DDL value (byte 0x01) must hold a JSON object")
    missing = [key for key in _DDL_KEYS if key not in document]
    if missing:
        raise DecodeError(PROTOCOL, f"the DDL event lacks field(s) {', '.join(repr(k) for k in missing)}")
    for key in ("query", "schema", "table"):
        if not isinstance(document[key], str):
            raise DecodeError(PROTOCOL, f"field {key!r} of the DDL event must be a string, got {document[key]!r}")
    for key, high in (("type", 255), ("commitTs", MAX_UNSIGNED_BIGINT)):
        number = document[key]
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= high:
            raise DecodeError(PROTOCOL, f"field {key!r} of the DDL event must be an integer 0..{high}, got {number!r}")
    action: int = document["type"]
    return ChangeEvent(
        kind=EventKind.DDL,
        position=position,
        commit_ts=document["commitTs"],
        database=document["schema"] or None,
        table=document["table"] or None,
        ddl_type=ddl_type_for(action),
        ddl_query=document["query"] or None,
        facts=EventFacts(ddl_action=action),
    )


def _watermark(value: bytes, position: SourcePosition) -> ChangeEvent:
    if len(value) != 1 + 8:
        raise DecodeError(
            PROTOCOL,
            f"a watermark value is byte 0x02 and an 8-byte big-endian commit ts (9 bytes), got {len(value)} bytes",
        )
    return ChangeEvent(kind=EventKind.WATERMARK, position=position, commit_ts=int.from_bytes(value[1:], "big"))


def _bad_first_byte(side: str, data: bytes) -> DecodeError:
    first = data[0]
    if first == GLUE_HEADER_BYTE:
        return DecodeError(
            PROTOCOL,
            f"the {side} starts with byte 0x03, the AWS Glue schema registry header; only the Confluent "
            "schema registry is supported",
        )
    expected = "0x00 (Confluent wire format: magic byte, 4-byte big-endian schema id, Avro body)"
    if side == "value":
        expected += ", 0x01 (DDL event) or 0x02 (watermark event)"
    return DecodeError(
        PROTOCOL,
        f"the {side} starts with byte 0x{first:02x}, expected {expected}; it looks like {looks_like(data)}. "
        "TiCDC never compresses avro messages: check that the pipeline's protocol matches the changefeed",
    )
