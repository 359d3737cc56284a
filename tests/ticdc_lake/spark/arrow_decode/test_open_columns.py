"""The vector twins of the Open Protocol value converters agree with the scalar converters.

For each type code and flags, a column of values is converted twice: one value at a time by
``open_values.canonical_value`` (the specification; for ENUM/SET followed by the naming
``schema_facts`` does with the bound column's members) and as one Arrow array by
``open_columns.column_reader``. A twin may decline a value the scalar takes (only where the case
says so); it never takes a value the scalar rejects, and never writes another text.

The twins are given what ``pyarrow.json`` reads (an int, a double, a string); the scalar is given
what Python's ``json`` parses from the same text. For a double that is the text pyarrow writes for
it (the vector decoder takes a value only where that is the text sent): a JSON integer where the
text has no fraction or exponent, else :class:`JsonNumberText`.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable, Sequence
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from ticdc_lake.canonical import enum_name, parse_integer, set_names
from ticdc_lake.protocols.open_framing import JsonNumberText
from ticdc_lake.protocols.open_values import canonical_value
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.spark.arrow_decode.open_columns import base64_decoded, base64_encoded, column_reader

ZONE = "America/New_York"
UNSIGNED, BINARY = 128, 1
Value = int | float | str | None


def _python_value(value: Value) -> object:
    """What Python's json parses from the text the twin's value is written with."""
    if isinstance(value, float):
        text = pa.scalar(value, pa.float64()).cast(pa.string()).as_py()
        return JsonNumberText(text) if any(c in text for c in ".eE") else int(text) if text[-1].isdigit() else text
    return value


def _scalar(code: int, flags: int, value: Value, column: ColumnSchema | None, zone: str) -> str | None:
    """The scalar's text, or None where it raises ValueError."""
    try:
        text = canonical_value(code, flags, _python_value(value), ZoneInfo(zone))
        if code in (247, 248):
            assert column is not None
            assert column.elements is not None
            if column.mysql_type == "enum":
                return enum_name(parse_integer(text, 0, (1 << 16) - 1), column.elements)
            return set_names(parse_integer(text, 0, (1 << 64) - 1), column.elements)
        return text
    except ValueError:
        return None


def assert_exact(
    code: int,
    flags: int,
    values: Sequence[Value],
    *,
    column: ColumnSchema | None = None,
    zone: str = ZONE,
    may_decline: Callable[[Value], bool] | None = None,
) -> int:
    """Every value is taken with the scalar's text or declined (null text, ok False) where the scalar
    rejects it (or ``may_decline`` allows it); nulls stay null. Returns how many were taken."""
    reader = column_reader(code, flags, column, zone)
    assert reader is not None, (code, flags)
    array = pa.array(values, reader.arrow_type)
    texts, ok = reader.canonical(array)
    assert (texts.type, ok.type, ok.null_count, len(texts), len(ok)) == (
        pa.string(),
        pa.bool_(),
        0,
        len(values),
        len(values),
    )
    wrong = []
    for value, text, took in zip(values, texts.to_pylist(), ok.to_pylist(), strict=True):
        allowed: list[tuple[str | None, bool]]
        if value is None:
            allowed = [(None, True)]
        else:
            spec = _scalar(code, flags, value, column, zone)
            if spec is None:
                allowed = [(None, False)]
            elif may_decline is not None and may_decline(value):
                allowed = [(spec, True), (None, False)]
            else:
                allowed = [(spec, True)]
        if (text, took) not in allowed:
            wrong.append((value, (text, took), allowed))
    assert wrong == [], f"code {code} flags {flags}: (value, twin, allowed) {wrong[:10]}"
    return sum(1 for v, took in zip(values, ok.to_pylist(), strict=True) if v is not None and took)


@pytest.mark.parametrize(
    ("code", "bits"), [(1, 8), (2, 16), (9, 24), (3, 32), (8, 64)], ids=["tiny", "small", "medium", "int", "big"]
)
@pytest.mark.parametrize("unsigned", [False, True], ids=["signed", "unsigned"])
def test_integers(code: int, bits: int, unsigned: bool) -> None:
    rng = random.Random(code)
    if unsigned:
        edges = [0, 1, (1 << bits) - 1, (1 << bits) if bits < 64 else None, (1 << 64) - 1]
        randoms = [rng.randrange(0, 1 << 64) for _ in range(50)]
    else:
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        edges = [0, -1, 1, low, high, low - 1 if bits < 64 else None, high + 1 if bits < 64 else None]
        randoms = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(50)] + [
            rng.randrange(low, high) for _ in range(50)
        ]
    values = [v for v in edges if v is not None] + [None] + randoms
    taken = assert_exact(code, UNSIGNED if unsigned else 0, values)
    assert taken >= 3


