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
from dataclasses import dataclass

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import EventKind, EventStatus, RawMessage
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.debezium import OPS, connect_field_types
from ticdc_lake.protocols.debezium_envelope import UNREADABLE, ParsedSchema, SchemaCache
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark.arrow_decode.debezium_columns import ColumnReader, column_reader
from ticdc_lake.spark.arrow_decode.envelope import cut_envelopes, text_marks
from ticdc_lake.spark.arrow_decode.json_text import member_orders_text, text_type
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA, MAP_ARROW, TSO_ARROW

log = logging.getLogger(__name__)

#: A JSON scalar as TiCDC writes it, and a key payload the Python decoder reads without error: a
#: flat object of such scalars (no escape, no control character).
_SCALAR = r'(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|"[^"\\\x00-\x1f]*"|true|false|null)'
_MEMBER = r'"[^"\\\x00-\x1f]*":' + _SCALAR
_KEY_OBJECT = r"^\{(?:\}|" + _MEMBER + r"(?:," + _MEMBER + r")*\})$"
_IMAGES = ("before", "after")
#: ``payload.op`` -> (before image, after image): "yes", "no" or "may" (an UPDATE without old values).
_SHAPES = {"c": ("no", "yes"), "r": ("no", "yes"), "u": ("may", "yes"), "d": ("yes", "no")}
#: ``payload.op`` -> the ``op`` column (``debezium.OPS``), in the order of :data:`_SHAPES`.
_OP_CODES = pa.array(list(_SHAPES))
_OP_TEXTS = pa.array([OPS[op].value for op in _SHAPES])


@dataclass
class VectorDecode:
    #: change_events rows (``decode_arrow.EVENTS_ARROW_SCHEMA``) of the messages decoded here, in message order.
    events: pa.RecordBatch | None
    #: Per input message: True when its one event is in ``events``; the others go to the Python decoder.
    taken: list[bool]


@dataclass
class _Group:
    """The rows of one schema text that passed so far, and what was read of them."""

    rows: np.ndarray
    commit_ts: np.ndarray
    ops: pa.Array
    database: str
    table: str
    images: dict[str, tuple[pa.Array, pa.Array]]  # field -> (map array, valid)
    version: int


