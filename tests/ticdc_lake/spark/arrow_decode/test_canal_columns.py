"""The vector twins of the Canal-JSON value converter agree with the scalar converter.

For each ``mysqlType``, a column of values is converted twice: one value at a time by
``canal_values.canonical_value`` (the specification) and as one Arrow array by
``canal_columns.column_reader``. A twin may decline a value the scalar takes (only where the case
says so); it never takes a value the scalar rejects, and never writes another text. The naming
twin (``naming_reader``) is checked the same way against ``schema_facts._named``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pyarrow as pa
import pytest

from ticdc_lake.canonical import zone_info
from ticdc_lake.protocols.canal_values import canonical_value, parse_mysql_type
from ticdc_lake.protocols.schema_facts import _named
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.spark.arrow_decode.canal_columns import column_reader, latin1_base64, naming_reader

ZONE = "America/New_York"
TEXT = pa.string()
BOOL = pa.bool_()


def _scalar(mysql_type: str, value: str, zone: str) -> str | None:
    try:
        return canonical_value(parse_mysql_type(mysql_type), value, zone_info(zone))
    except ValueError:
        return None


def assert_exact(
    mysql_type: str,
    values: Sequence[str | None],
    zone: str = ZONE,
    *,
    may_decline: Callable[[str, str], bool] = lambda value, text: False,
) -> int:
    """Every non-null value: the scalar's text with ok, or (null, not ok) where the scalar raises or
    ``may_decline(value, text)``; a null stays null with ok. Returns how many values were taken."""
    reader = column_reader(parse_mysql_type(mysql_type), zone)
    assert reader is not None, mysql_type
    texts, ok = reader.canonical(pa.array(values, reader.arrow_type))
    assert (texts.type, ok.type, ok.null_count, len(texts)) == (TEXT, BOOL, 0, len(values))
    wrong = []
    for value, got in zip(values, zip(texts.to_pylist(), ok.to_pylist(), strict=True), strict=True):
        allowed: list[tuple[str | None, bool]]
        if value is None:
            allowed = [(None, True)]
        else:
            text = _scalar(mysql_type, value, zone)
            allowed = [(None, False)] if text is None else [(text, True)]
            if text is not None and may_decline(value, text):
                allowed.append((None, False))
        if got not in allowed:
            wrong.append((value, got, allowed))
    assert wrong == [], f"{mysql_type}: (value, twin, allowed) {wrong[:10]}"
    return sum(1 for v, o in zip(values, ok.to_pylist(), strict=True) if v is not None and o)


_INTEGER_FORMS = ["0", "-0", "007", "+1", " 1", "1 ", "1.0", "1e3", "", "x", "١٢", "1_0", None]


@pytest.mark.parametrize(
    ("mysql_type", "low", "high"),
    [
        ("tinyint", -128, 127),
        ("tinyint unsigned", 0, 255),
        ("smallint", -(1 << 15), (1 << 15) - 1),
        ("mediumint unsigned zerofill", 0, (1 << 24) - 1),
        ("int(11)", -(1 << 31), (1 << 31) - 1),
        ("int unsigned", 0, (1 << 32) - 1),
        ("bigint", -(1 << 63), (1 << 63) - 1),
        ("bigint(20) unsigned", 0, (1 << 64) - 1),
        ("year", 0, 2155),
        ("bit", 0, (1 << 64) - 1),
        ("bit(1)", 0, 1),
        ("bit(12)", 0, (1 << 12) - 1),
        ("enum", 0, (1 << 16) - 1),
        ("set", 0, (1 << 64) - 1),
    ],
)
def test_integers(mysql_type: str, low: int, high: int) -> None:
    values = [str(v) for v in (low, high, low - 1, high + 1, low + 1, high - 1, 0, 1, -1, 10**25, -(10**25))]
    taken = assert_exact(
        mysql_type, [*values, *_INTEGER_FORMS], may_decline=lambda value, text: value != text
    )  # non-canonical forms ("007", "-0") may go to Python
    assert taken >= 5


def test_floats_and_decimals() -> None:
    floats: list[str | None] = [
        "1.5",
        "-0",
        "0",
        "1e5",
        "1.5E-7",
        "-3.4028235e38",
        "1e400",
        "NaN",
        "inf",
        "-Infinity",
        ".5",
        "5.",
    ]
    floats += ["+1", " 1", "1_0", "", "0x10", "1.7976931348623157e308", "4.9e-324", None]
    for mysql_type in ("float", "double", "float unsigned"):
        assert assert_exact(mysql_type, floats, may_decline=lambda value, text: True) >= 8
    decimals = ["12.50", "-0.10", "0", "-0", "12.", ".5", "+1", "1e3", "\u0661", "9" * 65, None, "1.2.3", "-", ""]
    assert assert_exact("decimal", decimals) == 5
    assert assert_exact("decimal(10,2) unsigned", decimals) == 5


def test_dates_and_times() -> None:
    dates = ["2024-02-29", "0000-00-00", "2024-00-00", "2024-13-01", "2024-02-32", "24-02-29", "2024-2-29", None]
    assert assert_exact("date", dates, may_decline=lambda value, text: True) >= 2
    datetimes = ["2024-02-29 12:34:56", "2024-02-29 12:34:56.123456", "2024-02-30 00:00:00", "0000-00-00 00:00:00"]
    datetimes += ["2024-02-29 24:00:00", "2024-02-29 12:34:56.", "2024-02-29 12:34:56.1234567", "2024-02-29T12:34:56"]
    assert assert_exact("datetime(6)", [*datetimes, None], may_decline=lambda value, text: True) >= 2
    times = ["12:34:56", "-838:59:59", "838:59:59.000000", "839:00:00", "-12:34:56.12", "1:00:00", "12:60:00", None]
    assert assert_exact("time(2)", times) == 4


def test_timestamps() -> None:
    """Wall time in the server's zone: repeated hours read as the first, skipped hours and the zero
    TIMESTAMP, or after 2037 in a zone with rules, may go to Python."""
    values: list[str | None] = [
        "2023-11-30 07:34:56.123",
        "2024-03-10 02:30:00",
        "2024-11-03 01:30:00",
        "0000-00-00 00:00:00",
    ]
    values += ["2038-01-19 03:14:07", "1970-01-01 00:00:00", "9999-12-31 23:59:59", "0001-01-01 00:00:00"]
    values += ["2024-02-30 00:00:00", "2024-02-29 12:34:56.1234567", "2024-02-29", None]
    for zone in (ZONE, "UTC", "Asia/Shanghai"):
        assert assert_exact("timestamp(3)", values, zone, may_decline=lambda value, text: True) >= 3
    skipped = "2024-03-10 02:30:00"  # a wall time New York skips: Python reads it with the earlier offset
    declined = lambda value, text: value == skipped or text.startswith("0000") or value >= "2038"  # noqa: E731
    assert assert_exact("timestamp", values, ZONE, may_decline=declined) >= 4


def test_texts_and_binary_strings() -> None:
    texts = ["", "abc", "é€😀", "a\nb\x00", "<&>", "\u2028", None]
    for mysql_type in ("varchar", "char(3)", "text", "longtext", "json", "var_string"):
        assert assert_exact(mysql_type, texts) == len(texts) - 1
    binary = ["", "a", "ab", "abc", "abcd", "\x00\xff\x80é", "€", "a\u0100", "😀", None]
    rng = random.Random(7)
    binary += ["".join(chr(rng.randrange(256)) for _ in range(rng.randrange(12))) for _ in range(300)]
    for mysql_type in ("varbinary", "binary(4)", "blob", "longblob", "tinyblob"):
        assert assert_exact(mysql_type, binary) == len(binary) - 4


def test_binary_strings_of_a_sliced_column() -> None:
    values = pa.array(["x", None, "\xff", "ab", "€"], TEXT).slice(1)
    texts, ok = latin1_base64(values)
    assert texts.to_pylist() == [None, "/w==", "YWI=", None]
    assert ok.to_pylist() == [True, True, True, False]


def test_enum_and_set_with_members() -> None:
    enum_values = ["0", "1", "2", "3", "-1", "01", "65536", "x", None]
    assert assert_exact("enum('a','b''c')", enum_values, may_decline=lambda v, t: v == "01") == 3
    set_values = ["0", "1", "2", "3", "4", "03", "18446744073709551615", None]
    assert assert_exact("set('a','b')", set_values, may_decline=lambda v, t: v == "03") == 4
    many = ",".join(f"'m{n}'" for n in range(63))
    assert column_reader(parse_mysql_type(f"set({many})"), ZONE) is None


@pytest.mark.parametrize("text", ["geometry", "point", "int(x)", "enum('a'"])
def test_types_without_a_twin_are_refused_by_the_parser(text: str) -> None:
    """Types the scalar parser refuses never reach a twin (their group goes to Python)."""
    with pytest.raises(ValueError, match="type"):
        parse_mysql_type(text)


@pytest.mark.parametrize(
    "column",
    [
        ColumnSchema("e", "enum", elements=("lo", "hi", "")),
        ColumnSchema("s", "set", elements=("a", "b", "c")),
        ColumnSchema("s", "set", elements=()),
        ColumnSchema("e", "enum", elements=()),
    ],
)
def test_naming(column: ColumnSchema) -> None:
    """``naming_reader`` on a canonical index/bitmask text: ``schema_facts._named``'s text, or not ok
    where it raises."""
    values = ["0", "1", "2", "3", "4", "7", "8", "65535", None]
    naming = naming_reader(column)
    assert naming is not None
    texts, ok = naming(pa.array(values, TEXT))
    for value, text, took in zip(values, texts.to_pylist(), ok.to_pylist(), strict=True):
        try:
            named = _named({column.name: value}, column)
        except ValueError:
            assert (text, took) == (None, False), value
            continue
        assert named is not None
        assert (text, took) == (named[column.name], True), value


def test_no_naming_without_members() -> None:
    assert naming_reader(ColumnSchema("e", "enum")) is None
    assert naming_reader(ColumnSchema("s", "set", elements=tuple(f"m{n}" for n in range(63)))) is None
