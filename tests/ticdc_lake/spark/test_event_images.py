"""``event_images``: every image as a map of text, from the row's map or else its record (``readable``), and
the lines ``ticdc-lake events`` prints (``event_lines``)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import functions as F

from ticdc_lake.spark.event_images import event_lines, readable
from ticdc_lake.spark.record_images import SIDES, VersionLayout, records_from_maps, untyped_from_maps

LAYOUT = VersionLayout(
    1, ("id", "born", "note", "blob", "price"), ("int", "date", "string", "binary", "double"), ("id",)
)
FULL = {"id": "1", "born": "2020-01-01", "note": "x", "blob": "AAE=", "price": "1e+10"}
#: A zero date (kept as sent beside the record), a NULL note, no blob (the image lacks it).
SPARSE = {"id": "2", "born": "0000-00-00", "note": None, "price": "2.5"}


def _frame(spark: Any) -> Any:
    rows = [
        ("a", 0, "I", None, FULL),
        ("a", 1, "D", SPARSE, None),
        ("a", 2, "U", SPARSE, FULL),
        ("b", 3, "I", None, {"id": "9"}),  # a table without layouts: no record to read
    ]
    frame = spark.createDataFrame(
        [("shop", t, op, Decimal(1), n, before, after) for t, n, op, before, after in rows],
        "database STRING, `table` STRING, op STRING, schema_version DECIMAL(20,0), `offset` INT, "
        "before MAP<STRING,STRING>, after MAP<STRING,STRING>",
    )
    made = {
        f"{side}_{part}": make(side, [LAYOUT])
        for side in SIDES
        for part, make in (("record", records_from_maps), ("untyped", untyped_from_maps))
    }
    return frame.withColumns(made)


def _images(frame: Any) -> list[tuple[Any, ...]]:
    rows = frame.orderBy("offset").collect()
    return [tuple(dict(r[side]) if r[side] is not None else None for side in SIDES) for r in rows]


@pytest.mark.spark
def test_rows_without_maps_get_them_from_their_records(spark: Any) -> None:
    """Maps left behind (NULL): made from the records, equal to the maps decode was given for
    integers, dates, strings and binary, the zero date as sent, the NULL note kept and the absent
    blob absent; the DOUBLE is Spark's text of the value. Rows that keep their maps read them,
    whatever their records say; a table without layouts has nothing to make them from."""
    frame = _frame(spark)
    assert _images(readable(frame, {("shop", "a"): [LAYOUT]})) == _images(frame)
    mapless = frame.withColumns({side: F.lit(None).cast("map<string,string>") for side in SIDES})
    rendered = {**FULL, "price": "1.0E10"}
    assert _images(readable(mapless, {("shop", "a"): [LAYOUT]})) == [
        (None, rendered),
        (SPARSE, None),
        (SPARSE, rendered),
        (None, None),
    ]
    assert _images(readable(mapless, {})) == [(None, None)] * 4
    # A row that keeps its map shows it, not its record.
    altered = frame.withColumn("after", F.when(F.col("after").isNotNull(), F.create_map(F.lit("id"), F.lit("7"))))
    assert [after for _, after in _images(readable(altered, {("shop", "a"): [LAYOUT]}))] == [
        {"id": "7"},
        None,
        {"id": "7"},
        {"id": "7"},
    ]


def test_event_lines_print_text_as_utf8_and_tsos_as_numbers() -> None:
    """``ticdc-lake events``: one JSON document per row, non-ASCII text as itself (not ``\\u``
    escapes), quotes and control characters escaped as JSON needs, TSOs and versions as numbers."""
    row = {
        "commit_ts": Decimal("470774097823137792"),
        "op": "U",
        "status": "READY",
        "schema_version": Decimal(3),
        "topic": "订单",
        "partition": 0,
        "offset": 7,
        "idx": 0,
        "before": {"名前": "ß", "note": None},
        "after": {"名前": 'say "hi"\n'},
    }
    (line,) = event_lines([row])
    assert line == (
        '{"commit_ts": 470774097823137792, "op": "U", "status": "READY", "schema_version": 3, "topic": "订单", '
        '"partition": 0, "offset": 7, "idx": 0, "before": {"名前": "ß", "note": null}, '
        '"after": {"名前": "say \\"hi\\"\\n"}}'
    )
