"""The vector twins of the Simple JSON value converters agree with the scalar converters.

For each column type, a column of values is converted twice: one value at a time by
``simple_rows.converter_for`` (the specification) and as one Arrow array by
``simple_columns.column_reader``. A twin may decline a value the scalar takes (only where the case
lists it); it never takes a value the scalar rejects, and never writes another text.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from ticdc_lake.protocols.simple_rows import converter_for
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.spark.arrow_decode.simple_columns import MAX_SET_MEMBERS, TIMESTAMP_TYPE, column_reader

ZONE = "America/New_York"
TEXT = pa.string()
BOOL = pa.bool_()
Value = str | dict[str, object] | None


def _scalar(column: ColumnSchema, value: object, zone: str) -> str | None:
    """The scalar converter's text, or None where it raises ValueError."""
    try:
        return converter_for(column, zone)(value)
    except ValueError:
        return None


def twin(column: ColumnSchema, values: Sequence[Value], zone: str = ZONE) -> list[tuple[str | None, bool]]:
    reader = column_reader(column, zone)
    assert reader is not None, column
    texts, ok = reader.canonical(pa.array(values, reader.arrow_type))
    assert (texts.type, ok.type, ok.null_count, len(texts), len(ok)) == (TEXT, BOOL, 0, len(values), len(values))
    return list(zip(texts.to_pylist(), ok.to_pylist(), strict=True))


def assert_exact(
    column: ColumnSchema,
    values: Sequence[Value],
    declined: Sequence[Value] = (),
    zone: str = ZONE,
    *,
    may_decline: Callable[[Value, str], bool] | None = None,
) -> int:
    """Every value is taken with the scalar's text, or declined (null text, ok False) exactly where
    the scalar rejects it or it is in ``declined`` (which the scalar must take); nulls stay null.
    ``may_decline(value, scalar text)``: whether a value the scalar takes may also be declined.
    Returns how many values were taken."""
    everything = [*values, *declined]
    for value in declined:
        assert _scalar(column, value, zone) is not None, f"declined value {value!r} is rejected by the scalar"
    got = twin(column, everything, zone)
    wrong = []
    for n, (value, result) in enumerate(zip(everything, got, strict=True)):
        text = None if value is None else _scalar(column, value, zone)
        allowed: list[tuple[str | None, bool]]
        if value is None:
            allowed = [(None, True)]
        elif text is None or n >= len(values):
            allowed = [(None, False)]
        elif may_decline is not None and may_decline(value, text):
            allowed = [(text, True), (None, False)]
        else:
            allowed = [(text, True)]
        if result not in allowed:
            wrong.append((value, result, allowed))
    assert wrong == [], f"{column}: (value, twin, allowed) {wrong[:10]}"
    return sum(1 for v, (t, ok) in zip(everything, got, strict=True) if v is not None and ok)


def other_text(value: Value, text: str) -> bool:
    """The scalar takes the value as another text (``"007"`` as ``7``, ``QR==`` as ``QQ==``)."""
    return text != value


def _random_digits(rng: random.Random, count: int) -> list[str]:
    texts = []
    for _ in range(count):
        width = rng.choice([1, 2, 3, 5, 10, 18, 19, 20, 21])
        text = "".join(rng.choice(string.digits) for _ in range(width))
        texts.append(rng.choice(["", "-", "+", "0", "-0"]) + text)
    return texts


# ---------------------------------------------------------------------------------- integers
INTEGER_COLUMNS = [
    ColumnSchema("c", "tinyint"),
    ColumnSchema("c", "tinyint", unsigned=True),
    ColumnSchema("c", "smallint"),
    ColumnSchema("c", "smallint", unsigned=True),
    ColumnSchema("c", "mediumint"),
    ColumnSchema("c", "mediumint", unsigned=True),
    ColumnSchema("c", "int"),
    ColumnSchema("c", "int", unsigned=True),
    ColumnSchema("c", "bigint"),
    ColumnSchema("c", "bigint", unsigned=True),
    ColumnSchema("c", "year"),
    ColumnSchema("c", "bit", length=1),
    ColumnSchema("c", "bit", length=8),
    ColumnSchema("c", "bit", length=63),
    ColumnSchema("c", "bit", length=64),
    ColumnSchema("c", "bit"),
]
EDGES = sorted({str(s * ((1 << k) + d)) for k in range(66) for d in (-1, 0, 1) for s in (1, -1)})
MALFORMED_INTEGERS = [
    "",
    "-",
    "+1",
    " 1",
    "1 ",
    "1.0",
    "1e2",
    "0x1",
    "\u0661",
    "²",
    "1_000",
    "--1",
    "99999999999999999999999",
]


