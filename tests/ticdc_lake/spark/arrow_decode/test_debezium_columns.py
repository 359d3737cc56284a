"""The vector twins of the Debezium value converters agree with the scalar converters.

For each covered Connect field schema (spelled as TiCDC writes it, with and without the TiDB
extension's ``tidb_type``), a column of values is converted twice: one value at a time by
``debezium_values.converter_for`` (the specification) and as one Arrow array by
``debezium_columns.column_reader``. A twin may decline a value the scalar takes (only where the
case says so); it never takes a value the scalar rejects, and never writes another text.
"""

from __future__ import annotations

import base64
import math
import random
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest

from ticdc_lake.protocols.debezium_values import _LOGICAL, Number, converter_for, field_type
from ticdc_lake.spark.arrow_decode.debezium_columns import column_reader

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
#: Every ±2^k and its neighbours that int64 holds: each integer bound and one past it is here.
POWERS = sorted(
    {
        v
        for k in range(64)
        for sign in (1, -1)
        for v in (sign * (1 << k) - 1, sign * (1 << k), sign * (1 << k) + 1)
        if INT64_MIN <= v <= INT64_MAX
    }
)
INT64_EDGES = [0, INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1, *POWERS, None]
US = 1_000_000
#: µs since the epoch of 0001-01-01 00:00:00 and of 9999-12-31 23:59:59.999999.
FIRST_US, LAST_US = -62135596800 * US, 253402300800 * US - 1
FIRST_DAY, LAST_DAY = -719162, 2932896
TIME_MAX_US = 3020399999999  # 838:59:59.999999
INT = pa.int64()
TEXT = pa.string()
BOOL = pa.bool_()


def _scalar(convert: Callable[[object], str], value: object) -> str | None:
    """The scalar converter's text, or None where it raises ValueError."""
    try:
        return convert(value)
    except ValueError:
        return None


def twin(spec: dict[str, Any], values: Sequence[object]) -> tuple[list[str | None], list[bool], list[str | None]]:
    """(twin texts, twin ok, scalar texts) of ``values`` under the field schema ``spec``."""
    ft = field_type(spec)
    reader = column_reader(ft)
    assert reader is not None, spec
    texts, ok = reader.canonical(pa.array(values, reader.arrow_type))
    assert (texts.type, ok.type, ok.null_count, len(texts), len(ok)) == (TEXT, BOOL, 0, len(values), len(values))
    convert = converter_for(ft)
    return texts.to_pylist(), ok.to_pylist(), [None if v is None else _scalar(convert, v) for v in values]


def assert_exact(
    spec: dict[str, Any], values: Sequence[object], usual: Sequence[object], declined: Sequence[object] = ()
) -> None:
    """Every value is taken with the scalar's text, or declined with a null text exactly where the
    scalar rejects it or it is listed in ``declined`` (which the scalar takes); nulls stay null."""
    everything = [*usual, *values, *declined]
    texts, ok, scalar = twin(spec, everything)
    for value in usual:
        assert _scalar(converter_for(field_type(spec)), value) is not None, f"usual value {value!r} rejected"
    for value in declined:
        assert _scalar(converter_for(field_type(spec)), value) is not None, f"declined value {value!r} rejected"
    expected = [
        (None, True) if v is None else (None, False) if s is None or v in declined else (s, True)
        for v, s in zip(everything, scalar, strict=True)
    ]
    got = list(zip(texts, ok, strict=True))
    wrong = [(v, g, e) for v, g, e in zip(everything, got, expected, strict=True) if g != e]
    assert wrong == [], spec


def assert_agrees(spec: dict[str, Any], values: Sequence[object], usual: Sequence[bool]) -> None:
    """Scalar rejects → ok False; ok → the scalar's text; a usual value → ok."""
    texts, ok, scalar = twin(spec, values)
    wrong = [
        (v, t, o, s)
        for v, t, o, s, u in zip(values, texts, ok, scalar, usual, strict=True)
        if (v is None and (t, o) != (None, True))
        or (v is not None and ((s is None and o) or (o and t != s) or (u and not o)))
    ]
    assert wrong == [], spec


