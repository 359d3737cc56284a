"""TiCDC's Debezium protocol (``protocol=debezium``; docs/protocols.md).

Follows ``pkg/sink/codec/debezium/{encoder.go, codec.go, helper.go}`` field by field: one event
per Kafka message, key and value JSON ``{"payload", "schema"}`` written by TiCDC's streaming
jsoniter writer (``util.JSONWriter``: no HTML escapes, fields in the order written), the
``schema`` left out with ``debezium-disable-schema=true``.

* row: key = the handle-key columns (new row, old row for DELETE) with a ``<cluster>.<db>.<table>.Key``
  schema; value payload ``source, ts_ms, transaction, op, before/after`` (``op`` c/u/d; UPDATE
  carries ``before`` only with ``output-old-value``) and the ``…Envelope`` schema;
* watermark (``op: "m"``), only with ``enable-tidb-extension``;
* DDL: key ``{"databaseName"}``, value ``source, ts_ms, databaseName, schemaName, ddl,
  tableChanges`` (``tableChanges`` empty for schema-level DDL and TRUNCATE, ``table`` null for
  DROP TABLE). DDL actions TiCDC does not support are not sent (``encode_ddl`` returns None).
  Names, query and table infos are TiCDC's DDL event's (:mod:`ddl_event`).

``source.commit_ts`` and ``source.cluster_id`` are written whatever the extension says;
``payload.ts_ms`` is the encoder clock (``build_ts``). Compression is not applied.
"""

from __future__ import annotations

from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim.ddl_event import TicdcDdlEvent, ticdc_event
from ticdc_sim.debezium_fields import DebeziumFields
from ticdc_sim.debezium_schemas import (
    ddl_value_schema,
    envelope_tail,
    named,
    source_schema,
    table_change_column,
)
from ticdc_sim.encoding import EncodedMessage, ProtocolEncoder
from ticdc_sim.go_text import dumps, jsoniter_string
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.tidb_columns import ordered_columns, primary_key, table_context
from ticdc_sim.tidb_ddl import DROP_TABLE, RENAME_TABLE, TRUNCATE_TABLE, debezium_change_type

CONNECTOR_VERSION = "2.4.0.Final"
_OPS = {DmlOp.INSERT: "c", DmlOp.UPDATE: "u", DmlOp.DELETE: "d"}


def sanitize_name(name: str) -> str:
    """``common.SanitizeName``: Avro-safe name, ``_`` for every other character (a leading digit kept after it)."""
    out = []
    for position, char in enumerate(name):
        if position == 0 and not (char.isascii() and (char.isalpha() or char == "_")):
            out.append("_" + (char if char.isascii() and char.isdigit() else ""))
        elif not (char.isascii() and (char.isalnum() or char == "_")):
            out.append("_")
        else:
            out.append(char)
    return "".join(out)