@pytest.mark.parametrize("column", INTEGER_COLUMNS, ids=lambda c: c.type_text() + str(c.length or ""))
def test_integers(column: ColumnSchema) -> None:
    values = [*EDGES, *MALFORMED_INTEGERS, "0", None, "2155", "1901", "2156"]
    taken = assert_exact(column, values)
    assert taken >= 2
    # Leading zeros and -0, taken by the scalar as another text where in range: declined.
    assert assert_exact(column, ["007", "-0", "-007", "00"], may_decline=other_text) == 0
    assert_exact(column, _random_digits(random.Random(column.type_text()), 500), may_decline=other_text)


# ---------------------------------------------------------------------------------- strings
def test_text_types() -> None:
    for mysql_type in ("char", "varchar", "var_string", "tinytext", "text", "mediumtext", "longtext", "json", "vector"):
        values = ["", "x", "中文", "a\nb", "\x00", '"q"', None, "😀" * 30]
        assert assert_exact(ColumnSchema("c", mysql_type), values) == 7


BASE64_TYPES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")


@pytest.mark.parametrize("mysql_type", BASE64_TYPES)
def test_base64(mysql_type: str) -> None:
    rng = random.Random(mysql_type)
    standard = [
        base64.b64encode(bytes(rng.randrange(256) for _ in range(rng.randrange(12)))).decode() for _ in range(300)
    ]
    mangled = [t[:-2] + "R=" if t.endswith("==") else t[:-1] for t in standard if t]
    wrong = ["A", "AB=", "A===", "====", "QQ", "Q Q==", "QQ==\n", "-_==", "QUJD\n", "QUI="]
    column = ColumnSchema("c", mysql_type)
    assert assert_exact(column, [*standard, *wrong, "", None]) >= 300
    assert assert_exact(column, mangled, may_decline=other_text) == 0
    # Non-zero padding bits (another text), excess padding: taken by the scalar, declined.
    assert assert_exact(column, ["QR==", "QUJ="], may_decline=other_text) == 0
    assert assert_exact(column, [], declined=["QUJD="]) == 0


# ---------------------------------------------------------------------------------- numbers
def test_float_and_double() -> None:
    rng = random.Random(7)
    randoms = [repr(rng.uniform(-1e300, 1e300)) for _ in range(100)]
    randoms += [repr(rng.random() * 10 ** rng.randint(-320, 310)) for _ in range(200)]
    randoms += [f"{rng.random():.{rng.randint(0, 20)}f}" for _ in range(100)]
    edges = [
        "0",
        "-0",
        "1.5",
        "340282350000000000000000000000000000000",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "1.7976931348623159e308",
        "17976931348623157" + "0" * 292,
        "17976931348623159" + "0" * 292,
        "1" + "0" * 309,
        "5e-324",
        "1e-400",
        "1e400",
        "-1e400",
        "0.000001",
        "1E5",
        "1e+5",
    ]
    malformed = [
        "",
        "NaN",
        "nan",
        "inf",
        "-inf",
        "Infinity",
        "1_0",
        " 1",
        "1 ",
        "0x10",
        "\u0661",
        "e5",
    ]
    for mysql_type in ("float", "double"):
        column = ColumnSchema("c", mysql_type)
        assert assert_exact(column, [*edges, *randoms, *malformed, None], declined=["1.", ".5", "+1"]) >= 400


def test_decimal() -> None:
    rng = random.Random(8)
    randoms = [
        rng.choice(["", "-"])
        + "".join(rng.choice(string.digits) for _ in range(rng.randint(1, 40)))
        + rng.choice(["", "." + "".join(rng.choice(string.digits) for _ in range(rng.randint(1, 30)))])
        for _ in range(300)
    ]
    wrong = ["", "-", "1.", ".5", "+1", "1e5", "1.2.3", " 1", "NaN", "\u0661", "0x1", "--1"]
    for mysql_type in ("decimal", "numeric"):
        assert assert_exact(ColumnSchema("c", mysql_type, length=65, scale=30), [*randoms, *wrong, "-0.0", None]) == 301