# ---------------------------------------------------------------------------------- integers
INTEGERS: list[tuple[dict[str, Any], list[int]]] = [
    ({"type": "int16", "tidb_type": "tinyint"}, [-128, 127, 0, 1, -1, 42]),
    ({"type": "int16", "tidb_type": "tinyint unsigned"}, [0, 1, 255, 200]),
    ({"type": "int16", "tidb_type": "smallint"}, [-32768, 32767, -1, 1000]),
    ({"type": "int32", "tidb_type": "smallint unsigned"}, [0, 65535, 1]),
    ({"type": "int32", "tidb_type": "mediumint"}, [-(1 << 23), (1 << 23) - 1, -5]),
    ({"type": "int32", "tidb_type": "mediumint unsigned"}, [0, (1 << 24) - 1]),
    ({"type": "int32", "tidb_type": "int"}, [-(1 << 31), (1 << 31) - 1, 7]),
    ({"type": "int64", "tidb_type": "int unsigned"}, [0, (1 << 32) - 1, 123456]),
    ({"type": "int64", "tidb_type": "bigint"}, [INT64_MIN, INT64_MAX, 0, -1]),
    ({"type": "int64", "tidb_type": "bigint unsigned"}, [0, 1, INT64_MAX, -1, INT64_MIN, -2]),
    ({"type": "int32", "tidb_type": "year"}, [0, 1901, 2155, 2024]),
    ({"type": "int64", "tidb_type": "decimal"}, [INT64_MIN, INT64_MAX]),  # no integer bounds: int64's
    ({"type": "int8"}, [-128, 127, 0]),
    ({"type": "int16"}, [-32768, 32767, 0]),
    ({"type": "int32", "optional": False}, [-(1 << 31), (1 << 31) - 1]),
    ({"type": "int64"}, [INT64_MIN, INT64_MAX, -1]),
    ({"type": "int64", "name": "custom.Logical"}, [INT64_MIN, INT64_MAX]),
    ({"type": "int32", "name": "io.debezium.time.Year"}, [0, 1901, 2155, 1999]),
    ({"type": "int32", "name": "io.debezium.time.Year", "tidb_type": "year"}, [0, 2155]),
]


@pytest.mark.parametrize(("spec", "usual"), INTEGERS, ids=[str(s) for s, _ in INTEGERS])
def test_integers_take_their_bounds_and_wrap_bigint_unsigned(spec: dict[str, Any], usual: list[int]) -> None:
    assert_exact(spec, INT64_EDGES, usual)


def test_bigint_unsigned_wraps_the_negative_int64() -> None:
    texts, ok, _ = twin({"type": "int64", "tidb_type": "bigint unsigned"}, [-1, INT64_MIN, 5, None])
    assert (texts, ok) == (["18446744073709551615", "9223372036854775808", "5", None], [True, True, True, True])


def test_int_unsigned_declines_a_negative_value() -> None:
    texts, ok, _ = twin({"type": "int64", "tidb_type": "int unsigned"}, [-1, 4294967295, 4294967296])
    assert (texts, ok) == ([None, "4294967295", None], [False, True, False])


# ---------------------------------------------------------------------------------- boolean, strings
@pytest.mark.parametrize("spec", [{"type": "boolean"}, {"type": "boolean", "tidb_type": "bit"}])
def test_bit1_booleans(spec: dict[str, Any]) -> None:
    assert_exact(spec, [None], [True, False])
    assert twin(spec, [True, False, None])[:2] == (["1", "0", None], [True, True, True])


STRINGS = ["", "a", "héllo wörld", "back\\slash", 'quote"d', "line\nbreak", "\x00", "😀", "x" * 10_000, " lead"]


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "string"},
        {"type": "string", "tidb_type": "varchar"},
        {"type": "string", "tidb_type": "char"},
        {"type": "string", "tidb_type": "text"},
        {"type": "string", "tidb_type": "longtext"},
        {"type": "string", "name": "io.debezium.data.Json"},
        {"type": "string", "name": "io.debezium.data.Json", "tidb_type": "json"},
        {"type": "string", "name": "io.debezium.data.TiDBVectorFloat32"},
        {"type": "string", "name": "custom.Name"},
        {"type": "bytes"},  # no tidb_type: the text as sent
    ],
)
def test_strings_are_kept(spec: dict[str, Any]) -> None:
    assert_exact(spec, [None], STRINGS)


