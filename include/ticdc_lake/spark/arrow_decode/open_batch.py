"""Open Protocol row changes decoded a whole Arrow batch at a time, verified against the Python decoder's rules.

The Python decoder (:mod:`ticdc_lake.protocols.open_protocol`) reads one message at a time and
stays the specification. :class:`OpenVectorDecoder` takes from a batch only the messages all of
whose events are row changes it can vouch for, and decodes them with whole-column operations;
every other message (one holding a DDL, a resolved event, anything malformed or unusual) is left
whole to the Python decoder, which decodes it exactly as before.

A message is taken when all of these hold (docs/design.md, "Vectorized Open Protocol decode"):

* the framing splits (:mod:`.open_frames`: batch version 1, key
  items and value items pair up, 1 to ``MAX_ITEMS`` events);
* every event's key item is, byte for byte, a row key as TiCDC writes it (:data:`_KEY`:
  ``{"ts":T,"scm":"D","tbl":"N"[,"rid":R][,"ptn":P],"t":1}``, canonical numbers, ``T`` below
  10**19, ``R`` and ``P`` below 10**18 in magnitude, names non-empty without escape or control
  character): no ``ohk``, no ``ccl``;
* where ``codec.compression`` is set, every value item decompresses (each is compressed on its
  own, :func:`.compressed_values.decompressed`; the rules below apply to what it holds then);
* every event's value item is valid UTF-8 without a raw control character or a ``\\u`` escape (a
  surrogate would make ``pyarrow`` refuse the whole group) but those Go writes for ``<``, ``>``,
  ``&``, U+2028 and U+2029 (read as the characters they stand for, the same document), and
  belongs to a group (same database, table and value text with every ``"v"`` value cut out: the
  column names, type codes, flags and handle marks, in order) that reads with ``pyarrow.json``
  under a type made from the group's first value, whose JSON text rebuilt from what was read
  (:mod:`.json_text`, the first value's ``t``/``h``/``f`` members) equals the value item byte for
  byte: so every event of the group has exactly those members, types and flags, nothing twice,
  and the values the Python decoder parses;
* the value is ``{"u":..}`` (INSERT), ``{"u":..,"p":..}`` (UPDATE) or ``{"d":..}`` (DELETE), each
  image a non-empty object of columns ``{"t","h"?,"f"?,"v"}`` with ``t`` in 0..255, ``f`` in
  0..2**64-1 and ``h`` a boolean;
* the lookup binds the event to a schema version (``schema_facts._bind_schema``:
  ``latest(db, table, commit_ts)``) that has every column of its images by its exact name (the
  events of one group are read per version they bind to), or binds it to none and does not infer
  schemas (``infer_missing`` off: the row stays unbound, ``schema_version`` NULL; an ENUM/SET value
  then has no twin, as the Python decoder makes such a row PENDING);
* every column has a twin (:mod:`.open_columns`; ENUM/SET named by the bound version's members)
  and every value converts by it to the text the Python decoder gives (a value it refuses, or an
  ENUM/SET it cannot name, is never taken, so its quarantine reason or PENDING stays the Python
  decoder's);
* every other event of the same message is taken too (a message is never split between paths).

Rows carry ``idx`` = the event's index in its batch, image keys in the order sent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.canonical import MAX_UNSIGNED_BIGINT
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.events import Op, RawMessage
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark.arrow_decode.compressed_values import decompressed
from ticdc_lake.spark.arrow_decode.debezium_columns import ColumnReader
from ticdc_lake.spark.arrow_decode.envelope import text_marks
from ticdc_lake.spark.arrow_decode.json_text import json_text
from ticdc_lake.spark.arrow_decode.open_columns import column_reader
from ticdc_lake.spark.arrow_decode.open_frames import cut_items
from ticdc_lake.spark.arrow_decode.row_batches import (
    DmlGroup,
    VectorDecode,
    dml_batch,
    image_map,
    message_keys,
    message_values,
    read_documents,
    utf8_texts,
)

log = logging.getLogger(__name__)

_NAME = r'[^"\\\x00-\x1f]+'
#: A row key as TiCDC writes it (``pkg/sink/codec/internal/message_key.go``), the whole item.
_KEY = (
    r'^\{"ts":(?P<ts>0|[1-9][0-9]{0,18}),"scm":"(?P<database>' + _NAME + r')","tbl":"(?P<table>' + _NAME + r')"'
    r'(?:,"rid":-?(?:0|[1-9][0-9]{0,17}))?(?:,"ptn":(?P<ptn>0|[1-9][0-9]{0,17}))?,"t":1\}$'
)
#: A column's ``"v"`` member and the column object's end: cut out to group values by their shape.
_VALUE = r'"v":(?:null|true|false|-?[0-9][-+.eE0-9]*|"(?:[^"\\]|\\.)*")\}'
_SEPARATOR = "\x00"  # never in a name of _KEY nor in a value without control characters
#: The members of a value (in the order Go writes them) -> the op and the images' roles.
_SHAPES: dict[tuple[str, ...], Op] = {("u",): Op.INSERT, ("u", "p"): Op.UPDATE, ("d",): Op.DELETE}
#: The escapes Go's ``encoding/json`` writes for characters that need none in JSON.
_GO_ESCAPES = (("\\u003c", "<"), ("\\u003e", ">"), ("\\u0026", "&"), ("\\u2028", "\u2028"), ("\\u2029", "\u2029"))
_PAIR = "\x00"  # stands for an escaped backslash while Go's escapes are undone
_COLUMN_MEMBERS = frozenset({"t", "h", "f", "v"})


@dataclass(frozen=True, slots=True)
class _Column:
    """One column of an image as the group's first value sends it."""

    name: str
    #: Its members in the order sent: ("v", None) for the value, (member, constant) for t/h/f.
    members: tuple[tuple[str, int | bool | None], ...]
    code: int
    flags: int


