from __future__ import annotations

import pytest

from ticdc_lake.canonical import (
    MAX_UNSIGNED_BIGINT,
    base64_text,
    bit_bounds,
    date_text,
    datetime_text,
    decimal_text,
    enum_name,
    float_text,
    integer_bounds,
    integer_text,
    is_zero_date,
    parse_integer,
    set_names,
    time_text,
    timestamp_utc_text,
    zone_info,
)


@pytest.mark.parametrize(
    ("mysql_type", "unsigned", "bounds"),
    [
        ("tinyint", False, (-128, 127)),
        ("tinyint", True, (0, 255)),
        ("smallint", False, (-32768, 32767)),
        ("smallint", True, (0, 65535)),
        ("mediumint", False, (-8388608, 8388607)),
        ("mediumint", True, (0, 16777215)),
        ("int", False, (-2147483648, 2147483647)),
        ("int", True, (0, 4294967295)),
        ("bigint", False, (-9223372036854775808, 9223372036854775807)),
        ("bigint", True, (0, 18446744073709551615)),
    ],
)
def test_integer_bounds_per_type(mysql_type: str, unsigned: bool, bounds: tuple[int, int]) -> None:
    assert integer_bounds(mysql_type, unsigned) == bounds


def test_integer_bounds_reject_a_non_integer_type() -> None:
    with pytest.raises(ValueError, match=r"^'float' is not a MySQL integer type"):
        integer_bounds("float", False)


def test_bit_bounds_follow_the_length() -> None:
    assert bit_bounds(1) == (0, 1)
    assert bit_bounds(10) == (0, 1023)
    assert bit_bounds(64) == (0, MAX_UNSIGNED_BIGINT)
    assert bit_bounds(None) == (0, MAX_UNSIGNED_BIGINT)


def test_integer_text_is_exact_at_the_unsigned_bigint_maximum() -> None:
    assert integer_text("18446744073709551615", 0, MAX_UNSIGNED_BIGINT) == "18446744073709551615"
    assert parse_integer("18446744073709551615", 0, MAX_UNSIGNED_BIGINT) == 18446744073709551615


def test_integer_text_keeps_canonical_text_and_normalises_leading_zeros() -> None:
    assert integer_text("-128", -128, 127) == "-128"
    assert integer_text("0", -128, 127) == "0"
    assert integer_text("007", -128, 127) == "7"
    assert integer_text("-0", -128, 127) == "0"
    assert integer_text("-012", -128, 127) == "-12"


