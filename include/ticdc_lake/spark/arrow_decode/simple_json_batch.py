"""Simple JSON row changes decoded a whole Arrow batch at a time, verified against the Python decoder's rules.

The Python decoder (:mod:`ticdc_lake.protocols.simple_json`) reads one message at a time and stays
the specification. :class:`SimpleJsonVectorDecoder` takes from a batch only the row changes it can
vouch for and decodes them with whole-column operations; every other message (DDL, BOOTSTRAP,
WATERMARK, anything malformed, pending or unusual) is left to the Python decoder, which decodes it
exactly as before.

A message is taken when all of these hold (docs/design.md, "Vectorized Simple JSON decode"):

* no compression is configured; the value is valid UTF-8, holds no ``\\u`` escape (TiCDC's Go
  writer makes one for ``<``, ``>``, ``&``, U+2028/9 and rare control characters; a surrogate
  would make ``pyarrow`` refuse the whole group) and no raw control character, and begins as
  TiCDC writes a DML (:data:`_HEAD`: ``version`` 1, ``database``, ``table``, ``tableID``,
  ``type`` INSERT/UPDATE/DELETE, ``commitTs``, ``buildTs``, then a ``schemaVersion`` other than
  0); the lookup holds that exact ``(database, table, schemaVersion)`` (``lookup.get``, as the
  Python decoder asks; a version it does not hold is PENDING there);
* every column of that version has a twin (:mod:`.simple_columns`);
* the messages of one table version read with ``pyarrow.json`` under a type made from the first
  message's members (``data``/``old`` last, no ``claimCheckLocation``) and the version's columns
  (``data``/``old`` as structs of the columns in code point order), and the JSON text of what was
  read (:mod:`.json_text`, ``data``/``old`` left out where absent) equals the message byte for
  byte: the same members in the same order, nothing twice, images holding exactly the version's
  columns, so the same document the Python decoder reads;
* ``handleKeyOnly``, where present, is ``false``; ``data`` is present exactly for INSERT and
  UPDATE, ``old`` exactly for UPDATE and DELETE; every value converts by its twin to the text its
  scalar converter gives (a value the scalar converter refuses is never taken, so its quarantine
  reason stays the Python decoder's).

Rows are emitted with image keys in code point order, as ``events_to_arrow(..., sort_images=True)``
writes the Python decoder's events (``decode_arrow.SORTED_IMAGE_PROTOCOLS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.simple_json import DML_TYPES
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark.arrow_decode.debezium_columns import ColumnReader
from ticdc_lake.spark.arrow_decode.envelope import text_marks
from ticdc_lake.spark.arrow_decode.json_text import json_text, text_type
from ticdc_lake.spark.arrow_decode.row_batches import (
    DmlGroup,
    VectorDecode,
    dml_batch,
    equal_mask,
    group_or_none,
    image_map,
    message_values,
    read_documents,
    utf8_texts,
)
from ticdc_lake.spark.arrow_decode.simple_columns import column_reader

#: The start of a DML as TiCDC writes it, with the group key: a pre-filter only (every member is
#: verified by the read and the text comparison).
_HEAD = (
    r'^\{"version":1,"database":"(?P<database>[^"\\]*)","table":"(?P<table>[^"\\]*)"(?:,"tableID":[0-9]+)?'
    r',"type":"(?:INSERT|UPDATE|DELETE)","commitTs":[0-9]+,"buildTs":-?[0-9]+'
    r',"schemaVersion":(?P<version>[1-9][0-9]{0,18})[,}]'
)
_IMAGES = ("data", "old")
#: ``type`` -> (data present, old present).
_SHAPES = {"INSERT": (True, False), "UPDATE": (True, True), "DELETE": (False, True)}
_KINDS = pa.array(list(_SHAPES))
_OPS = pa.array([DML_TYPES[kind].value for kind in _SHAPES])
_SEPARATOR = "\x00"  # never raw in a text without control characters


class SimpleJsonVectorDecoder:
    """Decodes the row changes of a batch of Simple JSON messages it can vouch for (module docstring)."""

    def __init__(self, options: CodecOptions, pipeline: str, run_id: str) -> None:
        self.options = options
        self.pipeline = pipeline
        self.run_id = run_id
        self._readers: dict[tuple[str, str, int], tuple[TableSchema, dict[str, ColumnReader] | None]] = {}

    def decode(self, batch_id: str, messages: Sequence[RawMessage], lookup: MemorySchemaLookup) -> VectorDecode:
        count = len(messages)
        nothing = VectorDecode(None, [False] * count)
        if count == 0 or self.options.compression is not Compression.NONE:
            return nothing
        texts = utf8_texts(message_values(messages))
        heads = pc.extract_regex(texts, _HEAD)
        ok = heads.is_valid().to_numpy(zero_copy_only=False)
        if not ok.any():
            return nothing
        marks = text_marks(texts)
        ok &= ~marks.controls & ~marks.unicode_escapes
        keys = pc.binary_join_element_wise(*heads.flatten(), _SEPARATOR)
        encoded = pc.dictionary_encode(pc.if_else(pa.array(ok), keys, pa.scalar(None, pa.string())))
        codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        groups: list[DmlGroup] = []
        for code, key in enumerate(encoded.dictionary.to_pylist()):
            database, table, version = key.split(_SEPARATOR)
            schema = lookup.get(database, table, int(version))
            if schema is None:
                continue  # PENDING in the Python decoder
            rows = np.flatnonzero(ok & (codes == code))
            key = (database, table, int(version))
            make = partial(self._group, texts.take(pa.array(rows)), rows, key, schema)
            group = group_or_none(make, f"{database}.{table} version {version}")
            if group is not None:
                groups.append(group)
        if not groups:
            return nothing
        return dml_batch(self.pipeline, self.run_id, batch_id, messages, groups)

    def _group(
        self, texts: pa.StringArray, rows: np.ndarray, key: tuple[str, str, int], schema: TableSchema
    ) -> DmlGroup | None:
        readers = self._column_readers(key, schema)
        if readers is None:
            return None
        try:
            first = msgspec.json.decode(texts[0].as_py().encode())
        except (msgspec.DecodeError, ValueError):
            return None
        read_type = _message_type(first, readers) if isinstance(first, dict) else None
        if read_type is None:
            return None
        table = read_documents(texts, read_type)
        if table is None:
            return None
        columns = {name: table.column(name).combine_chunks() for name in table.column_names}
        good = pc.equal(_message_text(columns, read_type), texts).to_numpy(zero_copy_only=False)
        database, table_name, version = key
        good &= equal_mask(columns["database"], database) & equal_mask(columns["table"], table_name)
        good &= equal_mask(columns["schemaVersion"], version) & equal_mask(columns["version"], 1)
        if "handleKeyOnly" in columns:
            if not pa.types.is_boolean(columns["handleKeyOnly"].type):
                return None
            good &= equal_mask(columns["handleKeyOnly"], False)
        commit = columns["commitTs"]
        table_ids = columns.get("tableID", pa.nulls(len(rows), pa.int64()))
        if not pa.types.is_int64(commit.type) or not pa.types.is_int64(table_ids.type):
            return None
        commit_ts = commit.fill_null(-1).to_numpy(zero_copy_only=False)
        good &= commit_ts >= 0
        if "tableID" in columns:  # present: an unsigned integer, never null
            good &= table_ids.fill_null(-1).to_numpy(zero_copy_only=False) >= 0
        kinds = columns["type"]
        present = {name: columns[name].is_valid().to_numpy(zero_copy_only=False) for name in _IMAGES}
        good &= _shapes_ok(kinds, present["data"], present["old"])
        images = {}
        for name in _IMAGES:
            maps, converted = image_map(columns[name], readers)
            images[name] = maps
            good &= converted
        if not good.any():
            return None
        keep = pa.array(np.flatnonzero(good))
        return DmlGroup(
            rows=rows[good],
            commit_ts=commit_ts[good],
            ops=_OPS.take(pc.index_in(kinds.take(keep), value_set=_KINDS)),
            database=database,
            table=table_name,
            version=version,
            before=images["old"].take(keep),
            after=images["data"].take(keep),
            table_ids=table_ids.take(keep),
        )

    def _column_readers(self, key: tuple[str, str, int], schema: TableSchema) -> dict[str, ColumnReader] | None:
        """Column name -> twin, in code point order, made once per table version; None if one has no twin."""
        cached = self._readers.get(key)
        if cached is not None and cached[0] is schema:
            return cached[1]
        found = {c.name: column_reader(c, self.options.server_time_zone) for c in schema.columns}
        readers: dict[str, ColumnReader] | None = None
        if found and all(reader is not None for reader in found.values()):
            readers = {name: reader for name in sorted(found) if (reader := found[name]) is not None}
        self._readers[key] = (schema, readers)
        return readers


def _message_type(first: dict[str, object], readers: dict[str, ColumnReader]) -> pa.StructType | None:
    """The type to read every message of the group as: the first message's members (``data`` and
    ``old`` last, both always read), the images as structs of the version's columns."""
    names = list(first)
    head = [name for name in names if name not in _IMAGES]
    if "claimCheckLocation" in first or names[: len(head)] != head:
        return None
    fields = []
    for name in head:
        kind = text_type(first[name])
        if kind is None:
            return None
        fields.append(pa.field(name, kind))
    if not {"version", "database", "table", "type", "commitTs", "schemaVersion"} <= set(head):
        return None
    image = pa.struct([pa.field(name, reader.arrow_type) for name, reader in readers.items()])
    return pa.struct([*fields, pa.field("data", image), pa.field("old", image)])