ENUM = {"type": "string", "name": "io.debezium.data.Enum", "parameters": {"allowed": "a,b\\,c,d,"}}
ENUM_VALUES = ["b", "c", "x", "A", "a,d", " a", "a ", None]


@pytest.mark.parametrize("spec", [ENUM, {**ENUM, "tidb_type": "enum"}])
def test_enum_members_are_checked(spec: dict[str, Any]) -> None:
    assert_exact(spec, ENUM_VALUES, ["a", "b,c", "d", ""])


def test_enum_without_allowed_members_is_unchecked() -> None:
    assert_exact({"type": "string", "name": "io.debezium.data.Enum"}, [None], ["a", "", "anything,at all"])


SET = {"type": "string", "name": "io.debezium.data.EnumSet", "parameters": {"allowed": "a,b,c"}}
SET_VALUES = ["d", "a,d", "d,a", ",", "a,", ",a", "a,,b", "A", "a b", "b,c,a,x", None]


@pytest.mark.parametrize("spec", [SET, {**SET, "tidb_type": "set"}])
def test_set_members_are_checked(spec: dict[str, Any]) -> None:
    assert_exact(spec, SET_VALUES, ["", "a", "a,b", "a,b,c", "c,a", "b,b"])


def test_set_with_an_empty_member_or_without_allowed() -> None:
    assert_exact({**SET, "parameters": {"allowed": ""}}, ["a", ",", None], [""])
    assert_exact({"type": "string", "name": "io.debezium.data.EnumSet"}, [None], ["", "x,y", ","])


BASE64_USUAL = ["", "QQ==", "QUI=", "QUJD", "AAAA", "////", "+/+/", "AA==", "/w==", "AAE=", "AP8="]
#: Standard but with non-zero padding bits: the scalar writes them standard ("QR==" → "QQ==").
BASE64_DECLINED = ["QR==", "QUJ=", "AB==", "AAF=", "/x=="]
BASE64_BAD = [
    "QQ=",
    "Q===",
    "====",
    "=",
    "Q",
    "QUI",
    "QQ==QQ==",
    "QQ==\n",
    "QQ==\n",
    " QQ==",
    "QQ ==",
    "-_-_",
    "QQ=A",
    "é===",
    "QUJDRA",
    None,
]


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "string", "tidb_type": "blob"},
        {"type": "string", "tidb_type": "tinyblob"},
        {"type": "string", "tidb_type": "longblob"},
        {"type": "string", "tidb_type": "varbinary"},
        {"type": "string", "tidb_type": "binary"},
        {"type": "bytes", "tidb_type": "binary"},
    ],
)
def test_binary_base64_is_taken_only_when_already_standard(spec: dict[str, Any]) -> None:
    assert_exact(spec, BASE64_BAD, BASE64_USUAL, BASE64_DECLINED)


# ---------------------------------------------------------------------------------- dates and times
DATE = {"type": "int32", "name": "io.debezium.time.Date"}


@pytest.mark.parametrize("spec", [DATE, {**DATE, "tidb_type": "date"}])
def test_date_from_days_years_1_to_9999(spec: dict[str, Any]) -> None:
    usual = [0, 1, -1, FIRST_DAY, LAST_DAY, 19692, -25567, -354285, FIRST_DAY + 365]  # 1000-01-01, year 2
    assert_exact(spec, [FIRST_DAY - 1, LAST_DAY + 1, *INT64_EDGES], usual)
    assert twin(spec, [FIRST_DAY, -354285, 0])[0] == ["0001-01-01", "1000-01-01", "1970-01-01"]


MILLIS = {"type": "int64", "name": "io.debezium.time.Timestamp"}
MICROS = {"type": "int64", "name": "io.debezium.time.MicroTimestamp"}


@pytest.mark.parametrize("spec", [MILLIS, {**MILLIS, "tidb_type": "datetime"}])
def test_datetime_from_millis(spec: dict[str, Any]) -> None:
    first, last = FIRST_US // 1000, LAST_US // 1000
    usual = [0, 1, -1, 10, 100, 999, 1000, 1001, 1010, 1100, -1000, -999, first, last, 1701347696123, -30610224000000]
    assert_exact(spec, [first - 1, last + 1, *INT64_EDGES], usual)


