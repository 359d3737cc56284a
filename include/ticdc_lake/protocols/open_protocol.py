"""Decoder of the TiCDC Open Protocol (protocol id ``open``; docs/protocols.md).

One Kafka message is a batch (``open_framing``): key item *i* (``{"ts", "scm", "tbl", "rid",
"ptn", "t", "ohk", "ccl"}``) pairs with value item *i*. Key ``t`` says the event kind:

* ``1`` row: value ``{"u": new}`` insert, ``{"u": new, "p": old}`` update, ``{"d": old}`` delete;
  each column is ``{"t": type code, "h": handle?, "f": flags, "v": value}`` (``open_values``);
* ``2`` DDL: value ``{"q": query, "t": TiDB action type}``;
* ``3`` resolved (watermark): the key's ``ts``, empty value.

Rows carry their own types, so DML never waits for a schema. What the protocol lacks (ENUM/SET
members, lengths, precision, fsp) is described in ``docs/protocols.md``. Facts kept in
``ChangeEvent.facts`` of DML events:

* ``handle_key``: names of the handle-key columns (``h`` or flag 2), sorted;
* ``primary_key``: names of the columns with the primary-key flag (8), sorted;
* ``column_flags``: column → TiCDC flag bits;
* ``unresolved_enum_set``: names of ENUM/SET columns whose canonical text is still the index or
  bitmask (the message has no members): schema history must name them later;
* ``row_id``: the key's ``rid`` (``_tidb_rowid`` / int handle), when sent.

DDL events keep the TiDB action type number in ``facts.ddl_action``.

Large messages (``pkg/sink/codec/open/open_protocol_encoder.go``): a row whose key has ``ccl`` is
replaced by the original one-event batch TiCDC stored in the claim-check storage
(:mod:`.claim_check`, ``claim_check=True``); a row whose key has ``ohk: true`` carries only the
handle key and is a decode error. Compression applies to each value item, never to keys.
"""

from __future__ import annotations

from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from ticdc_lake.canonical import MAX_UNSIGNED_BIGINT, zone_info
from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventFacts, EventKind, Op, RawMessage, RowImage, SourcePosition
from ticdc_lake.protocols.base import Decoder, MessageLocation, SchemaLookup
from ticdc_lake.protocols.claim_check import (
    ClaimCheckReader,
    Reference,
    handle_key_only_error,
    nested_reference_error,
    resolve,
)
from ticdc_lake.protocols.common import ddl_type_for
from ticdc_lake.protocols.compression import decompress, undeclared_compression
from ticdc_lake.protocols.json_markers import has_member
from ticdc_lake.protocols.location import Doc, location, uint64
from ticdc_lake.protocols.open_framing import (
    PROTOCOL,
    FramedItem,
    describe,
    load_json_object,
    split_batch,
    split_items,
)
from ticdc_lake.protocols.open_values import (
    ENUM_SET_CODES,
    FLAG_HANDLE_KEY,
    FLAG_PRIMARY_KEY,
    canonical_value,
    column_type_text,
)
from ticdc_lake.protocols.resources import DecodeResources

MESSAGE_ROW = 1
MESSAGE_DDL = 2
MESSAGE_RESOLVED = 3


