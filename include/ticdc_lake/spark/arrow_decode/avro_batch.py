"""TiCDC ``avro`` (Confluent registry) row changes decoded a whole Arrow batch at a time.

The Python decoder (:mod:`ticdc_lake.protocols.avro_confluent`) reads one message at a time and
stays the specification. :class:`AvroVectorDecoder` groups a batch's messages by the registry ids
of their key and value (the 5-byte Confluent headers, read for all messages at once), reads each
group's records field by field across all of them (:mod:`.avro_binary`) and converts each column
with its twin (:mod:`.avro_columns`). Avro binary is unambiguous, so the check is structural.

A message is taken when all of these hold:

* the key is Confluent-framed (``0x00``, 4-byte id) and the value is either Confluent-framed (a
  row) or null/empty (a tombstone delete); the writer schemas of both ids are among the landed
  ones (``DecodeResources``), parse as TiCDC record schemas (``parse_writer_schema``), have no
  duplicate field names and only fields :mod:`.avro_binary` reads, every column has a twin, and
  key and value name the same table;
* with the TiDB extension the value schema's ``_tidb_op`` is a ``string``, ``_tidb_commit_ts`` and
  ``_tidb_commit_physical_time`` are ``long``, and its row checksum fields, where it has them, are
  as TiCDC writes them (``_tidb_row_level_checksum`` a ``string``, ``_tidb_corrupted`` a
  ``boolean``, ``_tidb_checksum_version`` an ``int``); a key schema has no row checksum fields;
* both records read as :mod:`.avro_binary` vouches (exactly to their message's end, valid UTF-8);
  every value converts by its twin; a key column the value record also has holds the same text;
  with the extension: ``_tidb_op`` is ``c`` or ``u``, the commit TSO is not 0 and its physical time
  is ``_tidb_commit_physical_time``; with row checksums, ``_tidb_corrupted`` is false;
* the upstream names (``avro_names``: the lookup's DDL-folded schemas) name at most one table for
  the row's and map its columns without ambiguity, the same at the group's smallest and largest
  commit TSO;
* binding is the Python decoder's (``schema_facts._bind_schema``): rows with a commit TSO bind to
  ``latest(database, table, commit_ts)``, the same version at the group's smallest and largest TSO,
  having every column of the row by its exact name; rows without (no extension, tombstones) to the
  version of ``offset_versions.version_of`` (computed per row, whole arrays per partition) found by
  ``get``, else ``latest(database, table, 0)``. A row no version binds is taken unbound (NULL
  ``schema_version``, as the Python decoder leaves it) only where the lookup does not infer a schema
  for it (``infer_missing`` off, or a version of the table known), never where it would.

DDL (``0x01``), watermarks (``0x02``), unknown ids and anything malformed go to
the Python decoder unchanged, which says why where it rejects them. The decoder is given the same
landed writer schemas (``resources``) as the Python decoder; without them it takes nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.canonical import zone_info
from ticdc_lake.config import CodecOptions
from ticdc_lake.events import Op, RawMessage
from ticdc_lake.protocols.avro_confluent import (
    CHECKSUM_FIELDS,
    EXTENSION_FIELDS,
    HEADER_SIZE,
    MAGIC_BYTE,
    WriterSchema,
    parse_writer_schema,
)
from ticdc_lake.protocols.avro_names import UpstreamNames
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.spark.arrow_decode.avro_binary import ARROW_TYPES, FieldSpec, field_specs, read_records
from ticdc_lake.spark.arrow_decode.avro_bindings import (
    NO_ID,
    ordered_bindings,
    timed_binding,
)
from ticdc_lake.spark.arrow_decode.avro_columns import column_reader
from ticdc_lake.spark.arrow_decode.debezium_columns import ColumnReader
from ticdc_lake.spark.arrow_decode.row_batches import (
    DmlGroup,
    VectorDecode,
    dml_batch,
    equal_mask,
    image_map,
    message_keys,
    message_values,
)
from ticdc_lake.spark.decode_arrow import MAP_ARROW

log = logging.getLogger(__name__)

_PHYSICAL_SHIFT = 18
_EXTENSION_KINDS = ("string", "long", "long")
_CHECKSUM_KINDS = ("string", "boolean", "int")
#: Writer schemas kept parsed per decoder (a registry id's text never changes).
_WRITER_ENTRIES = 4096
#: The ``op`` column's texts, by the codes the groups keep.
_OP_TEXTS = pa.array([Op.INSERT.value, Op.UPDATE.value, Op.DELETE.value], pa.string())
_INSERT, _UPDATE, _DELETE = range(3)
_TEXT = ColumnReader(pa.string(), lambda texts: (texts, pa.array(np.ones(len(texts), dtype=bool))))


@dataclass(frozen=True, slots=True)
class _Writer:
    """A landed writer schema the vector path reads: the Python decoder's parse, its fields, the column twins."""

    schema: WriterSchema
    fields: list[FieldSpec]
    readers: dict[str, ColumnReader]


