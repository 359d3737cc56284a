"""Decoder of the TiCDC Debezium protocol (protocol id ``debezium``, docs/protocols.md).

One Kafka message carries one event. Key and value are JSON envelopes ``{"schema", "payload"}``,
or ``{"payload"}`` alone when the changefeed sets ``debezium-disable-schema=true``:

* a row change: ``payload.op`` is ``c``/``r`` (insert), ``u`` (update), ``d`` (delete) with
  ``before``/``after`` images; values are made canonical with the Connect field schemas (see
  :mod:`ticdc_lake.protocols.debezium_values`);
* a watermark: ``payload.op`` is ``m`` (TiDB extension only);
* a DDL: no ``op`` but a ``ddl`` query, with ``tableChanges`` describing the table afterwards.

The commit TSO comes only from ``payload.source.commit_ts``, which TiCDC's encoder always writes
(``codec.go``); without it (a message from Debezium itself) nothing exact orders the event, so it
is a decode error.

TiCDC compresses both the key and the value with ``large-message-handle-compression``
(``pkg/sink/codec/debezium/encoder.go``, every ``common.Compress`` call); Debezium has no
claim-check or handle-key-only messages (``pkg/config/large_message.go`` refuses them).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ticdc_lake.ambiguous_times import GO
from ticdc_lake.canonical import MAX_UNSIGNED_BIGINT
from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventFacts, EventKind, Op, RawMessage, RowImage, SourcePosition
from ticdc_lake.protocols.base import MessageLocation, SchemaLookup, WholeValueDecoder
from ticdc_lake.protocols.compression import decompress, undeclared_compression
from ticdc_lake.protocols.ddl_text import ddl_type_from_sql
from ticdc_lake.protocols.debezium_envelope import ParsedSchema, SchemaCache, split_envelope
from ticdc_lake.protocols.debezium_values import (
    JSON_DECODER,
    FieldType,
    Number,
    describe_json,
    field_type,
    untyped,
)
from ticdc_lake.protocols.json_markers import has_member
from ticdc_lake.protocols.json_surrogates import lone_surrogate, lone_surrogate_reason
from ticdc_lake.protocols.location import Doc, json_object, location, renames
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema

PROTOCOL = "debezium"
OPS = {"c": Op.INSERT, "r": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE}
WATERMARK_OP = "m"
SCHEMA_SOURCE = "debezium-table-changes"
_TYPE_SUFFIXES = (" unsigned zerofill", " unsigned")
_FSP_TYPES = frozenset({"datetime", "timestamp", "time"})

Row = dict[str, Any]


class DebeziumDecoder(WholeValueDecoder):
    """Debezium JSON, with or without Connect schemas, with or without the TiDB extension."""

    protocol: ClassVar[str] = PROTOCOL
    #: TiCDC's Debezium encoder makes the instant with Go's ``time.Date``.
    timestamp_reading: ClassVar[str] = GO

    def __init__(self, options: CodecOptions, resources: DecodeResources | None = None) -> None:
        super().__init__(options, resources)
        #: Each distinct envelope schema text parsed once (``debezium_envelope``); None: every message
        #: takes the reference path (the differential tests compare the two).
        self.schemas: SchemaCache | None = SchemaCache()

    value_test_is_search: ClassVar[bool] = True

    def value_may_carry_schema(self, value: bytes) -> bool:
        """True when the value may hold a ``ddl`` member, in any JSON formatting (``json_markers``): a
        DDL (no ``op`` but ``ddl``) is the only message with schema facts; ``tableChanges`` comes with it."""
        return has_member(value, "ddl")

    def decode(self, message: RawMessage, schemas: SchemaLookup) -> list[ChangeEvent]:
        if message.value is None:
            raise DecodeError(PROTOCOL, "the message has no value (a Kafka tombstone); TiCDC never sends one")
        # TiCDC compresses the Debezium key as well as the value.
        value = decompress(message.value, self.options.compression, PROTOCOL, "the value")
        key = decompress(message.key, self.options.compression, PROTOCOL, "the key") if message.key else message.key
        payload, schema = self._envelope(value, "value")
        position = SourcePosition(message.topic, message.partition, message.offset, 0)
        if "op" in payload:
            op = payload["op"]
            if op == WATERMARK_OP:
                commit_ts = _commit_ts(_source(payload, "the watermark"), "the watermark")
                return [ChangeEvent(kind=EventKind.WATERMARK, position=position, commit_ts=commit_ts)]
            if not isinstance(op, str) or op not in OPS:
                raise DecodeError(
                    PROTOCOL,
                    f"unknown operation {describe_json(op)} in field 'payload.op'; expected one of "
                    "c, r, u, d (rows) or m (watermark)",
                )
            key_payload = self._envelope(key, "key")[0] if key is not None else None
            return [_dml(payload, schema, OPS[op], op, key_payload, position)]
        if "ddl" in payload:
            return [_ddl(payload, position)]
        raise DecodeError(
            PROTOCOL,
            "the value payload has neither 'op' (row change, watermark) nor 'ddl' (DDL); check that "
            "the pipeline's protocol matches the changefeed",
        )

    def find_location(self, message: RawMessage) -> MessageLocation | None:
        """``payload.source`` of the value (``db``, ``table``, ``commit_ts``); None unless valid JSON."""
        doc = json_object(decompress(message.value or b"", self.options.compression, PROTOCOL, "the value"))
        payload = doc.get("payload") if doc is not None else None
        return debezium_location(payload) if isinstance(payload, dict) else None

    def _envelope(self, raw: bytes, what: str) -> tuple[Row, ParsedSchema | None]:
        split = split_envelope(raw, self.schemas) if self.schemas is not None else None
        if split is not None:
            return split
        try:
            payload, schema = _envelope(raw, what)
            return payload, ParsedSchema(schema) if schema is not None else None
        except DecodeError:
            compressed = undeclared_compression(raw, self.options.compression, PROTOCOL, f"the {what}")
            if compressed is not None:
                raise compressed from None
            raise


def _envelope(raw: bytes, what: str) -> tuple[Row, Row | None]:
    """(payload, schema) of a key or value; schema is None when the changefeed disables it."""
    try:
        text = raw.decode("utf-8")
        doc = JSON_DECODER.decode(text)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(
            PROTOCOL,
            f"{what} is not valid JSON: {exc} (if the changefeed compresses messages, set the "
            "pipeline's codec.compression to match)",
        ) from None
    if not isinstance(doc, dict):
        raise DecodeError(PROTOCOL, f"{what} must be a JSON object, got {describe_json(doc)}")
    if (where := lone_surrogate(text, doc)) is not None:
        raise DecodeError(PROTOCOL, f"{what}: {lone_surrogate_reason(where)}")
    if "payload" not in doc:
        raise DecodeError(PROTOCOL, f"{what} has no field 'payload'")
    payload, schema = doc["payload"], doc.get("schema")
    if not isinstance(payload, dict):
        raise DecodeError(PROTOCOL, f"field 'payload' of the {what} must be an object, got {describe_json(payload)}")
    if schema is not None and not isinstance(schema, dict):
        raise DecodeError(PROTOCOL, f"field 'schema' of the {what} must be an object, got {describe_json(schema)}")
    return payload, schema


def _source(payload: Row, context: str) -> Row:
    source = payload.get("source")
    if not isinstance(source, dict):
        raise DecodeError(PROTOCOL, f"{context} has no object 'payload.source' (got {describe_json(source)})")
    return source


def _commit_ts(source: Row, context: str) -> int:
    if "commit_ts" not in source:
        raise DecodeError(
            PROTOCOL,
            f"{context} has no field 'payload.source.commit_ts', which TiCDC's Debezium encoder always "
            "writes: the message comes from another producer (e.g. Debezium's own MySQL connector), and "
            "nothing else in a Debezium message orders events exactly",
        )
    value = source["commit_ts"]
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_UNSIGNED_BIGINT:
        raise DecodeError(
            PROTOCOL,
            f"field 'payload.source.commit_ts' of {context} must be an unsigned 64-bit integer, "
            f"got {describe_json(value)}",
        )
    return value


def _name(source: Row, key: str, context: str) -> str:
    value = source.get(key)
    if not isinstance(value, str):
        raise DecodeError(
            PROTOCOL, f"field 'payload.source.{key}' of {context} must be a string, got {describe_json(value)}"
        )
    return value


def _dml(
    payload: Row, schema: ParsedSchema | None, op: Op, op_text: str, key: Row | None, position: SourcePosition
) -> ChangeEvent:
    usual = _usual_row(payload, op)
    if usual is not None:
        commit_ts, database, table, after, before = usual
    else:  # the checks, in order, that say what is wrong
        context = f"the row change (op {op_text!r})"
        source = _source(payload, context)
        commit_ts = _commit_ts(source, context)
        database, table = _name(source, "db", context), _name(source, "table", context)
        context = f"the row change (op {op_text!r}) of table {database}.{table}"
        after = _row(payload, "after", context, wanted=op is not Op.DELETE, required=True)
        before = _row(payload, "before", context, wanted=op is not Op.INSERT, required=op is Op.DELETE)
    where = f"{database}.{table}"
    types: dict[str, FieldType] | None = None
    if schema is not None:
        types = schema.types
        if types is None:
            types = schema.field_types(lambda doc: connect_field_types(doc, where))
    event = ChangeEvent(
        kind=EventKind.DML,
        position=position,
        commit_ts=commit_ts,
        database=database,
        table=table,
        op=op,
        facts=_row_facts(types is None, tuple(key) if key is not None else None),
    )
    if after is not None:
        event.after = _image(after, "after", types, schema, where)
    if before is not None:
        event.before = _image(before, "before", types, schema, where)
    if schema is not None and (texts := schema.type_texts) is not None:
        # Every image column is in the schema (``_image`` checked), so an image of all its columns names them all.
        if (after is not None and len(after) == len(texts)) or (before is not None and len(before) == len(texts)):
            event.column_types = dict(texts)
        else:
            names = {*(after or {}), *(before or {})}
            event.column_types = {name: text for name, text in texts.items() if name in names}
    return event


#: Row facts by (untyped, key columns): facts are immutable, so rows of one table share one instance.
_ROW_FACTS: dict[tuple[bool, tuple[str, ...] | None], EventFacts] = {}
_ROW_FACTS_ENTRIES = 4096


def _row_facts(untyped: bool, key_columns: tuple[str, ...] | None) -> EventFacts:
    facts = _ROW_FACTS.get((untyped, key_columns))
    if facts is None:
        if len(_ROW_FACTS) >= _ROW_FACTS_ENTRIES:
            _ROW_FACTS.clear()
        facts = _ROW_FACTS[(untyped, key_columns)] = EventFacts(untyped=untyped, key_columns=key_columns)
    return facts


def _usual_row(payload: Row, op: Op) -> tuple[int, str, str, Row | None, Row | None] | None:
    """(commit TSO, database, table, after, before) of a row change as TiCDC writes it, read without
    building the error contexts; None when anything is unusual (the caller's checks then say what)."""
    source, after, before = payload.get("source"), payload.get("after"), payload.get("before")
    if type(source) is not dict:
        return None
    commit_ts, database, table = source.get("commit_ts"), source.get("db"), source.get("table")
    if not (
        type(commit_ts) is int
        and 0 <= commit_ts <= MAX_UNSIGNED_BIGINT
        and type(database) is str
        and type(table) is str
        and (type(after) is dict if op is not Op.DELETE else after is None)
        and (type(before) is dict if op is Op.DELETE else before is None or (op is Op.UPDATE and type(before) is dict))
    ):
        return None
    return commit_ts, database, table, after, before


def _row(payload: Row, field: str, context: str, *, wanted: bool, required: bool) -> Row | None:
    value = payload.get(field)
    if not wanted:
        if value is not None:
            raise DecodeError(
                PROTOCOL, f"{context} carries a non-null 'payload.{field}', which this operation never has"
            )
        return None
    if value is None:
        if required:
            raise DecodeError(PROTOCOL, f"{context} has no object 'payload.{field}'")
        return None  # UPDATE with sink.debezium.output-old-value=false: no old image
    if not isinstance(value, dict):
        raise DecodeError(
            PROTOCOL, f"field 'payload.{field}' of {context} must be an object, got {describe_json(value)}"
        )
    return value


def connect_field_types(schema: Row, where: str) -> dict[str, FieldType]:
    """Column → FieldType from the envelope schema's ``after`` (else ``before``) struct."""
    fields = schema.get("fields")
    if not isinstance(fields, list):
        raise DecodeError(PROTOCOL, f"'schema.fields' of the value for table {where} must be an array")
    structs = {f.get("field"): f for f in fields if isinstance(f, dict)}
    struct = structs.get("after") or structs.get("before")
    columns = struct.get("fields") if struct is not None else None
    if not isinstance(columns, list):
        raise DecodeError(
            PROTOCOL, f"'schema.fields' of the value for table {where} has no 'after'/'before' field list"
        )
    types: dict[str, FieldType] = {}
    for spec in columns:
        name = spec.get("field") if isinstance(spec, dict) else None
        if not isinstance(name, str):
            raise DecodeError(PROTOCOL, f"a column schema of table {where} has no string 'field'")
        try:
            types[name] = field_type(spec)
        except ValueError as exc:
            raise DecodeError(PROTOCOL, f"schema of column {name!r} of table {where}: {exc}") from None
    return types


def _image(
    row: Row, field: str, types: dict[str, FieldType] | None, schema: ParsedSchema | None, where: str
) -> RowImage:
    if types is None or schema is None:
        return _untyped_image(row, field, where)
    every = schema.all_converters()
    if every is not None and every.keys() >= row.keys():
        try:  # one comprehension; the loop below says which column failed and why
            return {name: None if value is None else every[name](value) for name, value in row.items()}
        except ValueError:
            pass
    converters = schema.converters
    image: RowImage = {}
    for name, value in row.items():
        if value is None:
            if name not in types:
                raise _unknown_column(name, field, where)
            image[name] = None
            continue
        convert = converters.get(name)
        if convert is None:
            ft = types.get(name)
            if ft is None:
                raise _unknown_column(name, field, where)
            convert = schema.converter(name, ft)
        try:
            image[name] = convert(value)
        except ValueError as exc:
            raise DecodeError(
                PROTOCOL, f"column {name!r} ({types[name].type_text()}) of table {where} in 'payload.{field}': {exc}"
            ) from None
    return image


def _untyped_image(row: Row, field: str, where: str) -> RowImage:
    """A row image of a message without schema: each value as :func:`untyped` text."""
    image: RowImage = {}
    for name, value in row.items():
        if value is None:
            image[name] = None
            continue
        try:
            image[name] = untyped(value)
        except ValueError as exc:
            raise DecodeError(
                PROTOCOL, f"column {name!r} (no schema) of table {where} in 'payload.{field}': {exc}"
            ) from None
    return image


def _unknown_column(name: str, field: str, where: str) -> DecodeError:
    return DecodeError(PROTOCOL, f"column {name!r} in 'payload.{field}' is not in the value schema of table {where}")


def _ddl(payload: Row, position: SourcePosition) -> ChangeEvent:
    context = "the DDL"
    query = payload["ddl"]
    if not isinstance(query, str):
        raise DecodeError(PROTOCOL, f"field 'payload.ddl' must be a string, got {describe_json(query)}")
    source = _source(payload, context)
    commit_ts = _commit_ts(source, context)
    database = _name(source, "db", context) or _optional_str(payload, "databaseName") or None
    table = _name(source, "table", context) or None
    changes = payload.get("tableChanges") or []
    if not isinstance(changes, list) or not all(isinstance(c, dict) for c in changes):
        raise DecodeError(PROTOCOL, "field 'payload.tableChanges' must be an array of objects")
    change: Row | None = changes[0] if changes else None
    event = ChangeEvent(
        kind=EventKind.DDL,
        position=position,
        commit_ts=commit_ts,
        database=database,
        table=table,
        ddl_type=ddl_type(change, query),
        ddl_query=query,
    )
    if change is not None:
        change_id = change.get("id")
        if isinstance(change_id, str):
            names = _quoted_names(change_id)
            renamed = (names[0][0], names[0][1]) if len(names) == 2 else None
            event.facts = EventFacts(table_change_id=change_id, renamed_from=renamed)
        definition = change.get("table")
        if definition is not None:
            if database is None or table is None:
                raise DecodeError(PROTOCOL, "the DDL carries a table definition but no 'payload.source.db'/'table'")
            event.table_schema = table_schema_from_changes(definition, database, table)
    return event


def ddl_type(change: Row | None, query: str) -> str:
    """Our DDL subtype from the query (:func:`ddl_type_from_sql`), the ``tableChanges`` entry and its id.

    TiCDC sends no DDL action type. No table change: TRUNCATE (query ``TRUNCATE …``) or QUERY
    (schema-level DDL). An ``"old","new"`` id: RENAME (also a multi-table ``RENAME TABLE``, which
    TiCDC splits into one event per table). Otherwise the query decides; a query the scanner does
    not know falls back on the change type (CREATE → CREATE, ALTER → ALTER, DROP → ERASE).
    """
    from_sql = ddl_type_from_sql(query, unknown=None)
    if change is None:
        return "TRUNCATE" if from_sql == "TRUNCATE" else "QUERY"
    kind = change.get("type")
    if kind not in ("CREATE", "ALTER", "DROP"):
        raise DecodeError(
            PROTOCOL,
            f"unknown table change type {describe_json(kind)} in 'payload.tableChanges[0].type'; "
            "expected CREATE, ALTER or DROP",
        )
    change_id = change.get("id")
    if isinstance(change_id, str) and len(_quoted_names(change_id)) == 2:
        return "RENAME"
    if from_sql is not None:
        return from_sql
    return {"CREATE": "CREATE", "ALTER": "ALTER", "DROP": "ERASE"}[kind]


def table_schema_from_changes(definition: object, database: str, table: str) -> TableSchema:
    """A :class:`TableSchema` from ``tableChanges[0].table`` (source ``debezium-table-changes``)."""
    where = f"'payload.tableChanges[0].table' of {database}.{table}"
    if not isinstance(definition, dict):
        raise DecodeError(PROTOCOL, f"{where} must be an object, got {describe_json(definition)}")
    columns = definition.get("columns")
    if not isinstance(columns, list):
        raise DecodeError(PROTOCOL, f"{where} has no array 'columns'")
    parsed = tuple(_column(spec, f"{where}, column #{n + 1}") for n, spec in enumerate(columns))
    pk = definition.get("primaryKeyColumnNames") or []
    if not isinstance(pk, list) or not all(isinstance(name, str) for name in pk):
        raise DecodeError(PROTOCOL, f"'primaryKeyColumnNames' of {where} must be an array of strings")
    indexes = (IndexSchema("PRIMARY", tuple(pk), primary=True, unique=True),) if pk else ()
    charset = definition.get("defaultCharsetName")
    extra = {"default_charset": charset} if isinstance(charset, str) and charset else {}
    return TableSchema(database, table, parsed, indexes, source=SCHEMA_SOURCE, extra=extra)


def _column(spec: object, where: str) -> ColumnSchema:
    if not isinstance(spec, dict):
        raise DecodeError(PROTOCOL, f"{where} must be an object, got {describe_json(spec)}")
    name, type_name = spec.get("name"), spec.get("typeName")
    if not isinstance(name, str) or not isinstance(type_name, str):
        raise DecodeError(PROTOCOL, f"{where} needs string 'name' and 'typeName'")
    mysql_type = type_name.lower()
    unsigned = False
    for suffix in _TYPE_SUFFIXES:
        if mysql_type.endswith(suffix):
            mysql_type, unsigned = mysql_type.removesuffix(suffix), True
            break
    length, scale = _number(spec, "length", where), _number(spec, "scale", where)
    default = spec.get("defaultValueExpression")
    elements = spec.get("enumValues")
    if elements is not None and (not isinstance(elements, list) or not all(isinstance(e, str) for e in elements)):
        raise DecodeError(PROTOCOL, f"'enumValues' of {where} must be an array of strings")
    charset = spec.get("charsetName")
    fsp = length if mysql_type in _FSP_TYPES else None
    return ColumnSchema(
        name=name,
        mysql_type=mysql_type,
        length=None if fsp is not None else length,
        scale=scale,
        fsp=fsp,
        unsigned=unsigned,
        nullable=spec.get("optional", True) is not False,
        default=None if default is None else (default if isinstance(default, str) else str(default)),
        charset=charset if isinstance(charset, str) else None,
        elements=tuple(_unquote(e) for e in elements) if elements else None,
    )


def _number(spec: Row, key: str, where: str) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, Number)):
        raise DecodeError(PROTOCOL, f"'{key}' of {where} must be a number, got {describe_json(value)}")
    number = float(value)  # ``scale`` is written as a double (``5`` or ``5.0``)
    if number != int(number):
        raise DecodeError(PROTOCOL, f"'{key}' of {where} must be a whole number, got {value}")
    return int(number)


