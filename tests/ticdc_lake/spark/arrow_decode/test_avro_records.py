"""Avro records of typed images (``avro_records``) against fastavro, an independent encoder: for
the same values under the same writer schema, byte for byte the record fastavro's schemaless
writer makes, and fastavro reads them back to those values."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from tests.ticdc_lake.spark.arrow_decode.typed_image_cases import EDGE_TEXTS, random_texts, storage_values
from ticdc_lake.spark.arrow_decode.avro_records import encode_records, writer_schema
from ticdc_lake.spark.arrow_decode.typed_columns import typed_column

TYPES = sorted(EDGE_TEXTS)


def _fastavro(schema: dict[str, Any], rows: list[dict[str, Any]]) -> list[bytes]:
    parsed = parse_schema(schema)
    out = []
    for row in rows:
        buffer = io.BytesIO()
        schemaless_writer(buffer, parsed, row)
        out.append(buffer.getvalue())
    return out


@pytest.mark.parametrize("iceberg_type", TYPES)
def test_one_column_records_are_fastavros_bytes(iceberg_type: str) -> None:
    texts = EDGE_TEXTS[iceberg_type] + random_texts(iceberg_type, 500, seed=3)
    values = typed_column(pa.array(texts, pa.string()), iceberg_type).values.slice(2)
    records = encode_records([values])
    assert records.to_pylist() == _fastavro(writer_schema([iceberg_type]), [{"c0": v} for v in storage_values(values)])


def test_a_table_versions_records_hold_every_column_in_order_and_read_back() -> None:
    types = TYPES
    count = 400
    columns = [typed_column(pa.array(random_texts(t, count, seed=9), pa.string()), t).values for t in types]
    valid = np.arange(count) % 7 != 3  # rows without an image
    records = encode_records(columns, valid)
    schema = writer_schema(types)
    plain = [storage_values(c) for c in columns]
    rows = [{f"c{i}": plain[i][r] for i in range(len(types))} for r in range(count)]
    expected = _fastavro(schema, rows)
    assert records.to_pylist() == [e if v else None for e, v in zip(expected, valid, strict=True)]
    back = schemaless_reader(io.BytesIO(records[0].as_py()), parse_schema(schema), None)
    assert isinstance(back, dict)
    for name in ("string", "long", "decimal(20,0)"):
        field = f"c{types.index(name)}"
        assert back[field] == rows[0][field]


def test_writer_schema_is_a_nullable_union_per_column() -> None:
    assert writer_schema(["long", "decimal(20,0)", "timestamptz"]) == {
        "type": "record",
        "name": "image",
        "fields": [
            {"name": "c0", "type": ["null", "long"]},
            {"name": "c1", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 0}]},
            {"name": "c2", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        ],
    }


def test_decimals_take_the_shortest_twos_complement() -> None:
    values = pa.array([0, 127, 128, -128, -129, 2**64 - 1, -(10**37)], pa.decimal128(38, 0))
    # branch 0x02, length (zig-zag), big-endian bytes
    assert encode_records([values]).to_pylist()[:5] == [
        b"\x02\x02\x00",
        b"\x02\x02\x7f",
        b"\x02\x04\x00\x80",
        b"\x02\x02\x80",
        b"\x02\x04\xff\x7f",
    ]


def test_an_arrow_type_without_an_avro_encoding_is_named() -> None:
    with pytest.raises(ValueError, match=r"^no Avro encoding for Arrow type bool$"):
        encode_records([pa.array([True])])