@pytest.mark.parametrize("spec", [MICROS, {**MICROS, "tidb_type": "datetime"}])
def test_datetime_from_micros(spec: dict[str, Any]) -> None:
    usual = [0, 1, -1, 10, 100, 100000, 999999, 1000000, -1000000, -999999, FIRST_US, LAST_US, 1701347696123450]
    assert_exact(spec, [FIRST_US - 1, LAST_US + 1, *INT64_EDGES], usual)
    texts = twin(spec, [1, 10, 100000, 999999, 0, -1])[0]
    assert texts == [
        "1970-01-01 00:00:00.000001",
        "1970-01-01 00:00:00.00001",
        "1970-01-01 00:00:00.1",
        "1970-01-01 00:00:00.999999",
        "1970-01-01 00:00:00",
        "1969-12-31 23:59:59.999999",
    ]


MICRO_TIME = {"type": "int64", "name": "io.debezium.time.MicroTime"}


@pytest.mark.parametrize("spec", [MICRO_TIME, {**MICRO_TIME, "tidb_type": "time"}])
def test_time_from_micros_beyond_24_hours_and_negative(spec: dict[str, Any]) -> None:
    usual = [0, 1, -1, 10, 100000, 999999, US, -US, 86399999999, 86400000000, 360000000000, -45296123456]
    usual += [TIME_MAX_US, -TIME_MAX_US, 3020399000000, 45296100000, 59 * US, 3600 * US, 36000 * US]
    assert_exact(spec, [TIME_MAX_US + 1, -TIME_MAX_US - 1, *INT64_EDGES], usual)
    texts = twin(spec, [-1, 360000000000, -TIME_MAX_US, 45296120000])[0]
    assert texts == ["-00:00:00.000001", "100:00:00", "-838:59:59.999999", "12:34:56.12"]


ZONED = {"type": "string", "name": "io.debezium.time.ZonedTimestamp"}
ZONED_USUAL = [
    "2020-01-01T00:00:00Z",
    "1970-01-01T00:00:00Z",
    "2020-01-01T12:34:56.1Z",
    "2020-01-01T12:34:56.123456Z",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999Z",
    "0000-00-00T00:00:00Z",
]
ZONED_OTHER = [
    "2020-01-01T12:34:56.1234567Z",
    "2020-01-01T12:34:56.Z",
    "2020-01-01 12:34:56Z",
    "2020-01-01T12:34:56",
    "2020-01-01T12:34:56+00:00",
    "2020-13-01T00:00:00Z",
    "2020-01-32T00:00:00Z",
    "2020-01-01T24:00:00Z",
    "2020-01-01T00:60:00Z",
    "2020-01-01T00:00:60Z",
    "2020-01-01T00:00:00Z\n",
    "2020-01-01T00:00:00z",
    "20-01-01T00:00:00Z",
    "\uff12020-01-01T00:00:00Z"  # a fullwidth digit,
    "",
    None,
]


@pytest.mark.parametrize("spec", [ZONED, {**ZONED, "tidb_type": "timestamp"}])
def test_zoned_timestamp_in_the_pattern(spec: dict[str, Any]) -> None:
    assert_exact(spec, ZONED_OTHER, ZONED_USUAL)


# ---------------------------------------------------------------------------------- doubles
DOUBLES = [0.0, -0.0, 100.0, -3.0, 0.1, 2.5, 123.45, 1e15 + 0.5, 1e16, 1e-4, 1e-5, 1e-7, 1.5e20, 1e21]
DOUBLES += [5e-324, 1.7976931348623157e308, 0.30000000000000004, float("nan"), float("inf"), float("-inf")]


