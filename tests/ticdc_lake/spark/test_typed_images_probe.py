"""The typed row image prototype: canonical text to typed values, the variant bytes, Avro records.

The carriers' agreement with Spark (variant_get, from_avro, try_cast) is measured by
tests/bench/bench_typed_images.py; these tests pin the helper logic without a JVM.
"""

from __future__ import annotations

import io
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from ticdc_lake.spark.typed_images_probe import (
    UNREPRESENTABLE,
    AvroImages,
    Column,
    VariantImages,
    epoch_days,
    typed_value,
    variant_metadata,
)


@pytest.mark.parametrize(
    ("year", "month", "day", "expected"),
    [
        (1970, 1, 1, 0),
        (2024, 2, 29, (date(2024, 2, 29) - date(1970, 1, 1)).days),
        (1, 1, 1, (date(1, 1, 1) - date(1970, 1, 1)).days),
        (0, 1, 1, (date(1, 1, 1) - date(1970, 1, 1)).days - 366),  # year 0 is a leap year
        (0, 2, 29, (date(1, 1, 1) - date(1970, 1, 1)).days - 366 + 59),
        (2023, 2, 29, None),
        (2023, 2, 31, None),
        (2020, 0, 15, None),
        (0, 0, 0, None),
        (2023, 13, 1, None),
    ],
)
def test_epoch_days_of_the_proleptic_calendar(year: int, month: int, day: int, expected: int | None) -> None:
    assert epoch_days(year, month, day) == expected


def _micros(moment: datetime) -> int:
    epoch = datetime(1970, 1, 1, tzinfo=moment.tzinfo)
    delta = moment - epoch
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


@pytest.mark.parametrize(
    ("text", "iceberg_type", "expected"),
    [
        ("-9223372036854775808", "long", -(2**63)),
        ("2147483648", "int", UNREPRESENTABLE),
        ("-2147483648", "int", -(2**31)),
        ("18446744073709551615", "decimal(20,0)", Decimal("18446744073709551615")),
        (
            "1234567890123456789012345678.1234567890",
            "decimal(38,10)",
            Decimal("1234567890123456789012345678.1234567890"),
        ),
        ("0.00000000005", "decimal(38,10)", Decimal("0.0000000001")),  # half up, as Spark's cast
        ("-0.00000000005", "decimal(38,10)", Decimal("-0.0000000001")),
        ("12345.6", "decimal(5,1)", UNREPRESENTABLE),
        ("1.500", "decimal(12,2)", Decimal("1.50")),
        ("3.14", "double", 3.14),
        ("日本語", "string", "日本語"),
        ("//4AgA==", "binary", b"\xff\xfe\x00\x80"),
        ("", "binary", b""),
        ("2024-02-29", "date", (date(2024, 2, 29) - date(1970, 1, 1)).days),
        ("0000-00-00", "date", UNREPRESENTABLE),
        ("2023-02-31", "date", UNREPRESENTABLE),
        ("2023-11-30 12:34:56.123", "timestamp", _micros(datetime(2023, 11, 30, 12, 34, 56, 123000))),
        ("9999-12-31 23:59:59.999999", "timestamp", _micros(datetime(9999, 12, 31, 23, 59, 59, 999999))),
        ("0000-00-00 00:00:00", "timestamp", UNREPRESENTABLE),
        ("2020-00-15 10:00:00", "timestamp", UNREPRESENTABLE),
        ("2024-01-01T00:00:00.250Z", "timestamptz", _micros(datetime(2024, 1, 1, 0, 0, 0, 250000, tzinfo=UTC))),
        ("0000-00-00 00:00:00", "timestamptz", UNREPRESENTABLE),  # a zero TIMESTAMP is kept without Z
        ("2024-01-01 00:00:00", "timestamptz", UNREPRESENTABLE),
    ],
)
def test_typed_value_agrees_with_try_cast(text: str, iceberg_type: str, expected: object) -> None:
    value = typed_value(text, iceberg_type)
    if expected is UNREPRESENTABLE:
        assert value is UNREPRESENTABLE
    else:
        assert value == expected
        assert type(value) is type(expected)


def test_typed_value_names_a_type_it_does_not_know() -> None:
    with pytest.raises(ValueError, match=r"^no typed value for Iceberg type 'uuid'$"):
        typed_value("x", "uuid")


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
