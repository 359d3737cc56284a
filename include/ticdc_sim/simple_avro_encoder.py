"""TiCDC Simple protocol, Avro encoding (``protocol=simple``, ``encoding-format=avro``).

Follows tiflow (``pkg/sink/codec/simple/avro.go``, ``encodeValue4Avro``,
schema ``message.json``): Kafka key null; one event per value, written as the
``com.pingcap.simple.avro.Message`` branch of the top-level union (first byte ``0x16``) with
no Confluent header. TSOs are cast to ``long`` (``int64(u)``); BIGINT UNSIGNED values are
``UnsignedBigint{value: int64(u)}``; other integers, YEAR, BIT, ENUM index and SET bitmask are
``long``; FLOAT/DOUBLE native; binary strings ``bytes``; TIMESTAMP ``Timestamp{location,
value}``. ``TableSchema`` names the database ``database`` and sets ``decimal`` only for DECIMAL
(the fsp of DATETIME/TIMESTAMP/TIME is not sent), ``unsigned``/``zerofill`` only for numeric
types, BIT and YEAR, ``elements`` only for ENUM/SET. Go maps are unordered; this encoder writes
``data``/``old`` sorted by column name so that the same seed gives the same bytes.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from functools import lru_cache
from importlib.resources import files
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

import fastavro

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim.column_types import (
    BINARY_TYPES,
    INTEGER_TYPES,
    TEXT_TYPES,
    Value,
    decimal_text,
    display_length,
    enum_index,
    format_datetime_text,
    set_bitmask,
)
from ticdc_sim.ddl_event import ticdc_event
from ticdc_sim.encoding import EncodedMessage, ProtocolEncoder, expect_type, index_record
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.tidb_ddl import simple_type

PROTOCOL_VERSION = 1
_NS = "com.pingcap.simple.avro."
#: Types whose ``dataType`` carries ``unsigned``/``zerofill`` in the Avro encoding.
_FLAGGED_TYPES = INTEGER_TYPES | {"float", "double", "bit", "year", "decimal"}


@lru_cache(maxsize=1)
def _schema() -> Any:
    text = files("ticdc_lake").joinpath("resources", "simple_message.avsc.json").read_text(encoding="utf-8")
    return fastavro.parse_schema(json.loads(text))


def int64(value: int) -> int:
    """Go's ``int64(u)`` of a uint64: two's complement for values of 2^63 and more."""
    if not 0 <= value < 1 << 64:
        raise ValueError(f"{value} is not an unsigned 64-bit integer")
    return value - (1 << 64) if value >= 1 << 63 else value


class SimpleAvroEncoder(ProtocolEncoder):
    """Encodes events as TiCDC's Simple Avro messages for a TiCDC server in ``server_time_zone``."""

    protocol: ClassVar[str] = "simple-avro"
    ddl_to_all_partitions: ClassVar[bool] = True
    has_bootstrap: ClassVar[bool] = True
    has_watermark: ClassVar[bool] = True

    def __init__(self, server_time_zone: str = "UTC") -> None:
        self.server_time_zone = server_time_zone
        self._zone = ZoneInfo(server_time_zone)

    # ------------------------------------------------------------------ messages
    def encode_ddl(self, ddl: DdlChange, commit_ts: int, build_ts: int) -> EncodedMessage:
        """``newDDLMessageMap``: as the JSON encoding (subtype, query, table infos from :mod:`ddl_event`)."""
        event = ticdc_event(ddl)
        before = event.pre_table_schema
        payload = {
            "version": PROTOCOL_VERSION,
            "type": simple_type(event.action),
            "sql": event.query,
            "commitTs": int64(commit_ts),
            "buildTs": build_ts,
            "tableSchema": None if event.table_schema is None else table_schema_avro(event.table_schema),
            "preTableSchema": None if before is None else table_schema_avro(before),
        }
        return _message("DDL", "DDL", payload)

    def encode_bootstrap(self, schema: TableSchema, build_ts: int) -> EncodedMessage:
        payload = {"version": PROTOCOL_VERSION, "buildTs": build_ts, "tableSchema": table_schema_avro(schema)}
        return _message("BOOTSTRAP", "Bootstrap", payload)

    def encode_watermark(self, commit_ts: int, build_ts: int) -> EncodedMessage:
        payload = {"version": PROTOCOL_VERSION, "commitTs": int64(commit_ts), "buildTs": build_ts}
        return _message("WATERMARK", "Watermark", payload)

    def encode_row(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> EncodedMessage:
        data = old = None
        if change.op is not DmlOp.DELETE:
            assert change.after is not None
            data = self.row_avro(schema, change.after)
        if change.op is not DmlOp.INSERT:
            assert change.before is not None
            old = self.row_avro(schema, change.before)
        payload = {
            "version": PROTOCOL_VERSION,
            "database": change.database,
            "table": change.table,
            "tableID": schema.table_id or 0,
            "type": change.op.value,
            "commitTs": int64(commit_ts),
            "buildTs": build_ts,
            "schemaVersion": int64(schema.version or 0),
            "claimCheckLocation": None,
            "handleKeyOnly": None,
            "checksum": None,
            "data": data,
            "old": old,
        }
        return _message("DML", "DML", payload)

    # -------------------------------------------------------------------- values
    def row_avro(self, schema: TableSchema, row: Mapping[str, Value]) -> dict[str, Any]:
        """A row image as the Avro map: column name → union value tagged with its branch."""
        encoded: dict[str, Any] = {}
        for name in sorted(row):
            column = schema.column(name)
            if column is None:
                raise SchemaError(f"{schema.database}.{schema.table}: row has unknown column {name!r}")
            encoded[name] = self.encode_value(column, row[name])
        return encoded

    def encode_value(self, column: ColumnSchema, value: Value) -> tuple[str, Any] | None:
        """One column value as ``(Avro branch, datum)`` (``encodeValue4Avro``), or None for NULL."""
        if value is None:
            return None
        tp = column.mysql_type
        if tp == "bigint" and column.unsigned:
            return (_NS + "UnsignedBigint", {"value": int64(expect_type(value, int, column))})
        if tp in INTEGER_TYPES or tp in ("year", "bit"):
            return ("long", int64(expect_type(value, int, column)) if tp == "bit" else expect_type(value, int, column))
        if tp == "float":
            return ("float", expect_type(value, float, column))
        if tp == "double":
            return ("double", expect_type(value, float, column))
        if tp == "decimal":
            return ("string", decimal_text(column, expect_type(value, Decimal, column)))
        if tp == "date":
            return ("string", expect_type(value, date, column).isoformat())
        if tp == "datetime":
            return ("string", format_datetime_text(expect_type(value, datetime, column), column.fsp or 0))
        if tp == "timestamp":
            local = expect_type(value, datetime, column).astimezone(self._zone).replace(tzinfo=None)
            text = format_datetime_text(local, column.fsp or 0)
            return (_NS + "Timestamp", {"location": self.server_time_zone, "value": text})
        if tp == "enum":
            return ("long", enum_index(column, expect_type(value, str, column)))
        if tp == "set":
            return ("long", int64(set_bitmask(column, expect_type(value, str, column))))
        if tp in BINARY_TYPES:
            return ("bytes", expect_type(value, bytes, column))
        return ("string", expect_type(value, str, column))  # char/varchar/text family, json, time


def _message(kind: str, payload_record: str, payload: dict[str, Any]) -> EncodedMessage:
    message = (_NS + "Message", {"type": kind, "payload": (_NS + payload_record, payload)})
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _schema(), message)
    return EncodedMessage(None, buffer.getvalue())


def table_schema_avro(schema: TableSchema) -> dict[str, Any]:
    """``TableSchema`` as avro.go's ``newTableSchemaMap`` builds it."""
    return {
        "database": schema.database,
        "table": schema.table,
        "tableID": schema.table_id or 0,
        "version": int64(schema.version or 0),
        "columns": [_column_avro(c) for c in schema.columns],
        "indexes": [index_record(i) for i in schema.indexes],
    }


def _column_avro(column: ColumnSchema) -> dict[str, Any]:
    tp = column.mysql_type
    textual = tp in TEXT_TYPES or tp in ("enum", "set")
    flagged = tp in _FLAGGED_TYPES
    data_type = {
        "mysqlType": tp,
        "charset": column.charset or ("utf8mb4" if textual else "binary"),
        "collate": column.collation or ("utf8mb4_bin" if textual else "binary"),
        "length": display_length(column),
        "decimal": (column.scale or 0) if tp == "decimal" else None,
        "elements": list(column.elements or ()) if tp in ("enum", "set") else None,
        "unsigned": column.unsigned if flagged else None,
        "zerofill": False if flagged else None,
    }
    return {"name": column.name, "dataType": data_type, "nullable": column.nullable, "default": column.default}