def _as_sent(text: str) -> object:
    """What the Python decoder reads from a double's JSON text: an int, or the number's text (``Number``)."""
    return int(text) if text.lstrip("-").isdigit() else Number(text)


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "float"},
        {"type": "double"},
        {"type": "float", "tidb_type": "float"},
        {"type": "double", "tidb_type": "double unsigned"},
        {"type": "double", "tidb_type": "decimal"},
        {"type": "double", "tidb_type": "decimal unsigned"},
    ],
)
def test_doubles_read_back_from_the_text_pyarrow_writes(spec: dict[str, Any]) -> None:
    """pyarrow keeps no JSON text of a double; the vector decoder takes a row only where the payload
    holds the text pyarrow writes for it (``json_text``), so that text is the value as sent here."""
    rng = random.Random(4)
    values: list[float | None] = [*DOUBLES, None]
    values += [rng.uniform(-1e9, 1e9) for _ in range(3000)] + [round(rng.uniform(-1e6, 1e6), 2) for _ in range(3000)]
    values += [float(rng.randrange(-(10**12), 10**12)) for _ in range(500)]
    reader = column_reader(field_type(spec))
    assert reader is not None
    assert reader.arrow_type == pa.float64()
    array = pa.array(values, pa.float64())
    texts, ok = reader.canonical(array)
    convert = converter_for(field_type(spec))
    sent = array.cast(pa.string()).to_pylist()
    expected = [None if t is None else _scalar(convert, _as_sent(t)) for t in sent]
    got, good = texts.to_pylist(), ok.to_pylist()
    assert all(g == e for g, e, k in zip(got, expected, good, strict=True) if k)
    assert not any(k and e is None and t is not None for t, e, k in zip(sent, expected, good, strict=True))
    decimal = spec.get("tidb_type", "").startswith("decimal")
    usual = [
        k
        for v, k in zip(values, good, strict=True)
        if v is not None and math.isfinite(v) and (not decimal or "e" not in str(pa.scalar(v).cast(pa.string())))
    ]
    assert all(usual)
    assert len(usual) > 6000


# ---------------------------------------------------------------------------------- coverage
NOT_COVERED = [
    {"type": "bytes", "name": "io.debezium.data.Bits", "parameters": {"length": "8"}},
    {"type": "bytes", "name": "io.debezium.data.Bits", "tidb_type": "bit"},
    {"type": "int64", "name": "io.debezium.time.NanoTimestamp"},
    {"type": "string", "name": "io.debezium.data.Uuid"},
    {"type": "array"},
    {"type": "map"},
    {"type": "struct"},
    {"type": "int128"},
]


@pytest.mark.parametrize("spec", NOT_COVERED, ids=[str(s) for s in NOT_COVERED])
def test_no_reader_where_there_is_no_exact_twin(spec: dict[str, Any]) -> None:
    assert column_reader(field_type(spec)) is None


def test_every_logical_name_of_the_scalar_converters_has_a_reader() -> None:
    types = {name: column_reader(field_type({"type": "int64", "name": name})) for name in _LOGICAL}
    assert {name: None if r is None else r.arrow_type for name, r in types.items()} == {
        "io.debezium.time.Date": INT,
        "io.debezium.time.Timestamp": INT,
        "io.debezium.time.MicroTimestamp": INT,
        "io.debezium.time.ZonedTimestamp": TEXT,
        "io.debezium.time.MicroTime": INT,
        "io.debezium.time.Year": INT,
        "io.debezium.data.Json": TEXT,
        "io.debezium.data.TiDBVectorFloat32": TEXT,
    }


# ---------------------------------------------------------------------------------- randomized
def _random_ints(rng: random.Random, low: int, high: int, n: int) -> list[tuple[object, bool]]:
    """Values in low..high (usual), near the bounds, anywhere in int64, and nulls."""
    out: list[tuple[object, bool]] = []
    for _ in range(n):
        kind = rng.randrange(10)
        if kind < 5:
            out.append((rng.randint(low, high), True))
        elif kind < 8:
            edge = rng.choice((low, high)) + rng.randint(-3, 3)
            out.append((edge, low <= edge <= high) if INT64_MIN <= edge <= INT64_MAX else (None, False))
        elif kind < 9:
            out.append((rng.randint(INT64_MIN, INT64_MAX), False))
        else:
            out.append((None, False))
    return out


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice("ab,\\\n é😀\x00Z0") for _ in range(rng.randrange(8)))


def _random_base64(rng: random.Random) -> tuple[object, bool]:
    text = base64.b64encode(rng.randbytes(rng.randrange(7))).decode("ascii")
    if rng.random() < 0.6:
        return text, True
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.choice("A=/+\n -_Qé") + text[at + rng.randrange(2) :], False


