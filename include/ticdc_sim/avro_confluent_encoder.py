"""TiCDC ``avro`` protocol with a Confluent schema registry (``protocol=avro``), byte for byte.

Follows ``pkg/sink/codec/avro/avro.go`` and ``confluent_schema_registry.go`` (docs/protocols.md):

* key = the handle-key columns (table order, the old row for a DELETE), value = every column
  plus, with ``enable-tidb-extension``, ``_tidb_op`` (``c``/``u``), ``_tidb_commit_ts``,
  ``_tidb_commit_physical_time``; each in the Confluent wire format (``0x00``, 4-byte
  big-endian schema id, Avro binary). DELETE: key + null value (a tombstone).
* Schemas are registered under ``<topic with "." → "_">-key`` / ``-value``
  (``topicName2SchemaSubjects``, ``sanitizeTopic``) through the ``register(subject, schema_text)``
  callable, and cached per subject and table version like ``GetCachedOrRegister``: a subject whose
  cached entry is for another table version (another table of the same topic, or a new version)
  is registered again; a registry returns the existing id for a schema it already has.
* Schema text = Go ``json.Marshal`` of ``avroSchemaTop`` (``type``, ``name``, ``namespace``,
  ``fields``); fields are Go maps (keys sorted: ``default``, ``name``, ``type``); names pass
  through ``SanitizeName``; nullable columns are ``["null", T]`` with ``default: null`` when the
  column default is NULL, else ``[T, "null"]`` with the default; precise decimals always
  ``["null", T]`` / ``T`` without a default (``columns2AvroSchema``).
* Values per ``columnToAvroData`` (see the table in :mod:`ticdc_lake.protocols.avro_values`,
  which this module does not import). Decimals are encoded like goavro
  (``decimalBytesFromNative``, ``toSignedBytes``): minimal two's-complement big-endian bytes of
  the unscaled value.
* With ``enable-tidb-extension`` and ``avro-enable-watermark`` (test-only in TiCDC): DDL =
  key null, ``0x01`` + JSON ``{"query","type","schema","table","commitTs"}``; watermark = key
  null, ``0x02`` + 8-byte big-endian TSO (``EncodeDDLEvent``, ``EncodeCheckpointEvent``).
  Without them TiCDC sends no DDL (``encode_ddl`` returns None) and no watermark.

Column defaults come from :attr:`ColumnSchema.default` (TiDB's default text). BIT defaults are
read as an integer and written as ``(length + 7) // 8`` big-endian bytes; TiDB stores them as a
binary literal of that size, so this matches for defaults written as numbers.
"""

from __future__ import annotations

import base64
import io
import json
import re
import struct
from collections.abc import Callable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

import fastavro

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim import go_json
from ticdc_sim.column_types import (
    BINARY_TYPES,
    INTEGER_TYPES,
    Value,
    decimal_text,
    display_length,
    format_datetime_text,
)
from ticdc_sim.ddl_event import ticdc_event
from ticdc_sim.encoding import EncodedMessage, ProtocolEncoder, expect_type
from ticdc_sim.model import DdlChange, DmlOp, RowChange

#: ``register(subject, schema_text) -> schema id`` against a Confluent-compatible registry.
Register = Callable[[str, str], int]

MAGIC_BYTE = b"\x00"
DDL_BYTE = b"\x01"
CHECKPOINT_BYTE = b"\x02"
_PHYSICAL_SHIFT = 18
_SMALL_INTS = frozenset({"tinyint", "smallint", "mediumint"})
#: Float defaults travel through ``go_json.marshal`` as this marker and are then written the Go way.
_FLOAT_MARK = "\x00float:"
_FLOAT_TOKEN = re.compile(r'"\\u0000float:([^"\\]*)\\u0000"')


def sanitize_name(name: str) -> str:
    """``common.SanitizeName``: every character outside ``[A-Za-z0-9_]`` becomes ``_``; a first
    character that is not a letter or ``_`` becomes ``_`` (a digit is kept after it)."""
    out = []
    for index, char in enumerate(name):
        letter = char.isascii() and (char.isalpha() or char == "_")
        if index == 0 and not letter:
            out.append("_" + char if char.isascii() and char.isdigit() else "_")
        elif not (letter or (char.isascii() and char.isdigit())):
            out.append("_")
        else:
            out.append(char)
    return "".join(out)


def int64(value: int) -> int:
    """Go's ``int64(u)`` of a uint64."""
    return value - (1 << 64) if value >= 1 << 63 else value


def signed_bytes(number: int) -> bytes:
    """goavro ``toSignedBytes``: minimal two's-complement big-endian bytes (0 → ``00``)."""
    size = ((number if number >= 0 else ~number).bit_length() + 8) // 8
    return number.to_bytes(size, "big", signed=True)


