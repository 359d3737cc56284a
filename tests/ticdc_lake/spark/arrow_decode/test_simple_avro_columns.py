"""The vector twins of the Simple Avro value converters agree with the scalar converters.

For each column type, the values of one union branch are converted twice: one value at a time by
``simple_avro_values.avro_converter_for`` (the specification, given the Python value ``fastavro``
reads: an int, a float, bytes, a str, a ``(record name, fields)`` tuple) and as one Arrow array
by ``simple_avro_columns.column_twin``. A twin may decline a value the scalar takes (only where the
case says so); it never takes a value the scalar rejects, and never writes another text. A branch
a column has no twin for is one its scalar converter rejects.
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable, Sequence

import pyarrow as pa
import pytest

from ticdc_lake.canonical import MAX_UNSIGNED_BIGINT
from ticdc_lake.protocols.simple_avro_values import NAMESPACE, avro_converter_for
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.spark.arrow_decode.simple_avro_columns import (
    BRANCH_TYPES,
    BYTES,
    DOUBLE,
    FLOAT,
    LONG,
    STRING,
    TIMESTAMP,
    UNSIGNED,
    column_twin,
)

ZONE = "America/New_York"
_INT64 = (-(1 << 63), (1 << 63) - 1)
#: One value of each branch, as ``fastavro`` returns it.
SAMPLES: dict[int, object] = {
    LONG: 5,
    FLOAT: 1.5,
    DOUBLE: 1.5,
    STRING: "5",
    BYTES: b"5",
    TIMESTAMP: (NAMESPACE + "Timestamp", {"location": "UTC", "value": "2024-01-01 00:00:00"}),
    UNSIGNED: (NAMESPACE + "UnsignedBigint", {"value": 5}),
}


def _python_value(branch: int, value: object) -> object:
    """The Arrow input's value as ``fastavro`` hands it to the scalar converter."""
    if value is None:
        return None
    if branch == UNSIGNED:
        return (NAMESPACE + "UnsignedBigint", {"value": value})
    if branch == TIMESTAMP:
        return (NAMESPACE + "Timestamp", value)
    return value


def _scalar(column: ColumnSchema, value: object) -> str | None:
    try:
        return avro_converter_for(column, ZONE)(value)
    except ValueError:
        return None


def assert_exact(
    column: ColumnSchema,
    branch: int,
    values: Sequence[object],
    *,
    may_decline: Callable[[object], bool] = lambda value: False,
) -> int:
    """Every value is taken with the scalar's text, or declined (null text, ok False) exactly where the
    scalar rejects it or ``may_decline(value)``; nulls stay null. Returns how many were taken."""
    twin = column_twin(column, ZONE)
    assert twin is not None, column
    assert branch in twin.branches, (column, branch)
    texts, ok = twin.branches[branch](pa.array(values, BRANCH_TYPES[branch]))
    assert (texts.type, ok.type, ok.null_count, len(texts)) == (pa.string(), pa.bool_(), 0, len(values))
    wrong = []
    for value, text, took in zip(values, texts.to_pylist(), ok.to_pylist(), strict=True):
        expected = None if value is None else _scalar(column, _python_value(branch, value))
        allowed: list[tuple[str | None, bool]]
        if value is None:
            allowed = [(None, True)]
        elif expected is None:
            allowed = [(None, False)]
        elif may_decline(value):
            allowed = [(expected, True), (None, False)]
        else:
            allowed = [(expected, True)]
        if (text, took) not in allowed:
            wrong.append((value, (text, took), allowed))
    assert wrong == [], f"{column}: (value, twin, allowed) {wrong[:10]}"
    return sum(1 for value, took in zip(values, ok.to_pylist(), strict=True) if value is not None and took)


def _edges(low: int, high: int) -> list[int | None]:
    near = [low - 1, low, low + 1, -1, 0, 1, high - 1, high, high + 1, *_INT64]
    return [None, *(v for v in near if _INT64[0] <= v <= _INT64[1])]


