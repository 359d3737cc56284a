"""TiCDC Simple protocol, JSON encoding (``protocol=simple``, ``encoding-format=json``).

Follows the Simple protocol document and tiflow's source (``pkg/sink/codec/simple/
message.go``): Kafka key null; one event per value; Go struct field order with ``omitempty``
fields left out when empty; ``data``/``old`` keys sorted (Go maps); every non-null column value a
JSON string, except TIMESTAMP which is ``{"location", "value"}``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim import go_json
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


class SimpleJsonEncoder(ProtocolEncoder):
    """Encodes events as TiCDC's Simple JSON messages for a TiCDC server in ``server_time_zone``."""

    protocol: ClassVar[str] = "simple-json"
    ddl_to_all_partitions: ClassVar[bool] = True
    has_bootstrap: ClassVar[bool] = True
    has_watermark: ClassVar[bool] = True

    def __init__(self, server_time_zone: str = "UTC") -> None:
        self.server_time_zone = server_time_zone
        self._zone = ZoneInfo(server_time_zone)

    # ------------------------------------------------------------------ messages
    def encode_ddl(self, ddl: DdlChange, commit_ts: int, build_ts: int) -> EncodedMessage:
        """``newDDLMessage``: the subtype from the action (``getDDLType``), TiCDC's query and table
        infos (:mod:`ddl_event`: DROP TABLE carries the dropped table as ``tableSchema``)."""
        event = ticdc_event(ddl)
        message: dict[str, Any] = {"version": PROTOCOL_VERSION, "type": simple_type(event.action)}
        if event.query:
            message["sql"] = event.query
        message["commitTs"] = commit_ts
        message["buildTs"] = build_ts
        if event.table_schema is not None:
            message["tableSchema"] = table_schema_json(event.table_schema)
        if event.pre_table_schema is not None:
            message["preTableSchema"] = table_schema_json(event.pre_table_schema)
        return EncodedMessage(None, go_json.marshal(message))

    def encode_bootstrap(self, schema: TableSchema, build_ts: int) -> EncodedMessage:
        message = {
            "version": PROTOCOL_VERSION,
            "type": "BOOTSTRAP",
            "commitTs": 0,
            "buildTs": build_ts,
            "tableSchema": table_schema_json(schema),
        }
        return EncodedMessage(None, go_json.marshal(message))

    def encode_watermark(self, commit_ts: int, build_ts: int) -> EncodedMessage:
        message = {
            "version": PROTOCOL_VERSION,
            "type": "WATERMARK",
            "commitTs": commit_ts,
            "buildTs": build_ts,
        }
        return EncodedMessage(None, go_json.marshal(message))

    def encode_row(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> EncodedMessage:
        message: dict[str, Any] = {"version": PROTOCOL_VERSION, "database": change.database}
        message["table"] = change.table
        if schema.table_id:
            message["tableID"] = schema.table_id
        message["type"] = change.op.value
        message["commitTs"] = commit_ts
        message["buildTs"] = build_ts
        if schema.version:
            message["schemaVersion"] = schema.version
        if change.op is not DmlOp.DELETE:
            assert change.after is not None
            message["data"] = self.row_json(schema, change.after)
        if change.op is not DmlOp.INSERT:
            assert change.before is not None
            message["old"] = self.row_json(schema, change.before)
        return EncodedMessage(None, go_json.marshal(message))

    # -------------------------------------------------------------------- values
    def row_json(self, schema: TableSchema, row: Mapping[str, Value]) -> dict[str, Any]:
        """A row image as the Go map TiCDC marshals: column name → value, keys sorted."""
        encoded: dict[str, Any] = {}
        for name in sorted(row, key=lambda n: n.encode("utf-8")):
            column = schema.column(name)
            if column is None:
                raise SchemaError(f"{schema.database}.{schema.table}: row has unknown column {name!r}")
            encoded[name] = self.encode_value(column, row[name])
        return encoded

    def encode_value(self, column: ColumnSchema, value: Value) -> str | dict[str, str] | None:
        """One column value as Simple JSON carries it (``message.go`` ``encodeValue``)."""
        if value is None:
            return None
        tp = column.mysql_type
        if tp in INTEGER_TYPES or tp in ("year", "bit"):
            return str(expect_type(value, int, column))
        if tp in ("float", "double"):
            return go_json.format_float(expect_type(value, float, column), 32 if tp == "float" else 64)
        if tp == "decimal":
            return decimal_text(column, expect_type(value, Decimal, column))
        if tp == "date":
            return expect_type(value, date, column).isoformat()
        if tp == "datetime":
            return format_datetime_text(expect_type(value, datetime, column), column.fsp or 0)
        if tp == "timestamp":
            local = expect_type(value, datetime, column).astimezone(self._zone).replace(tzinfo=None)
            return {"location": self.server_time_zone, "value": format_datetime_text(local, column.fsp or 0)}
        if tp == "enum":
            return str(enum_index(column, expect_type(value, str, column)))
        if tp == "set":
            return str(set_bitmask(column, expect_type(value, str, column)))
        if tp in BINARY_TYPES:
            return base64.b64encode(expect_type(value, bytes, column)).decode("ascii")
        return expect_type(value, str, column)  # char/varchar/text family, json, time


def table_schema_json(schema: TableSchema) -> dict[str, Any]:
    """``tableSchema`` as message.go's ``TableSchema`` marshals it."""
    return {
        "schema": schema.database,
        "table": schema.table,
        "tableID": schema.table_id or 0,
        "version": schema.version or 0,
        "columns": [_column_json(c) for c in schema.columns],
        "indexes": [index_record(i) for i in schema.indexes],
    }


def _column_json(column: ColumnSchema) -> dict[str, Any]:
    textual = column.mysql_type in TEXT_TYPES or column.mysql_type in ("enum", "set")
    data_type: dict[str, Any] = {
        "mysqlType": column.mysql_type,
        "charset": column.charset or ("utf8mb4" if textual else "binary"),
        "collate": column.collation or ("utf8mb4_bin" if textual else "binary"),
    }
    length = display_length(column)
    if length:
        data_type["length"] = length
    tp = column.mysql_type
    decimal = column.scale if tp == "decimal" else column.fsp if tp in ("datetime", "timestamp", "time") else 0
    if decimal:
        data_type["decimal"] = decimal
    if column.elements:
        data_type["elements"] = list(column.elements)
    if column.unsigned:
        data_type["unsigned"] = True
    return {
        "name": column.name,
        "dataType": data_type,
        "nullable": column.nullable,
        "default": column.default,
    }
