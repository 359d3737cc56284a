"""Typed values at source (``typed_sources``) against the specification, differentially.

For the Debezium and Avro column readers that carry a typed converter, a column of values (edges of the
type, values the reader declines, NULL) is typed twice: by the converter, from the values as read,
and by ``typed_columns.typed_column`` from the reader's canonical texts. Wherever the reader takes
a value, both must give the same typed value; a converter must cover the Iceberg type the column
maps to (else it would silently cost the text path)."""

from __future__ import annotations

import math
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from tests.ticdc_lake.spark.arrow_decode.test_debezium_columns import (
    FIRST_DAY,
    FIRST_US,
    INT64_EDGES,
    LAST_DAY,
    LAST_US,
)
from ticdc_lake.protocols.avro_values import AvroColumn
from ticdc_lake.protocols.debezium_values import field_type
from ticdc_lake.spark.arrow_decode.avro_columns import column_reader as avro_column_reader
from ticdc_lake.spark.arrow_decode.debezium_columns import column_reader
from ticdc_lake.spark.arrow_decode.typed_columns import typed_column
from ticdc_lake.spark.arrow_decode.typed_sources import image_columns

MS = 1000
#: (Connect field schema as TiCDC writes it, the column's Iceberg type, values).
CASES: list[tuple[dict[str, Any], str, list[Any]]] = [
    ({"type": "int16", "tidb_type": "tinyint"}, "int", INT64_EDGES),
    ({"type": "int16", "tidb_type": "tinyint unsigned"}, "int", INT64_EDGES),
    ({"type": "int32", "tidb_type": "smallint unsigned"}, "int", INT64_EDGES),
    ({"type": "int32", "tidb_type": "mediumint unsigned"}, "int", INT64_EDGES),
    ({"type": "int32", "tidb_type": "int"}, "int", INT64_EDGES),
    ({"type": "int64", "tidb_type": "int unsigned"}, "long", INT64_EDGES),
    ({"type": "int64", "tidb_type": "bigint"}, "long", INT64_EDGES),
    ({"type": "int64", "tidb_type": "bigint unsigned"}, "decimal(20,0)", INT64_EDGES),
    ({"type": "int32", "tidb_type": "year"}, "int", [0, 1901, 2155, 2156, -1, None]),
    ({"type": "int32", "name": "io.debezium.time.Year"}, "int", [0, 1901, 2155, 3000, None]),
    ({"type": "int64"}, "int", [0, 1, -(2**31), 2**31 - 1, None]),  # no tidb_type: int64 bounds
    ({"type": "boolean"}, "int", [True, False, None]),
    ({"type": "boolean", "tidb_type": "bit"}, "long", [True, False, None]),
    ({"type": "string"}, "string", ["", "a", "日本語", None]),
    ({"type": "string", "name": "io.debezium.data.Json"}, "string", ['{"k": 1}', None]),
    (
        {"type": "string", "name": "io.debezium.data.Enum", "parameters": {"allowed": "a,b"}},
        "string",
        ["a", "b", "", "c", None],
    ),
    (
        {"type": "int32", "name": "io.debezium.time.Date"},
        "date",
        [0, -1, FIRST_DAY, LAST_DAY, FIRST_DAY - 1, LAST_DAY + 1, 19000, None],
    ),
    (
        {"type": "int64", "name": "io.debezium.time.MicroTimestamp"},
        "timestamp",
        [0, -1, FIRST_US, LAST_US, FIRST_US - 1, LAST_US + 1, 1_700_000_000_123_456, None],
    ),
    (
        {"type": "int64", "name": "io.debezium.time.Timestamp"},
        "timestamp",
        [0, -1, FIRST_US // MS, LAST_US // MS, LAST_US // MS + 1, 1_700_000_000_123, None],
    ),
    ({"type": "double"}, "double", [0.0, -0.0, 0.1, 1e300, -2.5, 5e-324, math.inf, math.nan, None]),
]


@pytest.mark.parametrize(("spec", "iceberg_type", "values"), CASES, ids=[f"{s}-{t}" for s, t, _ in CASES])
def test_typed_at_source_equals_typed_from_the_canonical_text(
    spec: dict[str, Any], iceberg_type: str, values: list[Any]
) -> None:
    reader = column_reader(field_type(spec))
    assert reader is not None, spec
    assert reader.typed is not None, spec
    read = pa.array(values, reader.arrow_type)
    texts, ok = reader.canonical(read)
    taken = pa.array(ok).to_pylist()
    assert any(taken), "the case takes some value"
    chosen = read.filter(pa.array(taken))
    at_source = reader.typed(chosen, iceberg_type)
    assert at_source is not None, f"{spec} has no typed converter for {iceberg_type}"
    expected = typed_column(texts.filter(pa.array(taken)), iceberg_type)
    assert not expected.unrepresentable.any()
    assert at_source.type == expected.values.type
    assert at_source.equals(expected.values), (at_source, expected.values)


def test_a_converter_declines_an_iceberg_type_it_does_not_cover() -> None:
    reader = column_reader(field_type({"type": "int64", "tidb_type": "bigint"}))
    assert reader is not None
    assert reader.typed is not None
    assert reader.typed(pa.array([1], pa.int64()), "decimal(20,0)") is None
    # a value beyond int32 in a column the version types as int: the texts flag it instead
    assert reader.typed(pa.array([2**31], pa.int64()), "int") is None


def test_image_columns_type_at_source_where_they_can_and_from_the_texts_elsewhere() -> None:
    specs = {
        "id": {"type": "int64", "tidb_type": "bigint"},
        "at": {"type": "string", "name": "io.debezium.time.ZonedTimestamp"},  # no converter: from text
    }
    readers = {name: column_reader(field_type(spec)) for name, spec in specs.items()}
    image = pa.StructArray.from_arrays(
        [pa.array([1, 2], pa.int64()), pa.array(["2024-01-01T00:00:00Z", "2024-01-01T00:00:00.5Z"])],
        names=list(specs),
    )
    texts = [readers[name].canonical(child)[0] for name, child in zip(specs, image.flatten(), strict=True)]  # type: ignore[union-attr]
    columns = image_columns(
        image, [reader.typed for reader in readers.values() if reader], texts, ["long", "timestamptz"]
    )
    assert columns[0].values.to_pylist() == [1, 2]
    assert columns[1].values.equals(typed_column(texts[1], "timestamptz").values)
    assert columns[1].values.view(pa.int64()).to_pylist() == [1_704_067_200_000_000, 1_704_067_200_500_000]


FLOAT32_EDGES = [
    0.0,
    -0.0,
    0.1,
    3.4028234663852886e38,
    1.401298464324817e-45,
    -2.5,
    16777217.0,
    math.inf,
    math.nan,
    None,
]
#: (TiDB type, Avro type, the column's Iceberg type, values) of the Avro protocol's readers.
AVRO_CASES: list[tuple[str, str, str, list[Any]]] = [
    ("INT", "int", "int", INT64_EDGES),
    ("INT UNSIGNED", "long", "long", INT64_EDGES),
    ("BIGINT", "long", "long", INT64_EDGES),
    ("YEAR", "int", "int", [0, 1901, 2155, 2156, -1, None]),
    ("BIGINT UNSIGNED", "long", "decimal(20,0)", INT64_EDGES),
    ("FLOAT", "float", "float", FLOAT32_EDGES),
    ("DOUBLE", "double", "double", [0.0, -0.0, 0.1, 1e300, 1e21, 5e-324, -2.5, math.inf, math.nan, None]),
    ("TEXT", "string", "string", ["", "a", "日本語", None]),
    ("JSON", "string", "string", ['{"k": 1}', None]),
]


@pytest.mark.parametrize(
    ("tidb_type", "avro_type", "iceberg_type", "values"), AVRO_CASES, ids=[f"{c[0]}-{c[1]}" for c in AVRO_CASES]
)
def test_avro_readers_typed_at_source_equal_typed_from_their_text(
    tidb_type: str, avro_type: str, iceberg_type: str, values: list[Any]
) -> None:
    reader = avro_column_reader(AvroColumn("c", tidb_type, avro_type, True, 0), ZoneInfo("UTC"))
    assert reader is not None
    assert reader.typed is not None
    read = pa.array(values, reader.arrow_type)
    texts, ok = reader.canonical(read)
    taken = pa.array(ok).to_pylist()
    chosen = read.filter(pa.array(taken))
    at_source = reader.typed(chosen, iceberg_type)
    assert at_source is not None
    expected = typed_column(texts.filter(pa.array(taken)), iceberg_type)
    assert not expected.unrepresentable.any()
    assert at_source.type == expected.values.type
    assert at_source.equals(expected.values), (at_source, expected.values)
    if iceberg_type in ("float", "double"):  # -0 keeps its sign, as its text "-0" does
        signs = [math.copysign(1, v) if v is not None else None for v in at_source.to_pylist()]
        assert signs == [math.copysign(1, v) if v is not None else None for v in expected.values.to_pylist()]