@pytest.mark.parametrize(
    ("mysql_type", "unsigned", "bounds"),
    [
        ("tinyint", False, (-128, 127)),
        ("tinyint", True, (0, 255)),
        ("smallint", False, (-(1 << 15), (1 << 15) - 1)),
        ("mediumint", True, (0, (1 << 24) - 1)),
        ("int", False, (-(1 << 31), (1 << 31) - 1)),
        ("int", True, (0, (1 << 32) - 1)),
        ("bigint", False, _INT64),
        ("year", False, (0, 2155)),
    ],
)
def test_integers(mysql_type: str, unsigned: bool, bounds: tuple[int, int]) -> None:
    column = ColumnSchema("c", mysql_type, unsigned=unsigned)
    rng = random.Random(5)
    values = [
        *_edges(*bounds),
        *(rng.randint(*_INT64) for _ in range(200)),
        *(rng.randint(*bounds) for _ in range(200)),
    ]
    assert assert_exact(column, LONG, values) > 200


def test_unsigned_bigint() -> None:
    column = ColumnSchema("c", "bigint", unsigned=True)
    rng = random.Random(6)
    longs = [None, *_INT64, -1, 0, 1, *(rng.randint(*_INT64) for _ in range(200))]
    assert assert_exact(column, UNSIGNED, longs) == len(longs) - 1
    texts = [None, "0", "18446744073709551615", "18446744073709551616", "007", "-0", "-1", "1e3", "", " 1", "+1"]
    texts += [str(rng.randint(0, MAX_UNSIGNED_BIGINT)) for _ in range(100)]
    canonical = {None, *(str(int(t)) for t in texts if t and t.strip().lstrip("+-").isdigit())}
    # Integer texts not in canonical form (leading zeros, -0) are declined though the scalar takes them.
    assert assert_exact(column, STRING, texts, may_decline=lambda value: value not in canonical) > 100


@pytest.mark.parametrize("length", [1, 5, 8, 63, 64, None])
def test_bits(length: int | None) -> None:
    """BIT arrives as a long: values of 2**63 and more negative, read back unsigned."""
    column = ColumnSchema("c", "bit", length=length)
    rng = random.Random(7)
    high = (1 << (length or 64)) - 1
    values = [*_edges(0, high), -(1 << 63), *(rng.randint(*_INT64) for _ in range(100))]
    values += [rng.randint(0, min(high, _INT64[1])) for _ in range(100)]
    assert assert_exact(column, LONG, values) > 100


def test_enums_and_sets() -> None:
    members = ("a", "b", "c,d", "é")
    enum = ColumnSchema("e", "enum", elements=members)
    assert assert_exact(enum, LONG, [None, -1, 0, 1, 4, 5, 1 << 40, *_INT64]) == 3
    assert assert_exact(ColumnSchema("e", "enum"), LONG, [None, 0, 1, -1]) == 1  # no members: only 0
    assert assert_exact(ColumnSchema("s", "set", elements=members), LONG, [None, 0, 1, 5, 15, 16, -1, *_INT64]) == 4
    many = tuple(f"m{n}" for n in range(62))
    wide = ColumnSchema("s", "set", elements=many)
    assert assert_exact(wide, LONG, [(1 << 62) - 1, 1 << 62, -1, 0, 1 << 61]) == 3
    assert column_twin(ColumnSchema("s", "set", elements=(*many, "x")), ZONE) is None
    # A bitmask of 9 * 10**18 and more is declined though in range (the JSON twin's canonical rule).
    sixty_four = ColumnSchema("s", "set", elements=tuple(f"m{n}" for n in range(63)))
    assert column_twin(sixty_four, ZONE) is None


MAX_FLOAT32 = 3.4028234663852886e38


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


@pytest.mark.parametrize("mysql_type", ["float", "double"])
def test_floats(mysql_type: str) -> None:
    column = ColumnSchema("c", mysql_type)
    branch = FLOAT if mysql_type == "float" else DOUBLE
    rng = random.Random(8)
    edges = [
        None,
        0.0,
        -0.0,
        1.5,
        -2.25,
        0.1,
        1e-7,
        1e20,
        1.7e308,
        5e-324,
        3.4028234663852886e38,
        1.401298464324817e-45,
    ]
    edges += [float("nan"), float("inf"), float("-inf"), 123456789.0, 1e16, 1e15, 0.000123]
    randoms = [rng.uniform(-1e6, 1e6) for _ in range(200)] + [
        rng.random() * 10 ** rng.randint(-40, 38) for _ in range(200)
    ]
    values = [*edges, *randoms]
    if branch == FLOAT:  # what a float branch can hold
        values = [None if v is None else _float32(v) for v in values if v is None or abs(v) <= MAX_FLOAT32 or v != v]
    finite = [v for v in values if v is not None and math.isfinite(v)]
    assert assert_exact(column, branch, values) == len(finite)  # NaN and infinities: the scalar raises


