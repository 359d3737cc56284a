"""TiCDC's Canal-JSON protocol (``protocol=canal-json``; docs/protocols.md).

Follows ``pkg/sink/codec/canal/{canal_json_row_event_encoder.go, canal_json_message.go,
canal_entry.go}``: Kafka key null, one event per value.

* DML (``newJSONMessageForDML``, hand-written with easyjson): ``id, database, table, pkNames,
  isDdl, type, es, ts, sql, sqlType, mysqlType, old, data, _tidb``. ``data`` is the new row (the
  old row for DELETE), ``old`` the old row for UPDATE (only the changed columns with
  ``only-output-updated-columns``, which ``content-compatible`` implies); every non-null value is
  a string (``canalEntryBuilder.formatValue``): integers, YEAR, BIT, ENUM index and SET bitmask
  as decimal text, FLOAT/DOUBLE ``FormatFloat('f', -1)``, binary strings decoded as ISO-8859-1,
  TIMESTAMP as wall time in the TiCDC server's zone. ``sqlType`` is the java.sql.Types code per
  column (unsigned values above the signed maximum promoted), ``mysqlType`` the bare TiDB type
  (``int unsigned``) or with ``content-compatible`` the full type (``int(10) unsigned``).
  ``pkNames`` lists the primary key only. Go writes ``mysqlType`` from a map in random order;
  this encoder uses the column order so that a seed gives the same bytes.
* DDL and watermark (``json.Marshal`` of ``JSONMessage``, goccy/go-json): DDL ``isDdl: true``,
  ``type`` from ``convertDdlEventType``; watermark ``type: "TIDB_WATERMARK"`` with
  ``_tidb.watermarkTs`` (only with the TiDB extension). DDLs go to partition 0 only.

``es`` is the commit TSO's physical milliseconds, ``ts`` the encoder clock (``build_ts``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim.column_types import BINARY_TYPES, INTEGER_TYPES, Value, enum_index, set_bitmask
from ticdc_sim.ddl_event import ticdc_event
from ticdc_sim.encoding import EncodedMessage, ProtocolEncoder
from ticdc_sim.go_text import Members, dumps, easyjson_string, format_float_f
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.tidb_columns import (
    has_zerofill,
    is_unsigned,
    mounter_text,
    ordered_columns,
    primary_key,
    table_context,
    type_desc,
)
from ticdc_sim.tidb_ddl import canal_event_type

WATERMARK_TYPE = "TIDB_WATERMARK"
#: ``internal.MySQLType2JavaType`` (java.sql.Types) per TiDB type name.
JAVA_SQL_TYPES = {
    "tinyint": -6,
    "smallint": 5,
    "mediumint": 4,
    "int": 4,
    "bigint": -5,
    "float": 7,
    "double": 8,
    "decimal": 3,
    "date": 91,
    "time": 92,
    "datetime": 93,
    "timestamp": 93,
    "year": 12,
    "enum": 4,
    "set": -7,
    "bit": -7,
    "json": 12,
    "char": 1,
    "varchar": 12,
    "tinytext": 2005,
    "text": 2005,
    "mediumtext": 2005,
    "longtext": 2005,
}
_BLOB = 2004
#: ``getJavaSQLType``: an unsigned value above the signed maximum promotes the type.
_PROMOTIONS = {"tinyint": ((1 << 7) - 1, 5), "smallint": ((1 << 15) - 1, 4), "int": ((1 << 31) - 1, -5)}
_PROMOTIONS["bigint"] = ((1 << 63) - 1, 3)


def bare_mysql_type(column: ColumnSchema) -> str:
    """``utils.GetMySQLType(col, false)``: the type name, `` unsigned`` (not BIT/YEAR), `` zerofill`` (not YEAR)."""
    text = column.mysql_type
    if is_unsigned(column) and text not in ("bit", "year"):
        text += " unsigned"
    if has_zerofill(column) and not text.startswith("year"):
        text += " zerofill"
    return text


def java_sql_type(column: ColumnSchema, value: Value) -> int:
    """``getJavaSQLType`` of one column for the row's (new, or old for DELETE) value."""
    tp = column.mysql_type
    if tp in BINARY_TYPES:
        return _BLOB
    code = JAVA_SQL_TYPES[tp]
    if column.unsigned and tp in _PROMOTIONS and isinstance(value, int) and value > _PROMOTIONS[tp][0]:
        return _PROMOTIONS[tp][1]
    return code


