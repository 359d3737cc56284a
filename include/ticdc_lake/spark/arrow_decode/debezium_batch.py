"""Debezium row changes decoded a whole Arrow batch at a time, verified against the Python decoder's rules.

The Python decoder (:mod:`ticdc_lake.protocols.debezium`) reads one message at a time and stays
the specification. :class:`DebeziumVectorDecoder` takes from a batch only the row changes it can
vouch for and decodes them with whole-column operations; every other message (DDL, watermark,
anything malformed or unusual) is left to the Python decoder, which decodes it exactly as before.

A message is taken when all of these hold (docs/design.md, "Vectorized Debezium decode"):

* no compression is configured; the value is ``{"payload":P,"schema":S}`` as TiCDC writes it
  (:mod:`.envelope`); P holds no raw control character; S is a schema the decoder's
  own cache reads (``debezium_envelope.SchemaCache``); the key is null or such an envelope whose
  payload is a flat object of plain scalars (so the Python decoder reads it without error);
* every row of one schema text S reads with ``pyarrow.json`` under an explicit type made from S
  (row image columns) and from the first row (the other members), and the JSON text of what was
  read (:mod:`.json_text`) equals P byte for byte: the same members, order and number forms, so
  the same document the Python decoder reads;
* ``op`` is ``c``/``r``/``u``/``d`` with the images that operation has (``debezium._usual_row``),
  ``source.db``/``source.table`` are the same in every row of S, ``source.commit_ts`` is not negative;
* every column converts by its twin (:mod:`.debezium_columns`) to the text its scalar converter
  gives (a value the scalar converter refuses is never taken, so its quarantine reason stays the
  Python decoder's);
* the lookup binds the rows of S to one schema version that has every column of the row by its
  exact name (``schema_facts._bind_schema``: ``latest(db, table, commit_ts)``, equal at the
  smallest and the largest commit TSO of the rows).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.debezium import OPS, connect_field_types
from ticdc_lake.protocols.debezium_envelope import SCHEMA_CACHE_ENTRIES, UNREADABLE, ParsedSchema, SchemaCache
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark.arrow_decode.debezium_columns import ColumnReader, column_reader
from ticdc_lake.spark.arrow_decode.envelope import cut_envelopes, text_marks
from ticdc_lake.spark.arrow_decode.json_text import MemberTexts, text_type
from ticdc_lake.spark.arrow_decode.row_batches import (
    DmlGroup,
    VectorDecode,
    dml_batch,
    equal_mask,
    image_map,
    message_keys,
    message_values,
    read_documents,
    utf8_texts,
)

log = logging.getLogger(__name__)

#: A JSON scalar as TiCDC writes it, and a key payload the Python decoder reads without error: a
#: flat object of such scalars (no escape, no control character).
_SCALAR = r'(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|"[^"\\\x00-\x1f]*"|true|false|null)'
_MEMBER = r'"[^"\\\x00-\x1f]*":' + _SCALAR
_KEY_OBJECT = r"^\{(?:\}|" + _MEMBER + r"(?:," + _MEMBER + r")*\})$"
_IMAGES = ("before", "after")
#: Column readers kept per decoder, one entry per parsed schema (as many as its schema cache holds).
_READER_ENTRIES = SCHEMA_CACHE_ENTRIES
#: ``payload.op`` -> (before image, after image): "yes", "no" or "may" (an UPDATE without old values).
_SHAPES = {"c": ("no", "yes"), "r": ("no", "yes"), "u": ("may", "yes"), "d": ("yes", "no")}
#: ``payload.op`` -> the ``op`` column (``debezium.OPS``), in the order of :data:`_SHAPES`.
_OP_CODES = pa.array(list(_SHAPES))
_OP_TEXTS = pa.array([OPS[op].value for op in _SHAPES])


class DebeziumVectorDecoder:
    """Decodes the row changes of a batch of Debezium messages it can vouch for (module docstring)."""

    def __init__(self, options: CodecOptions, pipeline: str, run_id: str) -> None:
        self.options = options
        self.pipeline = pipeline
        self.run_id = run_id
        self.schemas = SchemaCache()
        self.key_schemas = SchemaCache()
        #: id of a parsed schema -> (that schema, its column readers); the schema is kept so that an id a
        #: collected schema had is never taken for another's (the schema cache evicts).
        self._readers: dict[int, tuple[ParsedSchema, dict[str, ColumnReader] | None]] = {}

    def decode(self, batch_id: str, messages: Sequence[RawMessage], lookup: MemorySchemaLookup) -> VectorDecode:
        count = len(messages)
        if count == 0 or self.options.compression is not Compression.NONE:
            return VectorDecode(None, [False] * count)
        values = message_values(messages)
        envelopes = cut_envelopes(values)
        payload_texts = utf8_texts(envelopes.payloads)  # null where not UTF-8: the Python decoder says where
        # A \u escape is one jsoniter writes only for a rare control character; a surrogate one would make
        # pyarrow refuse the whole group, so such payloads go to the Python decoder before the read, as do
        # raw control characters (invalid JSON: the Python decoder says where).
        marks = text_marks(payload_texts)
        ok = envelopes.ok & payload_texts.is_valid().to_numpy(zero_copy_only=False)
        ok &= ~marks.unicode_escapes & ~marks.controls & self._keys_ok(messages)
        if not ok.any():
            return VectorDecode(None, [False] * count)
        encoded = pc.dictionary_encode(envelopes.schemas)
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        groups: list[DmlGroup] = []
        for code, schema_text in enumerate(encoded.dictionary.to_pylist()):
            rows = np.flatnonzero(ok & (codes == code))
            if len(rows):
                escapes = bool(marks.backslashes[rows].any())
                try:
                    group = self._group(schema_text, rows, payload_texts, escapes, lookup)
                except Exception:  # a bug here must cost only speed: the Python decoder takes the group
                    log.exception(
                        "decode: the vector decoder failed on %d message(s); decoding them in Python", len(rows)
                    )
                    group = None
                if group is not None:
                    groups.append(group)
        if not groups:
            return VectorDecode(None, [False] * count)
        return dml_batch(self.pipeline, self.run_id, batch_id, messages, groups)

    def _keys_ok(self, messages: Sequence[RawMessage]) -> np.ndarray:
        """Per message: the key is null or an envelope the Python decoder reads without error."""
        keys = message_keys(messages)
        cut = cut_envelopes(keys)
        null: np.ndarray = keys.is_null().to_numpy(zero_copy_only=False)
        texts = utf8_texts(cut.payloads)
        flat = pc.match_substring_regex(texts, _KEY_OBJECT).fill_null(False).to_numpy(zero_copy_only=False)
        ok: np.ndarray = cut.ok & flat
        if ok.any():
            encoded = pc.dictionary_encode(cut.schemas)
            codes = encoded.indices.to_numpy(zero_copy_only=False)
            for code, text in enumerate(encoded.dictionary.to_pylist()):
                if self.key_schemas.get(text) is UNREADABLE:
                    ok &= codes != code
        taken: np.ndarray = null | ok
        return taken

    def _group(
        self,
        schema_text: bytes,
        rows: np.ndarray,
        payload_texts: pa.StringArray,
        escapes: bool,
        lookup: MemorySchemaLookup,
    ) -> DmlGroup | None:
        schema = self.schemas.get(schema_text)
        if schema is None or schema is UNREADABLE:
            return None
        texts = payload_texts.take(pa.array(rows))
        try:
            first = msgspec.json.decode(texts[0].as_py().encode())
        except (msgspec.DecodeError, ValueError):
            return None
        if not isinstance(first, dict):
            return None
        source = first.get("source")
        if (
            not isinstance(source, dict)
            or not isinstance(source.get("db"), str)
            or not isinstance(source.get("table"), str)
        ):
            return None
        readers = self._column_readers(schema, f"{source['db']}.{source['table']}")
        if readers is None:
            return None
        read_type = _payload_type(first, readers)
        if read_type is None:
            return None
        table = read_documents(texts, read_type)
        if table is None:
            return None
        payload = pa.StructArray.from_arrays(
            [table.column(i).combine_chunks() for i in range(table.num_columns)], fields=list(read_type)
        )
        good = _same_text(payload, texts, escapes)
        source_read = payload.field("source")
        database, table_name = source["db"], source["table"]
        good &= equal_mask(source_read.field("db"), database) & equal_mask(source_read.field("table"), table_name)
        commit = source_read.field("commit_ts")
        if not pa.types.is_integer(commit.type):
            return None
        commit_ts = commit.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        good &= commit_ts >= 0
        ops = payload.field("op")
        images: dict[str, pa.Array] = {}
        present = {}
        for field in _IMAGES:
            image = payload.field(field)
            present[field] = image.is_valid().to_numpy(zero_copy_only=False)
            images[field], converted = image_map(image, readers)
            good &= converted
        good &= _shapes_ok(ops, present["before"], present["after"])
        if not good.any():
            return None
        bound = _bound_version(lookup, database, table_name, commit_ts[good], readers)
        if bound is None or bound.version is None:
            return None
        keep = pa.array(np.flatnonzero(good))
        ops_taken = _OP_TEXTS.take(pc.index_in(ops.take(keep), value_set=_OP_CODES))
        return DmlGroup(
            rows=rows[good],
            commit_ts=commit_ts[good],
            ops=ops_taken,
            database=database,
            table=table_name,
            version=bound.version,
            before=images["before"].take(keep),
            after=images["after"].take(keep),
        )

    def _column_readers(self, schema: ParsedSchema, where: str) -> dict[str, ColumnReader] | None:
        """Column name -> reader for every column of the schema, made once per schema; None if one has no twin."""
        known = self._readers.get(id(schema))
        if known is not None and known[0] is schema:
            return known[1]
        if len(self._readers) >= _READER_ENTRIES:
            self._readers.clear()
        try:
            types = (
                schema.types
                if schema.types is not None
                else schema.field_types(lambda doc: connect_field_types(doc, where))
            )
        except DecodeError:
            types = None
        readers: dict[str, ColumnReader] | None = None
        if types:
            found = {name: column_reader(ft) for name, ft in types.items()}
            if all(reader is not None for reader in found.values()):
                readers = {name: reader for name, reader in found.items() if reader is not None}
        self._readers[id(schema)] = (schema, readers)
        return readers


def _payload_type(first: dict[str, object], readers: dict[str, ColumnReader]) -> pa.StructType | None:
    """The type to read every payload of the group as: the first row's members, images typed by the schema."""
    image_type = pa.struct([pa.field(name, reader.arrow_type) for name, reader in readers.items()])
    fields = []
    for name, value in first.items():
        kind = image_type if name in _IMAGES else text_type(value)
        if kind is None:
            return None
        fields.append(pa.field(name, kind))
    names = [f.name for f in fields]
    if "before" not in names and "after" in names:  # an UPDATE without old values first: read before as well
        fields.insert(names.index("after"), pa.field("before", image_type))
    if not {"source", "op", *_IMAGES} <= {f.name for f in fields}:
        return None
    return pa.struct(fields)