class DebeziumVectorDecoder:
    """Decodes the row changes of a batch of Debezium messages it can vouch for (module docstring)."""

    def __init__(self, options: CodecOptions, pipeline: str, run_id: str) -> None:
        self.options = options
        self.pipeline = pipeline
        self.run_id = run_id
        self.schemas = SchemaCache()
        self.key_schemas = SchemaCache()
        self._readers: dict[int, dict[str, ColumnReader] | None] = {}

    def decode(self, batch_id: str, messages: Sequence[RawMessage], lookup: MemorySchemaLookup) -> VectorDecode:
        count = len(messages)
        if count == 0 or self.options.compression is not Compression.NONE:
            return VectorDecode(None, [False] * count)
        values = pa.array([m.value for m in messages], pa.binary())
        envelopes = cut_envelopes(values)
        try:
            payload_texts = envelopes.payloads.cast(pa.string())
        except pa.ArrowInvalid:  # invalid UTF-8 somewhere: the Python decoder says where
            return VectorDecode(None, [False] * count)
        # A \u escape is one jsoniter writes only for a rare control character; a surrogate one would make
        # pyarrow refuse the whole group, so such payloads go to the Python decoder before the read, as do
        # raw control characters (invalid JSON: the Python decoder says where).
        marks = text_marks(payload_texts)
        ok = envelopes.ok & ~marks.unicode_escapes & ~marks.controls & self._keys_ok(messages)
        if not ok.any():
            return VectorDecode(None, [False] * count)
        encoded = pc.dictionary_encode(envelopes.schemas)
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        groups: list[_Group] = []
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
        return self._events(batch_id, messages, groups)

    def _keys_ok(self, messages: Sequence[RawMessage]) -> np.ndarray:
        """Per message: the key is null or an envelope the Python decoder reads without error."""
        keys = pa.array([m.key for m in messages], pa.binary())
        cut = cut_envelopes(keys)
        null: np.ndarray = keys.is_null().to_numpy(zero_copy_only=False)
        try:
            texts = cut.payloads.cast(pa.string())
        except pa.ArrowInvalid:
            return null
        flat = pc.match_substring_regex(texts, _KEY_OBJECT).to_numpy(zero_copy_only=False)
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
    ) -> _Group | None:
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
        try:
            table = pa_json.read_json(
                pa.BufferReader(_lines(texts)),
                read_options=pa_json.ReadOptions(use_threads=False, block_size=max(1 << 20, _size(texts) + 1)),
                parse_options=pa_json.ParseOptions(
                    explicit_schema=pa.schema(list(read_type)), unexpected_field_behavior="ignore"
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        if table.num_rows != len(rows):
            return None
        payload = pa.StructArray.from_arrays(
            [table.column(i).combine_chunks() for i in range(table.num_columns)], fields=list(read_type)
        )
        good = _same_text(payload, texts, escapes)
        source_read = payload.field("source")
        database, table_name = source["db"], source["table"]
        good &= _all_equal(source_read.field("db"), database) & _all_equal(source_read.field("table"), table_name)
        commit = source_read.field("commit_ts")
        if not pa.types.is_integer(commit.type):
            return None
        commit_ts = commit.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        good &= commit_ts >= 0
        ops = payload.field("op")
        images: dict[str, tuple[pa.Array, pa.Array]] = {}
        present = {}
        for field in _IMAGES:
            image = payload.field(field)
            present[field] = image.is_valid().to_numpy(zero_copy_only=False)
            built = _image_map(image, readers)
            if built is None:
                return None
            maps, converted = built
            good &= converted
            images[field] = (maps, image.is_valid())
        good &= _shapes_ok(ops, present["before"], present["after"])
        if not good.any():
            return None
        bound = _bound_version(lookup, database, table_name, commit_ts[good], readers)
        if bound is None or bound.version is None:
            return None
        keep = np.flatnonzero(good)
        return _Group(
            rows=rows[keep],
            commit_ts=commit_ts[keep],
            ops=ops.take(pa.array(keep)),
            database=database,
            table=table_name,
            images={
                name: (maps.take(pa.array(keep)), valid.take(pa.array(keep))) for name, (maps, valid) in images.items()
            },
            version=bound.version,
        )

    def _column_readers(self, schema: ParsedSchema, where: str) -> dict[str, ColumnReader] | None:
        """Column name -> reader for every column of the schema, made once per schema; None if one has no twin."""
        known = self._readers.get(id(schema), False)
        if known is not False:
            return known  # type: ignore[return-value]
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
        self._readers[id(schema)] = readers
        return readers

    def _events(self, batch_id: str, messages: Sequence[RawMessage], groups: list[_Group]) -> VectorDecode:
        rows = np.concatenate([g.rows for g in groups])
        order = np.argsort(rows, kind="stable")
        index = pa.array(order)
        taken = np.zeros(len(messages), dtype=bool)
        taken[rows] = True
        picked = [messages[i] for i in rows[order]]
        count = len(picked)

        def constant(value: object, kind: pa.DataType) -> pa.Array:
            return pa.repeat(pa.scalar(value, kind), count)

        def per_group(values: list[pa.Array]) -> pa.Array:
            return pa.concat_arrays(values).take(index)

        ops = _OP_TEXTS.take(pc.index_in(per_group([g.ops for g in groups]), value_set=_OP_CODES))
        commit = np.concatenate([g.commit_ts for g in groups])[order].astype(np.uint64)
        versions = np.concatenate([np.full(len(g.rows), g.version, dtype=np.uint64) for g in groups])[order]
        columns = [
            constant(self.pipeline, pa.string()),
            constant(batch_id, pa.string()),
            pa.array([m.topic for m in picked], pa.string()),
            pa.array([m.partition for m in picked], pa.int32()),
            pa.array([m.offset for m in picked], pa.int64()),
            constant(0, pa.int32()),
            constant(EventKind.DML.value, pa.string()),
            pa.array(commit, pa.uint64()).cast(TSO_ARROW),
            per_group([pa.repeat(pa.scalar(g.database), len(g.rows)) for g in groups]),
            per_group([pa.repeat(pa.scalar(g.table), len(g.rows)) for g in groups]),
            pa.nulls(count, pa.int64()),
            ops,
            pa.array(versions, pa.uint64()).cast(TSO_ARROW),
            per_group([g.images["before"][0] for g in groups]),
            per_group([g.images["after"][0] for g in groups]),
            pa.nulls(count, MAP_ARROW),
            pa.nulls(count, pa.string()),
            pa.nulls(count, pa.string()),
            pa.nulls(count, pa.string()),
            pa.nulls(count, pa.string()),
            constant(False, pa.bool_()),
            constant(False, pa.bool_()),
            constant(EventStatus.READY.value, pa.string()),
            constant(self.run_id, pa.string()),
            pa.nulls(count, pa.string()),
        ]
        return VectorDecode(pa.RecordBatch.from_arrays(columns, schema=EVENTS_ARROW_SCHEMA), taken.tolist())


def _payload_type(first: dict[str, object], readers: dict[str, ColumnReader]) -> pa.StructType | None:
    """The type to read every payload of the group as: the first row's members, images typed by the schema."""
    image_type = pa.struct([pa.field(name, reader.arrow_type) for name, reader in readers.items()])
    fields = []
    for name, value in first.items():
        kind = image_type if name in _IMAGES else text_type(value)
        if kind is None:
            return None
        fields.append(pa.field(name, kind))
    names = {f.name for f in fields}
    if not {"source", "op", *_IMAGES} <= names:
        return None
    return pa.struct(fields)


def _same_text(payload: pa.StructArray, texts: pa.StringArray, escapes: bool) -> np.ndarray:
    """Per row: the JSON text of what was read equals the payload as sent, with the members in the
    order read or with ``before`` and ``after`` swapped (TiCDC writes ``"after":null,"before":{..}``
    for a DELETE, ``"before":..,"after":..`` otherwise)."""
    names = [payload.type.field(i).name for i in range(payload.type.num_fields)]
    swapped = list(names)
    first, second = names.index(_IMAGES[0]), names.index(_IMAGES[1])
    swapped[first], swapped[second] = swapped[second], swapped[first]
    read, other = member_orders_text(payload, [names, swapped], escapes=escapes)
    same: np.ndarray = pc.equal(read, texts).to_numpy(zero_copy_only=False)
    if not same.all():
        same |= pc.equal(other, texts).to_numpy(zero_copy_only=False)
    return same


def _lines(texts: pa.StringArray) -> pa.Buffer:
    """The texts joined by newlines, as one buffer (``pyarrow.json`` reads one document per line)."""
    joined = pc.binary_join_element_wise(texts, pa.scalar("\n"), "")
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)
    data = joined.buffers()[2]
    assert data is not None
    return data.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))