class CanalJsonEncoder(ProtocolEncoder):
    """Encodes events as TiCDC's Canal-JSON messages for a TiCDC server in ``server_time_zone``."""

    protocol: ClassVar[str] = "canal-json"
    ddl_to_all_partitions: ClassVar[bool] = False
    has_bootstrap: ClassVar[bool] = False
    has_watermark: ClassVar[bool] = True

    def __init__(
        self,
        server_time_zone: str = "UTC",
        *,
        enable_tidb_extension: bool = True,
        content_compatible: bool = False,
        only_output_updated_columns: bool = False,
    ) -> None:
        self.server_time_zone = server_time_zone
        self._zone = ZoneInfo(server_time_zone)
        self.enable_tidb_extension = enable_tidb_extension
        self.content_compatible = content_compatible
        self.only_output_updated_columns = only_output_updated_columns or content_compatible
        # EncodeCheckpointEvent returns nothing without the extension.
        vars(self)["has_watermark"] = enable_tidb_extension

    # ------------------------------------------------------------------ messages
    def encode_row(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> EncodedMessage:
        with table_context(change.database, change.table, commit_ts):
            return self._row_message(change, schema, commit_ts, build_ts)

    def _row_message(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> EncodedMessage:
        data_row = change.before if change.op is DmlOp.DELETE else change.after
        if data_row is None:
            raise SchemaError(f"{change.database}.{change.table}: {change.op} without its row image")
        columns = [c for c in schema.columns if c.name in data_row]
        message = Members(
            [
                ("id", 0),
                ("database", change.database),
                ("table", change.table),
                ("pkNames", [c.name for c in ordered_columns(schema, primary_key(schema))]),
                ("isDdl", False),
                ("type", change.op.value),
                ("es", commit_ts >> 18),
                ("ts", build_ts),
                ("sql", ""),
                ("sqlType", {c.name: java_sql_type(c, data_row[c.name]) for c in columns} or None),
                ("mysqlType", {c.name: self.mysql_type(c) for c in columns}),
            ]
        )
        if change.op is DmlOp.UPDATE:
            if change.before is None:
                raise SchemaError(f"{change.database}.{change.table}: UPDATE without its old row image")
            changed_only = self.only_output_updated_columns
            old = [c for c in columns if not (changed_only and _equal(change.before[c.name], data_row[c.name]))]
            message.append(("old", [self.row_json(old, change.before)]))
        else:
            message.append(("old", None))
        message.append(("data", [self.row_json(columns, data_row)]))
        if self.enable_tidb_extension:
            message.append(("_tidb", {"commitTs": commit_ts}))
        return EncodedMessage(None, dumps(message, easyjson_string).encode("utf-8"))

    def encode_ddl(self, ddl: DdlChange, commit_ts: int, build_ts: int) -> EncodedMessage:
        """``newJSONMessageForDDL``: names, query and action of TiCDC's DDL event (:mod:`ddl_event`)."""
        event = ticdc_event(ddl)
        message = _message(
            database=event.database,
            table=event.table,
            is_ddl=True,
            event_type=canal_event_type(event.action),
            ts=commit_ts,
            build_ts=build_ts,
            query=event.query,
        )
        if self.enable_tidb_extension:
            message.append(("_tidb", {"commitTs": commit_ts}))
        return EncodedMessage(None, dumps(message, easyjson_string).encode("utf-8"))

    def encode_watermark(self, commit_ts: int, build_ts: int) -> EncodedMessage:
        if not self.enable_tidb_extension:
            raise SchemaError("TiCDC sends no Canal-JSON watermark without enable-tidb-extension=true")
        message = _message("", "", False, WATERMARK_TYPE, commit_ts, build_ts, "")
        message.append(("_tidb", {"watermarkTs": commit_ts}))
        return EncodedMessage(None, dumps(message, easyjson_string).encode("utf-8"))

    # -------------------------------------------------------------------- values
    def mysql_type(self, column: ColumnSchema) -> str:
        return type_desc(column) if self.content_compatible else bare_mysql_type(column)

    def row_json(self, columns: Sequence[ColumnSchema], row: Mapping[str, Value]) -> dict[str, Any]:
        """One ``data``/``old`` object (``fillColumns``): column order, values as strings or null."""
        return {c.name: self.format_value(c, row[c.name]) for c in columns}

    def format_value(self, column: ColumnSchema, value: Value) -> str | None:
        """``canalEntryBuilder.formatValue`` of the mounter's value of ``column``."""
        if value is None:
            return None
        tp = column.mysql_type
        if tp in INTEGER_TYPES or tp in ("year", "bit"):
            if not isinstance(value, int) or isinstance(value, bool):
                raise _cannot(column, value)
            return str(value)
        if tp in ("float", "double"):
            if not isinstance(value, float):
                raise _cannot(column, value)
            return format_float_f(value, 32 if tp == "float" else 64)
        if tp in BINARY_TYPES:
            if not isinstance(value, bytes):
                raise _cannot(column, value)
            return value.decode("latin-1")  # charmap.ISO8859_1 decoder: one character per byte
        if tp == "enum" and isinstance(value, str):
            return str(enum_index(column, value))
        if tp == "set" and isinstance(value, str):
            return str(set_bitmask(column, value))
        return mounter_text(column, value, self._zone)


def _message(database: str, table: str, is_ddl: bool, event_type: str, ts: int, build_ts: int, query: str) -> Members:
    """``JSONMessage`` as ``json.Marshal`` writes it, null maps and rows included."""
    return Members(
        [
            ("id", 0),
            ("database", database),
            ("table", table),
            ("pkNames", None),
            ("isDdl", is_ddl),
            ("type", event_type),
            ("es", ts >> 18),
            ("ts", build_ts),
            ("sql", query),
            ("sqlType", None),
            ("mysqlType", None),
            ("data", None),
            ("old", None),
        ]
    )


def _equal(before: Value, after: Value) -> bool:
    """``codec.IsColumnValueEqual`` on the mounter's values (floats compare as numbers)."""
    if isinstance(before, Decimal | date | datetime) or isinstance(after, Decimal | date | datetime):
        return type(before) is type(after) and before == after
    return before == after


def _cannot(column: ColumnSchema, value: Value) -> SchemaError:
    return SchemaError(f"column {column.name!r} ({column.type_text()}): cannot encode {value!r} for Canal-JSON")
