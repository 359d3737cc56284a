"""Debezium value conversions, one type at a time (docs/protocols.md, "Debezium"; docs/canonical-values.md).

Inputs are what TiCDC's ``writeDebeziumFieldValue`` writes, computed here by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ticdc_lake.protocols.debezium_values import JSON_DECODER, FieldType, converter_for, field_type


def convert(spec: dict[str, Any], json_value: str) -> str:
    """Decode ``json_value`` as the wire text and convert it with the field schema ``spec``."""
    return converter_for(field_type(spec))(JSON_DECODER.decode(json_value))


MICRO_TIME = {"type": "int64", "name": "io.debezium.time.MicroTime"}
MILLIS = {"type": "int64", "name": "io.debezium.time.Timestamp"}
MICROS = {"type": "int64", "name": "io.debezium.time.MicroTimestamp"}
DATE = {"type": "int32", "name": "io.debezium.time.Date"}


@pytest.mark.parametrize(
    ("micros", "expected"),
    [
        ("0", "00:00:00"),
        ("-45296123456", "-12:34:56.123456"),
        ("-1", "-00:00:00.000001"),
        ("360000000000", "100:00:00"),  # beyond 24 h
        ("3020399000000", "838:59:59"),  # TIME's maximum
        ("-3020399000000", "-838:59:59"),
        ("45296100000", "12:34:56.1"),
        ("45296120000", "12:34:56.12"),
        ("45296123000", "12:34:56.123"),
        ("45296123400", "12:34:56.1234"),
        ("45296123450", "12:34:56.12345"),
    ],
)
def test_time_from_microseconds(micros: str, expected: str) -> None:
    assert convert(MICRO_TIME, micros) == expected


def test_time_beyond_838_hours_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"^'839:00:00' is not a TIME value"):
        convert(MICRO_TIME, "3020400000000")


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        (MILLIS, "1701347696000", "2023-11-30 12:34:56"),  # fsp 0
        (MILLIS, "1701347696100", "2023-11-30 12:34:56.1"),  # fsp 1
        (MILLIS, "1701347696120", "2023-11-30 12:34:56.12"),  # fsp 2
        (MILLIS, "1701347696123", "2023-11-30 12:34:56.123"),  # fsp 3
        (MICROS, "1701347696123400", "2023-11-30 12:34:56.1234"),  # fsp 4
        (MICROS, "1701347696123450", "2023-11-30 12:34:56.12345"),  # fsp 5
        (MICROS, "1701347696123456", "2023-11-30 12:34:56.123456"),  # fsp 6
        (MILLIS, "-62135596800000", "0001-01-01 00:00:00"),
        (MICROS, "253402300799999999", "9999-12-31 23:59:59.999999"),
        (MILLIS, "-1", "1969-12-31 23:59:59.999"),
    ],
)
def test_datetime_as_if_utc(spec: dict[str, Any], value: str, expected: str) -> None:
    assert convert(spec, value) == expected


def test_datetime_trailing_fraction_zeros_are_not_recoverable() -> None:
    # DATETIME(3) '…56.100' and DATETIME(1) '…56.1' both arrive as …100 ms: the fsp is not sent.
    assert convert(MILLIS, "1701347696100") == "2023-11-30 12:34:56.1"
    assert convert(MICROS, "1701347696000000") == "2023-11-30 12:34:56"


def test_datetime_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"^253402300800000000 µs since the epoch is outside the years 1..9999$"):
        convert(MICROS, "253402300800000000")


@pytest.mark.parametrize(
    ("days", "expected"),
    [("19691", "2023-11-30"), ("-354285", "1000-01-01"), ("2932896", "9999-12-31"), ("0", "1970-01-01")],
)
def test_date_from_days(days: str, expected: str) -> None:
    assert convert(DATE, days) == expected


def test_two_digit_year_date_arrives_shifted() -> None:
    # '0018-05-01' is sent as 2018-05-01 (year < 70 gets +2000): the decoder cannot undo it.
    assert convert(DATE, "17652") == "2018-05-01"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023-11-30T12:34:56Z", "2023-11-30T12:34:56Z"),
        ("2023-11-30T12:34:56.12346Z", "2023-11-30T12:34:56.12346Z"),
        ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"),  # also what a zero TIMESTAMP becomes
    ],
)
def test_zoned_timestamp_kept(text: str, expected: str) -> None:
    assert convert({"type": "string", "name": "io.debezium.time.ZonedTimestamp"}, f'"{text}"') == expected


def test_zoned_timestamp_without_z_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"^'2023-11-30 12:34:56' is not a UTC timestamp"):
        convert({"type": "string", "name": "io.debezium.time.ZonedTimestamp"}, '"2023-11-30 12:34:56"')


@pytest.mark.parametrize(
    ("tidb_type", "value", "expected"),
    [
        ("bigint unsigned", "-1", "18446744073709551615"),
        ("bigint unsigned", "-9223372036854775808", "9223372036854775808"),
        ("bigint unsigned", "9223372036854775807", "9223372036854775807"),
        ("bigint unsigned", "0", "0"),
        ("bigint", "-1", "-1"),
        ("int unsigned", "4294967295", "4294967295"),
        ("tinyint unsigned", "255", "255"),
    ],
)
def test_unsigned_integers_with_tidb_type(tidb_type: str, value: str, expected: str) -> None:
    assert convert({"type": "int64", "tidb_type": tidb_type}, value) == expected


def test_int_unsigned_out_of_range_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"^-1 is outside the range 0..4294967295$"):
        convert({"type": "int64", "tidb_type": "int unsigned"}, "-1")


def test_unsigned_bigint_without_tidb_type_stays_signed() -> None:
    assert convert({"type": "int64"}, "-1") == "-1"


@pytest.mark.parametrize(
    ("length", "b64", "expected"),
    [("5", "EA==", "16"), ("60", "EAAAAAAAAAA=", "16"), ("16", "AAE=", "256"), ("64", "//////////8=", str(2**64 - 1))],
)
def test_bits_little_endian(length: str, b64: str, expected: str) -> None:
    spec = {"type": "bytes", "name": "io.debezium.data.Bits", "parameters": {"length": length}}
    assert convert(spec, f'"{b64}"') == expected


def test_bits_beyond_length_rejected() -> None:
    spec = {"type": "bytes", "name": "io.debezium.data.Bits", "parameters": {"length": "5"}}
    with pytest.raises(ValueError, match=r"^'IA==' \(little-endian 32\) is outside the range 0..31$"):
        convert(spec, '"IA=="')


def test_bit1_boolean() -> None:
    assert convert({"type": "boolean"}, "true") == "1"
    assert convert({"type": "boolean"}, "false") == "0"


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("12345.12345", "12345.12345"),
        ("0.1", "0.1"),
        ("100", "100.0"),
        ("1e-05", "0.00001"),
        ("1e+21", "1000000000000000000000"),
    ],
)
def test_decimal_as_double(wire: str, expected: str) -> None:
    # DECIMAL(p,s) travels as a float64: scale and digits beyond ~17 are lost; "1.500" reads "1.5".
    assert convert({"type": "double", "tidb_type": "decimal"}, wire) == expected


def test_decimal_precision_loss() -> None:
    assert convert({"type": "double", "tidb_type": "decimal"}, "1.5") == "1.5"  # DECIMAL(4,3) '1.500'
    assert convert({"type": "double", "tidb_type": "decimal"}, "1.2345678901234567") == "1.2345678901234567"


def test_float_and_double_keep_the_wire_text() -> None:
    assert convert({"type": "float"}, "12345.123") == "12345.123"
    assert convert({"type": "double"}, "1e-7") == "1e-7"
    assert convert({"type": "double"}, "3") == "3"


def test_enum_and_set_names() -> None:
    enum = {"type": "string", "name": "io.debezium.data.Enum", "parameters": {"allowed": "a\\,b,c"}}
    assert convert(enum, '"a,b"') == "a,b"
    assert convert(enum, '""') == ""
    with pytest.raises(ValueError, match=r"^'a' is not one of the ENUM members \('a,b', 'c'\)$"):
        convert(enum, '"a"')
    set_spec = {"type": "string", "name": "io.debezium.data.EnumSet", "parameters": {"allowed": "a,b,c"}}
    assert convert(set_spec, '"a,c"') == "a,c"
    with pytest.raises(ValueError, match=r"^'d' is not one of the SET members"):
        convert(set_spec, '"a,d"')


def test_strings_json_binary() -> None:
    assert convert({"type": "string"}, '"日本語"') == "日本語"
    assert convert({"type": "string", "name": "io.debezium.data.Json"}, '"{\\"k\\": 1}"') == '{"k": 1}'
    assert convert({"type": "string", "tidb_type": "blob"}, '"QR=="') == "QQ=="


def test_untyped_values() -> None:
    untyped = converter_for(None)
    assert untyped(JSON_DECODER.decode("19691")) == "19691"  # a DATE day count stays a number
    assert untyped(JSON_DECODER.decode("1.50")) == "1.50"
    assert untyped(True) == "1"
    assert untyped("a,b") == "a,b"


def test_type_text() -> None:
    assert FieldType("int64", tidb_type="bigint unsigned").type_text() == "bigint unsigned"
    assert FieldType("bytes", name="io.debezium.data.Bits", parameters={"length": "5"}).type_text() == "bit(5)"
    assert FieldType("int16").type_text() == "connect:int16"


def test_field_schema_errors() -> None:
    with pytest.raises(ValueError, match=r"^'type' must be a string, got null$"):
        field_type({"field": "c"})
    with pytest.raises(ValueError, match=r"^Connect type 'array' is not supported"):
        convert({"type": "array"}, "[]")


class _Text(str):
    """A string that is not exactly ``str``: the converters then take their checks, never a shortcut."""

    __slots__ = ()


def _outcome(convert: Callable[[object], str], value: object) -> str:
    try:
        return "ok " + convert(value)
    except ValueError as exc:
        return f"ValueError {exc}"


_ZONED_CASES = [
    "2026-11-21T08:04:00.004Z",
    "2026-11-21T08:04:00Z",
    "0000-00-00T00:00:00Z",
    "9999-12-31T23:59:59.999999Z",
    "2026-02-31T23:59:59.1Z",
    "2026-13-01T00:00:00Z",
    "2026-12-32T00:00:00Z",
    "2026-12-01T24:00:00Z",
    "2026-12-01T23:60:00Z",
    "2026-12-01T23:00:60Z",
    "2026-12-01T23:00:00.Z",
    "2026-12-01T23:00:00.1234567Z",
    "2026-12-01 23:00:00Z",
    "2026-12-01T23:00:00",
    "2026-12-01T23:00:00z",
    "2026-12-01T23:00:00+00:00",
    "\uff12026-12-01T23:00:00Z",  # a fullwidth digit
    "2026-12-01T23:00:0\u0663Z",  # an Arabic-Indic digit
    "+026-12-01T23:00:00Z",
    "2026-1-01T23:00:00Z",
    "",
]


def test_the_zoned_timestamp_pattern_accepts_exactly_what_the_checks_accept() -> None:
    """The one-step pattern of ``zoned_timestamp`` against its checks (a ``str`` subclass takes them),
    on edge texts and on every one-character change of a valid one."""
    convert = converter_for(field_type({"type": "string", "name": "io.debezium.time.ZonedTimestamp"}))
    cases = list(_ZONED_CASES)
    base = "2026-11-21T08:04:09.123456Z"
    for at in range(len(base)):
        for char in "0123456789T Z.:-x9":
            cases.append(base[:at] + char + base[at + 1 :])
        cases.append(base[:at] + base[at + 1 :])
    accepted = 0
    for text in cases:
        fast = _outcome(convert, text)
        assert fast == _outcome(convert, _Text(text)), text
        accepted += fast.startswith("ok ")
    assert accepted > 50
