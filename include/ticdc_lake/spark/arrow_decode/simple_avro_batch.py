"""Simple Avro row changes decoded a whole Arrow batch at a time, verified against the Python decoder's rules.

The Python decoder (:mod:`ticdc_lake.protocols.simple_avro`) reads one message at a time and stays
the specification. :class:`SimpleAvroVectorDecoder` reads every value of a batch as a DML at once
(:mod:`.simple_avro_binary`: the fixed fields, then the ``data``/``old`` maps one entry index at a
time across all values), groups the messages by ``(database, table, schemaVersion)`` and converts
each column's values with its twin (:mod:`.simple_avro_columns`). Avro binary is unambiguous, so
the check is structural. Every other message (WATERMARK, BOOTSTRAP, DDL, claim-check references,
handle-key-only rows, anything malformed, pending or unusual) is left to the Python decoder, which
decodes it exactly as before.

A message is taken when all of these hold:

* no compression is configured; the value reads as :mod:`.simple_avro_binary` vouches: it begins
  ``0x16 0x06 0x06`` (a ``Message`` of type DML holding a ``DML`` record), ``version`` 1, DML type
  INSERT/UPDATE/DELETE, no ``claimCheckLocation``, ``handleKeyOnly`` null or false, ``checksum``
  null or a well-formed record (the Python decoder ignores it), ``data`` and ``old`` null or maps,
  every varint, branch and length well formed, maps of at most 4,096 entries, and nothing after
  ``old``;
* the database, the table, every map key and every string value is valid UTF-8;
* ``data`` is a map exactly for INSERT and UPDATE, ``old`` exactly for UPDATE and DELETE (an empty
  map counts: the Python decoder reads it as an empty image);
* the lookup holds that exact ``(database, table, schemaVersion as uint64)`` (``lookup.get``, as the
  Python decoder asks; a version it does not hold is PENDING there), and every column of that
  version has a twin;
* every map key is a column of that version, named once in its map (``fastavro`` would keep the last
  value of a repeated key at the first key's place: such a message goes to Python); every value is
  null or of the union branch TiCDC writes for the column's type (``simple_avro_columns``; a FLOAT
  or DOUBLE sent in the other width, which the scalar converter also formats, goes to Python), and
  converts by its twin to the text ``simple_avro_values`` gives (a value the scalar converter
  refuses is never taken, so its quarantine reason stays the Python decoder's).

Image keys keep the maps' order (the Python decoder's events keep ``fastavro``'s dict order and
``simple-avro`` is not among ``decode_arrow.SORTED_IMAGE_PROTOCOLS``). ``table_id`` is ``tableID``
as sent (signed), ``commit_ts`` and ``schema_version`` the longs read as uint64.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.events import Op, RawMessage
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark.arrow_decode.row_batches import (
    DmlGroup,
    VectorDecode,
    dml_batch,
    group_or_none,
    message_values,
    utf8_texts,
)
from ticdc_lake.spark.arrow_decode.simple_avro_binary import DmlValues, Entries, key_columns, read_dml, strings
from ticdc_lake.spark.arrow_decode.simple_avro_columns import (
    BRANCH_TYPES,
    BYTES,
    DOUBLE,
    FLOAT,
    LONG,
    NULL,
    STRING,
    TIMESTAMP,
    UNSIGNED,
    AvroTwin,
    column_twin,
)
from ticdc_lake.spark.decode_arrow import MAP_ARROW

#: The ``op`` column's texts by DML type index (INSERT, UPDATE, DELETE).
_OPS = pa.array([Op.INSERT.value, Op.UPDATE.value, Op.DELETE.value], pa.string())
#: DML type index -> (``data`` is a map, ``old`` is a map).
_SHAPES = ((True, False), (True, True), (False, True))
_STRING = pa.string()

Twins = dict[str, AvroTwin]


class SimpleAvroVectorDecoder:
    """Decodes the row changes of a batch of Simple Avro messages it can vouch for (module docstring)."""

    def __init__(self, options: CodecOptions, pipeline: str, run_id: str) -> None:
        self.options = options
        self.pipeline = pipeline
        self.run_id = run_id
        self._twins: dict[tuple[str, str, int], tuple[TableSchema, Twins | None]] = {}

    def decode(self, batch_id: str, messages: Sequence[RawMessage], lookup: MemorySchemaLookup) -> VectorDecode:
        count = len(messages)
        nothing = VectorDecode(None, [False] * count)
        if count == 0 or self.options.compression is not Compression.NONE:
            return nothing
        read = read_dml(message_values(messages))
        ok = read.ok & _shapes_ok(read)
        if not ok.any():
            return nothing
        databases = _names(read, read.database, ok)
        tables = _names(read, read.table, ok)
        ok &= databases.is_valid().to_numpy(zero_copy_only=False) & tables.is_valid().to_numpy(zero_copy_only=False)
        database_codes = pc.dictionary_encode(databases)
        table_codes = pc.dictionary_encode(tables)
        database_names = database_codes.dictionary.to_pylist()
        table_names = table_codes.dictionary.to_pylist()
        groups: list[DmlGroup] = []
        for database_code, table_code, version, rows in _table_versions(
            np.flatnonzero(ok),
            database_codes.indices.fill_null(0).to_numpy(zero_copy_only=False),
            table_codes.indices.fill_null(0).to_numpy(zero_copy_only=False),
            read.schema_version,
        ):
            database, table = database_names[database_code], table_names[table_code]
            schema = lookup.get(database, table, version)
            if schema is None:
                continue  # PENDING in the Python decoder
            make = partial(self._group, read, rows, (database, table, version), schema)
            group = group_or_none(make, f"{database}.{table} version {version}")
            if group is not None:
                groups.append(group)
        if not groups:
            return nothing
        return dml_batch(self.pipeline, self.run_id, batch_id, messages, groups)

    def _group(
        self, read: DmlValues, rows: np.ndarray, key: tuple[str, str, int], schema: TableSchema
    ) -> DmlGroup | None:
        twins = self._column_twins(key, schema)
        if twins is None:
            return None
        local = np.full(len(read.ok), -1, dtype=np.int64)
        local[rows] = np.arange(len(rows))
        after, good = _image(read, read.data_entries, local, read.has_data[rows], twins)
        before, fine = _image(read, read.old_entries, local, read.has_old[rows], twins)
        good &= fine
        if not good.any():
            return None
        kept = rows[good]
        keep = pa.array(np.flatnonzero(good))
        database, table, version = key
        return DmlGroup(
            rows=kept,
            commit_ts=read.commit_ts[kept],
            ops=_OPS.take(pa.array(read.kind[kept])),
            database=database,
            table=table,
            version=version,
            before=before.take(keep),
            after=after.take(keep),
            table_ids=pa.array(read.table_id[kept], pa.int64()),
        )

    def _column_twins(self, key: tuple[str, str, int], schema: TableSchema) -> Twins | None:
        """Column name -> twin, made once per table version; None if a column has none."""
        cached = self._twins.get(key)
        if cached is not None and cached[0] is schema:
            return cached[1]
        found = {c.name: column_twin(c, self.options.server_time_zone) for c in schema.columns}
        twins: Twins | None = None
        if found and all(twin is not None for twin in found.values()):
            twins = {name: twin for name, twin in found.items() if twin is not None}
        self._twins[key] = (schema, twins)
        return twins


def _table_versions(
    rows: np.ndarray, databases: np.ndarray, tables: np.ndarray, versions: np.ndarray
) -> list[tuple[int, int, int, np.ndarray]]:
    """(database code, table code, schema version, its rows in ascending order) of ``rows``."""
    if not len(rows):
        return []
    database, table, version = databases[rows], tables[rows], versions[rows]
    order = np.lexsort((rows, version, table, database))
    database, table, version, rows = database[order], table[order], version[order], rows[order]
    change = (database[1:] != database[:-1]) | (table[1:] != table[:-1]) | (version[1:] != version[:-1])
    starts = np.concatenate(([0], np.flatnonzero(change) + 1, [len(rows)]))
    return [
        (int(database[at]), int(table[at]), int(version[at]), rows[at:end])
        for at, end in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True)
    ]


def _shapes_ok(read: DmlValues) -> np.ndarray:
    """Per value: ``data`` and ``old`` present exactly as its DML type has them (``simple_avro._row_map``)."""
    ok = np.zeros(len(read.ok), dtype=bool)
    for kind, (data, old) in enumerate(_SHAPES):
        ok |= (read.kind == kind) & (read.has_data == data) & (read.has_old == old)
    return ok


def _names(read: DmlValues, where: tuple[np.ndarray, np.ndarray], ok: np.ndarray) -> pa.Array:
    """The database or table names as text where ``ok`` (null elsewhere, or where not valid UTF-8)."""
    start, stop = where
    texts = utf8_texts(strings(read.data, np.where(ok, start, 0), np.where(ok, stop, 0)))
    return pc.if_else(pa.array(ok), texts, pa.scalar(None, _STRING))


def _image(
    read: DmlValues, entries: Entries, local: np.ndarray, present: np.ndarray, twins: Twins
) -> tuple[pa.Array, np.ndarray]:
    """The group's ``data`` or ``old`` images as ``MAP<STRING, STRING>`` in map order (null where
    ``present`` is False) and, per row, whether every entry is vouched for."""
    count = len(present)
    owners = local[entries.message] if len(entries.message) else np.zeros(0, dtype=np.int64)
    mine = np.flatnonzero(owners >= 0)
    owner = owners[mine]
    size = len(mine)
    names = list(twins)
    column = key_columns(read.data, entries.key_start[mine], entries.key_stop[mine], names)
    bad = column < 0
    keys = pa.array(names, _STRING).take(pa.array(np.maximum(column, 0)))
    if size > 1:  # a key twice in one map
        order = np.lexsort((column, owner))
        same = (owner[order][1:] == owner[order][:-1]) & (column[order][1:] == column[order][:-1])
        bad[order[1:][same]] = True
    branch = entries.branch[mine]
    picked: list[np.ndarray] = []
    texts: list[pa.Array] = []
    for code, name in enumerate(names):
        at = np.flatnonzero(column == code)
        if not len(at):
            continue
        branches = branch[at]
        known = branches == NULL
        for kind, canonical in twins[name].branches.items():
            chosen = at[branches == kind]
            known |= branches == kind
            if not len(chosen):
                continue
            values, readable = _values(read, entries, mine[chosen], kind)
            text, ok = canonical(values)
            bad[chosen] |= ~(ok.to_numpy(zero_copy_only=False) & readable)
            picked.append(chosen)
            texts.append(text)
        bad[at[~known]] = True
    slot = np.full(size, sum(len(p) for p in picked), dtype=np.int64)  # the null after every text
    if picked:
        flat = np.concatenate(picked)
        slot[flat] = np.arange(len(flat))
    items = pa.concat_arrays([*(t.cast(_STRING) for t in texts), pa.nulls(1, _STRING)]).take(pa.array(slot))
    good = np.ones(count, dtype=bool)
    good[owner[bad]] = False
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(np.bincount(owner, minlength=count), out=offsets[1:])
    maps = pa.MapArray.from_arrays(
        pa.array(offsets),
        keys,
        items,
        type=MAP_ARROW,
        mask=pa.array(~present) if not present.all() else None,
    )
    return maps, good


def _values(read: DmlValues, entries: Entries, at: np.ndarray, kind: int) -> tuple[pa.Array, np.ndarray]:
    """The values of the entries ``at`` (all of branch ``kind``) as ``BRANCH_TYPES[kind]``, and per entry
    whether its strings are valid UTF-8."""
    readable = np.ones(len(at), dtype=bool)
    if kind in (LONG, UNSIGNED):
        return pa.array(entries.number[at], pa.int64()), readable
    if kind in (FLOAT, DOUBLE):
        width = 4 if kind == FLOAT else 8
        index = entries.first_start[at][:, None] + np.arange(width, dtype=np.int64)
        raw = np.ascontiguousarray(read.data[index])
        return pa.array(raw.view("<f4" if kind == FLOAT else "<f8").reshape(len(at)), BRANCH_TYPES[kind]), readable
    first = strings(read.data, entries.first_start[at], entries.first_stop[at])
    if kind == BYTES:
        return first, readable
    first = utf8_texts(first)
    readable &= first.is_valid().to_numpy(zero_copy_only=False)
    if kind == STRING:
        return first, readable
    assert kind == TIMESTAMP
    second = utf8_texts(strings(read.data, entries.second_start[at], entries.second_stop[at]))
    readable &= second.is_valid().to_numpy(zero_copy_only=False)
    return pa.StructArray.from_arrays([first, second], fields=list(BRANCH_TYPES[TIMESTAMP])), readable
