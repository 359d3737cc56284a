"""Decoder of the TiCDC Simple protocol, JSON encoding (protocol id ``simple-json``).

One Kafka message carries one event (tiflow ``simple/message.go``): ``WATERMARK``, ``BOOTSTRAP``, a DDL
(``CREATE``, ``ALTER``, ``ERASE``, ``RENAME``, ``TRUNCATE``, ``CINDEX``, ``DINDEX``, ``QUERY``)
or a DML (``INSERT``, ``UPDATE``, ``DELETE``). DML rows carry no types: their values are made
canonical (``docs/canonical-values.md``) with the table schema named by
``(database, table, schemaVersion)``, which DDL and BOOTSTRAP messages announce. While that
schema is unknown the DML is emitted as a PENDING event and decoded again later.

Large messages (``pkg/sink/codec/simple/encoder.go``): a DML with
``claimCheckLocation`` is replaced by the original message TiCDC stored in the claim-check storage
(:mod:`.claim_check`; its events have ``claim_check=True``); a DML with ``handleKeyOnly: true`` and
no location carries only the handle key and is a decode error (needs the upstream TiDB).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, ClassVar

from ticdc_lake.canonical import (
    MAX_UNSIGNED_BIGINT,
)
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
from ticdc_lake.protocols.json_fast import REFERENCE, json_reader, read_json
from ticdc_lake.protocols.json_markers import has_member
from ticdc_lake.protocols.json_surrogates import lone_surrogate, lone_surrogate_reason
from ticdc_lake.protocols.location import Doc, json_object, location
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.simple_rows import ConverterCache, converter_for, row_image
from ticdc_lake.protocols.simple_schema import ddl_event, describe_json, table_schema_from_simple

PROTOCOL = "simple-json"
PROTOCOL_VERSION = 1
DML_TYPES = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
DDL_TYPES = frozenset({"CREATE", "RENAME", "CINDEX", "DINDEX", "ERASE", "TRUNCATE", "ALTER", "QUERY"})
MESSAGE_TYPES = ("WATERMARK", "BOOTSTRAP", *DML_TYPES, *sorted(DDL_TYPES))
#: ``type`` of the messages that carry schema facts: BOOTSTRAP and every DDL (a DROP DATABASE has no tableSchema).
_SCHEMA_TYPES = tuple(f'"{kind}"' for kind in ("BOOTSTRAP", *sorted(DDL_TYPES)))


class SimpleJsonDecoder(WholeValueDecoder):
    """Simple protocol, JSON encoding. Caches per-table converters by (database, table, version)."""

    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, options: CodecOptions, resources: DecodeResources | None = None) -> None:
        super().__init__(options, resources)
        self._converters = ConverterCache(converter_for)
        self._claims = ClaimCheckReader(PROTOCOL, options)

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self.resources = DecodeResources()
        self._converters = ConverterCache(converter_for)
        self._claims = ClaimCheckReader(PROTOCOL, self.options)

    value_test_is_search: ClassVar[bool] = True

    def value_may_carry_schema(self, value: bytes) -> bool:
        """True when the value may be a DDL or BOOTSTRAP message: its ``type`` member (in any JSON
        formatting, ``json_markers``) names one of them."""
        return has_member(value, "type", _SCHEMA_TYPES)

    def decode(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        return self._decode(message, schemas, stored=False)

    def find_location(self, message: RawMessage) -> MessageLocation | None:
        """DML ``database``/``table``, the table schema's names of DDL and BOOTSTRAP; None unless valid JSON."""
        value = decompress(message.value or b"", self.options.compression, PROTOCOL, "the value")
        doc = json_object(value)
        return simple_location(doc) if doc is not None else None

    def _decode(self, message: RawMessage, schemas: SchemaLookup, *, stored: bool) -> list[ChangeEvent]:
        """``stored``: ``message`` came from a claim-check object, so it must not be a reference."""
        doc = self._load(message)
        kind = _string(doc, "type", "the message")
        position = SourcePosition(message.topic, message.partition, message.offset, 0)
        if kind in DML_TYPES:
            return self._dml(doc, kind, message, position, schemas, stored=stored)
        if kind == "WATERMARK":
            commit_ts = _uint64(doc, "commitTs", "the WATERMARK message")
            return [ChangeEvent(kind=EventKind.WATERMARK, position=position, commit_ts=commit_ts)]
        if kind == "BOOTSTRAP":
            return [_bootstrap(doc, position)]
        if kind in DDL_TYPES:
            return [_ddl(doc, kind, position)]
        raise DecodeError(
            PROTOCOL,
            f"unknown message type {kind!r} in field 'type'; Simple messages are one of "
            f"{', '.join(MESSAGE_TYPES)} (check that the pipeline's protocol matches the changefeed)",
        )

    def _load(self, message: RawMessage) -> dict[str, Any]:
        if message.value is None:
            raise DecodeError(PROTOCOL, "the message has no value (a Kafka tombstone); Simple never sends one")
        value = decompress(message.value, self.options.compression, PROTOCOL, "the value")
        try:
            text = value.decode("utf-8")
            doc = read_json(text, _FAST_JSON)
            if doc is REFERENCE:  # msgspec refused the text: json reads it, or says why not
                doc = _JSON.decode(text)
        except (ValueError, RecursionError) as exc:
            compressed = undeclared_compression(value, self.options.compression, PROTOCOL, "the value")
            if compressed is not None:
                raise compressed from None
            raise DecodeError(
                PROTOCOL,
                f"value is not valid JSON: {exc} (if the changefeed compresses messages, set the "
                "pipeline's codec.compression to match)",
            ) from None
        if not isinstance(doc, dict):
            raise DecodeError(PROTOCOL, f"value must be a JSON object, got {describe_json(doc)}")
        if (where := lone_surrogate(text, doc)) is not None:
            raise DecodeError(PROTOCOL, lone_surrogate_reason(where))
        if "version" not in doc:
            raise DecodeError(PROTOCOL, "the message has no field 'version'")
        version = doc["version"]
        if type(version) is not int or version != PROTOCOL_VERSION:
            raise DecodeError(
                PROTOCOL,
                f"unsupported protocol version {describe_json(version)} in field 'version'; this decoder "
                f"reads Simple protocol version {PROTOCOL_VERSION}",
            )
        return doc

    def _dml(
        self,
        doc: dict[str, Any],
        kind: str,
        message: RawMessage,
        position: SourcePosition,
        schemas: SchemaLookup,
        *,
        stored: bool,
    ) -> list[ChangeEvent]:
        database = _string(doc, "database", f"the {kind} message")
        table = _string(doc, "table", f"the {kind} message")
        context = f"the {kind} message for table {database}.{table}"
        commit_ts = _uint64(doc, "commitTs", context)
        table_id = _uint64(doc, "tableID", context) if "tableID" in doc else None
        # The encoder omits a zero schemaVersion (tables whose UpdateTS is 0).
        version = _uint64(doc, "schemaVersion", context) if "schemaVersion" in doc else 0
        op = DML_TYPES[kind]
        handle_key_only = doc.get("handleKeyOnly", False)
        if not isinstance(handle_key_only, bool):
            raise _wrong_type(context, "handleKeyOnly", "true or false", handle_key_only)
        # TiCDC sets handleKeyOnly on claim-check references too: the location is checked first.
        if "claimCheckLocation" in doc:
            where = f"{context} at commit ts {commit_ts}"
            if stored:
                raise nested_reference_error(PROTOCOL, where)
            reference = Reference(
                doc["claimCheckLocation"], "claimCheckLocation", where, position, database, table, commit_ts, op
            )
            return resolve(self._claims, lambda inner: self._decode(inner, schemas, stored=True), message, reference)
        if handle_key_only:
            raise handle_key_only_error(PROTOCOL, database, table, commit_ts, "handleKeyOnly: true")
        new_row = _row_object(doc, "data", context, wanted=op is not Op.DELETE)
        old_row = _row_object(doc, "old", context, wanted=op is not Op.INSERT)
        event = ChangeEvent(
            kind=EventKind.DML,
            position=position,
            commit_ts=commit_ts,
            database=database,
            table=table,
            table_id=table_id,
            op=op,
            schema_version=version,
        )
        schema = schemas.get(database, table, version)
        if schema is None:
            event.status = EventStatus.PENDING
            event.pending_payload = (message.value or b"").decode("utf-8", errors="replace")
            return [event]
        converters = self._converters.get(schema, database, table, version, self.options.server_time_zone)
        where = f"{database}.{table} (schema version {version})"
        if new_row is not None:
            event.after = row_image(PROTOCOL, new_row, "data", converters, schema, where)
        if old_row is not None:
            event.before = row_image(PROTOCOL, old_row, "old", converters, schema, where)
        return [event]