def _unquote(element: str) -> str:
    """``'a'`` → ``a`` (TiCDC wraps each member in single quotes without escaping)."""
    return element[1:-1] if len(element) >= 2 and element[0] == element[-1] == "'" else element


def _quoted_names(change_id: str) -> list[tuple[str, str]]:
    """``"db"."t"`` or ``"old_db"."old_t","db"."t"`` → [(db, table), …]; [] if not in that shape."""
    names: list[tuple[str, str]] = []
    for part in change_id.split('","'):
        stripped = part.strip('"')
        database, dot, table = stripped.partition('"."')
        if not dot:
            return []
        names.append((database, table))
    return names


def _optional_str(payload: Row, key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def debezium_location(payload: Doc) -> MessageLocation:
    """A Debezium value payload: ``payload.source`` names the table of rows and of table DDL."""
    source = payload.get("source")
    if not isinstance(source, dict):
        return location(None, None)
    if payload.get("op") == "m":
        return location(None, None, source.get("commit_ts"))
    renamed = False
    if "ddl" in payload and "op" not in payload:
        query = payload.get("ddl")
        changes = payload.get("tableChanges")
        first = changes[0] if isinstance(changes, list) and changes and isinstance(changes[0], dict) else {}
        renamed = not isinstance(query, str) or renames(query) or str(first.get("id", "")).count('","') > 0
    return location(source.get("db"), source.get("table"), source.get("commit_ts"), rename=renamed)
