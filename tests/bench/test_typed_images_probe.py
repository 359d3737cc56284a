"""The typed row image prototype: canonical text to typed values, the variant bytes, Avro records.

The carriers' agreement with Spark (variant_get, from_avro, try_cast) is measured by
tests/bench/bench_typed_images.py; these tests pin the helper logic without a JVM.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime

from fastavro import parse_schema, schemaless_reader, schemaless_writer
from typed_images_probe import AvroImages, Column, VariantImages, variant_metadata  # type: ignore[import-not-found,unused-ignore]  # beside this file


def test_variant_metadata_is_a_sorted_dictionary() -> None:
    assert variant_metadata(["b", "a"]).hex() == "d1" + "02000000" + "00000000" + "01000000" + "02000000" + "6162"


def test_variant_value_bytes() -> None:
    images = VariantImages([Column("b", "string"), Column("a", "long")])
    assert images.metadata == variant_metadata(["a", "b"])
    # object: header 0x02 (1-byte ids and offsets), 2 fields, ids 0 1 (name order), offsets 0 2 3,
    # then int8 1 (0x0c 0x01) and a variant null (0x00)
    assert images.value({"b": None, "a": "1"}).hex() == "02" + "02" + "0001" + "000203" + "0c01" + "00"
    # an absent column is no field; a short string is 0x05 + 'x'
    assert images.value({"b": "x"}).hex() == "02" + "01" + "01" + "0002" + "0578"


def test_variant_keeps_the_text_of_a_value_the_type_cannot_hold() -> None:
    images = VariantImages([Column("d", "date"), Column("m", "decimal(12,2)")])
    value = images.value({"d": "0000-00-00", "m": "1.50"})
    short_string = bytes([len("0000-00-00") << 2 | 1]) + b"0000-00-00"
    decimal4 = bytes([8 << 2, 2]) + (150).to_bytes(4, "little", signed=True)
    assert value == bytes([0x02, 2, 0, 1, 0, len(short_string), len(short_string) + 6]) + short_string + decimal4
    assert images.encode({"d": "0000-00-00", "m": "1.50"}) == (value, 1)
    assert images.encode({"d": "2024-01-01", "m": None}) == (images.value({"d": "2024-01-01", "m": None}), 0)


def test_variant_integers_take_the_smallest_type_and_wide_decimals_16_bytes() -> None:
    images = VariantImages([Column("i", "long"), Column("u", "decimal(20,0)")])
    value = images.value({"i": "-129", "u": "18446744073709551615"})
    int16 = bytes([4 << 2]) + (-129).to_bytes(2, "little", signed=True)
    decimal16 = bytes([10 << 2, 0]) + (2**64 - 1).to_bytes(16, "little", signed=True)
    assert value == bytes([0x02, 2, 0, 1, 0, 3, 3 + 18]) + int16 + decimal16


def test_avro_record_keeps_absent_columns_and_untyped_texts_beside_it() -> None:
    images = AvroImages([Column("k", "long"), Column("d", "date"), Column("t", "timestamptz"), Column("n", "int")])
    record, untyped, absent = images.record({"k": "5", "d": "0000-00-00", "t": "2024-01-01T00:00:00.250Z"})
    assert untyped == {"d": "0000-00-00"}
    assert absent == ["n"]
    buffer = io.BytesIO()
    schema = parse_schema(images.schema)
    schemaless_writer(buffer, schema, record)
    buffer.seek(0)
    assert schemaless_reader(buffer, schema, None) == {
        "c0": 5,
        "c1": None,
        "c2": datetime(2024, 1, 1, 0, 0, 0, 250000, tzinfo=UTC),
        "c3": None,
    }