def _bootstrap(doc: dict[str, Any], position: SourcePosition) -> ChangeEvent:
    if doc.get("tableSchema") is None:
        raise DecodeError(PROTOCOL, "the BOOTSTRAP message has no field 'tableSchema'")
    schema = table_schema_from_simple(doc["tableSchema"], source="simple-bootstrap", protocol=PROTOCOL)
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


def _ddl(doc: dict[str, Any], kind: str, position: SourcePosition) -> ChangeEvent:
    context = f"the {kind} DDL message"
    # Go omits an empty "sql" (omitempty): absent means no statement text, not a broken message.
    query = _string(doc, "sql", context) if "sql" in doc else None
    commit_ts = _uint64(doc, "commitTs", context)
    after = before = None
    if doc.get("tableSchema") is not None:
        after = table_schema_from_simple(doc["tableSchema"], source="simple-ddl", protocol=PROTOCOL)
    if doc.get("preTableSchema") is not None:
        before = table_schema_from_simple(
            doc["preTableSchema"], source="simple-ddl", field="preTableSchema", protocol=PROTOCOL
        )
    return ddl_event(kind, query, commit_ts, after, before, position)


def _row_object(doc: dict[str, Any], key: str, context: str, *, wanted: bool) -> dict[str, Any] | None:
    if not wanted:
        if key in doc:
            raise DecodeError(PROTOCOL, f"{context} carries field '{key}', which this message type never has")
        return None
    if key not in doc:
        raise DecodeError(PROTOCOL, f"{context} has no field '{key}'")
    value = doc[key]
    if not isinstance(value, dict):
        raise _wrong_type(context, key, "a JSON object", value)
    return value