@dataclass(frozen=True, slots=True)
class _Side:
    """The key or the value of every message: framed (magic byte, 4-byte id), the id, where the body lies."""

    framed: np.ndarray
    ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    empty: np.ndarray
    data: np.ndarray


class AvroVectorDecoder:
    """Decodes the row changes of a batch of avro messages it can vouch for (module docstring)."""

    def __init__(
        self, options: CodecOptions, pipeline: str, run_id: str, resources: DecodeResources | None = None
    ) -> None:
        self.options = options
        self.pipeline = pipeline
        self.run_id = run_id
        self.resources = resources if resources is not None else DecodeResources()
        self._zone = zone_info(options.server_time_zone)
        self._writers: dict[int, _Writer | None] = {}
        self._names: tuple[tuple[int, int], UpstreamNames | None] | None = None

    def decode(self, batch_id: str, messages: Sequence[RawMessage], lookup: MemorySchemaLookup) -> VectorDecode:
        count = len(messages)
        if count == 0 or not self.resources.writer_schemas:
            return VectorDecode(None, [False] * count)
        keys = _side(message_keys(messages))
        values = _side(message_values(messages))
        rows = keys.framed & values.framed
        deletes = keys.framed & values.empty
        value_ids = np.where(rows, values.ids, NO_ID)
        pairs = np.stack([keys.ids, value_ids], axis=1)[rows | deletes]
        names = self._upstream_names(lookup)
        groups: list[DmlGroup] = []
        for key_id, value_id in np.unique(pairs, axis=0).tolist() if len(pairs) else []:
            picked = np.flatnonzero((rows | deletes) & (keys.ids == key_id) & (value_ids == value_id))
            try:
                found = self._group(int(key_id), int(value_id), picked, keys, values, messages, lookup, names)
            except Exception:  # a bug here must cost only speed: the Python decoder takes the group
                log.exception(
                    "decode: the vector decoder failed on %d message(s); decoding them in Python", len(picked)
                )
                found = []
            groups.extend(found)
        if not groups:
            return VectorDecode(None, [False] * count)
        return dml_batch(self.pipeline, self.run_id, batch_id, messages, groups)

    def _group(
        self,
        key_id: int,
        value_id: int,
        picked: np.ndarray,
        keys: _Side,
        values: _Side,
        messages: Sequence[RawMessage],
        lookup: MemorySchemaLookup,
        names: UpstreamNames | None,
    ) -> list[DmlGroup]:
        key_writer = self._writer(key_id)
        value_writer = self._writer(value_id) if value_id != NO_ID else None
        if key_writer is None or (value_id != NO_ID and value_writer is None):
            return []
        key_schema = key_writer.schema
        records = read_records(keys.data, keys.starts[picked], keys.ends[picked], key_writer.fields)
        good = records.ok
        key_texts = _texts(key_writer, records.columns, good)
        count = len(picked)
        if value_writer is None:  # a tombstone: the key record is the old row
            ops = np.full(count, _DELETE, dtype=np.int8)
            commit = np.zeros(count, dtype=np.uint64)
            image_texts, extension = key_texts, False
        else:
            schema = value_writer.schema
            if (key_schema.database, key_schema.table) != (schema.database, schema.table) or key_schema.checksum:
                return []
            value_records = read_records(values.data, values.starts[picked], values.ends[picked], value_writer.fields)
            good &= value_records.ok
            image_texts = _texts(value_writer, value_records.columns, good)
            for name, (text, _) in key_texts.items():
                if name in image_texts:
                    other = image_texts[name][0]
                    same = pc.or_kleene(pc.equal(text, other), pc.and_(text.is_null(), other.is_null()))
                    good &= same.fill_null(False).to_numpy(zero_copy_only=False)
            extension = schema.extension
            if extension:
                ops, commit, fine = _extension(value_records.columns)
                good &= fine
            else:
                ops = np.full(count, _INSERT, dtype=np.int8)
                commit = np.zeros(count, dtype=np.uint64)
            if schema.checksum:  # the row checksum itself goes to facts only, not to change_events
                good &= equal_mask(value_records.columns[CHECKSUM_FIELDS[1]], False)
        for _, ok in image_texts.values():
            good &= ok
        for _, ok in key_texts.values():
            good &= ok
        if not good.any():
            return []
        database, table = key_schema.database, key_schema.table
        sent = list(image_texts)
        rows = np.flatnonzero(good)
        if extension:
            bound = timed_binding(lookup, names, database, table, sent, commit[rows])
            versions = [(rows, bound)] if bound is not None else []
        else:
            versions = ordered_bindings(lookup, names, database, table, sent, picked, rows, messages, key_id, value_id)
        groups = []
        for chosen, (upstream, mapping, version) in versions:
            renamed = [mapping.get(name, name) for name in sent]
            image = pa.StructArray.from_arrays(
                [image_texts[name][0].take(pa.array(chosen)) for name in sent], names=renamed
            )
            maps, _ = image_map(image, dict.fromkeys(renamed, _TEXT))
            empty = pa.nulls(len(chosen), MAP_ARROW)
            deleted = value_writer is None
            groups.append(
                DmlGroup(
                    rows=picked[chosen],
                    commit_ts=commit[chosen],
                    ops=_OP_TEXTS.take(pa.array(ops[chosen])),
                    database=upstream[0],
                    table=upstream[1],
                    version=version,
                    before=maps if deleted else empty,
                    after=empty if deleted else maps,
                )
            )
        return groups

    def _writer(self, schema_id: int) -> _Writer | None:
        """The writer schema of ``schema_id`` where the vector path reads it; None where it does not."""
        if schema_id in self._writers:
            return self._writers[schema_id]
        if len(self._writers) >= _WRITER_ENTRIES:
            self._writers.clear()
        self._writers[schema_id] = writer = self._parse(schema_id)
        return writer

    def _parse(self, schema_id: int) -> _Writer | None:
        text = self.resources.writer_schemas.get(schema_id)
        if text is None:
            return None
        try:
            schema = parse_writer_schema(schema_id, text, self._zone)
            fields = field_specs(json.loads(text))
        except ValueError:
            return None
        if fields is None or len({f.name for f in fields}) != len(fields):
            return None
        kinds = {f.name: f.kind for f in fields}
        extension = (EXTENSION_FIELDS if schema.extension else ()) + (CHECKSUM_FIELDS if schema.checksum else ())
        if tuple(kinds[name] for name in extension) != (_EXTENSION_KINDS + _CHECKSUM_KINDS)[: len(extension)]:
            return None
        if any(f.null_branch is not None for f in fields if f.name in extension):
            return None
        readers = {}
        for column in schema.columns:
            reader = column_reader(column, self._zone)
            if reader is None or column.name not in kinds or reader.arrow_type != ARROW_TYPES[kinds[column.name]]:
                return None
            readers[column.name] = reader
        return _Writer(schema, fields, readers)

    def _upstream_names(self, lookup: MemorySchemaLookup) -> UpstreamNames | None:
        """``AvroDecoder._upstream_names``: the lookup's DDL-named tables, made once per lookup state."""
        if not isinstance(lookup, MemorySchemaLookup) or not len(lookup):
            return None
        key = (id(lookup), len(lookup))
        if self._names is None or self._names[0] != key:
            self._names = (key, UpstreamNames(lookup.as_mapping().values()))
        return self._names[1]