def test_year_and_bit() -> None:
    assert assert_exact(13, UNSIGNED, [-1, 0, 1, 1900, 1901, 2024, 2155, 2156, 1 << 40, None]) == 6
    assert assert_exact(16, UNSIGNED, [0, 1, 255, (1 << 64) - 1, None]) == 4


@pytest.mark.parametrize("code", [4, 5], ids=["float", "double"])
def test_floats(code: int) -> None:
    rng = random.Random(code)
    values: list[Value] = [
        1.0,
        1.5,
        0.1,
        -0.0,
        0.0,
        2.0,
        -3.25,
        1e16,
        1e21,
        1e-7,
        5e-324,
        1.7976931348623157e308,
        3.4028234663852886e38,
        1.401298464324817e-45,
        123456789.123,
        float("inf"),
        float("-inf"),
        float("nan"),
        None,
    ]
    values += [rng.uniform(-1e6, 1e6) for _ in range(50)] + [
        rng.random() * 10 ** rng.randint(-30, 30) for _ in range(50)
    ]
    # -0 (the JSON integer 0 to Python) is declined, as are the non-finite doubles (the scalar's texts
    # "inf"/"nan" are no JSON a double is sent as).
    taken = assert_exact(code, 0, values, may_decline=lambda v: isinstance(v, float) and str(v) == "-0.0")
    assert taken >= 100


def _texts(rng: random.Random) -> list[Value]:
    chars = string.printable + 'éあ😀\u2028\x00\\"'
    fixed: list[Value] = ["", "abc", 'a"b', "a\\b", "a\nb", "é", "😀", None]
    return fixed + ["".join(rng.choice(chars) for _ in range(rng.randrange(0, 12))) for _ in range(100)]


@pytest.mark.parametrize("code", [15, 253, 254])
def test_strings(code: int) -> None:
    assert assert_exact(code, 0, _texts(random.Random(code))) == 107


@pytest.mark.parametrize("code", [15, 253, 254])
def test_quoted_bytes(code: int) -> None:
    """Binary CHAR/VARCHAR: the text of a Go-quoted string; declined only where it holds a ``\\U`` or
    an octal escape."""
    values = [*_texts(random.Random(code)), "\\x00\\xff", "\\u00e9", "\\q", "a\\", "\\\\", "\\377", "\\t"]
    values += ["\\u00ad", "\\u05ed\\xff", "\\ud800", "\\u0022", "\\uffff", "\\u12", "\\\\u0041"]
    values += ["\\x00\\xad\\xbe\\xef", 'a\\\\b\\"', "\\a\\b\\f\\n\\r\\t\\v", "\\xZZ", "\\x4", "\\'"]
    rng = random.Random(code)
    pieces = ["a", "\\", "x", "0", "f", "n", '"', "é", "u", "1", "\n", "U", "7", "00", "ad", "d8", "\\u"]
    values += ["".join(rng.choice(pieces) for _ in range(rng.randrange(9))) for _ in range(3000)]

    def declinable(v: Value) -> bool:
        return isinstance(v, str) and any(e in v for e in ("\\U", "\\0", "\\1", "\\3", "\\7"))

    taken = assert_exact(code, BINARY, values, may_decline=declinable)
    assert taken >= 1000


def _base64s(rng: random.Random) -> list[Value]:
    raw = [rng.randbytes(rng.randrange(0, 10)) for _ in range(100)]
    text = ["héllo 😀".encode()[: rng.randrange(0, 11)] for _ in range(30)]
    encoded: list[Value] = [base64.b64encode(b).decode() for b in raw + text]
    return [*encoded, None, "", "QR==", "QQ==", "QUI=", "QUJ=", "not base64", "QQ", "QQ=", "Q===", "/w==", "7aCA"]


@pytest.mark.parametrize("code", [249, 250, 251, 252])
@pytest.mark.parametrize("flags", [0, BINARY], ids=["text", "blob"])
def test_base64(code: int, flags: int) -> None:
    """TEXT types decode to UTF-8 (``/w==`` is 0xff, ``7aCA`` a surrogate's UTF-8: rejected); BLOB types
    keep standard base64 as sent; non-zero padding bits (``QR==``, ``QUJ=``) are declined."""
    values = _base64s(random.Random(code))
    taken = assert_exact(code, flags, values, may_decline=lambda v: v in ("QR==", "QUJ="))
    assert taken >= 30