class OpenVectorDecoder:
    """Decodes the row changes of a batch of Open Protocol messages it can vouch for (module docstring)."""

    def __init__(self, options: CodecOptions, pipeline: str, run_id: str) -> None:
        self.options = options
        self.pipeline = pipeline
        self.run_id = run_id

    def decode(self, batch_id: str, messages: Sequence[RawMessage], lookup: MemorySchemaLookup) -> VectorDecode:
        count = len(messages)
        nothing = VectorDecode(None, [False] * count)
        if count == 0:
            return nothing
        items = cut_items(message_keys(messages), message_values(messages))
        if not items.ok.any():
            return nothing
        heads = pc.extract_regex(utf8_texts(items.keys), _KEY)
        sent: pa.Array = items.values
        unpacked = None
        if self.options.compression is not Compression.NONE:
            # TiCDC compresses each value item on its own, never a key item (``protocols.compression``).
            sent, unpacked = decompressed(sent, self.options.compression, empty_too=True)
        values = utf8_texts(sent)
        marks = text_marks(values)
        escaped = marks.unicode_escapes
        if escaped.any():
            values, escaped = _unescaped(values, escaped, marks.controls)
        good = heads.is_valid().to_numpy(zero_copy_only=False) & values.is_valid().to_numpy(zero_copy_only=False)
        good &= ~marks.controls & ~escaped
        if unpacked is not None:
            good &= unpacked
        if not good.any():
            return nothing
        fields = {name: heads.field(name) for name in ("ts", "database", "table", "ptn")}
        commit_ts = pc.if_else(pa.array(good), fields["ts"], "0").cast(pa.uint64()).to_numpy(zero_copy_only=False)
        ptn = fields["ptn"]
        table_ids = pc.if_else(pc.equal(ptn, ""), pa.scalar(None, pa.string()), ptn).cast(pa.int64())
        shapes = pc.replace_substring_regex(values, _VALUE, '"v":}')
        keys = pc.binary_join_element_wise(fields["database"], fields["table"], shapes, _SEPARATOR)
        encoded = pc.dictionary_encode(pc.if_else(pa.array(good), keys, pa.scalar(None, pa.string())))
        codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        decoded = np.zeros(len(good), dtype=bool)
        groups: list[DmlGroup] = []
        for code, key in enumerate(encoded.dictionary.to_pylist()):
            database, table = key.split(_SEPARATOR, 2)[:2]
            rows = np.flatnonzero(codes == code)
            try:
                for schema, part in _versions(lookup, database, table, commit_ts[rows]):
                    picked = rows[part]
                    texts = values.take(pa.array(picked))
                    group = self._group((database, table), picked, texts, commit_ts[picked], schema, marks.backslashes)
                    if group is not None:
                        group.table_ids = table_ids.take(pa.array(group.rows))
                        groups.append(group)
                        decoded[group.rows] = True
            except Exception:  # a bug here must cost only speed: the Python decoder takes the group
                log.exception(
                    "decode: the vector decoder failed on %d event(s) of %s.%s; decoding them in Python",
                    len(rows),
                    database,
                    table,
                )
                decoded[rows] = False
                groups = [g for g in groups if not np.isin(g.rows, rows).any()]
        # A message is taken when every one of its events was decoded here.
        missed = np.bincount(items.message, weights=~decoded, minlength=count)
        taken = items.ok & (missed == 0)
        kept = [chosen for group in groups if (chosen := _only(group, taken[items.message[group.rows]])) is not None]
        if not kept:
            return nothing
        # Rows by message and their index in it (the event's position in its batch), as the Python decoder gives them.
        by_message = [replace(group, rows=items.message[group.rows], idx=items.index[group.rows]) for group in kept]
        return VectorDecode(
            dml_batch(self.pipeline, self.run_id, batch_id, messages, by_message).events, taken.tolist()
        )

    def _group(
        self,
        table: tuple[str, str],
        rows: np.ndarray,
        texts: pa.StringArray,
        commit_ts: np.ndarray,
        schema: TableSchema | None,
        backslashes: np.ndarray,
    ) -> DmlGroup | None:
        """The events of one shape bound to ``schema`` that convert and read back as sent (module docstring)."""
        try:
            first = msgspec.json.decode(texts[0].as_py().encode())
        except (msgspec.DecodeError, ValueError):
            return None
        images = _images(first)
        if images is None:
            return None
        op = _SHAPES[tuple(images)]
        if schema is not None:
            names = {c.name for c in schema.columns}
            if schema.version is None or not all(c.name in names for columns in images.values() for c in columns):
                return None
        readers: dict[str, dict[str, ColumnReader]] = {}
        for name, columns in images.items():
            found = {
                c.name: column_reader(
                    c.code, c.flags, schema.column(c.name) if schema else None, self.options.server_time_zone
                )
                for c in columns
            }
            if any(reader is None for reader in found.values()):
                return None
            readers[name] = {n: r for n, r in found.items() if r is not None}
        read_type = pa.struct(
            [
                pa.field(
                    name, pa.struct([pa.field(n, pa.struct([pa.field("v", r.arrow_type)])) for n, r in cols.items()])
                )
                for name, cols in readers.items()
            ]
        )
        document = read_documents(texts, read_type)
        if document is None:
            return None
        read = {name: document.column(name).combine_chunks() for name in readers}
        sent = {name: read[name].flatten() for name in readers}
        good: np.ndarray = pc.equal(
            _value_text(images, sent, len(rows), bool(backslashes[rows].any())), texts
        ).to_numpy(zero_copy_only=False)
        maps: dict[str, pa.Array] = {}
        for name, cols in readers.items():
            values = pa.StructArray.from_arrays([child.field("v") for child in sent[name]], names=list(cols))
            maps[name], converted = image_map(values, cols)
            good &= converted
        if not good.any():
            return None
        keep = pa.array(np.flatnonzero(good))
        nulls = pa.nulls(len(keep), maps[next(iter(maps))].type)
        after = maps["u"].take(keep) if "u" in maps else nulls
        before = maps["p"].take(keep) if "p" in maps else maps["d"].take(keep) if "d" in maps else nulls
        return DmlGroup(
            rows=rows[good],
            commit_ts=commit_ts[good],
            ops=pa.repeat(pa.scalar(op.value), len(keep)),
            database=table[0],
            table=table[1],
            version=None if schema is None else schema.version if schema.version is not None else 0,
            before=before,
            after=after,
        )


