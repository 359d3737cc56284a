"""Typed images as Avro records against apply's conversion today, in Spark itself.

The same canonical texts, once as the ``MAP<STRING, STRING>`` image apply reads today and typed
by ``merge_sql.typed_projection`` (Spark's ``try_cast``, ``try_to_binary``), once typed a column at
a time in Python (``typed_columns``), encoded as one Avro record per image (``avro_records``) and
read back by spark-avro's ``from_avro`` under the version's writer schema. Every value must be
equal in the JVM (null-safe), and the count of values the types cannot hold must be the same per
row: the record carries the same typed row as the text, so apply can read it instead.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.ticdc_lake.spark.arrow_decode.typed_image_cases import EDGE_TEXTS, random_texts
from ticdc_lake.apply.merge_sql import BAD_VALUES_COLUMN, TargetColumn, typed_projection
from ticdc_lake.identifiers import quote, sql_string
from ticdc_lake.spark.arrow_decode.avro_records import encode_records, writer_schema
from ticdc_lake.spark.arrow_decode.typed_columns import typed_column

pytestmark = [pytest.mark.spark]

TYPES = sorted(EDGE_TEXTS)
COLUMNS = [TargetColumn(f"{kind} col", kind) for kind in TYPES]  # names with spaces and parentheses


def _rows() -> tuple[list[dict[str, str | None]], list[list[str | None]]]:
    """Images whose columns hold every edge text (cycled) and seeded random canonical texts."""
    count = 600
    per_column = []
    for kind in TYPES:
        edges = EDGE_TEXTS[kind]
        texts = (edges * (60 // len(edges) + 1))[:60] + random_texts(kind, count - 60, seed=21)
        per_column.append(texts)
    images = [{c.name: per_column[i][r] for i, c in enumerate(COLUMNS)} for r in range(count)]
    return images, per_column


def test_from_avro_of_the_records_equals_try_cast_of_the_texts(spark: Any) -> None:
    images, per_column = _rows()
    typed = [
        typed_column(pa.array(texts, pa.string()), c.iceberg_type) for texts, c in zip(per_column, COLUMNS, strict=True)
    ]
    records = encode_records([t.values for t in typed]).to_pylist()
    bad = np.sum([t.unrepresentable for t in typed], axis=0).tolist()
    frame = spark.createDataFrame(
        [(r, image, record, b) for r, (image, record, b) in enumerate(zip(images, records, bad, strict=True))],
        "row INT, image MAP<STRING, STRING>, record BINARY, bad INT",
    )
    schema = json.dumps(writer_schema([c.iceberg_type for c in COLUMNS]))
    both = frame.selectExpr(
        "row",
        "bad",
        *typed_projection("image", COLUMNS),
        f"from_avro(record, {sql_string(schema)}) AS r",
    )
    same = " AND ".join(f"({quote(c.name)} <=> r.c{i})" for i, c in enumerate(COLUMNS))
    different = both.where(f"NOT ({same}) OR bad <> {quote(BAD_VALUES_COLUMN)}")
    shown = [
        row.asDict()
        for row in different.selectExpr("row", *(f"CAST(r.c{i} AS STRING)" for i in range(len(COLUMNS))))
        .limit(5)
        .collect()
    ]
    assert shown == []
    counts = both.selectExpr(f"sum({quote(BAD_VALUES_COLUMN)}) AS bad").collect()[0]
    assert counts["bad"] == sum(bad) > 0  # the zero dates and the INT UNSIGNED above int are there