def unscaled_decimal(amount: Decimal, scale: int) -> int:
    """goavro ``decimalBytesFromNative``: numerator * 10^scale floor-divided by the denominator
    (``big.Int.Div``), computed exactly whatever the number of digits."""
    sign, digits, exponent = amount.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{amount} is not a finite decimal")
    integer = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    shift = exponent + scale
    if shift >= 0:
        return integer * int(10**shift)
    return integer // int(10 ** (-shift))


def bit_bytes(number: int) -> bytes:
    """TiDB ``NewBinaryLiteralFromUint(v, -1)``: big-endian, leading zero bytes trimmed, ≥ 1 byte."""
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


class AvroConfluentEncoder(ProtocolEncoder):
    """Encodes events as TiCDC's ``avro`` messages for one Kafka ``topic``.

    ``register(subject, schema_text) -> id`` registers a schema in a Confluent-compatible
    registry (e.g. ``SchemaRegistryClient.register_schema(subject, Schema(text, "AVRO"))``).
    """

    protocol: ClassVar[str] = "avro"
    #: Avro's test-only DDL messages are broadcast like Simple's (``mq_ddl_sink.go``).
    ddl_to_all_partitions: ClassVar[bool] = True
    has_bootstrap: ClassVar[bool] = False
    has_watermark: ClassVar[bool] = True

    def __init__(
        self,
        server_time_zone: str = "UTC",
        *,
        register: Register,
        topic: str,
        enable_tidb_extension: bool = True,
        enable_watermark: bool = True,
        decimal_handling_mode: str = "precise",
        bigint_unsigned_handling_mode: str = "long",
        changefeed_namespace: str = "default",
    ) -> None:
        if decimal_handling_mode not in ("precise", "string"):
            raise ValueError(f"avro-decimal-handling-mode is precise or string, not {decimal_handling_mode!r}")
        if bigint_unsigned_handling_mode not in ("long", "string"):
            raise ValueError(
                f"avro-bigint-unsigned-handling-mode is long or string, not {bigint_unsigned_handling_mode!r}"
            )
        self._register = register
        self.topic = topic
        self.server_time_zone = server_time_zone
        self._zone = ZoneInfo(server_time_zone)
        self.enable_tidb_extension = enable_tidb_extension
        # common/config.go: avro-enable-watermark only takes effect with the TiDB extension.
        self.enable_watermark = enable_watermark and enable_tidb_extension
        vars(self)["has_watermark"] = self.enable_watermark
        self.precise_decimal = decimal_handling_mode == "precise"
        self.unsigned_bigint_as_string = bigint_unsigned_handling_mode == "string"
        self.changefeed_namespace = changefeed_namespace
        #: subject → (table version, schema text, schema id), as ``confluentSchemaManager.cache``.
        self._cache: dict[str, tuple[int | None, str, int]] = {}
        self._parsed: dict[str, Any] = {}
        self._topic_of: Callable[[str, str], str] | None = None

    def route_topics(self, topic_of: Callable[[str, str], str]) -> None:
        """Register each table's schemas under the subjects of its own topic (``topic_of(database,
        table)``), as TiCDC does with a topic dispatcher: subjects are per topic."""
        self._topic_of = topic_of

    # ------------------------------------------------------------------ messages
    def encode_row(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> EncodedMessage:
        row = change.before if change.op is DmlOp.DELETE else change.after
        if row is None:
            raise SchemaError(f"{change.database}.{change.table}: a {change.op} without its row image")
        handle = schema.handle_key()
        key_columns = [column for column in schema.columns if column.name in handle]
        if not key_columns:
            raise SchemaError(f"{schema.database}.{schema.table} has no handle key; TiCDC's avro needs one")
        key = self._envelope("key", schema, key_columns, row, extension=None)
        if change.op is DmlOp.DELETE:
            return EncodedMessage(key, None)  # type: ignore[arg-type]  # a Kafka tombstone: value null
        op = "c" if change.op is DmlOp.INSERT else "u"
        extension = (op, commit_ts) if self.enable_tidb_extension else None
        return EncodedMessage(key, self._envelope("value", schema, list(schema.columns), row, extension))

    def encode_ddl(self, ddl: DdlChange, commit_ts: int, build_ts: int) -> EncodedMessage | None:
        """The test-only DDL message, or None (TiCDC's ``EncodeDDLEvent`` returns nil) without
        ``enable-tidb-extension`` and ``avro-enable-watermark``: then a new writer-schema version
        of the next row is the only sign of a schema change."""
        if not self.enable_watermark:
            return None
        event = ticdc_event(ddl)
        document = {
            "query": event.query,
            "type": event.action,
            "schema": event.database,
            "table": event.table,
            "commitTs": commit_ts,
        }
        return EncodedMessage(None, DDL_BYTE + go_json.marshal(document))

    def encode_watermark(self, commit_ts: int, build_ts: int) -> EncodedMessage:
        self._require_watermark("watermark")
        return EncodedMessage(None, CHECKPOINT_BYTE + commit_ts.to_bytes(8, "big"))

    def _require_watermark(self, what: str) -> None:
        if not self.enable_watermark:
            raise SchemaError(
                f"TiCDC's avro protocol sends {what} messages only with enable-tidb-extension=true and "
                "avro-enable-watermark=true; this encoder was built without them"
            )

    # ------------------------------------------------------------------ schemas
    def schema_text(self, schema: TableSchema, columns: list[ColumnSchema], *, value: bool) -> str:
        """The key (``value=False``) or value schema TiCDC registers for these columns."""
        fields = [self._field(column) for column in columns]
        if value and self.enable_tidb_extension:
            fields += [
                {"default": "", "name": "_tidb_op", "type": "string"},
                {"default": 0, "name": "_tidb_commit_ts", "type": "long"},
                {"default": 0, "name": "_tidb_commit_physical_time", "type": "long"},
            ]
        namespace = sanitize_name(self.changefeed_namespace)
        if schema.database:
            namespace += "." + sanitize_name(schema.database)
        top = {"type": "record", "name": sanitize_name(schema.table), "namespace": namespace, "fields": fields}
        return _FLOAT_TOKEN.sub(r"\1", go_json.marshal(top).decode("utf-8"))

    def _field(self, column: ColumnSchema) -> dict[str, Any]:
        avro_type = self._avro_type(column)
        field: dict[str, Any] = {"name": sanitize_name(column.name)}
        if "logicalType" in avro_type:
            field["type"] = ["null", avro_type] if column.nullable else avro_type
            if column.nullable:
                field["default"] = None
        else:
            default = None if column.default is None else self._default(column, column.default)
            if column.nullable:
                field["type"] = ["null", avro_type] if default is None else [avro_type, "null"]
                field["default"] = default
            else:
                field["type"] = avro_type
                if default is not None:
                    field["default"] = default
        return dict(sorted(field.items()))

    def _avro_type(self, column: ColumnSchema) -> dict[str, Any]:
        """``columnToAvroSchema``."""
        tp = column.mysql_type
        parameters = {"tidb_type": tidb_type(column)}
        if tp in _SMALL_INTS or tp == "year" or (tp == "int" and not column.unsigned):
            base = "int"
        elif tp == "int" or tp == "bigint":
            base = "string" if tp == "bigint" and column.unsigned and self.unsigned_bigint_as_string else "long"
        elif tp in ("float", "double"):
            base = tp
        elif tp == "bit":
            base, parameters = "bytes", {"length": str(display_length(column)), **parameters}
        elif tp == "decimal" and self.precise_decimal:
            return {
                "type": "bytes",
                "connect.parameters": parameters,
                "logicalType": "decimal",
                "precision": display_length(column),
                "scale": column.scale or 0,
            }
        elif tp in BINARY_TYPES:
            base = "bytes"
        elif tp in ("enum", "set"):
            allowed = ",".join(escape_member(e) for e in column.elements or ())
            base, parameters = "string", {"allowed": allowed, **parameters}
        else:  # decimal as string, char/varchar/text family, json, date and time types
            base = "string"
        return {"type": base, "connect.parameters": dict(sorted(parameters.items()))}

    def _default(self, column: ColumnSchema, text: str) -> Any:
        """``columnToAvroData`` of TiDB's default text, as ``json.Marshal`` writes it."""
        tp = column.mysql_type
        if tp in INTEGER_TYPES or tp == "year":
            if tp == "bigint" and column.unsigned:
                return text if self.unsigned_bigint_as_string else int64(int(text))
            return int(text)
        if tp in ("float", "double"):
            number = float(text) if tp == "double" else _float32(float(text))
            return f"{_FLOAT_MARK}{go_json_float(number)}\x00"
        if tp == "bit":
            size = (display_length(column) + 7) // 8
            return base64.b64encode(int(text).to_bytes(size, "big")).decode("ascii")
        if tp in BINARY_TYPES:
            return base64.b64encode(text.encode("utf-8")).decode("ascii")
        return text

    def _schema_id(self, subject: str, version: int | None, text: str) -> int:
        """``GetCachedOrRegister``: TiCDC registers again when the table version changes (every DDL
        gives the table a new one); the schema text is compared too, so that a changed table whose
        simulated version was not bumped still gets its new writer schema."""
        cached = self._cache.get(subject)
        if cached is not None and cached[:2] == (version, text):
            return cached[2]
        schema_id = self._register(subject, text)
        if not 0 < schema_id < 1 << 31:
            raise SchemaError(f"the registry returned id {schema_id} for subject {subject!r}; ids are 1..2^31-1")
        self._cache[subject] = (version, text, schema_id)
        return schema_id

    # ------------------------------------------------------------------ values
    def _envelope(
        self,
        side: str,
        schema: TableSchema,
        columns: list[ColumnSchema],
        row: Mapping[str, Value],
        extension: tuple[str, int] | None,
    ) -> bytes:
        text = self.schema_text(schema, columns, value=side == "value")
        topic = self.topic if self._topic_of is None else self._topic_of(schema.database, schema.table)
        subject = topic.replace(".", "_") + "-" + side
        schema_id = self._schema_id(subject, schema.version, text)
        record: dict[str, Any] = {}
        for column in columns:
            if column.name not in row:
                raise SchemaError(f"{schema.database}.{schema.table}: the row lacks column {column.name!r}")
            value = row[column.name]
            record[sanitize_name(column.name)] = None if value is None else self.datum(column, value)
        if extension is not None:
            op, commit_ts = extension
            record["_tidb_op"] = op
            record["_tidb_commit_ts"] = int64(commit_ts)
            record["_tidb_commit_physical_time"] = commit_ts >> _PHYSICAL_SHIFT
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, self._writer(text), record)
        return MAGIC_BYTE + schema_id.to_bytes(4, "big") + buffer.getvalue()

    def _writer(self, text: str) -> Any:
        parsed = self._parsed.get(text)
        if parsed is None:
            document = _strip_logical_types(json.loads(text))
            parsed = fastavro.parse_schema(document, _ignore_default_error=True)
            self._parsed[text] = parsed
        return parsed

    def datum(self, column: ColumnSchema, value: Value) -> Any:
        """One non-null value as ``columnToAvroData`` hands it to goavro (decimals pre-encoded)."""
        tp = column.mysql_type
        if tp in INTEGER_TYPES or tp == "year":
            number = expect_type(value, int, column)
            if tp == "bigint" and column.unsigned:
                return str(number) if self.unsigned_bigint_as_string else int64(number)
            return number
        if tp in ("float", "double"):
            return expect_type(value, float, column)
        if tp == "bit":
            return bit_bytes(expect_type(value, int, column))
        if tp == "decimal":
            amount = expect_type(value, Decimal, column)
            if not self.precise_decimal:
                return decimal_text(column, amount)
            return signed_bytes(unscaled_decimal(amount, column.scale or 0))
        if tp in BINARY_TYPES:
            return expect_type(value, bytes, column)
        if tp == "date":
            return expect_type(value, date, column).isoformat()
        if tp == "datetime":
            return format_datetime_text(expect_type(value, datetime, column), column.fsp or 0)
        if tp == "timestamp":
            local = expect_type(value, datetime, column).astimezone(self._zone).replace(tzinfo=None)
            return format_datetime_text(local, column.fsp or 0)
        return expect_type(value, str, column)  # char/varchar/text family, enum, set, json, time