@pytest.mark.parametrize("mysql_type", ["varbinary", "binary", "blob", "tinyblob", "longblob"])
def test_binary(mysql_type: str) -> None:
    rng = random.Random(9)
    values = [
        None,
        b"",
        b"\x00",
        b"\xff\xfe",
        bytes(range(256)),
        *(rng.randbytes(rng.randint(0, 40)) for _ in range(100)),
    ]
    assert assert_exact(ColumnSchema("c", mysql_type), BYTES, values) == len(values) - 1


def test_strings() -> None:
    """The types the scalar converter hands to the Simple JSON converter as a string."""
    cases = {
        "varchar": ["", "abc", "é\u2028\x00", "\U0001f600"],
        "text": ["x" * 1000],
        "json": ['{"a": 1}'],
        "decimal": ["12.50", "-0.1", "1.", ".5", "1e3", "abc", "007.5"],
        "date": ["2024-02-29", "2024-13-01", "0000-00-00", "2024-02-30", "24-01-01"],
        "datetime": ["2024-02-29 12:34:56.123456", "2024-02-29 24:00:00", "0000-00-00 00:00:00", "2024-02-29"],
        "time": ["-838:59:59", "839:00:00", "12:34:56.12", "1:2:3", "-00:00:01"],
    }
    for mysql_type, values in cases.items():
        assert assert_exact(ColumnSchema("c", mysql_type), STRING, [None, *values]) >= 1


def test_timestamps() -> None:
    def stamp(location: str, value: str) -> dict[str, str]:
        return {"location": location, "value": value}

    values = [
        None,
        stamp("America/New_York", "2023-11-30 07:34:56.123"),
        stamp("", "2023-11-30 07:34:56"),
        stamp("Local", "2023-11-30 07:34:56"),
        stamp("UTC", "2038-01-19 03:14:07.999999"),
        stamp("Asia/Shanghai", "1970-01-01 08:00:01"),
        stamp("Mars/Olympus", "2023-11-30 07:34:56"),
        stamp("America/New_York", "2024-03-10 02:30:00"),  # skipped hour: declined
        stamp("America/New_York", "2024-11-03 01:30:00"),  # repeated hour: the earlier
        stamp("America/New_York", "0000-00-00 00:00:00"),  # the zero TIMESTAMP: declined
        stamp("America/New_York", "2038-01-18 22:14:07"),  # from 2038 on in a zone with rules: declined
        stamp("UTC", "2024-02-30 00:00:00"),
        stamp("UTC", "not a time"),
    ]
    declined = ("2024-03-10 02:30:00", "2038-01-18 22:14:07", "0000-00-00 00:00:00")
    column = ColumnSchema("c", "timestamp")
    taken = assert_exact(
        column, TIMESTAMP, values, may_decline=lambda v: isinstance(v, dict) and v["value"] in declined
    )
    assert taken >= 6


def test_other_branches_are_rejected_by_the_scalar() -> None:
    """A value of a branch the column has no twin for is one the scalar converter rejects, but a
    FLOAT/DOUBLE value of the other width (``fastavro`` returns a Python float for both, which the
    scalar formats at the column's width; TiCDC never sends it): declined, only a cost in speed."""
    columns = [
        ColumnSchema("c", "int"),
        ColumnSchema("c", "bigint", unsigned=True),
        ColumnSchema("c", "year"),
        ColumnSchema("c", "bit", length=8),
        ColumnSchema("c", "enum", elements=("a",)),
        ColumnSchema("c", "set", elements=("a",)),
        ColumnSchema("c", "float"),
        ColumnSchema("c", "double"),
        ColumnSchema("c", "varbinary"),
        ColumnSchema("c", "varchar"),
        ColumnSchema("c", "decimal"),
        ColumnSchema("c", "date"),
        ColumnSchema("c", "datetime"),
        ColumnSchema("c", "time"),
        ColumnSchema("c", "timestamp"),
    ]
    for column in columns:
        twin = column_twin(column, ZONE)
        assert twin is not None, column
        for branch, sample in SAMPLES.items():
            cross = column.mysql_type in ("float", "double") and branch in (FLOAT, DOUBLE)
            if branch not in twin.branches and not cross:
                assert _scalar(column, sample) is None, (column, branch)


def test_types_without_a_twin() -> None:
    for mysql_type in ("geometry", "point", "unknown"):
        assert column_twin(ColumnSchema("c", mysql_type), ZONE) is None