def _message_text(columns: dict[str, pa.Array], read_type: pa.StructType) -> pa.Array:
    """The JSON text of each message read: its head members, then ``data`` and ``old`` where present."""
    head_fields = [read_type.field(i) for i in range(read_type.num_fields) if read_type.field(i).name not in _IMAGES]
    head = pa.StructArray.from_arrays([columns[f.name] for f in head_fields], fields=head_fields)
    pieces = [pc.utf8_slice_codeunits(json_text(head), 0, -1)]  # without its closing brace
    for name in _IMAGES:
        image = columns[name]
        member = pc.binary_join_element_wise(f',"{name}":', json_text(image), "")
        pieces.append(pc.if_else(image.is_valid(), member, ""))
    return pc.binary_join_element_wise(*pieces, "}", "")


def _shapes_ok(kinds: pa.Array, data: np.ndarray, old: np.ndarray) -> np.ndarray:
    """Per row: a DML type with exactly the images it has (``simple_json._row_object``)."""
    ok = np.zeros(len(kinds), dtype=bool)
    texts = kinds.fill_null("")
    for kind, (wants_data, wants_old) in _SHAPES.items():
        rows = pc.equal(texts, kind).to_numpy(zero_copy_only=False)
        ok |= rows & (data == wants_data) & (old == wants_old)
    return ok