class OpenProtocolDecoder(Decoder):
    """TiCDC Open Protocol. Stateless: every message carries what it needs."""

    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, options: CodecOptions, resources: DecodeResources | None = None) -> None:
        super().__init__(options, resources)
        self._claims = ClaimCheckReader(PROTOCOL, options)

    def may_carry_schema(self, message: RawMessage) -> bool:
        """True when some key item may be a DDL (``"t":2``, in any JSON formatting: ``json_markers``)."""
        return message.key is not None and has_member(message.key, "t", ("2",))

    def decode(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        return self._decode(message, schemas, stored=False)

    def find_location(self, message: RawMessage) -> MessageLocation | None:
        """From the key items only (values may be what is broken): the one table all rows name."""
        key = message.key or b""
        if int.from_bytes(key[:8], "big") != 1:
            return None
        return open_location([load_json_object(item, "key") for item in split_items(key, "key", start=8)])

    def _decode(self, message: RawMessage, schemas: SchemaLookup, *, stored: bool) -> list[ChangeEvent]:
        """``stored``: ``message`` came from a claim-check object, so it must hold no reference."""
        events: list[ChangeEvent] = []
        for key_item, value_item in split_batch(message.key, message.value):
            key = load_json_object(key_item, "key")
            position = SourcePosition(message.topic, message.partition, message.offset, key_item.index)
            where = f"event {key_item.index} (key item at byte offset {key_item.offset})"
            kind = _field_int(key, "t", where, 0, 255)
            commit_ts = _field_int(key, "ts", where, 0, MAX_UNSIGNED_BIGINT)
            if kind == MESSAGE_RESOLVED:
                events.append(ChangeEvent(kind=EventKind.WATERMARK, position=position, commit_ts=commit_ts))
            elif kind == MESSAGE_DDL:
                events.append(self._ddl(key, value_item, position, commit_ts, where))
            elif kind == MESSAGE_ROW and key.get("ccl") is not None:
                events.extend(self._claim_checked(key, message, schemas, position, commit_ts, where, stored=stored))
            elif kind == MESSAGE_ROW:
                events.append(self._row(key, value_item, position, commit_ts, where))
            else:
                raise DecodeError(
                    PROTOCOL,
                    f"unknown message type {kind} in field 't' of key item {key_item.index} at byte offset "
                    f"{key_item.offset}; Open Protocol keys have t = 1 (row), 2 (DDL) or 3 (resolved)",
                )
        return events

    def _value(self, item: FramedItem, where: str) -> dict[str, Any]:
        # TiCDC compresses each value item of a batch on its own; keys are never compressed.
        what = f"the value of {where}"
        data = decompress(item.data, self.options.compression, PROTOCOL, what)
        try:
            return load_json_object(FramedItem(item.index, item.offset, data), "value")
        except DecodeError:
            compressed = undeclared_compression(data, self.options.compression, PROTOCOL, what)
            if compressed is not None:
                raise compressed from None
            raise

    def _claim_checked(
        self,
        key: dict[str, Any],
        message: RawMessage,
        schemas: SchemaLookup,
        position: SourcePosition,
        commit_ts: int,
        where: str,
        *,
        stored: bool,
    ) -> list[ChangeEvent]:
        """The row TiCDC stored as a one-event batch ``{"key", "value"}`` (``newClaimCheckLocationMessage``)."""
        database, table = _row_table(key, where)
        where = _with_table(where, database, table, commit_ts)
        if stored:
            raise nested_reference_error(PROTOCOL, where)
        if self.options.claim_check_raw_value:
            raise DecodeError(
                PROTOCOL,
                f"{where} is a claim-check reference, but codec.claim_check_raw_value is true: TiCDC never "
                "writes raw values for the Open Protocol (the object holds both key and value); set it to false",
            )
        reference = Reference(key["ccl"], "ccl", where, position, database, table, commit_ts)
        return resolve(self._claims, lambda inner: self._decode(inner, schemas, stored=True), message, reference)

    def _ddl(
        self, key: dict[str, Any], item: FramedItem, position: SourcePosition, commit_ts: int, where: str
    ) -> ChangeEvent:
        value = self._value(item, where)
        context = f"the DDL value of {where}"
        query = value.get("q")
        if not isinstance(query, str):
            raise DecodeError(PROTOCOL, f"field 'q' of {context} must be a string, got {describe(query)}")
        action = _field_int(value, "t", context, 0, 255)
        return ChangeEvent(
            kind=EventKind.DDL,
            position=position,
            commit_ts=commit_ts,
            database=_optional_name(key, "scm", where),
            table=_optional_name(key, "tbl", where),
            ddl_type=ddl_type_for(action),
            ddl_query=query,
            facts=EventFacts(ddl_action=action),
        )

    def _row(
        self, key: dict[str, Any], item: FramedItem, position: SourcePosition, commit_ts: int, where: str
    ) -> ChangeEvent:
        database, table = _row_table(key, where)
        item_where = where
        where = _with_table(where, database, table, commit_ts)
        only_key = key.get("ohk")
        if only_key is not None and only_key is not False:
            if only_key is not True:
                raise DecodeError(
                    PROTOCOL, f"field 'ohk' of the key of {where} must be true or false, got {describe(only_key)}"
                )
            raise handle_key_only_error(PROTOCOL, database, table, commit_ts, f"key 'ohk' of {item_where}")
        table_id = _field_int(key, "ptn", where, 0, MAX_UNSIGNED_BIGINT) if "ptn" in key else None
        value = self._value(item, where)
        new, old, deleted = (_columns(value, name, where) for name in ("u", "p", "d"))
        after_cols: dict[str, Any] | None
        before_cols: dict[str, Any] | None
        if deleted is not None:
            if new is not None or old is not None:
                raise DecodeError(PROTOCOL, f"the row value of {where} mixes 'd' with 'u' or 'p'")
            op, after_cols, before_cols = Op.DELETE, None, deleted
        elif new is not None:
            op, after_cols, before_cols = (Op.UPDATE if old is not None else Op.INSERT), new, old
        else:
            raise DecodeError(
                PROTOCOL,
                f"the row value of {where} has neither 'u' (insert/update) nor 'd' (delete), or both are empty",
            )
        event = ChangeEvent(
            kind=EventKind.DML,
            position=position,
            commit_ts=commit_ts,
            database=database,
            table=table,
            table_id=table_id,
            op=op,
        )
        facts = _RowFacts()
        zone = zone_info(self.options.server_time_zone)
        if after_cols is not None:
            event.after = facts.image(after_cols, "u", where, zone)
        if before_cols is not None:
            event.before = facts.image(before_cols, "d" if op is Op.DELETE else "p", where, zone)
        event.column_types = facts.types
        event.facts = EventFacts(
            handle_key=tuple(sorted(facts.handle)),
            primary_key=tuple(sorted(facts.primary)),
            column_flags=facts.flags,
            unresolved_enum_set=tuple(sorted(facts.unresolved)),
            row_id=_field_int(key, "rid", where, -(1 << 63), (1 << 63) - 1) if "rid" in key else None,
        )
        return event


class _RowFacts:
    """Types, flags and key facts gathered over the images of one row event."""

    def __init__(self) -> None:
        self.types: dict[str, str] = {}
        self.flags: dict[str, int] = {}
        self.handle: set[str] = set()
        self.primary: set[str] = set()
        self.unresolved: set[str] = set()

    def image(self, columns: dict[str, Any], field: str, where: str, zone: ZoneInfo) -> RowImage:
        image: RowImage = {}
        for name, column in columns.items():
            context = f"column {name!r} in '{field}' of {where}"
            if not isinstance(column, dict):
                raise DecodeError(PROTOCOL, f"{context} must be a JSON object {{t, f, v}}, got {describe(column)}")
            code = _field_int(column, "t", context, 0, 255)
            flags = _field_int(column, "f", context, 0, MAX_UNSIGNED_BIGINT) if "f" in column else 0
            handle = column.get("h", False)
            if not isinstance(handle, bool):
                raise DecodeError(PROTOCOL, f"field 'h' of {context} must be true or false, got {describe(handle)}")
            if "v" not in column:
                raise DecodeError(PROTOCOL, f"{context} has no field 'v'")
            try:
                type_text = column_type_text(code, flags)
                value = column["v"]
                image[name] = None if value is None else canonical_value(code, flags, value, zone)
            except ValueError as exc:
                raise DecodeError(PROTOCOL, f"{context} (type code {code}, flags {flags}): {exc}") from None
            self.types.setdefault(name, type_text)
            self.flags.setdefault(name, flags)
            if handle or flags & FLAG_HANDLE_KEY:
                self.handle.add(name)
            if flags & FLAG_PRIMARY_KEY:
                self.primary.add(name)
            if code in ENUM_SET_CODES and value is not None:
                self.unresolved.add(name)
        return image


def _row_table(key: dict[str, Any], where: str) -> tuple[str, str]:
    database = _optional_name(key, "scm", where)
    table = _optional_name(key, "tbl", where)
    if database is None or table is None:
        raise DecodeError(PROTOCOL, f"the row key of {where} must name the database 'scm' and table 'tbl'")
    return database, table


def _with_table(where: str, database: str, table: str, commit_ts: int) -> str:
    return f"{where.removesuffix(')')}, table {database}.{table}, commit ts {commit_ts})"


def _columns(value: dict[str, Any], name: str, where: str) -> dict[str, Any] | None:
    """The column map ``u``, ``p`` or ``d``; absent, null or empty reads as None (Go omitempty)."""
    columns = value.get(name)
    if columns is None:
        return None
    if not isinstance(columns, dict):
        raise DecodeError(
            PROTOCOL, f"field '{name}' of the row value of {where} must be a JSON object, got {describe(columns)}"
        )
    return columns or None


def _optional_name(key: dict[str, Any], name: str, where: str) -> str | None:
    """``scm``/``tbl``: Go omits them when empty (schema-level DDL has no table)."""
    value = key.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DecodeError(PROTOCOL, f"field '{name}' of the key of {where} must be a string, got {describe(value)}")
    return value or None


def _field_int(doc: dict[str, Any], name: str, context: str, low: int, high: int) -> int:
    if name not in doc:
        raise DecodeError(PROTOCOL, f"{context} has no field '{name}'")
    value = doc[name]
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise DecodeError(
            PROTOCOL, f"field '{name}' of {context} must be an integer in {low}..{high}, got {describe(value)}"
        )
    return value


def open_location(keys: list[Doc]) -> MessageLocation | None:
    """An Open Protocol batch (its key items): the table when every row and DDL item names the same one."""
    tables = {(k.get("scm"), k.get("tbl")) for k in keys if k.get("t") in (1, 2)}
    stamps = [ts for k in keys if (ts := uint64(k.get("ts"))) is not None]
    commit_ts = min(stamps) if stamps else None
    if len(tables) != 1:
        return location(None, None, commit_ts)
    database, table = next(iter(tables))
    renamed = any(k.get("t") == 2 for k in keys)  # the DDL text is in the value: a rename cannot be ruled out
    return location(database, table, commit_ts, rename=renamed)
