"""The Debezium envelope split without parsing its repeated Connect schema (``docs/protocols.md``).

A TiCDC Debezium message with its schema is about 4 KB, most of it the ``schema`` member, identical
in every message of a table until its next DDL. Parsing it into Python objects (and turning it into
:class:`FieldType`\\ s) took about half of a message's decode CPU. Here msgspec only *scans* the
envelope (``schema`` and ``payload`` come back as raw bytes), the payload is parsed by the decoder's
own JSON reader, and everything derived only from the schema (the parsed object, the field types,
the per-column converters and type texts) is kept per distinct schema text in a small LRU cache
(:data:`SCHEMA_CACHE_ENTRIES`): a schema change is new text, hence a new entry.

Fidelity: :func:`split_envelope` answers only for the exact compact shape TiCDC writes,
``{"payload":P,"schema":S}`` (or ``schema`` first), that the reference path would read to the same
values: P and S each read on their own to the documents the same :data:`JSON_DECODER` gives, valid
UTF-8, no surrogate escape, ``payload`` an object, ``schema`` an object or null. Anything else
(whitespace, duplicated or escaped keys, other members, malformed JSON…) answers None and the
caller takes the reference path (``debezium._envelope``), so events and error texts are the
reference's by construction.

The envelope is cut where its members meet (a byte search, no scan of the whole text): P runs up
to the last ``,"schema":`` (TiCDC's order) or S up to the first ``,"payload":``. A cut that
falls inside a member leaves text that is not one JSON value, so it fails to read and the caller
takes the reference path; two cuts cannot both read, since a JSON value ends where its first
bracket closes. P is read by msgspec (about a third of the standard library's time) when msgspec's
own encoding of what it read gives P back byte for byte (:func:`_read_payload`): then P has no
duplicated key (msgspec keeps the last, the reference the first, and a dropped member would be
missing from the encoding), and where both accept a text without duplicates they give the same
document (``json_fast``). Otherwise P is read by :data:`JSON_DECODER`, as before.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

import msgspec

from ticdc_lake.protocols.debezium_values import JSON_DECODER, Converter, FieldType, Number, converter_for

Row = dict[str, Any]
#: Distinct schema texts kept per decoder instance (one per table version seen recently).
SCHEMA_CACHE_ENTRIES = 256
_PAYLOAD_FIRST = b'{"payload":'
_SCHEMA_FIRST = b'{"schema":'
_THEN_SCHEMA = b',"schema":'
_THEN_PAYLOAD = b',"payload":'
#: A ``\\u`` escape of a UTF-16 surrogate (as in ``json_surrogates``): such text takes the reference path.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _number_text(value: object) -> msgspec.Raw:
    """msgspec's ``enc_hook``: a :class:`Number` is written as the text it was read from."""
    if type(value) is Number:
        return msgspec.Raw(value.encode())
    raise NotImplementedError(type(value).__name__)


#: Reads a payload as :data:`JSON_DECODER` does where the text has no duplicated key (checked by
#: writing the document back with :data:`_WRITER`).
_READER = msgspec.json.Decoder(float_hook=Number)
_WRITER = msgspec.json.Encoder(enc_hook=_number_text)


class ParsedSchema:
    """One envelope ``schema`` object and what is derived from it alone, computed on first use."""

    __slots__ = ("converters", "doc", "every_converter", "type_texts", "types")

    def __init__(self, doc: Row) -> None:
        self.doc = doc
        self.types: dict[str, FieldType] | None = None
        self.type_texts: dict[str, str] | None = None
        self.converters: dict[str, Converter] = {}
        #: The converter of every column once made (:meth:`all_converters`); None: not yet, False: cannot.
        self.every_converter: dict[str, Converter] | bool | None = None

    def field_types(self, build: Callable[[Row], dict[str, FieldType]]) -> dict[str, FieldType]:
        """The column field types; ``build`` (which may raise) runs until it first succeeds."""
        if self.types is None:
            self.types = build(self.doc)
            self.type_texts = {name: ft.type_text() for name, ft in self.types.items()}
        return self.types

    def all_converters(self) -> dict[str, Converter] | None:
        """The converter of every column of :attr:`types` (set), made once; None if one of them
        cannot be made up front (then each is made on first use, :meth:`converter`)."""
        every = self.every_converter
        if every is None and self.types is not None:
            try:
                every = {name: self.converter(name, ft) for name, ft in self.types.items()}
            except Exception:  # such a column fails where its first value is converted, as before
                every = False
            self.every_converter = every
        return every if isinstance(every, dict) else None

    def converter(self, name: str, ft: FieldType) -> Converter:
        """``converter_for(ft)`` of column ``name``, made once (``ft`` is this schema's, never replaced)."""
        convert = self.converters.get(name)
        if convert is None:
            convert = self.converters[name] = converter_for(ft)
        return convert