def tidb_type(column: ColumnSchema) -> str:
    """``getTiDBTypeFromColumn``: the coarse type name TiCDC puts in ``connect.parameters``."""
    tp = column.mysql_type
    if tp in _SMALL_INTS or tp == "int":
        return "INT UNSIGNED" if column.unsigned else "INT"
    if tp == "bigint":
        return "BIGINT UNSIGNED" if column.unsigned else "BIGINT"
    if tp in BINARY_TYPES:
        return "BLOB"
    if tp in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext"):
        return "TEXT"
    return tp.upper()


def escape_member(member: str) -> str:
    """``common.EscapeEnumAndSetOptions``."""
    return member.replace(",", "\\,").replace("\\'", "'").replace("''", "'")


def _float32(value: float) -> float:
    result: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return result


def go_json_float(value: float) -> str:
    """Go ``encoding/json`` float64: ``'f'`` format, or ``'e'`` below 1e-6 / from 1e21, with
    a two-digit minimum exponent cleaned to one digit (``1e-07`` → ``1e-7``)."""
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        mantissa, _, exponent = repr(value).partition("e")
        if not exponent:  # repr chose fixed notation; force the exponent form
            mantissa, _, exponent = f"{value:e}".partition("e")
        number = int(exponent)
        return f"{mantissa}e{'-' if number < 0 else '+'}{abs(number):d}"
    return go_json.format_float(value, 64)


def _strip_logical_types(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _strip_logical_types(value) for key, value in node.items() if key != "logicalType"}
    if isinstance(node, list):
        return [_strip_logical_types(value) for value in node]
    return node
