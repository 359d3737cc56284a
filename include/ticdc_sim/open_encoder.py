"""TiCDC's Open Protocol (``protocol=open-protocol``; docs/protocols.md).

Follows ``pkg/sink/codec/open/{open_protocol_encoder.go, open_protocol_message.go}`` and
``pkg/sink/codec/internal/{message_key.go, column.go}``, all written with Go ``encoding/json``:

* framing: key = ``u64be(1)`` (batch version) then ``u64be(len) + key JSON`` per event, value =
  ``u64be(len) + value JSON`` per event. TiCDC batches up to ``max-batch-size`` row events of one
  partition key; this encoder sends one event per Kafka message, which is what a batch of one
  looks like (DDL and resolved events are always alone);
* key ``{"ts", "scm", "tbl", "rid", "ptn", "t"}`` (``omitempty``: no ``scm``/``tbl`` when empty,
  ``rid`` only when non-zero; ``ptn`` never, the simulator has no partitioned tables);
* row value ``{"u": new}`` / ``{"u": new, "p": old}`` / ``{"d": old}``, columns sorted by name
  (Go maps), each ``{"t": type code, "h": true (handle key only), "f": flags, "v": value}``;
* DDL value ``{"q": query, "t": TiDB action type}``; resolved (watermark) value empty.

Values (``Column.FromRowChangeColumn``): integers, YEAR, BIT, ENUM index and SET bitmask as JSON
numbers; FLOAT/DOUBLE as ``encoding/json`` floats; binary CHAR/VARCHAR ``strconv.Quote``d without
the quotes; every TEXT/BLOB type base64 (Go ``[]byte``); the rest as the mounter's strings
(TIMESTAMP as wall time in the TiCDC server's zone).

``rid`` is the row handle: the value of an integer primary key (TiDB's ``PKIsHandle``). Tables
with another primary key are clustered (TiDB's default ``tidb_enable_clustered_index=ON``) and
send none. For tables without a primary key the encoder allocates ``_tidb_rowid`` values itself,
1, 2, … per table in insert order; the INSERT half of a split key-changing UPDATE keeps the row id
of its DELETE half, as TiDB keeps the handle.
"""

from __future__ import annotations

import base64
from collections import deque
from collections.abc import Mapping
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim.column_types import INTEGER_TYPES, TEXT_TYPES, Value, enum_index, set_bitmask
from ticdc_sim.ddl_event import ticdc_event
from ticdc_sim.encoding import EncodedMessage, ProtocolEncoder
from ticdc_sim.go_text import RawJson, dumps, encoding_json_float, encoding_json_string, go_quote_bytes
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.tidb_columns import (
    FLAG_HANDLE_KEY,
    column_flags,
    mounter_text,
    pk_is_handle,
    primary_key,
    table_context,
    type_code,
    unsigned_int64,
)

BATCH_VERSION = 1
MESSAGE_ROW = 1
MESSAGE_DDL = 2
MESSAGE_RESOLVED = 3
_QUOTED_CODES = frozenset({15, 253, 254})
_LOB_TYPES = frozenset({"tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob"})


def frame(key_json: bytes, value: bytes) -> EncodedMessage:
    """One event as a batch of one: ``u64be(1) u64be(len) key`` and ``u64be(len) value``."""
    key = BATCH_VERSION.to_bytes(8, "big") + len(key_json).to_bytes(8, "big") + key_json
    return EncodedMessage(key, len(value).to_bytes(8, "big") + value)


class _RowIds:
    """``_tidb_rowid`` of the rows of tables without a primary key (see the module docstring)."""

    def __init__(self) -> None:
        self._next: dict[tuple[str, str], int] = {}
        self._ids: dict[tuple[str, str, tuple[Any, ...]], int] = {}
        self._split: dict[tuple[str, str], deque[int]] = {}

    def row_id(self, change: RowChange, schema: TableSchema) -> int:
        table = (schema.database, schema.table)
        row = _image(change, change.before if change.op is DmlOp.DELETE else change.after)
        key = (*table, tuple(repr(row[name]) for name in schema.handle_key()))
        if change.op is DmlOp.INSERT:
            pending = self._split.setdefault(table, deque())
            if change.split and pending:
                self._ids[key] = pending.popleft()
            else:
                self._next[table] = self._next.get(table, 0) + 1
                self._ids[key] = self._next[table]
            return self._ids[key]
        if change.op is DmlOp.UPDATE:
            old = _image(change, change.before)
            old_key = (*table, tuple(repr(old[name]) for name in schema.handle_key()))
            self._ids[key] = self._ids.pop(old_key, 0)
            return self._ids[key]
        row_id = self._ids.pop(key, 0)
        if change.split:
            self._split.setdefault(table, deque()).append(row_id)
        return row_id