def _size(texts: pa.StringArray) -> int:
    return int(pc.sum(pc.binary_length(texts)).as_py() or 0) + len(texts)


def _all_equal(values: pa.Array, expected: str) -> np.ndarray:
    result: np.ndarray = pc.equal(values, expected).fill_null(False).to_numpy(zero_copy_only=False)
    return result


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


def _image_map(image: pa.StructArray, readers: dict[str, ColumnReader]) -> tuple[pa.Array, np.ndarray] | None:
    """The image as ``MAP<STRING, STRING>`` of canonical texts (null where the image is null) and, per
    row, whether every value converted."""
    count = len(image)
    names = list(readers)
    width = len(names)
    if width == 0:
        return None
    texts = []
    converted = np.ones(count, dtype=bool)
    for name, child in zip(names, image.flatten(), strict=True):
        text, ok = readers[name].canonical(child)
        texts.append(text)
        converted &= ok.to_numpy(zero_copy_only=False)
    valid = image.is_valid().to_numpy(zero_copy_only=False)
    converted |= ~valid
    present = np.flatnonzero(valid)
    # Row-major items of the present rows: row r's values are texts[0][r], texts[1][r], ...
    stacked = pa.concat_arrays([t.take(pa.array(present)) for t in texts])
    order = (np.arange(width)[None, :] * len(present) + np.arange(len(present))[:, None]).ravel()
    items = stacked.take(pa.array(order))
    keys = pa.array(names, pa.string()).take(pa.array(np.tile(np.arange(width), len(present))))
    offsets = np.concatenate(([0], np.cumsum(np.where(valid, width, 0)))).astype(np.int32)
    maps = pa.MapArray.from_arrays(
        pa.array(offsets), keys, items, type=MAP_ARROW, mask=pa.array(~valid) if not valid.all() else None
    )
    return maps, converted


def _bound_version(
    lookup: MemorySchemaLookup, database: str, table: str, commit_ts: np.ndarray, readers: dict[str, ColumnReader]
) -> TableSchema | None:
    """The one schema version every row binds to, having all the row's columns by name; else None."""
    first = lookup.latest(database, table, int(commit_ts.min()))
    if first is None or lookup.latest(database, table, int(commit_ts.max())) is not first:
        return None
    names = {c.name for c in first.columns}
    return first if names.issuperset(readers) else None
