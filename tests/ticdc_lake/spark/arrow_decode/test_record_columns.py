"""Decode's record carrier of one table version's images: records, untyped entries, key texts (no JVM)."""

from __future__ import annotations

import io
from datetime import date

import fastavro
import numpy as np
import pyarrow as pa

from ticdc_lake.spark.arrow_decode.avro_records import writer_schema
from ticdc_lake.spark.arrow_decode.record_columns import RecordColumns, record_columns
from ticdc_lake.spark.arrow_decode.typed_columns import typed_column

NAMES = ("id", "born", "name")
TYPES = ("long", "date", "string")


def _made(texts: list[list[str | None]], valid: list[bool], present: list[np.ndarray | None] | None) -> RecordColumns:
    arrays = [pa.array(t, pa.string()) for t in texts]
    typed = [typed_column(a, kind) for a, kind in zip(arrays, TYPES, strict=True)]
    return record_columns(NAMES, arrays, typed, np.array(valid), [0, 2], present)


def test_untyped_entries_name_absent_columns_and_hold_the_texts_no_type_can_hold() -> None:
    texts = [["1", "2", "3", None], ["2024-02-29", "2024-01-01", "0000-00-00", None], ["a", None, "c", None]]
    present = [None, np.array([True, True, False, True]), np.array([True, False, True, True])]
    made = _made(texts, [True, True, True, False], present)
    # Row 1 lacks `name` (absent: NULL text); row 2 lacks `born`, so its zero date is not there
    # either; row 3 has no image. NULL where a row has no entry.
    assert [None if m is None else list(m) for m in made.untyped.to_pylist()] == [
        None,
        [("name", None)],
        [("born", None)],
        None,
    ]
    assert made.keys.to_pylist() == [["1", "a"], ["2", None], ["3", "c"], None]


def test_a_text_the_carried_type_cannot_hold_is_null_in_the_record_and_kept_in_untyped() -> None:
    texts: list[list[str | None]] = [["7", "8"], ["0000-00-00", "1970-01-02"], ["x", "y"]]
    made = _made(texts, [True, True], None)
    assert [None if m is None else list(m) for m in made.untyped.to_pylist()] == [
        [("born", "0000-00-00")],
        None,
    ]
    schema = fastavro.parse_schema(writer_schema(TYPES))
    records = made.records.to_pylist()
    read = [fastavro.schemaless_reader(io.BytesIO(r), schema, None) for r in records]
    assert read == [{"c0": 7, "c1": None, "c2": "x"}, {"c0": 8, "c1": date(1970, 1, 2), "c2": "y"}]


def test_a_table_without_a_key_writes_no_key_texts() -> None:
    arrays = [pa.array(["1"], pa.string())]
    typed = [typed_column(arrays[0], "long")]
    made = record_columns(("id",), arrays, typed, np.array([True]), [], None)
    assert made.keys.to_pylist() == [None]
    assert made.untyped.to_pylist() == [None]