# ---------------------------------------------------------------------------------- dates and times
def _wall(rng: random.Random, fsp: int) -> str:
    """A random wall time, sometimes with out-of-range fields, ``fsp`` fraction digits."""

    def pick(usual: int, *odd: int) -> int:
        return usual if rng.random() < 0.95 else rng.choice(odd)

    fields = [
        pick(rng.choice([rng.randint(1, 9999), rng.randint(1970, 2040)]), 0),
        pick(rng.randint(1, 12), 0, 13),
        pick(rng.randint(1, 28), 29, 30, 31, 0, 32),
        pick(rng.randint(0, 23), 24),
        pick(rng.randint(0, 59), 60),
        pick(rng.randint(0, 59), 60),
    ]
    text = "{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}".format(*fields)
    return text + ("." + "".join(rng.choice(string.digits) for _ in range(fsp)) if fsp else "")


def test_date() -> None:
    rng = random.Random(9)
    randoms = [_wall(rng, 0)[:10] for _ in range(300)]
    wrong = ["", "2020-1-01", "2020-01-1", "20200101", "2020/01/01", "2020-01-01 ", "202\uff10-01-01", "-2020-01-01"]
    assert assert_exact(ColumnSchema("c", "date"), [*randoms, *wrong, "0000-00-00", "2020-02-30", None]) >= 200


@pytest.mark.parametrize("fsp", [0, 3, 6])
def test_datetime(fsp: int) -> None:
    rng = random.Random(fsp)
    randoms = [_wall(rng, rng.choice([0, fsp, 7])) for _ in range(400)]
    wrong = ["", "2020-01-01", "2020-01-01T00:00:00", "2020-01-01 00:00:00.", "2020-01-01 0:00:00", "2020-01-01 00:00"]
    column = ColumnSchema("c", "datetime", fsp=fsp)
    assert assert_exact(column, [*randoms, *wrong, "0000-00-00 00:00:00", "2020-02-30 10:00:00", None]) >= 200


def test_time() -> None:
    rng = random.Random(10)
    randoms = [
        rng.choice(["", "-"])
        + f"{rng.randint(0, 900):0{rng.choice([2, 3])}d}:{rng.randint(0, 61):02d}:{rng.randint(0, 61):02d}"
        + rng.choice(["", "." + "1" * rng.randint(1, 7), "."])
        for _ in range(500)
    ]
    edges = [
        "838:59:59",
        "-838:59:59.000000",
        "839:00:00",
        "00:00:00",
        "-00:00:00",
        "099:00:00",
        "1:00:00",
        "1000:00:00",
    ]
    assert assert_exact(ColumnSchema("c", "time", fsp=6), [*randoms, *edges, None]) >= 200


# ---------------------------------------------------------------------------------- TIMESTAMP
ZONES = ["UTC", "America/New_York", "Asia/Shanghai", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata"]


def _timestamps(rng: random.Random, zone: str, count: int) -> list[Value]:
    values: list[Value] = []
    for _ in range(count):
        if rng.random() < 0.6:
            instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 2**31 + 10**8))
            local = instant.astimezone(ZoneInfo(zone))
            text = local.strftime("%Y-%m-%d %H:%M:%S") + rng.choice(["", ".5", ".123456"])
        else:
            text = _wall(rng, rng.choice([0, 6]))
        values.append({"location": rng.choice([zone, zone, "", "Local"]), "value": text})
    return values


def after_2037(value: Value, text: str) -> bool:
    """A wall time from 2038 on in a zone other than UTC (Arrow ignores the daylight saving rules
    Python applies from there on): the twin declines it."""
    assert isinstance(value, dict)
    return str(value["value"]) >= "2038" and value["location"] != "UTC"


@pytest.mark.parametrize("zone", ZONES)
def test_timestamp_random(zone: str) -> None:
    column = ColumnSchema("c", "timestamp", fsp=6)
    values = _timestamps(random.Random(zone), zone, 600)
    assert assert_exact(column, values, zone=zone, may_decline=after_2037) >= 300