def _unescaped(values: pa.StringArray, escaped: np.ndarray, controls: np.ndarray) -> tuple[pa.StringArray, np.ndarray]:
    """The values with Go's escapes of ``<``, ``>``, ``&``, U+2028 and U+2029 written as the characters
    they stand for (the same JSON document), and per value whether a ``\\u`` escape is left (then not
    taken). The escaped backslashes are set aside first (paired left to right, as JSON reads them), so
    that ``\\\\u003c`` stays a backslash and the text ``u003c``; texts with a raw control character
    (``\\x00`` marks the pairs) are left as they are (never taken)."""
    rows = escaped & ~controls
    if not rows.any():
        return values, escaped
    mask = pa.array(rows)
    some = pc.replace_substring(values.filter(mask), "\\\\", _PAIR)
    for escape, char in _GO_ESCAPES:
        some = pc.replace_substring(some, escape, char)
    left = escaped.copy()
    left[rows] = pc.match_substring(some, "\\u").to_numpy(zero_copy_only=False)
    return pc.replace_with_mask(values, mask, pc.replace_substring(some, _PAIR, "\\\\")), left


def _images(first: Any) -> dict[str, list[_Column]] | None:
    """The images of the group's first value and their columns, where the value has a shape the
    rule takes (module docstring); None otherwise."""
    if not isinstance(first, dict) or tuple(first) not in _SHAPES:
        return None
    images: dict[str, list[_Column]] = {}
    for name, columns in first.items():
        if not isinstance(columns, dict) or not columns:
            return None
        found = []
        for column, members in columns.items():
            described = _column(column, members)
            if described is None:
                return None
            found.append(described)
        images[name] = found
    return images


