"""Canal-JSON row changes decoded a whole Arrow batch at a time, verified against the Python decoder's rules.

The Python decoder (:mod:`ticdc_lake.protocols.canal_json`, then ``schema_facts.complete_events``)
reads one message at a time and stays the specification. :class:`CanalJsonVectorDecoder` takes
from a batch only the row changes it can vouch for and decodes them with whole-column operations;
every other message (DDL, TIDB_WATERMARK, claim-check or handle-key-only rows, anything malformed
or unusual) is left to the Python decoder, which decodes it exactly as before.

A message is taken when all of these hold:

* no compression is configured; the value is valid UTF-8 without a raw control character;
* the value is a DML laid out as TiCDC writes it (:data:`_DML`, :data:`_DML_PLAIN`): ``id``,
  ``database`` and ``table`` (non-empty, no escape), ``pkNames`` (null or names), ``isDdl: false``,
  ``type`` INSERT/UPDATE/DELETE, ``es``, ``ts``, ``sql``, ``sqlType`` (null or integer codes),
  ``mysqlType``, ``old``, ``data``, then, where ``codec.enable_tidb_extension`` is true, ``_tidb``
  holding only ``commitTs`` (below 9e18): so no claim-check location, no ``onlyHandleKey``; where it
  is false, nothing after ``data`` (a message with ``_tidb`` is the Python decoder's error). Rows are
  grouped by database, table and the ``pkNames``/``sqlType``/``mysqlType`` texts;
* the group's ``mysqlType`` has no member twice, at least one column, every type parses
  (``parse_mysql_type``) and has a twin (:mod:`.canal_columns`);
* the text from the ``"old"`` member on (``{"old":…}``; the rest was matched whole by
  :data:`_DML`) reads with ``pyarrow.json`` (``old``/``data`` as arrays of objects of the
  ``mysqlType`` columns in their order; a part whose read fails is split in halves until the
  failing messages stand alone) and the text written back from what was read equals it byte for
  byte: ``data`` one row object, ``old`` one row object for UPDATE and null otherwise,
  ``data`` with exactly the ``mysqlType`` columns in that order, every value a string or null;
  ``old`` the same, or (``only-output-updated-columns``) some of those columns in that order,
  none of them null (a null member cannot be told from a left-out one as read).
  Strings are written with jsoniter's escapes (:mod:`.json_text`: ``\\"``, ``\\\\``, ``\\n``,
  ``\\r``, ``\\t``, ``\\u00XX`` for the other control characters) and, for a message holding a
  ``\\u`` escape, also with those TiCDC's easyjson writer adds (``<``, ``>``, ``&``, U+2028/9 as
  ``\\u003c`` …); any other escape (``\\/``, ``\\b``, a surrogate pair, an escaped letter) is never
  written back, so its message is never taken;
* every value converts by its twin to the text ``canonical_value`` gives (a value the scalar
  refuses is never taken, so its quarantine reason stays the Python decoder's);
* binding (``schema_facts._bind_schema``), with the extension: the row binds to
  ``lookup.latest(database, table, commitTs)`` (found for parts of the group in commit order,
  :func:`.canal_bindings.tso_bindings`), a version that has every ``mysqlType`` column by its exact name (else the
  Python decoder's row is PENDING); without it (commit TSO 0, ``offset_ordered``): by its position
  as :mod:`.canal_bindings` finds it (``untimed_ddl.untimed_schema`` in an offset-ordered run, else
  the version at TSO 0, which need not have every column), or unbound (READY, ``schema_version``
  NULL) where the Python decoder leaves it so; never where it is PENDING or bound to a schema
  inferred from the row. Either way the version names the row's every non-null bare ENUM/SET
  index/bitmask by its members (``naming_reader``), or keeps it where the version was inferred
  without them (``missing_facts``); an unbound row, or a version without that column, takes only
  NULLs there (a number is PENDING in the Python decoder).

Image keys keep the ``mysqlType`` (= ``data``) order, as the Python decoder's events do (Canal-JSON
is not in ``decode_arrow.SORTED_IMAGE_PROTOCOLS``); an UPDATE's before image is ``data``
overlaid with ``old`` (:func:`_overlaid` where ``old`` holds only the changed columns).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.arrow_views import binary_views
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.canal_json import OPS
from ticdc_lake.protocols.canal_values import ColumnType, parse_mysql_type
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark.arrow_decode.canal_bindings import named_readers, positions, tso_bindings, untimed_bindings
from ticdc_lake.spark.arrow_decode.canal_columns import column_reader
from ticdc_lake.spark.arrow_decode.debezium_columns import ColumnReader
from ticdc_lake.spark.arrow_decode.envelope import text_marks
from ticdc_lake.spark.arrow_decode.json_text import json_text
from ticdc_lake.spark.arrow_decode.row_batches import (
    DmlGroup,
    VectorDecode,
    dml_batch,
    image_map,
    message_values,
    read_documents,
    utf8_texts,
)

log = logging.getLogger(__name__)

_NAME = r'"[^"\\\x00-\x1f]*"'
_NUMBER = r"-?(?:0|[1-9][0-9]{0,18})"
_SQL_CODE = r"-?(?:0|[1-9][0-9]{0,9})"
_TYPES = r"\{(?:" + _NAME + ":" + _NAME + "(?:," + _NAME + ":" + _NAME + r")*)?\}"
_SQL_TYPES = r"null|\{(?:" + _NAME + ":" + _SQL_CODE + "(?:," + _NAME + ":" + _SQL_CODE + r")*)?\}"
_PK_NAMES = r"null|\[(?:" + _NAME + "(?:," + _NAME + r")*)?\]"
_SQL = r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt])*"'
_COMMIT_TS = r"(?:0|[1-9][0-9]{0,17}|[1-8][0-9]{18})"
#: A DML as TiCDC writes it: what it matches up to ``"old":`` is valid JSON the Python decoder reads
#: without error (``old``, ``data`` and ``_tidb`` are verified by the read).
_DML_HEAD = (
    r'^(?:\{"id":' + _NUMBER + r',"database":"(?:[^"\\\x00-\x1f]+)"'
    r',"table":"(?:[^"\\\x00-\x1f]+)","pkNames":(?:' + _PK_NAMES + r'),"isDdl":false'
    r',"type":"(?:INSERT|UPDATE|DELETE)","es":' + _NUMBER + ',"ts":' + _NUMBER + ',"sql":' + _SQL + ""
    r',"sqlType":(?:' + _SQL_TYPES + r'),"mysqlType":(?:' + _TYPES + r'),"old":)'
    r'(?:null|\[\{.*\}\]),"data":\[\{.*\}\]'
)
#: With the TiDB extension (``_tidb`` holding only the commit TSO) and without it (no ``_tidb``).
_DML = _DML_HEAD + r',"_tidb":\{"commitTs":' + _COMMIT_TS + r"\}\}$"
_DML_PLAIN = _DML_HEAD + r"\}$"
_TYPE_AT = ',"isDdl":false,"type":"'
_MYSQL_TYPES = ',"mysqlType":'
_NULL_SQL_TYPES = ',"sqlType":null'
_KINDS = pa.array(list(OPS))
_OPS = pa.array([op.value for op in OPS.values()])
_TIDB = pa.struct([pa.field("commitTs", pa.int64())])
_HTML_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))
#: Readers kept per decoder (one entry per distinct ``mysqlType`` text).
_READER_ENTRIES = 1024


class CanalJsonVectorDecoder:
    """Decodes the row changes of a batch of Canal-JSON messages it can vouch for (module docstring)."""

    def __init__(self, options: CodecOptions, pipeline: str, run_id: str) -> None:
        self.options = options
        self.pipeline = pipeline
        self.run_id = run_id
        self._readers: dict[str, dict[str, tuple[ColumnType, ColumnReader]] | None] = {}

    def decode(self, batch_id: str, messages: Sequence[RawMessage], lookup: MemorySchemaLookup) -> VectorDecode:
        count = len(messages)
        nothing = VectorDecode(None, [False] * count)
        if count == 0 or self.options.compression is not Compression.NONE:
            return nothing
        extension = self.options.enable_tidb_extension
        texts = utf8_texts(message_values(messages))
        ok = pc.match_substring_regex(texts, _DML if extension else _DML_PLAIN).fill_null(False)
        ok = ok.to_numpy(zero_copy_only=False)
        if not ok.any():
            return nothing
        marks = text_marks(texts)
        ok &= ~marks.controls
        cut = _cut(texts, ok)
        where = None if extension else positions(messages)
        groups: list[DmlGroup] = []
        for names, types, rows in cut.groups:
            database, table = "?", "?"
            try:
                database, table, mysql_types = _group_key(names, types)
                found = self._group(cut, rows, marks.unicode_escapes, database, table, mysql_types, lookup, where)
            except Exception:  # a bug here must cost only speed: the Python decoder takes the group
                log.exception("decode: the vector decoder failed on %s.%s; decoding it in Python", database, table)
                found = []
            groups.extend(found)
        if not groups:
            return nothing
        return dml_batch(self.pipeline, self.run_id, batch_id, messages, groups)

    def _group(
        self,
        cut: _Cut,
        rows: np.ndarray,
        unicode_escapes: np.ndarray,
        database: str,
        table_name: str,
        mysql_types: str,
        lookup: MemorySchemaLookup,
        where: tuple[np.ndarray, np.ndarray] | None,
    ) -> list[DmlGroup]:
        """The rows of one group; ``where``: (partition, offset) of every message of the batch, given
        where rows have no TiDB extension (they bind by position, :mod:`.canal_bindings`)."""
        columns = self._column_readers(mysql_types)
        if columns is None:
            return []
        image = pa.struct([pa.field(name, reader.arrow_type) for name, (_, reader) in columns.items()])
        members = [pa.field("old", pa.list_(image)), pa.field("data", pa.list_(image))]
        read_type = pa.struct(members if where is not None else [*members, pa.field("_tidb", _TIDB)])
        texts = pc.binary_join_element_wise("{", pc.utf8_slice_codeunits(cut.texts(cut.documents, rows), 1), "")
        parts = _read_parts(texts, read_type, np.arange(len(rows)))
        if not parts:
            return []
        local = np.concatenate([part for part, _ in parts])
        read = pa.concat_tables([table for _, table in parts]).combine_chunks()
        rows, texts = rows[local], texts.take(pa.array(local))
        kinds = cut.texts(cut.kinds, rows)
        is_update = pc.equal(kinds, "UPDATE").to_numpy(zero_copy_only=False)
        old, old_ok = _one_row(read.column("old").chunk(0), is_update)
        data, data_ok = _one_row(read.column("data").chunk(0), np.ones(len(rows), dtype=bool))
        good = old_ok & data_ok
        if where is None:
            commit = read.column("_tidb").chunk(0).field("commitTs")
            tail = pc.binary_join_element_wise(',"_tidb":{"commitTs":', commit.cast(pa.string()).fill_null(""), "}", "")
        else:  # no commit TSO: 0, as the Python decoder gives such rows
            commit, tail = pa.nulls(len(rows), pa.int64()), pa.repeat(pa.scalar(""), len(rows))
        good &= _same_text(texts, old.is_valid(), json_text(old), json_text(data), tail)
        retry = np.flatnonzero(~good & old_ok & data_ok)
        if len(retry):
            written, sparse = _other_forms(
                old, data, texts, tail, retry, is_update[retry], unicode_escapes[rows[retry]]
            )
            good[retry] = written
            if sparse.any():
                old = _overlaid(old, data, retry[sparse])
        if not good.any():
            return []
        commit_ts = commit.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        candidates = np.flatnonzero(good)
        bindings: list[tuple[np.ndarray, TableSchema | None]]
        if where is None:
            bindings = list(tso_bindings(lookup, database, table_name, commit_ts, candidates))
        else:
            partitions, offsets = where[0][rows], where[1][rows]
            bindings = untimed_bindings(lookup, database, table_name, list(columns), partitions, offsets, candidates)
        groups = []
        for at, schema in bindings:
            if schema is not None and schema.version is None:
                continue  # never in a MemorySchemaLookup (it keeps versioned schemas only)
            if schema is not None and where is None and not {c.name for c in schema.columns}.issuperset(columns):
                continue  # the Python decoder makes such rows PENDING (unknown columns)
            readers = named_readers(columns, schema)
            keep = pa.array(at)
            ok = np.ones(len(at), dtype=bool)
            images: dict[str, pa.Array] = {}
            for name, values in (("old", old), ("data", data)):
                images[name], converted = image_map(values.take(keep), readers)
                ok &= converted
            if ok.any():
                groups.append(_dml_group(at[ok], rows, commit_ts, kinds, images, ok, database, table_name, schema))
        return groups

    def _column_readers(self, mysql_types: str) -> dict[str, tuple[ColumnType, ColumnReader]] | None:
        """Column -> (parsed type, twin) in ``mysqlType`` order, made once per text; None where the
        text has a member twice or no member, a type fails to parse or has no twin."""
        if mysql_types in self._readers:
            return self._readers[mysql_types]
        if len(self._readers) >= _READER_ENTRIES:
            self._readers.clear()
        pairs: list[tuple[str, str]] = json.loads(mysql_types, object_pairs_hook=list)
        found: dict[str, tuple[ColumnType, ColumnReader]] | None = {}
        for name, text in pairs:
            try:
                column = parse_mysql_type(text)
            except ValueError:
                found = None
                break
            reader = column_reader(column, self.options.server_time_zone)
            if reader is None or found is None or name in found:
                found = None
                break
            found[name] = (column, reader)
        self._readers[mysql_types] = found or None
        return found or None


@dataclass(frozen=True, slots=True)
class _Cut:
    """Where the pieces of a batch's DML texts lie in its bytes, and its groups."""

    data: pa.Buffer
    #: Byte ranges of ``,"old":…}`` (the text from the ``"old"`` member on, with the comma before it:
    #: never empty, so its view never points at the buffer's end).
    documents: tuple[np.ndarray, np.ndarray]
    #: Byte ranges of the ``type`` (``INSERT``, ``UPDATE`` or ``DELETE``).
    kinds: tuple[np.ndarray, np.ndarray]
    #: (the ``"database":…,"pkNames":…`` text, the ``,"sqlType":…,"mysqlType":{…}`` text, the group's rows).
    groups: list[tuple[bytes, bytes, np.ndarray]]

    def texts(self, piece: tuple[np.ndarray, np.ndarray], rows: np.ndarray) -> pa.StringArray:
        """The ``piece`` of each of ``rows``, as text."""
        start, stop = piece
        return binary_views(self.data, start[rows], stop[rows], len(rows)).cast(pa.string())


