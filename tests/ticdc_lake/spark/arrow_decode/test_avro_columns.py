"""The Avro column twins (``avro_columns``) against the scalar converters (``avro_values.converter_for``).

For every twin and edge values of its type: where the twin says ok, its text is the scalar's; where
the scalar raises, the twin says not ok; nulls are ok with a null text. Where a twin may refuse a
value the scalar accepts (see ``avro_columns``), the test says which; everywhere else the twin
must take what the scalar takes, so a twin that silently refuses everything fails.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Sequence
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pytest

from ticdc_lake.protocols.avro_values import ALLOWED_AVRO_TYPES, AvroColumn, converter_for
from ticdc_lake.spark.arrow_decode.avro_columns import column_reader

ZONE = ZoneInfo("America/New_York")
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _column(tidb_type: str, avro_type: str, **extra: Any) -> AvroColumn:
    return AvroColumn("c", tidb_type, avro_type, True, 0, **extra)


def compare(
    column: AvroColumn, values: Sequence[Any], may_refuse: Callable[[Any], bool] = lambda _: False
) -> tuple[int, int]:
    """(values taken, values the scalar accepts); asserts the rule of the module docstring."""
    reader = column_reader(column, ZONE)
    assert reader is not None, column
    scalar = converter_for(column, ZONE)
    texts, ok = reader.canonical(pa.array(list(values), reader.arrow_type))
    assert texts.type == pa.string()
    assert len(texts) == len(values)
    assert ok.null_count == 0
    taken = accepted = 0
    for value, text, vouched in zip(values, texts.to_pylist(), ok.to_pylist(), strict=True):
        if value is None:
            assert vouched
            assert text is None
            continue
        try:
            expected: str | None = scalar(value)
        except ValueError:
            expected = None
        accepted += expected is not None
        if vouched:
            taken += 1
            assert expected is not None, f"{column.tidb_type}/{column.avro_type}: ok for {value!r}, the scalar raises"
            assert text == expected, f"{column.tidb_type}/{column.avro_type}: {value!r} -> {text!r}, not {expected!r}"
        else:
            assert text is None
            assert expected is None or may_refuse(value), f"{column.tidb_type}: refused {value!r} ({expected!r})"
    return taken, accepted


@pytest.mark.parametrize(
    ("tidb_type", "avro_type", "bounds"),
    [
        ("INT", "int", _INT32),
        ("INT UNSIGNED", "int", (0, (1 << 32) - 1)),
        ("INT UNSIGNED", "long", (0, (1 << 32) - 1)),
        ("BIGINT", "long", _INT64),
        ("YEAR", "int", (0, 2155)),
    ],
)
def test_integers(tidb_type: str, avro_type: str, bounds: tuple[int, int]) -> None:
    low, high = bounds
    values = [None, 0, -1, 1, low, high, low - 1, high + 1, *_INT64, *_INT32, 1901, 2156, 4294967296]
    values = [v for v in values if v is None or _INT64[0] <= v <= _INT64[1]]
    taken, accepted = compare(_column(tidb_type, avro_type), values)
    assert taken == accepted > 3


def test_unsigned_bigint_long() -> None:
    """``int64(u)`` read back unsigned."""
    values = [None, 0, 1, -1, *_INT64, 1 << 62]
    taken, accepted = compare(_column("BIGINT UNSIGNED", "long"), values)
    assert taken == accepted == 6


def test_unsigned_bigint_string() -> None:
    """Canonical texts only (``007`` → ``7`` is the scalar's, refused here)."""
    values = [None, "0", "1", "18446744073709551615", "18446744073709551616", "-1", "007", "-0", "", "1.5", " 1", "+1"]
    taken, accepted = compare(_column("BIGINT UNSIGNED", "string"), values, lambda v: v in ("007", "-0"))
    assert taken == 3
    assert accepted >= 3


def _float32s(rng: random.Random, count: int) -> list[float]:
    return [struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0] for _ in range(count)]


def _float64s(rng: random.Random, count: int) -> list[float]:
    return [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(count)]


_FLOAT_EDGES = [
    None,
    0.0,
    -0.0,
    1.0,
    0.1,
    -2.5,
    1e20,
    1e21,
    1e-6,
    1e-7,
    1.5e-7,
    float(1 << 53),
    1234567890123456.7,
    3.4028234663852886e38,
    1.401298464324817e-45,
    1.7976931348623157e308,
    5e-324,
    float("nan"),
    float("inf"),
    float("-inf"),
]


@pytest.mark.parametrize(("tidb_type", "avro_type"), [("FLOAT", "float"), ("FLOAT", "double"), ("DOUBLE", "double")])
def test_floats(tidb_type: str, avro_type: str) -> None:
    """Go's ``FormatFloat(v, 'f', -1, bits)`` of every finite value, exponent or not; NaN and infinities refused."""
    rng = random.Random(11)
    if avro_type == "float":
        randoms = _float32s(rng, 20_000) + [float(np.float32(rng.uniform(-1e6, 1e6))) for _ in range(5_000)]
        with np.errstate(over="ignore"):  # 1e308 is an infinity in float32
            edges = [v if v is None else float(np.float32(v)) for v in _FLOAT_EDGES]
    else:
        randoms = _float64s(rng, 20_000) + [rng.uniform(-1e17, 1e17) for _ in range(5_000)]
        edges = list(_FLOAT_EDGES)
    taken, accepted = compare(_column(tidb_type, avro_type), edges + randoms)
    assert taken == accepted > 20_000


def _signed(number: int, size: int | None = None) -> bytes:
    size = size or ((number if number >= 0 else ~number).bit_length() + 8) // 8
    return number.to_bytes(size, "big", signed=True)


