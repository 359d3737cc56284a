"""The specification of a typed value: canonical text to the value of an Iceberg type, as Spark's
``try_cast`` gives it (``tests/ticdc_lake/spark/arrow_decode/test_typed_columns_spark.py`` checks
both against Spark itself)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from ticdc_lake.typed_values import UNREPRESENTABLE, epoch_days, typed_value


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
        ("1.5", "long", UNREPRESENTABLE),
        ("\u0661", "int", UNREPRESENTABLE),  # Arabic-Indic digit one: Python's int() would take it
        ("x", "double", UNREPRESENTABLE),
        ("QQ", "binary", UNREPRESENTABLE),
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
