"""Decoder of TiCDC's Canal-JSON protocol (protocol id ``canal-json``; docs/protocols.md).

One Kafka message (key null) is one JSON object: a row change, a DDL or, with the TiDB
extension, a watermark:

* DML: ``isDdl: false``, ``type`` INSERT/UPDATE/DELETE, ``data = [row]`` (a DELETE carries its
  old row in ``data``), ``old = [old values]`` for UPDATE, ``mysqlType``/``sqlType`` per column,
  ``pkNames`` (primary key only);
* DDL: ``isDdl: true``, ``sql``, ``type`` = Canal event type (CREATE, ALTER, …);
* watermark: ``type: "TIDB_WATERMARK"`` with ``_tidb.watermarkTs``.

The commit TSO comes only from the TiDB extension ``_tidb.commitTs``. Without the extension
(``codec.enable_tidb_extension: false``) events get ``commit_ts`` 0 and
``facts.offset_ordered = True``: the pipeline can then only apply them in per-partition
offset order. Facts kept in ``ChangeEvent.facts`` of DML events:

* ``handle_key`` and ``primary_key``: ``pkNames`` sorted (Canal-JSON sends the primary key only;
  a table without one has ``[]`` even when TiCDC uses a unique index as handle key);
* ``unresolved_enum_set``: ENUM/SET columns whose text is still the index or bitmask (no members
  in a bare ``mysqlType``), sorted;
* ``sql_types``: column → java.sql.Types code (``sqlType``);
* ``old_columns``: UPDATE only, the sorted columns ``old`` carried (all of them, or only the
  changed ones with ``only-output-updated-columns``).

The UPDATE before image is ``data`` overlaid with ``old``: a column ``old`` omits did not change.

Large messages (``pkg/sink/codec/canal/canal_json_row_event_encoder.go``, extension only): a DML
with ``_tidb.claimCheckLocation`` is replaced by the original message TiCDC stored in the
claim-check storage (:mod:`.claim_check`, ``claim_check=True``); a DML with
``_tidb.onlyHandleKey: true`` carries only the handle key and is a decode error.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from ticdc_lake.byte_search import contains
from ticdc_lake.canonical import MAX_UNSIGNED_BIGINT, zone_info
from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventFacts, EventKind, Op, RawMessage, RowImage, SourcePosition
from ticdc_lake.protocols.base import MessageLocation, SchemaLookup, WholeValueDecoder
from ticdc_lake.protocols.canal_values import ColumnType, canonical_value, describe, parse_mysql_type
from ticdc_lake.protocols.claim_check import (
    ClaimCheckReader,
    Reference,
    handle_key_only_error,
    nested_reference_error,
    resolve,
)
from ticdc_lake.protocols.compression import decompress, undeclared_compression
from ticdc_lake.protocols.ddl_text import ddl_type_from_sql
from ticdc_lake.protocols.json_fast import REFERENCE, json_reader, read_json
from ticdc_lake.protocols.json_markers import has_member
from ticdc_lake.protocols.json_surrogates import lone_surrogate, lone_surrogate_reason
from ticdc_lake.protocols.location import json_object, location, renames
from ticdc_lake.protocols.resources import DecodeResources

PROTOCOL = "canal-json"
WATERMARK_TYPE = "TIDB_WATERMARK"
OPS = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
#: Canal event types TiCDC gives DDL (``convertDdlEventType``): the same set as ``ddl_type``.
DDL_TYPES = frozenset({"CREATE", "ALTER", "ERASE", "RENAME", "TRUNCATE", "CINDEX", "DINDEX", "QUERY"})

Doc = dict[str, Any]


class CanalJsonDecoder(WholeValueDecoder):
    """TiCDC Canal-JSON, with or without the TiDB extension. Stateless."""

    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, options: CodecOptions, resources: DecodeResources | None = None) -> None:
        super().__init__(options, resources)
        self._claims = ClaimCheckReader(PROTOCOL, options)

    value_test_is_search: ClassVar[bool] = True

    def value_may_carry_schema(self, value: bytes) -> bool:
        """True when the value may hold the member ``"isDdl": true``, in any JSON formatting (``json_markers``)."""
        return contains(value, b"true") and has_member(value, "isDdl", ("true",))

    def decode(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        return self._decode(message, schemas, stored=False)

    @property
    def untimed_ddl(self) -> bool:
        """Without the TiDB extension DDL carry no commit TSO (module docstring)."""
        return not self.options.enable_tidb_extension

    def find_location(self, message: RawMessage) -> MessageLocation | None:
        """``database``/``table`` and ``_tidb.commitTs``; None unless valid JSON."""
        doc = json_object(decompress(message.value or b"", self.options.compression, PROTOCOL, "the value"))
        return canal_location(doc) if doc is not None else None

    def _decode(self, message: RawMessage, schemas: SchemaLookup, *, stored: bool) -> list[ChangeEvent]:
        """``stored``: ``message`` came from a claim-check object, so it must not be a reference."""
        if message.value is None:
            raise DecodeError(PROTOCOL, "the message has no value (a Kafka tombstone); TiCDC never sends one")
        # TiCDC compresses the whole Canal-JSON value (large-message-handle-compression).
        value = decompress(message.value, self.options.compression, PROTOCOL, "the value")
        try:
            doc = _load(value)
        except DecodeError:
            compressed = undeclared_compression(value, self.options.compression, PROTOCOL, "the value")
            if compressed is not None:
                raise compressed from None
            raise
        position = SourcePosition(message.topic, message.partition, message.offset, 0)
        extension = self._extension(doc)
        is_ddl = doc.get("isDdl")
        if not isinstance(is_ddl, bool):
            raise DecodeError(PROTOCOL, f"field 'isDdl' must be true or false, got {describe(is_ddl)}")
        kind = doc.get("type")
        if is_ddl:
            return [_ddl(doc, position, extension)]
        if kind == WATERMARK_TYPE:
            if extension is None:
                raise DecodeError(PROTOCOL, "a TIDB_WATERMARK message has no '_tidb' field with 'watermarkTs'")
            ts = _uint64(extension, "watermarkTs", "field '_tidb' of the TIDB_WATERMARK message")
            return [ChangeEvent(kind=EventKind.WATERMARK, position=position, commit_ts=ts)]
        if not isinstance(kind, str) or kind not in OPS:
            raise DecodeError(
                PROTOCOL,
                f"field 'type' of a DML message (isDdl false) must be INSERT, UPDATE, DELETE or "
                f"TIDB_WATERMARK, got {describe(kind)}",
            )
        op = OPS[kind]
        reference = self._large_message(doc, op, position, extension, stored=stored)
        if reference is not None:
            return resolve(self._claims, lambda inner: self._decode(inner, schemas, stored=True), message, reference)
        return [self._dml(doc, op, position, extension)]

    def _extension(self, doc: Doc) -> Doc | None:
        """The ``_tidb`` object, checked against ``codec.enable_tidb_extension``."""
        extension = doc.get("_tidb")
        if self.options.enable_tidb_extension:
            if extension is None:
                raise DecodeError(
                    PROTOCOL,
                    "the message has no '_tidb' field but codec.enable_tidb_extension is true; set it "
                    "to match the changefeed's enable-tidb-extension",
                )
            if not isinstance(extension, dict):
                raise DecodeError(PROTOCOL, f"field '_tidb' must be a JSON object, got {describe(extension)}")
            return extension
        if extension is not None:
            raise DecodeError(
                PROTOCOL,
                "the message has a '_tidb' field but codec.enable_tidb_extension is false; set it to "
                "true to match the changefeed (the extension carries the commit ts)",
            )
        return None

    def _large_message(
        self, doc: Doc, op: Op, position: SourcePosition, extension: Doc | None, *, stored: bool
    ) -> Reference | None:
        """The claim-check reference of a DML, if it is one; DecodeError for a handle-key-only DML."""
        if extension is None:
            return None  # TiCDC refuses large-message handling without the extension
        database, table, where = _dml_table(doc, op)
        commit_ts = _uint64(extension, "commitTs", f"field '_tidb' of {where}")
        where = f"{where} at commit ts {commit_ts}"
        only_key = extension.get("onlyHandleKey", False)
        if not isinstance(only_key, bool):
            raise DecodeError(
                PROTOCOL, f"field '_tidb.onlyHandleKey' of {where} must be true or false, got {describe(only_key)}"
            )
        location = extension.get("claimCheckLocation")
        if location is not None and location != "":
            if stored:
                raise nested_reference_error(PROTOCOL, where)
            return Reference(location, "_tidb.claimCheckLocation", where, position, database, table, commit_ts, op)
        if only_key:
            raise handle_key_only_error(PROTOCOL, database, table, commit_ts, "_tidb.onlyHandleKey: true")
        return None

    def _dml(self, doc: Doc, op: Op, position: SourcePosition, extension: Doc | None) -> ChangeEvent:
        database, table, where = _dml_table(doc, op)
        commit_ts = 0
        if extension is not None:
            commit_ts = _uint64(extension, "commitTs", f"field '_tidb' of {where}")
            where = f"{where} at commit ts {commit_ts}"
        types = _column_types(doc, where)
        data = _row(doc, "data", where)
        if data is None:
            raise DecodeError(PROTOCOL, f"field 'data' of {where} must be an array with one row, got null")
        old = _row(doc, "old", where)
        if op is Op.UPDATE and old is None:
            raise DecodeError(PROTOCOL, f"field 'old' of {where} must be an array with one row, got null")
        if op is not Op.UPDATE and old is not None:
            raise DecodeError(PROTOCOL, f"field 'old' of {where} must be null (only an UPDATE has 'old')")
        zone = zone_info(self.options.server_time_zone)
        unresolved: set[str] = set()
        image = _image(data, "data", types, where, zone, unresolved)
        event = ChangeEvent(
            kind=EventKind.DML, position=position, commit_ts=commit_ts, database=database, table=table, op=op
        )
        if op is Op.DELETE:
            event.before = image
        else:
            event.after = image
        primary = tuple(sorted(_pk_names(doc, where)))
        old_columns = None
        if old is not None:
            event.before = {**image, **_image(old, "old", types, where, zone, unresolved)}
            old_columns = tuple(sorted(old))
        event.column_types = {name: column.text for name, column in types.items()}
        event.facts = EventFacts(
            handle_key=primary,
            primary_key=primary,
            old_columns=old_columns,
            unresolved_enum_set=tuple(sorted(unresolved)),
            sql_types=_sql_types(doc, where),
            offset_ordered=extension is None,
        )
        return event


def _dml_table(doc: Doc, op: Op) -> tuple[str, str, str]:
    """(database, table, "the <OP> of db.t") of a DML message."""
    database = _name(doc, "database", f"the {op.name} message")
    table = _name(doc, "table", f"the {op.name} message")
    if not database or not table:
        raise DecodeError(PROTOCOL, f"the {op.name} message must name its 'database' and 'table'")
    return database, table, f"the {op.name} of {database}.{table}"


def _ddl(doc: Doc, position: SourcePosition, extension: Doc | None) -> ChangeEvent:
    query = doc.get("sql")
    if not isinstance(query, str) or not query:
        raise DecodeError(
            PROTOCOL, f"field 'sql' of a DDL message (isDdl true) must be the query, got {describe(query)}"
        )
    where = "the DDL message"
    database = _name(doc, "database", where) or None
    table = _name(doc, "table", where) or None
    commit_ts = 0 if extension is None else _uint64(extension, "commitTs", f"field '_tidb' of {where}")
    kind = doc.get("type")
    event = ChangeEvent(
        kind=EventKind.DDL,
        position=position,
        commit_ts=commit_ts,
        database=database,
        table=table,
        ddl_query=query,
    )
    if isinstance(kind, str) and kind in DDL_TYPES:
        event.ddl_type, source = kind, "type"
    else:
        event.ddl_type, source = ddl_type_from_sql(query) or "QUERY", "sql"
    event.facts = EventFacts(ddl_type_from=source, offset_ordered=extension is None)
    return event


def _load(value: bytes) -> Doc:
    try:
        text = value.decode("utf-8")
        doc = read_json(text, _FAST_JSON)
        if doc is REFERENCE:  # msgspec refused the text: json reads it, or says why not
            doc = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(
            PROTOCOL,
            f"the value is not valid JSON: {exc} (if the changefeed compresses messages, set the "
            "pipeline's codec.compression to match)",
        ) from None
    if not isinstance(doc, dict):
        raise DecodeError(PROTOCOL, f"the value must be a JSON object, got {describe(doc)}")
    if (where := lone_surrogate(text, doc)) is not None:
        raise DecodeError(PROTOCOL, lone_surrogate_reason(where))
    return doc


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not allowed in JSON")


#: ``json.loads`` for the texts msgspec accepts (``json_fast``); ``float`` of the number text, as json.
_FAST_JSON = json_reader(float)


#: ``parse_mysql_type`` once per distinct type text (a ``ColumnType`` is immutable; errors are not kept).
_parsed_type = lru_cache(maxsize=4096)(parse_mysql_type)


def _column_types(doc: Doc, where: str) -> dict[str, ColumnType]:
    raw = doc.get("mysqlType")
    if not isinstance(raw, dict):
        raise DecodeError(PROTOCOL, f"field 'mysqlType' of {where} must be a JSON object, got {describe(raw)}")
    types: dict[str, ColumnType] = {}
    for name, text in raw.items():
        if not isinstance(text, str):
            raise DecodeError(
                PROTOCOL, f"field 'mysqlType' of {where}: column {name!r} must have a type string, got {describe(text)}"
            )
        try:
            types[name] = _parsed_type(text)
        except ValueError as exc:
            raise DecodeError(PROTOCOL, f"field 'mysqlType' of {where}: column {name!r}: {exc}") from None
    return types


def _sql_types(doc: Doc, where: str) -> dict[str, int]:
    raw = doc.get("sqlType")
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, int) and not isinstance(v, bool) for v in raw.values()):
        raise DecodeError(PROTOCOL, f"field 'sqlType' of {where} must map columns to integer java.sql.Types codes")
    return dict(raw)


def _row(doc: Doc, field: str, where: str) -> Doc | None:
    rows = doc.get(field)
    if rows is None:
        return None
    if not isinstance(rows, list) or len(rows) != 1 or not isinstance(rows[0], dict):
        raise DecodeError(
            PROTOCOL, f"field '{field}' of {where} must be an array with one row object, got {_shape(rows)}"
        )
    row: Doc = rows[0]
    return row


def _image(
    row: Doc, field: str, types: dict[str, ColumnType], where: str, zone: ZoneInfo, unresolved: set[str]
) -> RowImage:
    image: RowImage = {}
    for name, value in row.items():
        column = types.get(name)
        if column is None:
            raise DecodeError(PROTOCOL, f"column {name!r} in '{field}' of {where} has no entry in 'mysqlType'")
        if value is None:
            image[name] = None
            continue
        try:
            image[name] = canonical_value(column, value, zone)
        except ValueError as exc:
            raise DecodeError(PROTOCOL, f"column {name!r} ({column.text}) in '{field}' of {where}: {exc}") from None
        if column.enum_or_set and column.members is None:
            unresolved.add(name)
    return image


def _pk_names(doc: Doc, where: str) -> list[str]:
    names = doc.get("pkNames")
    if names is None:
        return []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise DecodeError(PROTOCOL, f"field 'pkNames' of {where} must be an array of column names, got {_shape(names)}")
    return names


def _name(doc: Doc, field: str, where: str) -> str:
    value = doc.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DecodeError(PROTOCOL, f"field '{field}' of {where} must be a string, got {describe(value)}")
    return value


def _uint64(doc: Doc, field: str, where: str) -> int:
    value = doc.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_UNSIGNED_BIGINT:
        raise DecodeError(
            PROTOCOL,
            f"field '{field}' of {where} must be an integer in 0..{MAX_UNSIGNED_BIGINT}, got {describe(value)}",
        )
    return value


def _shape(value: object) -> str:
    if isinstance(value, list):
        return f"an array of {len(value)}" if value else "an empty array"
    return describe(value)


def canal_location(doc: Doc) -> MessageLocation:
    """A Canal-JSON message: ``database``/``table``, the commit TSO from the TiDB extension."""
    extension = doc.get("_tidb")
    commit_ts = extension.get("commitTs") if isinstance(extension, dict) else None
    if doc.get("type") == "TIDB_WATERMARK":
        return location(None, None, extension.get("watermarkTs") if isinstance(extension, dict) else None)
    renamed = doc.get("isDdl") is True and (not isinstance(doc.get("sql"), str) or renames(doc["sql"]))
    return location(doc.get("database"), doc.get("table"), commit_ts, rename=renamed)