@pytest.mark.parametrize("text", ["", "-", "+1", " 1", "1 ", "1_000", "1.0", "1e3", "٣", "0x10", "--1"])
def test_integer_text_rejects_what_is_not_plain_base10(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a base-10 integer$"):
        integer_text(text, -1000, 1000)


def test_integer_text_checks_the_range() -> None:
    with pytest.raises(ValueError, match=r"^128 is outside the range -128\.\.127$"):
        integer_text("128", -128, 127)
    with pytest.raises(ValueError, match=r"^18446744073709551616 is outside the range 0\.\.18446744073709551615$"):
        integer_text("18446744073709551616", 0, MAX_UNSIGNED_BIGINT)
    with pytest.raises(ValueError, match=r"outside the range"):
        integer_text("1" * 5000, 0, MAX_UNSIGNED_BIGINT)


@pytest.mark.parametrize("text", ["3.14", "-0.5", "90.5", "95", "0.000001", "340282350000000000000000000000000000000"])
def test_float_text_keeps_the_text_sent(text: str) -> None:
    assert float_text(text) == text


@pytest.mark.parametrize(
    "text", ["", "NaN", "inf", "-Infinity", "1e999", " 1.5", "1.5\n", "1_0.5", "abc", "\uff11.\uff15"]
)
def test_float_text_rejects_non_finite_or_malformed(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a (finite )?floating-point number$"):
        float_text(text)


@pytest.mark.parametrize(
    "text", ["1.500", "-0.10", "0", "12345678901234567890123456789012345.123456789012345678901234567890"]
)
def test_decimal_text_is_exact(text: str) -> None:
    assert decimal_text(text) == text


@pytest.mark.parametrize("text", ["", "-", ".5", "5.", "1.2.3", "+1", "1e5", "1,5", " 1", "NaN", "٣.٣"])
def test_decimal_text_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a decimal number$"):
        decimal_text(text)


def test_base64_text_keeps_standard_padded_base64() -> None:
    # b"\xff\xfe\x00\x80" is not UTF-8.
    assert base64_text("//4AgA==") == "//4AgA=="
    assert base64_text("") == ""
    assert base64_text("QUJD") == "QUJD"


def test_base64_text_writes_unused_padding_bits_as_zero() -> None:
    assert base64_text("QR==") == "QQ=="
    assert base64_text("QUJ=") == "QUI="


@pytest.mark.parametrize("text", ["QQ", "QQ=", "Q===", "QQ==QQ==", "QUJD\n", "QU JD", "QU-_", "ü"])
def test_base64_text_rejects_non_standard(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not standard padded base64"):
        base64_text(text)


@pytest.mark.parametrize(
    ("text", "zero"),
    [
        ("0000-00-00", True),
        ("0000-00-00 00:00:00", True),
        ("0000-00-00 00:00:00.000", True),
        ("0000-00-00 00:00:00.000000", True),
        ("0000-00-00 00:00:01", False),
        ("0000-00-00 00:00:00.001", False),
        ("2020-00-00", False),
        ("0001-01-01", False),
        ("", False),
    ],
)
def test_is_zero_date(text: str, zero: bool) -> None:
    assert is_zero_date(text) is zero


@pytest.mark.parametrize("text", ["2023-11-30", "0000-00-00", "2020-00-15", "2023-02-31", "9999-12-31", "0001-01-01"])
def test_date_text_keeps_the_text(text: str) -> None:
    assert date_text(text) == text


@pytest.mark.parametrize(
    "text", ["2023-13-01", "2023-01-32", "2023-1-01", "2023/01/01", "20230101", "2023-01-01 00:00:00"]
)
def test_date_text_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a DATE value YYYY-MM-DD$"):
        date_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "2023-11-30 12:34:56",
        "2023-11-30 12:34:56.1",
        "2023-11-30 12:34:56.123456",
        "0000-00-00 00:00:00",
        "0000-00-00 00:00:00.000",
        "2020-00-00 10:00:00",
        "2023-02-31 23:59:59.5",
    ],
)
def test_datetime_text_keeps_the_digits_sent(text: str) -> None:
    assert datetime_text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "2023-11-30T12:34:56",
        "2023-11-30 24:00:00",
        "2023-11-30 12:60:00",
        "2023-11-30 12:34:56.",
        "2023-11-30 12:34:56.1234567",
        "2023-11-30 12:34",
        "2023-11-30",
        "2023-11-30 12:34:56+08",
        "2023-11-30 12:34:56.1+08",
        "2023-11-30 12:34:56.12Z",
        "2023-11-30 12:34:5\u0666",
    ],
)
def test_datetime_text_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a DATETIME value YYYY-MM-DD HH:MM:SS\[\.ffffff\]$"):
        datetime_text(text)


@pytest.mark.parametrize(
    "text", ["12:34:56", "-12:34:56.123456", "838:59:59", "-838:59:59.000000", "100:00:00", "00:00:00.5"]
)
def test_time_text_keeps_the_text(text: str) -> None:
    assert time_text(text) == text


@pytest.mark.parametrize(
    "text", ["839:00:00", "1:00:00", "12:60:00", "12:00:60", "12:00", "12:00:00.1234567", "+12:00:00"]
)
def test_time_text_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a TIME value \[-\]HH:MM:SS\[\.ffffff\] \(hours up to 838\)$"):
        time_text(text)


