"""The typed record carrier of a batch of images of one table version, a whole column at a time.

Per image (docs/typed-row-images.md): the Avro record of its typed values (``avro_records``), the
``untyped`` map (a column the image lacks → NULL, a text the carried type cannot hold → that
text, in column order; NULL where there is neither) and the ``key`` texts (the canonical texts of
the version's key columns). ``spark.record_images`` gives a text-map row the same three, so rows
of either carrier compare, hash and apply alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.spark.arrow_decode.avro_records import encode_records
from ticdc_lake.spark.arrow_decode.typed_columns import TypedColumn

UNTYPED_ARROW = pa.map_(pa.string(), pa.string())
KEY_ARROW = pa.list_(pa.string())


@dataclass(frozen=True)
class RecordColumns:
    records: pa.Array
    untyped: pa.Array
    keys: pa.Array


def record_columns(
    names: Sequence[str],
    texts: Sequence[pa.Array],
    typed: Sequence[TypedColumn],
    valid: np.ndarray,
    key: Sequence[int],
    present: Sequence[np.ndarray | None] | None = None,
) -> RecordColumns:
    """The carrier of images with the version's columns ``names``: their canonical ``texts`` and
    ``typed`` values per column, ``valid`` (per row: there is an image), the positions of the key
    columns (``key``; empty: no key) and, per column, which rows' images hold it (``present``;
    None: every image holds every column)."""
    count = len(valid)
    width = len(names)
    holds = [np.ones(count, dtype=bool) if p is None else p for p in (present or [None] * width)]
    absent = np.stack([~h for h in holds], axis=1) if width else np.zeros((count, 0), dtype=bool)
    bad = np.stack([t.unrepresentable for t in typed], axis=1) if width else np.zeros((count, 0), dtype=bool)
    entries = (absent | bad) & valid[:, None]
    return RecordColumns(
        encode_records([t.values for t in typed], valid),
        _untyped(names, texts, entries, absent, valid),
        _keys(texts, key, valid),
    )


def _untyped(
    names: Sequence[str], texts: Sequence[pa.Array], entries: np.ndarray, absent: np.ndarray, valid: np.ndarray
) -> pa.Array:
    count = len(valid)
    rows, columns = np.nonzero(entries)  # row-major: each row's entries in column order
    if not len(rows):
        return pa.nulls(count, UNTYPED_ARROW)
    keys = pa.array(names, pa.string()).take(pa.array(columns))
    stacked = pa.concat_arrays([t.cast(pa.string()) for t in texts])
    found = stacked.take(pa.array(columns * count + rows))
    items = pc.if_else(pa.array(absent[rows, columns]), pa.scalar(None, pa.string()), found)
    per_row = np.bincount(rows, minlength=count)
    offsets = np.concatenate(([0], np.cumsum(per_row))).astype(np.int32)
    empty = per_row == 0
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items, type=UNTYPED_ARROW, mask=pa.array(empty))


def _keys(texts: Sequence[pa.Array], key: Sequence[int], valid: np.ndarray) -> pa.Array:
    count = len(valid)
    if not key:
        return pa.nulls(count, KEY_ARROW)
    width = len(key)
    stacked = pa.concat_arrays([texts[k] for k in key])
    order = (np.arange(width)[None, :] * count + np.arange(count)[:, None]).ravel()
    values = stacked.take(pa.array(order))
    offsets = np.arange(count + 1, dtype=np.int32) * width
    return pa.ListArray.from_arrays(pa.array(offsets), values, type=KEY_ARROW, mask=pa.array(~valid))