#: What :meth:`SchemaCache.get` answers for a schema text only the reference path may read (never cached).
UNREADABLE = ParsedSchema({})


class SchemaCache:
    """Schema text → :class:`ParsedSchema`, least recently used first out."""

    def __init__(self, entries: int = SCHEMA_CACHE_ENTRIES) -> None:
        self.entries = entries
        self.parses = 0  # schema texts parsed (misses that parsed), for tests and benchmarks
        self._cache: OrderedDict[bytes, ParsedSchema | None] = OrderedDict()

    def get(self, text: bytes) -> ParsedSchema | None:
        """The parsed schema (None for JSON ``null``); :data:`UNREADABLE` when only the reference path can say."""
        cache = self._cache
        if text in cache:
            cache.move_to_end(text)
            return cache[text]
        parsed = self._parse(text)
        if parsed is UNREADABLE:
            return parsed
        cache[text] = parsed
        if len(cache) > self.entries:
            cache.popitem(last=False)
        return parsed

    def _parse(self, text: bytes) -> ParsedSchema | None:
        try:
            _READER.decode(text)  # what msgspec refuses only the reference path reads (``_read_payload``)
        except (msgspec.MsgspecError, ValueError, RecursionError):
            return UNREADABLE
        doc = _read(text)
        if doc is _UNREAD:
            return UNREADABLE
        self.parses += 1
        if doc is None:
            return None
        return ParsedSchema(doc) if isinstance(doc, dict) else UNREADABLE


def split_envelope(raw: bytes, schemas: SchemaCache) -> tuple[Row, ParsedSchema | None] | None:
    """(payload, schema) of a compact TiCDC envelope; None when the reference path must read ``raw``."""
    if not raw.endswith(b"}"):
        return None
    if raw.startswith(_PAYLOAD_FIRST):
        cut = raw.rfind(_THEN_SCHEMA)
        if cut < 0:
            return None
        payload_text, schema_text = raw[len(_PAYLOAD_FIRST) : cut], raw[cut + len(_THEN_SCHEMA) : -1]
    elif raw.startswith(_SCHEMA_FIRST):
        cut = raw.find(_THEN_PAYLOAD)
        if cut < 0:
            return None
        schema_text, payload_text = raw[len(_SCHEMA_FIRST) : cut], raw[cut + len(_THEN_PAYLOAD) : -1]
    else:
        return None
    if not schema_text or not payload_text.startswith(b"{"):
        return None
    payload = _read_payload(payload_text)
    if not isinstance(payload, dict):  # also _UNREAD
        return None
    schema = schemas.get(schema_text)
    if schema is UNREADABLE:
        return None
    return payload, schema


def _read_payload(text: bytes) -> object:
    """:func:`_read` of a payload's text, by msgspec where that gives the same document (module
    docstring); :data:`_UNREAD` also where msgspec refuses the text (``NaN`` tokens, nesting deeper
    than its limit), as the envelope scan before this one did."""
    if b"\\" in text and _SURROGATE_ESCAPE.search(text) is not None:
        return _UNREAD
    try:
        document = _READER.decode(text)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return _UNREAD
    if _WRITER.encode(document) == text:
        return document
    return _read(text)


#: What :func:`_read` answers for a text only the reference path may read.
_UNREAD: Final = object()


def _read(text: bytes) -> object:
    """``text`` parsed by the reference's reader; :data:`_UNREAD` when it escapes a surrogate (which
    the reference reports with a path) or does not parse (the reference says why)."""
    if _SURROGATE_ESCAPE.search(text) is not None:
        return _UNREAD
    try:
        return JSON_DECODER.decode(text.decode("utf-8"))
    except (ValueError, RecursionError):
        return _UNREAD