def _random_zoned(rng: random.Random) -> tuple[object, bool]:
    moment = datetime(1, 1, 1) + timedelta(microseconds=rng.randrange(LAST_US - FIRST_US))
    digits = rng.randrange(7)
    fraction = f".{moment.microsecond:06d}"[: digits + 1] if digits else ""
    text = moment.strftime("%Y-%m-%dT%H:%M:%S").rjust(19, "0") + fraction + "Z"
    text = f"{moment.year:04d}" + text[text.index("-") :]
    if rng.random() < 0.6:
        return text, True
    at = rng.randrange(len(text))
    return text[:at] + rng.choice("0123456789:-T. Z") + text[at + 1 :], False


def _random_members(rng: random.Random, members: Sequence[str], *, is_set: bool) -> tuple[object, bool]:
    """Members, non-members and empty parts; usual: an ENUM member, a SET of members, or empty."""
    picked = [rng.choice([*members, "x", "", "A"]) for _ in range(rng.randrange(1, 4) if is_set else 1)]
    text = ",".join(picked)
    usual = text == "" or (all(p in members for p in picked) if is_set else text in members)
    return text, usual


def _ints_between(low: int, high: int) -> Callable[[random.Random], list[tuple[object, bool]]]:
    return lambda rng: _random_ints(rng, low, high, 3000)


RANDOM_CASES: list[tuple[dict[str, Any], Callable[[random.Random], list[tuple[object, bool]]]]] = [
    *[(spec, _ints_between(min(usual), max(usual))) for spec, usual in INTEGERS],
    (DATE, lambda rng: _random_ints(rng, FIRST_DAY, LAST_DAY, 3000)),
    (MILLIS, lambda rng: _random_ints(rng, FIRST_US // 1000, LAST_US // 1000, 3000)),
    (MICROS, lambda rng: _random_ints(rng, FIRST_US, LAST_US, 3000)),
    (MICRO_TIME, lambda rng: _random_ints(rng, -TIME_MAX_US, TIME_MAX_US, 3000)),
    ({"type": "boolean"}, lambda rng: [(rng.choice((True, False, None)), True) for _ in range(3000)]),
    ({"type": "string"}, lambda rng: [(_random_text(rng), True) for _ in range(3000)]),
    ({"type": "string", "tidb_type": "blob"}, lambda rng: [_random_base64(rng) for _ in range(3000)]),
    (ZONED, lambda rng: [_random_zoned(rng) for _ in range(3000)]),
    (ENUM, lambda rng: [_random_members(rng, ["a", "b,c", "d"], is_set=False) for _ in range(3000)]),
    (SET, lambda rng: [_random_members(rng, ["a", "b", "c"], is_set=True) for _ in range(3000)]),
]


@pytest.mark.parametrize(("spec", "make"), RANDOM_CASES, ids=[str(s) for s, _ in RANDOM_CASES])
def test_random_values_agree_with_the_scalar_converter(
    spec: dict[str, Any], make: Callable[[random.Random], list[tuple[object, bool]]]
) -> None:
    pairs = make(random.Random(f"debezium-columns {spec}"))
    assert_agrees(spec, [v for v, _ in pairs], [u and v is not None for v, u in pairs])
    assert sum(u for _, u in pairs) > 1000  # the usual kinds are really there


COVERED = [
    *[spec for spec, _ in INTEGERS],
    {"type": "boolean"},
    {"type": "string"},
    {"type": "string", "tidb_type": "blob"},
    ENUM,
    SET,
    DATE,
    MILLIS,
    MICROS,
    MICRO_TIME,
    ZONED,
]


@pytest.mark.parametrize("spec", COVERED, ids=[str(s) for s in COVERED])
def test_empty_all_null_and_chunked_columns(spec: dict[str, Any]) -> None:
    reader = column_reader(field_type(spec))
    assert reader is not None
    empty = pa.array([], reader.arrow_type)
    nulls = pa.array([None, None], reader.arrow_type)
    for values, size in ((empty, 0), (nulls, 2), (pa.chunked_array([nulls, nulls]), 4)):
        texts, ok = reader.canonical(values)
        assert (texts.type, texts.to_pylist(), ok.to_pylist()) == (TEXT, [None] * size, [True] * size)