def _string(doc: dict[str, Any], key: str, context: str) -> str:
    if key not in doc:
        raise DecodeError(PROTOCOL, f"{context} has no field '{key}'")
    value = doc[key]
    if not isinstance(value, str):
        raise _wrong_type(context, key, "a string", value)
    return value


def _uint64(doc: dict[str, Any], key: str, context: str) -> int:
    if key not in doc:
        raise DecodeError(PROTOCOL, f"{context} has no field '{key}'")
    value = doc[key]
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_UNSIGNED_BIGINT:
        raise _wrong_type(context, key, "an unsigned 64-bit integer", value)
    return value


def _wrong_type(context: str, key: str, expected: str, value: object) -> DecodeError:
    return DecodeError(PROTOCOL, f"field '{key}' of {context} must be {expected}, got {describe_json(value)}")


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not allowed in JSON")


#: JSON numbers with a fraction or exponent load as Decimal, so no float can pass for an integer.
_JSON = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant)
#: The same reading, faster, for the texts msgspec accepts (``json_fast``).
_FAST_JSON = json_reader(Decimal)


_SIMPLE_DML = frozenset({"INSERT", "UPDATE", "DELETE"})


def simple_location(doc: Doc) -> MessageLocation:
    """A Simple protocol message (JSON names; the Avro encoding reads the same fields)."""
    kind = doc.get("type")
    if kind in _SIMPLE_DML:
        return location(doc.get("database"), doc.get("table"), doc.get("commitTs"))
    after, before = doc.get("tableSchema"), doc.get("preTableSchema")
    names = [(s.get("schema"), s.get("table")) for s in (after, before) if isinstance(s, dict)]
    if not names:
        return location(None, None, doc.get("commitTs"))
    renamed = kind == "RENAME" or len(set(names)) > 1
    return location(names[0][0], names[0][1], doc.get("commitTs"), rename=renamed)