def _column(name: str, members: Any) -> _Column | None:
    if not isinstance(members, dict) or "v" not in members or not set(members) <= _COLUMN_MEMBERS:
        return None
    code, flags, handle = members.get("t"), members.get("f", 0), members.get("h", False)
    if not _integer(code, 255) or not _integer(flags, MAX_UNSIGNED_BIGINT) or not isinstance(handle, bool):
        return None
    return _Column(name, tuple((k, None if k == "v" else v) for k, v in members.items()), code, flags)


def _integer(value: object, high: int) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= high


def _versions(
    lookup: MemorySchemaLookup, database: str, table: str, commit_ts: np.ndarray
) -> list[tuple[TableSchema | None, np.ndarray]]:
    """The versions the events bind to (``latest(database, table, commit_ts)``, as
    ``schema_facts._bind_schema`` binds them) with, for each, which events (a mask); None for the
    events no version binds where the lookup does not infer schemas (they stay unbound), else those
    events are in none. Since ``latest`` never goes back as the TSO grows, the distinct TSOs are
    cut where the version changes by bisection: a few lookups per version, none per event."""
    stamps = np.unique(commit_ts)

    def at(index: int) -> TableSchema | None:
        return lookup.latest(database, table, int(stamps[index]))

    spans: list[tuple[int, int, TableSchema | None]] = []
    pending = [(0, len(stamps) - 1, at(0), at(len(stamps) - 1))]
    while pending:
        low, high, first, last = pending.pop()
        if first is last:
            spans.append((low, high, first))
        elif high == low + 1:
            spans += [(low, low, first), (high, high, last)]
        else:  # the stamp in the middle belongs to both halves: its version is each one's end
            middle = (low + high) // 2
            version = at(middle)
            pending += [(middle, high, version, last), (low, middle, first, version)]
    found: dict[int, tuple[TableSchema | None, np.ndarray]] = {}
    for low, high, schema in spans:
        if schema is None and getattr(lookup, "infer_missing", False):
            continue  # the Python decoder infers a schema from the first such row (and binds the others to it)
        inside = (commit_ts >= stamps[low]) & (commit_ts <= stamps[high])
        known = found.get(id(schema))
        found[id(schema)] = (schema, inside if known is None else known[1] | inside)
    return list(found.values())


def _value_text(
    images: dict[str, list[_Column]], sent: dict[str, list[pa.Array]], count: int, escapes: bool
) -> pa.Array:
    """The JSON text of each value read: the first value's members with the values read."""
    image_arrays = []
    for name, columns in images.items():
        column_arrays = []
        for column, child in zip(columns, sent[name], strict=True):
            members = [child.field("v") if key == "v" else _constant(value, count) for key, value in column.members]
            column_arrays.append(pa.StructArray.from_arrays(members, names=[key for key, _ in column.members]))
        image_arrays.append(pa.StructArray.from_arrays(column_arrays, names=[c.name for c in columns]))
    return json_text(pa.StructArray.from_arrays(image_arrays, names=list(images)), escapes=escapes)


def _constant(value: int | bool | None, count: int) -> pa.Array:
    if isinstance(value, bool):
        return pa.repeat(pa.scalar(value), count)
    kind = pa.uint64() if isinstance(value, int) and value > (1 << 63) - 1 else pa.int64()
    return pa.repeat(pa.scalar(value, kind), count)


def _only(group: DmlGroup, keep: np.ndarray) -> DmlGroup | None:
    """The group's events whose messages are taken."""
    if keep.all():
        return group
    if not keep.any():
        return None
    rows = pa.array(np.flatnonzero(keep))
    table_ids = group.table_ids.take(rows) if group.table_ids is not None else None
    return DmlGroup(
        rows=group.rows[keep],
        commit_ts=group.commit_ts[keep],
        ops=group.ops.take(rows),
        database=group.database,
        table=group.table,
        version=group.version,
        before=group.before.take(rows),
        after=group.after.take(rows),
        table_ids=table_ids,
    )