def _cut(texts: pa.StringArray, ok: np.ndarray) -> _Cut:
    """The pieces of the texts :data:`_DML` matched (``ok``). In such a text the first ``,"isDdl":false,"type":"``,
    ``,"sqlType":`` and ``},"old":`` are the members themselves: every ``"`` before ``"old"`` inside a
    string is escaped, and names hold no quote."""
    count = len(texts)
    offsets = np.frombuffer(texts.buffers()[1], dtype=np.int32)[texts.offset : texts.offset + count + 1]
    starts, ends = offsets[:-1].astype(np.int64), offsets[1:].astype(np.int64)

    def at(member: str) -> np.ndarray:
        found: np.ndarray = pc.find_substring(texts, member).fill_null(-1).to_numpy(zero_copy_only=False)
        return found.astype(np.int64)

    # ``},"old":``: the member after ``mysqlType`` (a column may be named ``old``, inside ``mysqlType``
    # a ``}`` only ends it).
    type_at, types_at, old_at = at(_TYPE_AT), at(',"sqlType":'), at('},"old":') + 1
    ok = ok & (type_at > 0) & (types_at > type_at) & (old_at > types_at)

    def pieces(start: np.ndarray, stop: np.ndarray) -> pa.Array:
        return binary_views(texts.buffers()[2], np.where(ok, start, 0), np.where(ok, stop, 0), count)

    names = pieces(starts + 1, starts + type_at)
    types = pieces(starts + types_at, starts + old_at)
    kind_at = starts + type_at + len(_TYPE_AT)
    name_codes, name_texts = _codes(names)
    type_codes, type_texts = _codes(types)
    keys = name_codes * len(type_texts) + type_codes
    groups = []
    for key in np.unique(keys[ok]):
        rows = np.flatnonzero(ok & (keys == key))
        groups.append((name_texts[key // len(type_texts)], type_texts[key % len(type_texts)], rows))
    data = texts.buffers()[2]
    assert data is not None
    return _Cut(data, (starts + old_at, ends), (kind_at, kind_at + len("INSERT")), groups)


def _codes(values: pa.Array) -> tuple[np.ndarray, list[bytes]]:
    encoded = pc.dictionary_encode(values)
    codes: np.ndarray = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, encoded.dictionary.to_pylist()


def _group_key(names: bytes, types: bytes) -> tuple[str, str, str]:
    """(database, table, the ``mysqlType`` text) of a group's key texts (as :data:`_DML` matched them)."""
    head = json.loads(b"{" + names + b"}")
    text = types.decode()
    # ``sqlType`` is null or ends with the only ``}`` before ``mysqlType`` (a column may be named ``mysqlType``).
    at = len(_NULL_SQL_TYPES) if text.startswith(_NULL_SQL_TYPES) else text.index("}" + _MYSQL_TYPES) + 1
    return head["database"], head["table"], text[at + len(_MYSQL_TYPES) :]


def _read_parts(texts: pa.StringArray, read_type: pa.StructType, rows: np.ndarray) -> list[tuple[np.ndarray, pa.Table]]:
    """The texts at ``rows`` read, in halves where a read fails, down to single texts (which are left out)."""
    table = read_documents(texts.take(pa.array(rows)), read_type)
    if table is not None:
        return [(rows, table)]
    if len(rows) == 1:
        return []
    half = len(rows) // 2
    return _read_parts(texts, read_type, rows[:half]) + _read_parts(texts, read_type, rows[half:])


def _same_text(texts: pa.StringArray, has_old: pa.Array, old: pa.Array, data: pa.Array, tail: pa.Array) -> np.ndarray:
    """Per message: its text from ``"old"`` on (``{"old":…}``) is ``old``, ``data`` and ``tail`` (the
    ``_tidb`` member as written from what was read, or nothing without the extension)."""
    written = pc.binary_join_element_wise(
        '{"old":',
        pc.if_else(has_old, pc.binary_join_element_wise("[", old, "]", ""), "null"),
        ',"data":[',
        data,
        "]",
        tail,
        "}",
        "",
    )
    same: np.ndarray = pc.equal(written, texts).fill_null(False).to_numpy(zero_copy_only=False)
    return same


def _other_forms(
    old: pa.StructArray,
    data: pa.StructArray,
    texts: pa.StringArray,
    tail: pa.Array,
    retry: np.ndarray,
    is_update: np.ndarray,
    escapes: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """For the ``retry`` rows, whose text is not the one written from what was read: (written in
    another form TiCDC writes, written with ``old`` holding only its non-null members), per row.
    The forms: ``old`` with only the columns an UPDATE changed (``only-output-updated-columns``;
    only a column whose old value is null cannot be told from one left out, so such a row is never
    taken), and, where the message holds a ``\\u`` escape, both with easyjson's escapes."""
    at = pa.array(retry)
    old, data, texts, tail = old.take(at), data.take(at), texts.take(at), tail.take(at)
    has_old = old.is_valid()
    full, changed, data_text = json_text(old), _present_members_text(old), json_text(data)
    sparse = is_update & _same_text(texts, has_old, changed, data_text, tail)
    full_html = np.zeros(len(retry), dtype=bool)
    if escapes.any():  # TiCDC's easyjson writer escapes <, >, & and U+2028/9
        data_text = _html_escaped(data_text)
        full_html = _same_text(texts, has_old, _html_escaped(full), data_text, tail)
        sparse |= is_update & _same_text(texts, has_old, _html_escaped(changed), data_text, tail)
    # A row written both ways has no null member in ``old``: read whole, it needs no overlay.
    return full_html | sparse, sparse & ~full_html


def _present_members_text(values: pa.StructArray) -> pa.Array:
    """The JSON text of each row object with only its non-null members (``{}`` where none is)."""
    pieces = []
    for index, child in enumerate(values.flatten()):
        member = pc.binary_join_element_wise(f',"{values.type.field(index).name}":', json_text(child), "")
        pieces.append(pc.if_else(child.is_valid(), member, ""))
    joined = pieces[0] if len(pieces) == 1 else pc.binary_join_element_wise(*pieces, "")
    return pc.binary_join_element_wise("{", pc.utf8_slice_codeunits(joined, 1), "}", "")


def _overlaid(old: pa.StructArray, data: pa.StructArray, sparse: np.ndarray) -> pa.StructArray:
    """``old`` where the ``sparse`` rows (whose ``old`` holds only the changed columns) take ``data``'s
    value for each column their ``old`` left out: the before image ``data`` overlaid with ``old``."""
    rows = np.zeros(len(old), dtype=bool)
    rows[sparse] = True
    children = []
    for old_child, data_child in zip(old.flatten(), data.flatten(), strict=True):
        missing = rows & ~old_child.is_valid().to_numpy(zero_copy_only=False)
        children.append(pc.if_else(pa.array(missing), data_child, old_child))
    return pa.StructArray.from_arrays(children, fields=list(old.type), mask=old.is_null())


def _html_escaped(texts: pa.Array) -> pa.Array:
    """``texts`` with the escapes easyjson adds to jsoniter's (:mod:`.json_text`): ``<``, ``>``, ``&``, U+2028/9."""
    for raw, escape in _HTML_ESCAPES:
        texts = pc.replace_substring(texts, raw, escape)
    return texts


def _one_row(lists: pa.ListArray, wanted: np.ndarray) -> tuple[pa.StructArray, np.ndarray]:
    """The one row object of each array (null where absent) and, per message, whether the array is as
    the Python decoder wants it: present with one non-null object where ``wanted``, else null."""
    present = lists.is_valid().to_numpy(zero_copy_only=False)
    sizes = pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False)
    single = present & (sizes == 1)
    starts = np.asarray(lists.offsets.to_numpy(zero_copy_only=False)[:-1], dtype=np.int64)
    at = pa.array(np.where(single, starts, 0), mask=~single)
    rows: pa.StructArray = lists.values.take(at)
    ok = np.where(wanted, single & rows.is_valid().to_numpy(zero_copy_only=False), ~present)
    return rows, ok


def _dml_group(
    at: np.ndarray,
    rows: np.ndarray,
    commit_ts: np.ndarray,
    kinds: pa.Array,
    images: dict[str, pa.Array],
    ok: np.ndarray,
    database: str,
    table: str,
    schema: TableSchema | None,
) -> DmlGroup:
    """The taken rows ``at`` (indexes into the group's read rows) bound to ``schema`` (None: unbound);
    ``images`` and ``ok`` are those of the rows bound to it (``ok``: which of them are taken)."""
    keep = pa.array(np.flatnonzero(ok))
    taken = len(at)
    kinds = kinds.take(pa.array(at))
    is_delete = pc.equal(kinds, "DELETE").to_numpy(zero_copy_only=False)
    is_update = pc.equal(kinds, "UPDATE").to_numpy(zero_copy_only=False)
    positions = np.arange(taken)
    # before: DELETE -> data, UPDATE -> old, INSERT -> null; after: data but for DELETE.
    before_at = np.where(is_delete, positions, np.where(is_update, taken + positions, -1))
    after_at = np.where(is_delete, -1, positions)
    pool = pa.concat_arrays([images["data"].take(keep), images["old"].take(keep)])
    return DmlGroup(
        rows=rows[at],
        commit_ts=commit_ts[at],
        ops=_OPS.take(pc.index_in(kinds, value_set=_KINDS)),
        database=database,
        table=table,
        version=schema.version if schema is not None else None,
        before=pool.take(pa.array(before_at, mask=before_at < 0)),
        after=pool.take(pa.array(after_at, mask=after_at < 0)),
    )