class OpenEncoder(ProtocolEncoder):
    """Encodes events as TiCDC's Open Protocol messages for a TiCDC server in ``server_time_zone``."""

    protocol: ClassVar[str] = "open"
    ddl_to_all_partitions: ClassVar[bool] = True
    has_bootstrap: ClassVar[bool] = False
    has_watermark: ClassVar[bool] = True

    def __init__(
        self,
        server_time_zone: str = "UTC",
        *,
        output_old_value: bool = True,
        only_output_updated_columns: bool = False,
    ) -> None:
        self.server_time_zone = server_time_zone
        self._zone = ZoneInfo(server_time_zone)
        self.output_old_value = output_old_value
        self.only_output_updated_columns = only_output_updated_columns
        self._row_ids = _RowIds()

    # ------------------------------------------------------------------ messages
    def encode_row(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> EncodedMessage:
        with table_context(change.database, change.table, commit_ts):
            return self._row_message(change, schema, commit_ts, build_ts)

    def _row_message(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> EncodedMessage:
        key: dict[str, Any] = {"ts": commit_ts}
        if change.database:
            key["scm"] = change.database
        if change.table:
            key["tbl"] = change.table
        row_id = self._row_id(change, schema)
        if row_id:
            key["rid"] = row_id
        key["t"] = MESSAGE_ROW
        value: dict[str, Any] = {}
        if change.op is DmlOp.DELETE:
            value["d"] = self.columns_json(schema, _image(change, change.before))
        else:
            value["u"] = self.columns_json(schema, _image(change, change.after))
            if change.op is DmlOp.UPDATE and self.output_old_value:
                old = self.columns_json(schema, _image(change, change.before))
                if self.only_output_updated_columns:  # dropNotUpdatedColumns
                    old = {name: c for name, c in old.items() if c != value["u"].get(name)}
                if old:
                    value["p"] = old
        return frame(_json(key), _json(value))

    def encode_ddl(self, ddl: DdlChange, commit_ts: int, build_ts: int) -> EncodedMessage:
        """``ddlEventToMsg``: names, query and action of TiCDC's DDL event (:mod:`ddl_event`)."""
        event = ticdc_event(ddl)
        key: dict[str, Any] = {"ts": commit_ts}
        if event.database:
            key["scm"] = event.database
        if event.table:
            key["tbl"] = event.table
        key["t"] = MESSAGE_DDL
        return frame(_json(key), _json({"q": event.query, "t": event.action}))

    def encode_watermark(self, commit_ts: int, build_ts: int) -> EncodedMessage:
        return frame(_json({"ts": commit_ts, "t": MESSAGE_RESOLVED}), b"")

    # -------------------------------------------------------------------- values
    def columns_json(self, schema: TableSchema, row: Mapping[str, Value]) -> dict[str, Any]:
        """A row image as ``map[string]internal.Column``: sorted by name (Go marshals maps sorted)."""
        encoded: dict[str, Any] = {}
        for name in sorted(row, key=lambda n: n.encode("utf-8")):
            column = schema.column(name)
            if column is None:
                raise SchemaError(f"{schema.database}.{schema.table}: row has unknown column {name!r}")
            flags = column_flags(schema, column)
            item: dict[str, Any] = {"t": type_code(column)}
            if flags & FLAG_HANDLE_KEY:
                item["h"] = True
            item["f"] = flags
            item["v"] = self.value(column, flags, row[name])
            encoded[name] = item
        return encoded

    def value(self, column: ColumnSchema, flags: int, value: Value) -> object:
        """``Column.FromRowChangeColumn`` of the mounter's value, ready for :func:`dumps`."""
        if value is None:
            return None
        tp = column.mysql_type
        if (tp in INTEGER_TYPES or tp in ("year", "bit")) and isinstance(value, int) and not isinstance(value, bool):
            return value
        if tp in ("float", "double") and isinstance(value, float):
            return RawJson(encoding_json_float(value, 32 if tp == "float" else 64))
        if tp == "enum" and isinstance(value, str):
            return enum_index(column, value)
        if tp == "set" and isinstance(value, str):
            return set_bitmask(column, value)
        if tp in _LOB_TYPES:  # a []byte: encoding/json writes base64
            raw = value.encode("utf-8") if isinstance(value, str) else value
            if not isinstance(raw, bytes):
                raise _cannot(column, value)
            return base64.b64encode(raw).decode("ascii")
        if type_code(column) in _QUOTED_CODES:
            if isinstance(value, bytes) and tp not in TEXT_TYPES:
                return go_quote_bytes(value)  # binary flag: strconv.Quote without the quotes
            if isinstance(value, str) and tp in TEXT_TYPES:
                return value
            raise _cannot(column, value)
        return mounter_text(column, value, self._zone)

    def _row_id(self, change: RowChange, schema: TableSchema) -> int:
        if pk_is_handle(schema):
            row = change.before if change.op is DmlOp.DELETE else change.after
            handle = schema.column(primary_key(schema)[0])
            value = _image(change, row)[primary_key(schema)[0]]
            if not isinstance(value, int) or handle is None:
                return 0
            return unsigned_int64(value) if handle.unsigned else value  # kv.Handle.IntValue() is an int64
        if primary_key(schema):
            return 0  # clustered common handle: not an int handle
        return self._row_ids.row_id(change, schema)


def _image(change: RowChange, row: Mapping[str, Value] | None) -> Mapping[str, Value]:
    if row is None:
        raise SchemaError(f"{change.database}.{change.table}: {change.op} without its row image")
    return row


def _json(document: object) -> bytes:
    return dumps(document, encoding_json_string).encode("utf-8")


def _cannot(column: ColumnSchema, value: Value) -> SchemaError:
    return SchemaError(f"column {column.name!r} ({column.type_text()}): cannot encode {value!r} for Open Protocol")