def test_timestamp_edges() -> None:
    column = ColumnSchema("c", "timestamp", fsp=6)
    ny = "America/New_York"
    edges: list[Value] = [
        {"location": ny, "value": "2024-11-03 01:30:00"},  # twice that night: the first (EDT)
        {"location": ny, "value": "2024-03-10 03:30:00.5"},
        {"location": "UTC", "value": "0001-01-01 00:00:00"},
        {"location": "Asia/Shanghai", "value": "0001-01-01 00:00:00"},  # year 0 in UTC: rejected
        {"location": "UTC", "value": "9999-12-31 23:59:59.999999"},
        {"location": "America/Los_Angeles", "value": "9999-12-31 23:59:59"},  # year 10000 in UTC
        {"location": "Nope/Zone", "value": "2020-01-01 00:00:00"},
        {"location": "utc", "value": "2020-01-01 00:00:00"},
        {"location": None, "value": "2020-01-01 00:00:00"},
        {"location": "UTC", "value": None},
        {"location": "UTC", "value": "2020-01-01T00:00:00"},
        {"location": "UTC", "value": "2020-02-30 00:00:00"},
        {"location": "UTC", "value": "2020-01-01 24:00:00"},
        {"location": "UTC", "value": "2020-01-01 00:00:00."},
        {"location": "UTC", "value": "2020-01-01 00:00:00.1234567"},
        {"location": "UTC", "value": " 2020-01-01 00:00:00"},
        {"location": "Europe/Paris", "value": "1900-06-01 12:00:00"},  # local mean time offsets
        {"location": "America/New_York", "value": "1850-06-01 12:00:00"},
        {"location": "America/New_York", "value": "2037-07-01 12:00:00"},
        None,
    ]
    declined: list[Value] = [
        {"location": ny, "value": "2024-03-10 02:30:00"},  # skipped when the clocks jump forward
        {"location": "UTC", "value": "0000-00-00 00:00:00"},  # the zero TIMESTAMP, kept as sent
        {"location": "Local", "value": "0000-00-00 00:00:00.000"},
        {"location": "Pacific/Kiritimati", "value": "9999-12-31 23:59:59"},  # a zone's rules after 2037
        {"location": ny, "value": "2038-07-01 12:00:00"},
    ]
    assert assert_exact(column, edges, declined, zone=ny) == 7
    assert assert_exact(column, [{"location": "", "value": "2020-01-01 00:00:00"}], zone="UTC") == 1


def test_timestamp_reads_as_an_object() -> None:
    reader = column_reader(ColumnSchema("c", "timestamp"), "UTC")
    assert reader is not None
    assert reader.arrow_type == TIMESTAMP_TYPE
    texts, ok = reader.canonical(pa.array([None, None], TIMESTAMP_TYPE))
    assert (texts.to_pylist(), ok.to_pylist()) == ([None, None], [True, True])


# ---------------------------------------------------------------------------------- ENUM and SET
def test_enum() -> None:
    column = ColumnSchema("c", "enum", elements=("small", "medium", "大 large"))
    values = ["0", "1", "2", "3", "4", "-1", "", "x", "18446744073709551615", "18446744073709551616", None]
    assert assert_exact(column, values, declined=["01", "-0", "003"]) == 4
    assert assert_exact(ColumnSchema("c", "enum"), ["0", "1", None]) == 1  # no members: only 0 is named


def test_set() -> None:
    members = ("x", "y", "中", "a,b")
    column = ColumnSchema("c", "set", elements=members)
    values = [str(n) for n in range(20)] + ["-1", "", "x", "99999999999999999999", None]
    assert assert_exact(column, values, declined=["01", "-0"]) == 16
    wide = ColumnSchema("c", "set", elements=tuple(f"m{n}" for n in range(MAX_SET_MEMBERS)))
    rng = random.Random(11)
    masks = [str(rng.getrandbits(MAX_SET_MEMBERS + rng.choice([-40, 0, 0, 1, 3]))) for _ in range(300)]
    assert assert_exact(wide, [*masks, str((1 << MAX_SET_MEMBERS) - 1), str(1 << MAX_SET_MEMBERS)]) >= 150
    assert assert_exact(ColumnSchema("c", "set"), ["0", "1", None]) == 1


def test_types_without_a_twin() -> None:
    too_wide = ColumnSchema("c", "set", elements=tuple(f"m{n}" for n in range(MAX_SET_MEMBERS + 1)))
    for column in (too_wide, ColumnSchema("c", "geometry"), ColumnSchema("c", "unknown")):
        assert column_reader(column, "UTC") is None


def test_chunked_and_empty_columns() -> None:
    """What ``read_json`` gives: chunked columns; and an empty or all-null column."""
    for column in (*INTEGER_COLUMNS[:2], ColumnSchema("c", "varchar"), ColumnSchema("c", "set", elements=("a",))):
        reader = column_reader(column, "UTC")
        assert reader is not None
        chunked = pa.chunked_array([pa.array(["1", None], TEXT), pa.array(["0"], TEXT)])
        texts, ok = reader.canonical(chunked)
        assert ok.to_pylist() == [True, True, True]
        for values in (pa.array([], TEXT), pa.nulls(3, TEXT)):
            texts, ok = reader.canonical(values)
            assert texts.null_count == len(values)
            assert ok.to_pylist() == [True] * len(values)
