"""Canonical texts per Iceberg type for the typed-image tests: edges of each type, values the type
cannot hold (zero dates, an INT UNSIGNED beyond ``int``), NULLs, and seeded random texts in each
type's canonical form (``docs/canonical-values.md``)."""

from __future__ import annotations

import base64
import random

import pyarrow as pa

#: Iceberg type -> texts written out by hand (None is SQL NULL).
EDGE_TEXTS: dict[str, list[str | None]] = {
    "int": ["0", "-1", "2147483647", "2147483648", "-2147483648", "-2147483649", None, "4294967295", "1"],
    "long": ["0", "-9223372036854775808", "9223372036854775807", "123456789012345678", None, "-42"],
    "float": ["3.14", "1e-45", "3.4028235e+38", "-0", None, "1.5E10", "0.1", "16777217"],
    "double": ["3.14", "1.7976931348623157e+308", "5e-324", None, "-2.5", "0.1", "1e21"],
    "string": ["a", None, "日本語", "", "2024-01-01"],
    "binary": ["//4AgA==", "", "QQ==", "QUI=", "QUJD", None, "AAAA"],
    "date": ["2024-02-29", "0000-00-00", "2023-02-31", "0000-01-01", "9999-12-31", None, "1970-01-01", "2020-00-15"],
    "timestamp": [
        "2023-11-30 12:34:56.123",
        "0000-00-00 00:00:00",
        "9999-12-31 23:59:59.999999",
        "2020-00-15 10:00:00",
        None,
        "1969-12-31 23:59:59.5",
        "0000-00-00 00:00:00.000",
        "2024-02-30 00:00:00",
        "0000-01-01 00:00:00",  # year 0 of the proleptic calendar
        "0000-02-29 23:59:59.000001",
    ],
    "timestamptz": [
        "2024-01-01T00:00:00.250Z",
        "0000-00-00 00:00:00",
        None,
        "1960-06-01T01:02:03Z",
        "2038-01-19T03:14:07.999999Z",
        "1970-01-01T00:00:00Z",
        "0000-01-01T00:00:00Z",
    ],
    "decimal(20,0)": ["18446744073709551615", "0", "-5", None, "99999999999999999999"],
    "decimal(12,2)": ["1.50", "-0.10", "1.5", "9999999999.99", None, "0.00", "-9999999999.99"],
    "decimal(38,10)": ["1234567890123456789012345678.1234567890", "0.0000000001", "-1", None],
    "decimal(2,2)": ["0.55", "-0.10", "0", None],
}


def random_texts(iceberg_type: str, count: int, seed: int) -> list[str | None]:
    """``count`` canonical texts of ``iceberg_type`` (about a tenth NULL), seeded."""
    rnd = random.Random(f"{seed}-{iceberg_type}")
    make = {
        "int": lambda: str(rnd.randint(-(2**31), 2**31 - 1)),
        "long": lambda: str(rnd.randint(-(2**63), 2**63 - 1)),
        "float": lambda: repr(rnd.uniform(-1e6, 1e6))[:9],
        "double": lambda: repr(rnd.uniform(-1e12, 1e12)),
        "string": lambda: "".join(rnd.choice("aé日 ,\"'\\") for _ in range(rnd.randint(0, 12))),
        "binary": lambda: base64.b64encode(rnd.randbytes(rnd.randint(0, 9))).decode(),
        "date": lambda: f"{rnd.randint(0, 9999):04d}-{rnd.randint(0, 12):02d}-{rnd.randint(0, 31):02d}",
        "timestamp": lambda: _datetime(rnd, " ", ""),
        "timestamptz": lambda: _datetime(rnd, "T", "Z"),
        "decimal(20,0)": lambda: str(rnd.randint(0, 2**64 - 1)),
        "decimal(12,2)": lambda: f"{rnd.randint(-(10**10) + 1, 10**10 - 1)}.{rnd.randint(0, 99):02d}",
        "decimal(38,10)": lambda: f"{rnd.randint(-(10**28) + 1, 10**28 - 1)}.{rnd.randint(0, 10**10 - 1):010d}",
        "decimal(2,2)": lambda: f"0.{rnd.randint(0, 99):02d}",
    }[iceberg_type]
    return [None if rnd.random() < 0.1 else make() for _ in range(count)]


def _datetime(rnd: random.Random, separator: str, zone: str) -> str:
    digits = rnd.randint(0, 6)
    fraction = "." + "".join(rnd.choice("0123456789") for _ in range(digits)) if digits else ""
    return (
        f"{rnd.randint(0, 9999):04d}-{rnd.randint(1, 12):02d}-{rnd.randint(1, 31):02d}{separator}"
        f"{rnd.randint(0, 23):02d}:{rnd.randint(0, 59):02d}:{rnd.randint(0, 59):02d}{fraction}{zone}"
    )


def storage_values(values: pa.Array) -> list[object]:
    """The values as Python objects, dates as epoch days and timestamps as epoch microseconds
    (Python's ``datetime`` cannot hold year 0; fastavro takes these numbers for the logical types)."""
    if pa.types.is_date32(values.type):
        return list(values.view(pa.int32()).to_pylist())
    if pa.types.is_timestamp(values.type):
        return list(values.view(pa.int64()).to_pylist())
    return list(values.to_pylist())
