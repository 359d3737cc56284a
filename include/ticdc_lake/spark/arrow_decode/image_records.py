"""The decode workers' typed record carrier of a ``change_events`` batch (docs/typed-row-images.md).

Every decoder (the vector ones, the Python one, a PENDING row's decode once its schema is known)
hands the worker ``change_events`` rows whose images are ``MAP<STRING, STRING>`` of canonical
text. :class:`ImageRecords` adds, for each READY DML row bound to a version whose carried types
are known, the carrier columns: per image the Avro record of its values typed as the carried
types (``record_columns``), the ``untyped`` entries (absent columns, texts the types cannot
hold) and the key texts. They are made from the maps with the specification's typing
(``typed_columns.typed_column``), so every copy of a message, whichever decoder read it, gets the
same bytes, and they equal what ``spark.record_images`` makes of the same map in apply. A row
given a carrier leaves its maps behind (``before``/``after`` NULL): nothing after decode needs
them (``spark.event_images`` shows the images as text again).

The seventh, ``record_layout``, is the layout's fingerprint (:func:`layout_fingerprint`): apply
reads a record with the layout it derives from the schema history, and holds a table whose rows
were written with another (an older release's rules), rather than misread them.

A row gets no carrier (NULL in all seven) when its version is unknown here, a column has no Iceberg
type, a key column is not a column of the version, or an image names a column the version does
not have: it keeps its maps, and apply reads them as before.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.errors import TicdcLakeError
from ticdc_lake.events import EventKind, EventStatus
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.schema.type_mapping import iceberg_type
from ticdc_lake.spark.arrow_decode.record_columns import KEY_ARROW, UNTYPED_ARROW, RecordColumns, record_columns
from ticdc_lake.spark.arrow_decode.typed_columns import typed_column

#: The carrier columns, at the end of ``change_events`` in this order.
CARRIER_COLUMNS = (
    "before_record",
    "after_record",
    "before_untyped",
    "after_untyped",
    "before_key",
    "after_key",
    "record_layout",
)
CARRIER_ARROW = (pa.binary(), pa.binary(), UNTYPED_ARROW, UNTYPED_ARROW, KEY_ARROW, KEY_ARROW, pa.int64())

#: The encoding of the records (``avro_records``: field order, logical types, the untyped and key
#: texts). Part of every fingerprint: a release that changes the encoding bumps it, so records an
#: older release wrote are told apart even where the carried types are the same.
RECORD_FORMAT = 1


def layout_fingerprint(names: tuple[str, ...], types: tuple[str, ...], key: tuple[str, ...]) -> int:
    """A 64-bit signed fingerprint of a layout (its columns, their carried types, its key columns)
    and of ``RECORD_FORMAT``: the same in every process and release that writes records alike."""
    text = json.dumps([RECORD_FORMAT, list(names), list(types), list(key)], separators=(",", ":"))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


@dataclass(frozen=True, slots=True)
class ImageLayout:
    """The columns of one table version as its images carry them."""

    names: tuple[str, ...]
    #: Their carried Iceberg types.
    types: tuple[str, ...]
    #: Positions of the handle key columns among ``names`` (empty: no key).
    key: tuple[int, ...]

    @property
    def fingerprint(self) -> int:
        return layout_fingerprint(self.names, self.types, tuple(self.names[k] for k in self.key))


def image_layout(schema: TableSchema, carried: tuple[str, ...] | None) -> ImageLayout | None:
    """The layout of ``schema``'s images: ``carried`` types, else the columns' own; None where a
    column has no Iceberg type or a key column is not one of the columns."""
    names = tuple(c.name for c in schema.columns)
    if carried is None or len(carried) != len(names):
        try:
            carried = tuple(iceberg_type(c, table=f"{schema.database}.{schema.table}") for c in schema.columns)
        except TicdcLakeError:
            return None
    positions = {name: i for i, name in enumerate(names)}
    key = tuple(positions.get(k, -1) for k in schema.handle_key())
    if -1 in key:
        return None
    return ImageLayout(names, carried, key)


class ImageRecords:
    """Adds the carrier to a worker's ``change_events`` batches, with the layouts of ``lookup``'s versions."""

    def __init__(self, lookup: MemorySchemaLookup) -> None:
        self.lookup = lookup
        self._layouts: dict[tuple[str, str, int], ImageLayout | None] = {}

    def layout(self, database: str, table: str, version: int) -> ImageLayout | None:
        key = (database, table, version)
        if key not in self._layouts:
            schema = self.lookup.get(database, table, version)
            self._layouts[key] = None if schema is None else image_layout(schema, self.lookup.carried.get(key))
        return self._layouts[key]

    def add(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` (``change_events`` columns) with the carrier of its rows that have none filled in,
        and their maps NULL (a row whose decoder made its carrier, ``jvm_decode.debezium``, keeps it)."""
        count = batch.num_rows
        dml = pc.equal(batch["kind"], EventKind.DML.value)
        ready = pc.equal(batch["status"], EventStatus.READY.value)
        bound = pc.is_valid(batch["schema_version"])
        eligible = pc.and_(pc.and_(dml, ready), bound).fill_null(False).to_numpy(zero_copy_only=False)
        eligible &= batch["record_layout"].is_null().to_numpy(zero_copy_only=False)  # a JVM decoder's carrier stays
        if not eligible.any():
            return batch
        rows = np.flatnonzero(eligible)
        chosen = pa.table(
            {
                "database": batch["database"].take(rows),
                "table": batch["table"].take(rows),
                "version": batch["schema_version"].take(rows).cast(pa.string()),
                "row": pa.array(rows, pa.int64()),
            }
        )
        groups = chosen.group_by(["database", "table", "version"], use_threads=False).aggregate([("row", "list")])
        placed: list[np.ndarray] = []
        parts: list[list[pa.Array]] = [[] for _ in CARRIER_COLUMNS]
        named = (groups.column(name).to_pylist() for name in ("database", "table", "version", "row_list"))
        for database, table, version, members in zip(*named, strict=True):
            layout = self.layout(database, table, int(version)) if database is not None and table is not None else None
            if layout is None:
                continue
            index = np.asarray(members, dtype=np.int64)
            sides = [_carrier(batch[side].take(index), layout) for side in ("before", "after")]
            kept = sides[0][1] & sides[1][1]  # an image with a column the version lacks: no carrier
            index, keep = index[kept], pa.array(np.flatnonzero(kept))
            if not len(index):
                continue
            placed.append(index)
            (before, _), (after, _) = sides
            fingerprint = pa.array(np.full(len(index), layout.fingerprint, dtype=np.int64))
            for i, column in enumerate(
                (before.records, after.records, before.untyped, after.untyped, before.keys, after.keys)
            ):
                parts[i].append(column.take(keep))
            parts[-1].append(fingerprint)
        if not placed:
            return batch
        where = np.concatenate(placed)
        # Position of each row's value in (the placed values..., one NULL): the others take the NULL.
        position = np.full(count, len(where), dtype=np.int64)
        position[where] = np.arange(len(where))
        pick = pa.array(position)
        columns = list(batch.columns)
        first = batch.schema.get_field_index(CARRIER_COLUMNS[0])
        for i, kind in enumerate(CARRIER_ARROW):
            columns[first + i] = pa.concat_arrays([*(p.cast(kind) for p in parts[i]), pa.nulls(1, kind)]).take(pick)
        # A row with a carrier keeps no map: its record, untyped texts and key texts hold the whole image.
        carried = np.zeros(count, dtype=bool)
        carried[where] = True
        mask = pa.array(carried)
        for side in ("before", "after"):
            at = batch.schema.get_field_index(side)
            columns[at] = pc.if_else(mask, pa.nulls(count, columns[at].type), columns[at])
        return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _carrier(maps: pa.MapArray, layout: ImageLayout) -> tuple[RecordColumns, np.ndarray]:
    """The carrier of ``maps`` (images of one version) and, per row, whether every column its
    image names is one of the version's."""
    count = len(maps)
    width = len(layout.names)
    offsets = maps.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    start, stop = int(offsets[0]), int(offsets[-1])
    keys = maps.keys.slice(start, stop - start)
    items = maps.items.slice(start, stop - start)
    lengths = np.diff(offsets)
    row_of = np.repeat(np.arange(count), lengths)
    column_of = pc.index_in(keys, value_set=pa.array(layout.names, pa.string())).fill_null(-1).to_numpy()
    known = np.ones(count, dtype=bool)
    unknown = column_of < 0
    if unknown.any():
        known[row_of[unknown]] = False
    slot = np.full((count, width), -1, dtype=np.int64)
    slot[row_of[~unknown], column_of[~unknown]] = np.flatnonzero(~unknown)
    valid = maps.is_valid().to_numpy(zero_copy_only=False)
    texts, typed, present = [], [], []
    for c, kind in enumerate(layout.types):
        holds = slot[:, c] >= 0
        text = items.take(pa.array(slot[:, c], mask=~holds)).cast(pa.string())
        texts.append(text)
        typed.append(typed_column(text, kind))
        present.append(holds)
    return record_columns(layout.names, texts, typed, valid, layout.key, present), known