def test_timestamp_in_shanghai_becomes_utc() -> None:
    assert timestamp_utc_text("2024-01-01 08:00:00", zone_info("Asia/Shanghai")) == "2024-01-01T00:00:00Z"
    assert timestamp_utc_text("2024-01-01 00:30:00.5", zone_info("Asia/Shanghai")) == "2023-12-31T16:30:00.5Z"


def test_timestamp_keeps_the_fraction_digits_sent() -> None:
    zone = zone_info("UTC")
    assert timestamp_utc_text("2024-01-01 00:00:00", zone) == "2024-01-01T00:00:00Z"
    assert timestamp_utc_text("2024-01-01 00:00:00.000000", zone) == "2024-01-01T00:00:00.000000Z"
    assert timestamp_utc_text("2024-01-01 00:00:00.120", zone) == "2024-01-01T00:00:00.120Z"


def test_timestamp_in_new_york_uses_the_offset_of_the_day() -> None:
    zone = zone_info("America/New_York")
    assert timestamp_utc_text("2024-01-15 12:00:00", zone) == "2024-01-15T17:00:00Z"  # EST, -5
    assert timestamp_utc_text("2024-07-15 12:00:00", zone) == "2024-07-15T16:00:00Z"  # EDT, -4


def test_ambiguous_timestamp_is_read_as_its_first_occurrence() -> None:
    # 2024-11-03 01:30 happens twice in New York: first in EDT (-4), then in EST (-5). fold=0 → EDT.
    zone = zone_info("America/New_York")
    assert timestamp_utc_text("2024-11-03 01:30:00.123", zone) == "2024-11-03T05:30:00.123Z"


def test_skipped_timestamp_uses_the_offset_before_the_change() -> None:
    # 2024-03-10 02:30 does not exist in New York; it is read with EST (-5).
    assert timestamp_utc_text("2024-03-10 02:30:00", zone_info("America/New_York")) == "2024-03-10T07:30:00Z"


def test_zero_timestamp_is_kept_without_a_zone() -> None:
    assert timestamp_utc_text("0000-00-00 00:00:00", zone_info("Asia/Shanghai")) == "0000-00-00 00:00:00"


def test_timestamp_rejects_a_date_that_does_not_exist() -> None:
    with pytest.raises(ValueError, match=r"^'2023-02-30 00:00:00' is not a valid time in UTC \(day is out of range"):
        timestamp_utc_text("2023-02-30 00:00:00", zone_info("UTC"))
    with pytest.raises(ValueError, match=r"is not a TIMESTAMP value"):
        timestamp_utc_text("2023-02-01T00:00:00", zone_info("UTC"))


def test_zone_info_rejects_unknown_zones() -> None:
    with pytest.raises(ValueError, match=r"^'Mars/Olympus' is not a known IANA time zone$"):
        zone_info("Mars/Olympus")
    with pytest.raises(ValueError, match=r"is not a known IANA time zone$"):
        zone_info("../etc/passwd")


def test_enum_name_is_one_based_and_zero_is_empty() -> None:
    members = ("small", "medium", "large")
    assert enum_name(0, members) == ""
    assert enum_name(1, members) == "small"
    assert enum_name(3, members) == "large"


def test_enum_name_beyond_the_members_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"^ENUM index 4 is beyond the 3 members \('small', 'medium', 'large'\)$"):
        enum_name(4, ("small", "medium", "large"))
    with pytest.raises(ValueError, match=r"the column schema lists no members$"):
        enum_name(1, None)


def test_set_names_in_definition_order() -> None:
    members = ("a", "b", "c", "d")
    assert set_names(0, members) == ""
    assert set_names(0b0101, members) == "a,c"
    assert set_names(0b1111, members) == "a,b,c,d"
    assert set_names(0b1000, members) == "d"


def test_set_bits_beyond_the_members_are_an_error() -> None:
    with pytest.raises(ValueError, match=r"^SET bitmask 8 has bits beyond the 3 members \('a', 'b', 'c'\)$"):
        set_names(8, ("a", "b", "c"))
    with pytest.raises(ValueError, match=r"the column schema lists no members$"):
        set_names(1, None)
