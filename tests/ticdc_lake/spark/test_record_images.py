"""A text-map row read as the record carrier in Spark equals what decode writes for the same image.

The same canonical texts, once as decode's record columns (``arrow_decode.record_columns``: typed a
column at a time in Python, encoded by numpy) and once as the ``MAP<STRING, STRING>`` image that
``spark.record_images`` turns into a record with Spark's ``try_cast`` and ``to_avro``: the record
bytes, the untyped texts with the absent columns, and the key texts must be equal row by row, so
a message decoded once to a map and once to a record is one event to apply.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.ticdc_lake.spark.arrow_decode.typed_image_cases import EDGE_TEXTS, random_texts
from ticdc_lake.spark.arrow_decode.record_columns import record_columns
from ticdc_lake.spark.arrow_decode.typed_columns import typed_column
from ticdc_lake.spark.record_images import VersionLayout, keys_from_maps, records_from_maps, untyped_from_maps

pytestmark = [pytest.mark.spark]

TYPES = sorted(EDGE_TEXTS)
NAMES = tuple(f"{kind} col" for kind in TYPES)  # names with spaces and parentheses
KEY = (TYPES.index("long"), TYPES.index("string"))
COUNT = 400


def _images(seed: int) -> tuple[list[list[str | None]], list[np.ndarray], np.ndarray]:
    """Per column: the texts (None where absent), which rows hold it; per row: whether there is an image."""
    rng = np.random.default_rng(seed)
    texts, present = [], []
    for i, kind in enumerate(TYPES):
        edges = EDGE_TEXTS[kind]
        column = (edges * (60 // len(edges) + 1))[:60] + random_texts(kind, COUNT - 60, seed=seed + i)
        holds = np.ones(COUNT, dtype=bool) if i in KEY else rng.random(COUNT) > 0.1
        texts.append([t if h else None for t, h in zip(column, holds, strict=True)])
        present.append(holds)
    valid = rng.random(COUNT) > 0.05
    return texts, present, valid


def _decoded(
    layout: VersionLayout, texts: list[list[str | None]], present: list[np.ndarray], valid: np.ndarray
) -> list[tuple[Any, ...]]:
    arrays = [pa.array(t, pa.string()) for t in texts]
    typed = [typed_column(a, kind) for a, kind in zip(arrays, layout.types, strict=True)]
    key = [layout.names.index(k) for k in layout.key]
    made = record_columns(layout.names, arrays, typed, valid, key, present)
    untyped = [None if m is None else list(m) for m in made.untyped.to_pylist()]
    return list(zip(made.records.to_pylist(), untyped, made.keys.to_pylist(), strict=True))


def _maps(
    layout: VersionLayout, texts: list[list[str | None]], present: list[np.ndarray], valid: np.ndarray
) -> list[dict[str, str | None] | None]:
    return [
        {name: texts[c][r] for c, name in enumerate(layout.names) if present[c][r]} if valid[r] else None
        for r in range(COUNT)
    ]


def test_map_rows_read_as_records_equal_what_decode_writes(spark: Any) -> None:
    wide = VersionLayout(101, NAMES, tuple(TYPES), (NAMES[KEY[0]], NAMES[KEY[1]]))
    # A second version of other columns and no key, in the same frame: each row takes its own layout.
    narrow = VersionLayout(102, NAMES[:3], tuple(TYPES[:3]), ())
    layouts = [wide, narrow]
    expected, rows = [], []
    for layout, seed in ((wide, 7), (narrow, 8)):
        texts, present, valid = _images(seed)
        texts, present = texts[: len(layout.names)], present[: len(layout.names)]
        expected += _decoded(layout, texts, present, valid)
        rows += [(layout.version, image) for image in _maps(layout, texts, present, valid)]
    expected += [(None, None, None)]  # a version no layout knows: nothing
    rows.append((103, {NAMES[0]: "1"}))
    frame = spark.createDataFrame(
        [(n, Decimal(version), image) for n, (version, image) in enumerate(rows)],
        "n INT, schema_version DECIMAL(20,0), after MAP<STRING, STRING>",
    )
    read = frame.select(
        "n",
        records_from_maps("after", layouts).alias("record"),
        untyped_from_maps("after", layouts).alias("untyped"),
        keys_from_maps("after", layouts).alias("key"),
    ).selectExpr("n", "record", "map_entries(untyped) AS untyped", "key")
    got = sorted(read.collect(), key=lambda r: r["n"])
    actual = [
        (
            None if r["record"] is None else bytes(r["record"]),
            None if r["untyped"] is None else [(e["key"], e["value"]) for e in r["untyped"]],
            r["key"],
        )
        for r in got
    ]
    differing = [(n, a, e) for n, (a, e) in enumerate(zip(actual, expected, strict=True)) if a != e]
    assert differing[:3] == []
    # The cases are there: absent columns, texts the types cannot hold, rows without an image.
    assert sum(1 for _, untyped, _ in expected if untyped and any(v is None for _, v in untyped)) > 50
    assert sum(1 for _, untyped, _ in expected if untyped and any(v is not None for _, v in untyped)) > 5
    assert sum(1 for record, _, _ in expected if record is None) > 5