def sanitize_topic_name(name: str) -> str:
    """``common.SanitizeTopicName``: like :func:`sanitize_name` but keeps ``.`` and a leading digit."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_.") else "_" for c in name)


class DebeziumEncoder(ProtocolEncoder):
    """Encodes events as TiCDC's Debezium messages for a TiCDC server in ``server_time_zone``."""

    protocol: ClassVar[str] = "debezium"
    ddl_to_all_partitions: ClassVar[bool] = True
    has_bootstrap: ClassVar[bool] = False
    has_watermark: ClassVar[bool] = True

    def __init__(
        self,
        server_time_zone: str = "UTC",
        *,
        disable_schema: bool = False,
        enable_tidb_extension: bool = True,
        output_old_value: bool = True,
        cluster_id: str = "default",
    ) -> None:
        self.server_time_zone = server_time_zone
        self.disable_schema = disable_schema
        self.enable_tidb_extension = enable_tidb_extension
        self.output_old_value = output_old_value
        self.cluster_id = cluster_id
        self._fields = DebeziumFields(ZoneInfo(server_time_zone), enable_tidb_extension)
        # Watermarks need the extension (EncodeCheckpointEvent returns nothing without it).
        vars(self)["has_watermark"] = enable_tidb_extension

    # ------------------------------------------------------------------ messages
    def encode_row(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> EncodedMessage:
        with table_context(change.database, change.table, commit_ts):
            return self._row_message(change, schema, commit_ts, build_ts)

    def _row_message(self, change: RowChange, schema: TableSchema, commit_ts: int, build_ts: int) -> EncodedMessage:
        keyed = change.before if change.op is DmlOp.DELETE else change.after
        if keyed is None:
            raise SchemaError(f"{change.op} without its {'old' if change.op is DmlOp.DELETE else 'new'} row image")
        topic_name = self._topic_name(schema)
        key_columns = ordered_columns(schema, schema.handle_key())
        key: dict[str, Any] = {"payload": self._fields.members(key_columns, keyed)}
        if not self.disable_schema:
            key["schema"] = {
                "type": "struct",
                "name": f"{topic_name}.Key",
                "optional": False,
                "fields": [self._fields.schema(c) for c in key_columns],
            }
        payload: dict[str, Any] = {
            "source": self._source(change.database, change.table, commit_ts),
            "ts_ms": build_ts,
            "transaction": None,
            "op": _OPS[change.op],
        }
        if change.op is DmlOp.INSERT:
            payload["before"] = None
            payload["after"] = self._image(schema, change.after)
        elif change.op is DmlOp.DELETE:
            payload["after"] = None
            payload["before"] = self._image(schema, change.before)
        else:
            if self.output_old_value:
                payload["before"] = self._image(schema, change.before)
            payload["after"] = self._image(schema, change.after)
        value: dict[str, Any] = {"payload": payload}
        if not self.disable_schema:
            value["schema"] = self._row_schema(schema, keyed, topic_name)
        return EncodedMessage(_bytes(key), _bytes(value))

    def encode_watermark(self, commit_ts: int, build_ts: int) -> EncodedMessage:
        if not self.enable_tidb_extension:
            raise SchemaError("TiCDC sends no Debezium watermark without enable-tidb-extension=true")
        cluster = sanitize_name(self.cluster_id)
        key: dict[str, Any] = {"payload": {}}
        if not self.disable_schema:
            key["schema"] = {"type": "struct", "name": f"{cluster}.watermark.Key", "optional": False, "fields": []}
        payload = {"source": self._source("", "", commit_ts), "ts_ms": build_ts, "transaction": None, "op": "m"}
        value: dict[str, Any] = {"payload": payload}
        if not self.disable_schema:
            value["schema"] = {
                "type": "struct",
                "optional": False,
                "name": f"{cluster}.watermark.Envelope",
                "version": 1,
                "fields": [source_schema(), *envelope_tail()],
            }
        return EncodedMessage(_bytes(key), _bytes(value))

    def encode_ddl(self, ddl: DdlChange, commit_ts: int, build_ts: int) -> EncodedMessage | None:
        """``EncodeDDLEvent``; None for the actions it rejects (``ErrDDLUnsupportType``: the MQ DDL
        sink logs the error and TiCDC sends nothing)."""
        event = ticdc_event(ddl)
        action = event.action
        change_type = debezium_change_type(action)
        if change_type is None:
            return None
        database, table = event.database, event.table
        before = event.pre_table_schema
        key_database = before.database if action == DROP_TABLE and before is not None else database
        key: dict[str, Any] = {"payload": {"databaseName": key_database}}
        if not self.disable_schema:
            key["schema"] = {
                "type": "struct",
                "name": "io.debezium.connector.mysql.SchemaChangeKey",
                "optional": False,
                "version": 1,
                "fields": [named("databaseName", False, "string")],
            }
        changes: list[dict[str, Any]] = []
        if table and action != TRUNCATE_TABLE:
            changes.append(self._table_change(event, change_type))
        payload = {
            "source": self._source(database, table, commit_ts),
            "ts_ms": build_ts,
            "databaseName": key_database,
            "schemaName": None,
            "ddl": event.query,
            "tableChanges": changes,
        }
        value: dict[str, Any] = {"payload": payload}
        if not self.disable_schema:
            value["schema"] = ddl_value_schema()
        return EncodedMessage(_bytes(key), _bytes(value))

    # ------------------------------------------------------------------ parts
    def _source(self, database: str, table: str, commit_ts: int) -> dict[str, Any]:
        return {
            "version": CONNECTOR_VERSION,
            "connector": "TiCDC",
            "name": self.cluster_id,
            "ts_ms": commit_ts >> 18,  # oracle.GetTimeFromTS: the physical part, in ms
            "snapshot": "false",
            "db": database,
            "table": table,
            "server_id": 0,
            "gtid": None,
            "file": "",
            "pos": 0,
            "row": 0,
            "thread": 0,
            "query": None,
            "commit_ts": commit_ts,
            "cluster_id": self.cluster_id,
        }

    def _topic_name(self, schema: TableSchema) -> str:
        """``getSchemaTopicName``: ``<cluster>.<db>.<table>`` sanitized."""
        return ".".join(
            (sanitize_name(self.cluster_id), sanitize_name(schema.database), sanitize_topic_name(schema.table))
        )

    def _image(self, schema: TableSchema, row: Any) -> Any:
        if row is None:
            raise SchemaError(f"{schema.database}.{schema.table}: a row image is missing")
        unknown = sorted(set(row) - {c.name for c in schema.columns})
        if unknown:
            raise SchemaError(f"{schema.database}.{schema.table}: row has unknown columns {unknown}")
        return self._fields.members(schema.columns, row)

    def _row_schema(self, schema: TableSchema, row: Any, topic_name: str) -> dict[str, Any]:
        columns: list[ColumnSchema] = [c for c in schema.columns if c.name in row]
        fields = [self._fields.schema(c) for c in columns]

        def image(name: str) -> dict[str, Any]:
            return {
                "type": "struct",
                "optional": True,
                "name": f"{topic_name}.Value",
                "field": name,
                "fields": fields,
            }

        return {
            "type": "struct",
            "optional": False,
            "name": f"{topic_name}.Envelope",
            "version": 1,
            "fields": [image("before"), image("after"), source_schema(), *envelope_tail()],
        }

    def _table_change(self, event: TicdcDdlEvent, change_type: str) -> dict[str, Any]:
        change: dict[str, Any] = {"type": change_type}
        database, table = event.database, event.table
        if event.action == RENAME_TABLE:
            before = event.pre_table_schema
            if before is None:
                raise SchemaError(f"RENAME DDL {event.query!r}: the simulator needs the table schema before the rename")
            change["id"] = f'"{before.database}"."{before.table}","{database}"."{table}"'
        else:
            change["id"] = f'"{database}"."{table}"'
        if event.action == DROP_TABLE:
            change["table"] = None
            return change
        after = event.table_schema
        if after is None:
            raise SchemaError(
                f"DDL {event.query!r} on {database}.{table}: the simulator needs the table schema after it"
            )
        change["table"] = {
            "defaultCharsetName": str(after.extra.get("default_charset", "utf8mb4")),
            "primaryKeyColumnNames": list(primary_key(after)),
            "columns": [table_change_column(c, position) for position, c in enumerate(after.columns, start=1)],
            "comment": None,
        }
        return change


def _bytes(document: object) -> bytes:
    return dumps(document, jsoniter_string).encode("utf-8")