@pytest.mark.parametrize("scale", [0, 2, 10, 30])
def test_precise_decimals(scale: int) -> None:
    """Two's-complement unscaled values up to 31 bytes (beyond: refused); the empty value raises."""
    rng = random.Random(scale)
    numbers = [0, 1, -1, 5, -5, 10**scale, -(10**scale), 10**65 - 1, -(10**65) + 1, (1 << 246), -(1 << 246)]
    numbers += [rng.randint(-(10**40), 10**40) for _ in range(300)]
    values: list[Any] = [None, b"", b"\x00\x00\x05", b"\xff\xff\xfb", *(_signed(n) for n in numbers)]
    values += [_signed(1 << 250), _signed(-(1 << 250)), b"\x00" * 32 + b"\x01"]
    column = _column("DECIMAL", "decimal", precision=65, scale=scale)
    taken, accepted = compare(column, values, lambda v: len(v) > 31)
    assert accepted - taken == 3
    assert taken > 300


def test_string_decimals() -> None:
    values = [None, "0", "-1.50", "1.500", "007.1", "", "-", "1.", ".5", "1e5", "+1", " 1", "\uff11"]
    taken, accepted = compare(_column("DECIMAL", "string"), values)
    assert taken == accepted == 4


def test_blobs() -> None:
    rng = random.Random(5)
    values = [None, b"", b"\x00", b"ab", b"abc", b"\xff" * 4, bytes(range(256))]
    values += [rng.randbytes(rng.randrange(40)) for _ in range(300)]
    taken, accepted = compare(_column("BLOB", "bytes"), values)
    assert taken == accepted == len(values) - 1


@pytest.mark.parametrize("length", [1, 3, 8, 63, 64, None])
def test_bits(length: int | None) -> None:
    """Big-endian bytes within BIT(n); more than 8 bytes refused (the scalar may accept leading zeros)."""
    values = [None, b"", b"\x00", b"\x01", b"\x07", b"\x08", b"\xff", b"\x01\x00", b"\xff" * 8, b"\x00" * 9]
    values += [b"\x01" + b"\x00" * 8]
    taken, accepted = compare(_column("BIT", "bytes", length=length), values, lambda v: len(v) > 8)
    assert taken >= 2
    assert accepted - taken <= 1


def test_texts() -> None:
    values = [None, "", "a", "é中\U0001f600", '{"a": [1, 2]}', "[1,2.5]", "a,b", "\x00"]
    for tidb_type in ("TEXT", "ENUM", "SET", "JSON", "TiDBVECTORFloat32"):
        taken, accepted = compare(_column(tidb_type, "string"), values)
        assert taken == accepted == len(values) - 1


def test_dates_and_times() -> None:
    """The strict shapes of ``simple_columns``: what the scalar checks accept, zero dates included."""
    dates = [
        None,
        "2024-02-29",
        "0000-00-00",
        "2024-13-01",
        "2024-1-01",
        "2024-01-01 ",
        "9999-12-31",
        "\uff12\uff10\uff12\uff14-01-01",
    ]
    taken, accepted = compare(_column("DATE", "string"), dates)
    assert taken == accepted == 3
    datetimes = [
        None,
        "2024-02-29 23:59:59",
        "2024-02-29 23:59:59.123456",
        "2024-02-29 23:59:59.1234567",
        "2024-02-29 24:00:00",
        "0000-00-00 00:00:00",
        "2024-02-30 00:00:00",
        "2024-02-29T23:59:59",
        "2024-02-29 23:59:59.",
    ]
    taken, accepted = compare(_column("DATETIME", "string"), datetimes)
    assert taken == accepted == 4
    times = [None, "00:00:00", "-838:59:59.000000", "838:59:59", "839:00:00", "12:60:00", "1:00:00", "100:00:00.5"]
    taken, accepted = compare(_column("TIME", "string"), times)
    assert taken == accepted == 4


def test_timestamps() -> None:
    """Server wall time in the zone → UTC; a skipped hour, after 2037 or the zero TIMESTAMP: refused."""
    values = [
        None,
        "2024-01-15 12:00:00",
        "2024-07-15 12:00:00.5",
        "2024-11-03 01:30:00",  # repeated hour: the first
        "2024-03-10 02:30:00",  # skipped hour
        "2038-01-19 03:14:07",
        "0000-00-00 00:00:00",
        "1970-01-01 00:00:00.000001",
        "2024-02-30 00:00:00",
        "2024-01-15 12:00",
    ]
    refusable = ("2024-03-10 02:30:00", "2038-01-19 03:14:07", "0000-00-00 00:00:00")
    taken, accepted = compare(_column("TIMESTAMP", "string"), values, lambda v: v in refusable)
    assert taken == 4
    assert accepted == 7


def test_every_tidb_type_has_a_twin() -> None:
    """Each (tidb_type, Avro type) TiCDC writes has a twin of the Arrow type ``avro_binary`` reads it as."""
    kinds = {"decimal": pa.binary(), "bytes": pa.binary(), "string": pa.string(), "int": pa.int64(), "long": pa.int64()}
    kinds |= {"float": pa.float32(), "double": pa.float64()}
    for tidb_type, avro_types in ALLOWED_AVRO_TYPES.items():
        for avro_type in avro_types:
            extra: dict[str, Any] = {"precision": 10, "scale": 2} if avro_type == "decimal" else {}
            reader = column_reader(_column(tidb_type, avro_type, **extra), ZONE)
            assert reader is not None, (tidb_type, avro_type)
            assert reader.arrow_type == kinds[avro_type], (tidb_type, avro_type)