def test_base64_codecs() -> None:
    rng = random.Random(3)
    raw = [rng.randbytes(rng.randrange(0, 40)) for _ in range(300)]
    texts = [base64.b64encode(b).decode() for b in raw]
    assert base64_encoded(pa.array(raw, pa.binary())).to_pylist() == texts
    assert base64_encoded(pa.array(raw, pa.binary()).slice(7, 50)).to_pylist() == texts[7:57]
    assert base64_decoded(pa.array(texts)).to_pylist() == raw
    assert base64_decoded(pa.array(texts).slice(3)).to_pylist() == raw[3:]
    assert base64_encoded(pa.array([], pa.binary())).to_pylist() == []


def test_timestamps() -> None:
    """Wall times in the server zone: a skipped hour, 2038 on and the zero TIMESTAMP are declined."""
    rng = random.Random(7)
    values: list[Value] = [
        "2024-03-01 12:00:00",
        "2024-03-01 12:00:00.5",
        "2024-03-01 12:00:00.123456",
        "2024-03-10 02:30:00",
        "2024-11-03 01:30:00",
        "1970-01-01 00:00:00",
        "2038-01-19 03:14:07",
        "9999-12-31 23:59:59",
        "0001-01-01 00:00:00",
        "0000-00-00 00:00:00",
        "2024-13-01 00:00:00",
        "2024-02-30 00:00:00",
        "2024-03-01T12:00:00",
        "2024-03-01 12:00:00.",
        "2024-03-01 12:00:00.1234567",
        "",
        None,
    ]
    values += [
        f"{rng.randint(1971, 2037)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        for _ in range(100)
    ]

    def declinable(v: Value) -> bool:
        return isinstance(v, str) and (v.startswith(("0000", "0001", "9999", "2038")) or v == "2024-03-10 02:30:00")

    assert assert_exact(7, 0, values, may_decline=declinable) >= 100
    assert assert_exact(7, 0, values, zone="UTC", may_decline=lambda v: v == "0000-00-00 00:00:00") >= 100


@pytest.mark.parametrize(
    ("code", "values"),
    [
        (10, ["2024-02-29", "0000-00-00", "2024-00-00", "2024-02-30", "2024-13-01", "24-01-01", "2024-1-01", ""]),
        (14, ["2024-02-29", "0000-00-00", "2024-13-01"]),
        (11, ["00:00:00", "-838:59:59", "838:59:59.000000", "839:00:00", "12:60:00", "1:00:00", "-00:00:01.5"]),
        (12, ["2024-02-29 12:34:56", "0000-00-00 00:00:00", "2024-02-30 00:00:00.123", "2024-02-29 24:00:00"]),
        (246, ["0", "-0.10", "1.500", "1e5", ".5", "5.", "+1", "-", "12345678901234567890.123456789"]),
        (245, ['{"a":1}', "null", "", "[1, 2]"]),
        (225, ["[1,2,3]", ""]),
    ],
    ids=["date", "newdate", "time", "datetime", "decimal", "json", "vector"],
)
def test_texts(code: int, values: list[Value]) -> None:
    assert assert_exact(code, 0, [*values, None]) >= 1


def test_enum_and_set() -> None:
    enum = ColumnSchema("e", "enum", elements=("lo", "hi", "a,b"))
    assert assert_exact(247, 0, [0, 1, 2, 3, 4, 65536, (1 << 64) - 1, None], column=enum) == 4
    members = tuple(f"m{n}" for n in range(10))
    for column in (ColumnSchema("s", "set", elements=members), ColumnSchema("s", "set", elements=())):
        values: list[Value] = [0, 1, 5, 1023, 1024, 1 << 62, (1 << 64) - 1, None]
        assert assert_exact(248, 0, values, column=column) >= 1
    # An ENUM code bound to a SET column is named as a SET (``schema_facts._named``), and the reverse.
    assert assert_exact(247, 0, [0, 3, 8], column=ColumnSchema("s", "set", elements=("x", "y", "z"))) == 2
    assert assert_exact(248, 0, [0, 3, 4], column=enum) == 2


def test_no_twin() -> None:
    members = tuple(f"m{n}" for n in range(63))
    for code, column in [
        (6, None),
        (255, None),
        (99, None),
        (247, None),
        (247, ColumnSchema("e", "enum")),
        (248, ColumnSchema("s", "set", elements=members)),
    ]:
        assert column_reader(code, 0, column, ZONE) is None, code