def _same_text(payload: pa.StructArray, texts: pa.StringArray, escapes: bool) -> np.ndarray:
    """Per row: the JSON text of what was read equals the payload as sent, with the members in the
    order read, with ``before`` and ``after`` swapped (TiCDC writes ``"after":null,"before":{..}``
    for a DELETE, ``"before":..,"after":..`` otherwise), or without ``before`` (an UPDATE without old
    values has no such member; one without it reads as null, as the Python decoder's ``get`` does)."""
    names = [payload.type.field(i).name for i in range(payload.type.num_fields)]
    swapped = list(names)
    first, second = names.index(_IMAGES[0]), names.index(_IMAGES[1])
    swapped[first], swapped[second] = swapped[second], swapped[first]
    without_before = [name for name in names if name != "before"]
    members = MemberTexts(payload, escapes=escapes)
    same: np.ndarray = pc.equal(members.text(names), texts).to_numpy(zero_copy_only=False)
    for order in (swapped, without_before):  # written only for the rows still unmatched (a DELETE, ...)
        rows = np.flatnonzero(~same)
        if not len(rows):
            break
        index = pa.array(rows)
        same[rows] = pc.equal(members.text(order, index), texts.take(index)).to_numpy(zero_copy_only=False)
    return same


def _shapes_ok(ops: pa.Array, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Per row: a row operation with the images it has (``debezium._usual_row``)."""
    ok = np.zeros(len(ops), dtype=bool)
    texts = ops.fill_null("")
    for op, (wants_before, wants_after) in _SHAPES.items():
        rows = pc.equal(texts, op).to_numpy(zero_copy_only=False)
        fits = after if wants_after == "yes" else ~after
        if wants_before == "yes":
            fits = fits & before
        elif wants_before == "no":
            fits = fits & ~before
        ok |= rows & fits
    return ok


def _bound_version(
    lookup: MemorySchemaLookup, database: str, table: str, commit_ts: np.ndarray, readers: dict[str, ColumnReader]
) -> TableSchema | None:
    """The one schema version every row binds to, having all the row's columns by name; else None."""
    first = lookup.latest(database, table, int(commit_ts.min()))
    if first is None or lookup.latest(database, table, int(commit_ts.max())) is not first:
        return None
    names = {c.name for c in first.columns}
    return first if names.issuperset(readers) else None