def _side(data: pa.BinaryArray) -> _Side:
    """Where each message's key or value is Confluent-framed, its registry id, and its body's bounds."""
    count = len(data)
    offsets = np.frombuffer(data.buffers()[1], dtype=np.int32)[data.offset : data.offset + count + 1]
    offsets = offsets.astype(np.int64)
    buffer = data.buffers()[2]
    raw = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, dtype=np.uint8)
    present = data.is_valid().to_numpy(zero_copy_only=False)
    lengths = offsets[1:] - offsets[:-1]
    long_enough = present & (lengths >= HEADER_SIZE)
    head = offsets[:-1, None] + np.arange(HEADER_SIZE, dtype=np.int64)
    header = raw[np.clip(head, 0, max(len(raw) - 1, 0))] if len(raw) else np.zeros((count, HEADER_SIZE), np.uint8)
    framed = long_enough & (header[:, 0] == MAGIC_BYTE)
    ids = header[:, 1:].astype(np.int64) @ (np.int64(1) << np.array([24, 16, 8, 0], dtype=np.int64))
    ids = np.where(framed, ids, NO_ID)
    empty = ~present | (lengths == 0)
    return _Side(framed, ids, offsets[:-1] + HEADER_SIZE, offsets[1:], empty, raw)


def _texts(
    writer: _Writer, columns: Mapping[str, pa.Array], good: np.ndarray
) -> dict[str, tuple[pa.Array, np.ndarray]]:
    """Column name -> (canonical texts, ok per record) of the schema's columns, in schema order."""
    texts = {}
    for name, reader in writer.readers.items():
        text, ok = reader.canonical(columns[name])
        texts[name] = (text, ok.to_numpy(zero_copy_only=False) | ~good)
    return texts


def _extension(columns: Mapping[str, pa.Array]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(op codes, commit TSOs as uint64, ok): ``_tidb_op`` c/u, a TSO whose physical time is the field's."""
    op, commit_ts, physical = (columns[name] for name in EXTENSION_FIELDS)
    insert = pc.equal(op, "c").fill_null(False).to_numpy(zero_copy_only=False)
    update = pc.equal(op, "u").fill_null(False).to_numpy(zero_copy_only=False)
    commit = commit_ts.fill_null(0).to_numpy(zero_copy_only=False).view(np.uint64)
    times = physical.fill_null(-1).to_numpy(zero_copy_only=False)
    fine = (insert | update) & (commit > 0) & (times >= 0)
    fine &= times.astype(np.uint64) == commit >> np.uint64(_PHYSICAL_SHIFT)
    ops = np.where(insert, _INSERT, _UPDATE).astype(np.int8)
    return ops, commit, fine
