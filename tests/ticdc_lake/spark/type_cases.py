"""The wide table of ``test_type_values.py``: one column per MySQL/TiDB type and variant, its
Iceberg type and, for each row, the value the simulator commits and the value pyiceberg must return.

Expectations are literals written from docs/type-mapping.md, never computed
by the product's conversion code. Rows: 1 minimums, 2 maximums, 3 zeros, 4 all NULL, 5 edge
values, 6 MySQL zero dates (other columns: more values).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from pyiceberg.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder

SERVER_ZONE = "America/New_York"
TABLE = "all_types"
#: Rows 1..6: minimums, maximums, zeros, all NULL, edge values, zero dates (others: more values).
ROW_IDS = (1, 2, 3, 5, 6)
NULL_ROW = 4
#: Stand-ins the reference model accepts; the encoder sends MySQL's zero value in their place.
ZERO_DATE = date(1, 1, 1)
ZERO_DATETIME = datetime(1, 1, 1)
ZERO_TIMESTAMP = datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC)

MAX_FLOAT32 = 3.4028234663852886e38
MIN_FLOAT32_SUBNORMAL = 1.401298464324817e-45
NINES_35_30 = "9" * 35 + "." + "9" * 30
NINES_28_10 = "9" * 28 + "." + "9" * 10
BYTES = bytes(range(256))


class ZeroDateEncoder(SimpleJsonEncoder):
    """Simple JSON as TiCDC writes MySQL zero dates, which the reference model cannot hold."""

    def encode_value(self, column: ColumnSchema, value: Any) -> Any:
        zero = "0000-00-00 00:00:00" + ("." + "0" * column.fsp if column.fsp else "")
        if column.mysql_type == "date" and value == ZERO_DATE:
            return "0000-00-00"
        if column.mysql_type == "datetime" and value == ZERO_DATETIME:
            return zero
        if column.mysql_type == "timestamp" and value == ZERO_TIMESTAMP:
            return {"location": self.server_time_zone, "value": zero}
        return super().encode_value(column, value)


@dataclass(frozen=True)
class Case:
    column: ColumnSchema
    iceberg: IcebergType
    #: Model values of rows 1, 2, 3, 5, 6 (row 4 is NULL everywhere).
    values: tuple[Any, ...]
    #: What pyiceberg must return for those rows.
    expected: tuple[Any, ...]


def _int(name: str, tp: str, iceberg: IcebergType, values: tuple[Any, ...], unsigned: bool = False) -> Case:
    return Case(ColumnSchema(name, tp, unsigned=unsigned), iceberg, values, values)


def _same_both(column: ColumnSchema, iceberg: IcebergType, values: tuple[Any, ...]) -> Case:
    return Case(column, iceberg, values, values)


def _fraction(micro: int, fsp: int) -> int:
    """``micro`` cut to ``fsp`` fraction digits (what a column of that fsp holds)."""
    step: int = 10 ** (6 - fsp)
    return micro // step * step


def _datetime_case(fsp: int) -> Case:
    values = (
        datetime(1000, 1, 1),
        datetime(9999, 12, 31, 23, 59, 59, _fraction(999999, fsp)),
        datetime(1970, 1, 1),
        datetime(2024, 2, 29, 12, 34, 56, _fraction(123456, fsp)),
        ZERO_DATETIME,
    )
    return Case(ColumnSchema(f"dt{fsp}", "datetime", fsp=fsp), TimestampType(), values, (*values[:4], None))


def _timestamp_case(fsp: int) -> Case:
    values = (
        datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
        datetime(2038, 1, 19, 3, 14, 7, _fraction(999999, fsp), tzinfo=UTC),
        # 01:30 in New York happens twice that night: sent as wall time, read as the first one (EDT).
        datetime(2024, 11, 3, 5, 30, tzinfo=UTC),
        # 03:30 EDT, just after the clocks jumped forward.
        datetime(2024, 3, 10, 7, 30, 0, _fraction(123456, fsp), tzinfo=UTC),
        ZERO_TIMESTAMP,
    )
    return Case(ColumnSchema(f"ts{fsp}", "timestamp", fsp=fsp), TimestamptzType(), values, (*values[:4], None))


def _time_case(fsp: int) -> Case:
    zeros = "." + "0" * fsp if fsp else ""
    fraction = "." + "123456"[:fsp] if fsp else ""
    values = (
        "-838:59:59" + zeros,
        "838:59:59" + zeros,
        "00:00:00" + zeros,
        "-12:34:56" + fraction,
        "100:00:00" + zeros,
    )
    return _same_both(ColumnSchema(f"tm{fsp}", "time", fsp=fsp), StringType(), values)


def _cases() -> list[Case]:
    cases = [
        _int("ti", "tinyint", IntegerType(), (-128, 127, 0, -1, 1)),
        _int("ti_u", "tinyint", IntegerType(), (0, 255, 0, 128, 1), unsigned=True),
        _int("si", "smallint", IntegerType(), (-32768, 32767, 0, -1, 1)),
        _int("si_u", "smallint", IntegerType(), (0, 65535, 0, 32768, 1), unsigned=True),
        _int("mi", "mediumint", IntegerType(), (-8388608, 8388607, 0, -1, 1)),
        _int("mi_u", "mediumint", IntegerType(), (0, 16777215, 0, 8388608, 1), unsigned=True),
        _int("i", "int", IntegerType(), (-2147483648, 2147483647, 0, -1, 1)),
        _int("i_u", "int", LongType(), (0, 4294967295, 0, 2147483648, 1), unsigned=True),
        _int("bi", "bigint", LongType(), (-9223372036854775808, 9223372036854775807, 0, -1, 1)),
        Case(
            ColumnSchema("bi_u", "bigint", unsigned=True),
            DecimalType(20, 0),
            (0, 18446744073709551615, 0, 9223372036854775808, 1),
            (Decimal("0"), Decimal("18446744073709551615"), Decimal("0"), Decimal("9223372036854775808"), Decimal("1")),
        ),
        _int("yr", "year", IntegerType(), (1901, 2155, 2000, 1970, 2024)),
        _same_both(
            ColumnSchema("f", "float"),
            FloatType(),
            (-MAX_FLOAT32, MAX_FLOAT32, 0.0, MIN_FLOAT32_SUBNORMAL, 1.100000023841858),
        ),
        _same_both(
            ColumnSchema("d", "double"),
            DoubleType(),
            (-1.7976931348623157e308, 1.7976931348623157e308, 0.0, -0.0, 5e-324),
        ),
        _same_both(
            ColumnSchema("dec10_2", "decimal", length=10, scale=2),
            DecimalType(10, 2),
            tuple(Decimal(v) for v in ("-99999999.99", "99999999.99", "0.00", "-0.10", "1.50")),
        ),
        _same_both(
            ColumnSchema("dec38_10", "decimal", length=38, scale=10),
            DecimalType(38, 10),
            tuple(Decimal(v) for v in ("-" + NINES_28_10, NINES_28_10, "0E-10", "1E-10", "-1.5000000000")),
        ),
        _same_both(
            ColumnSchema("dec5_0", "decimal", length=5, scale=0),
            DecimalType(5, 0),
            tuple(Decimal(v) for v in ("-99999", "99999", "0", "-1", "42")),
        ),
        Case(
            ColumnSchema("dec65_30", "decimal", length=65, scale=30),
            StringType(),
            tuple(Decimal(v) for v in ("-" + NINES_35_30, NINES_35_30, "0", "-1E-30", "1.5")),
            ("-" + NINES_35_30, NINES_35_30, "0." + "0" * 30, "-0." + "0" * 29 + "1", "1.5" + "0" * 29),
        ),
        Case(
            ColumnSchema("dec40_0", "decimal", length=40, scale=0),
            StringType(),
            tuple(Decimal(v) for v in ("-" + "9" * 40, "9" * 40, "0", "-1", "1234567890" * 4)),
            ("-" + "9" * 40, "9" * 40, "0", "-1", "1234567890" * 4),
        ),
        Case(ColumnSchema("b1", "bit", length=1), LongType(), (0, 1, 0, 1, 0), (0, 1, 0, 1, 0)),
        Case(ColumnSchema("b8", "bit", length=8), LongType(), (0, 255, 0, 128, 1), (0, 255, 0, 128, 1)),
        Case(
            ColumnSchema("b64", "bit", length=64),
            LongType(),
            (0, 2**64 - 1, 0, 2**63, 2**63 - 1),
            (0, None, 0, None, 9223372036854775807),
        ),
        Case(
            ColumnSchema("ch", "char", length=10),
            StringType(),
            ("", "中文ABCDEFGH", "", "a b  ", "é"),
            ("", "中文ABCDEFGH", "", "a b", "é"),
        ),
        _same_both(
            ColumnSchema("vc", "varchar", length=255),
            StringType(),
            ("", "😀 ünïcödé 'q' \"dq\" \\ \n\t\x00 end", "", "  lead and trail  ", "中" * 255),
        ),
        _same_both(ColumnSchema("tt", "tinytext"), StringType(), ("", "日本語テキスト", "", "語" * 85, "\r\n")),
        _same_both(ColumnSchema("tx", "text"), StringType(), ("", "한국어 текст", "", "x" * 65535, "null")),
        _same_both(ColumnSchema("mt", "mediumtext"), StringType(), ("", "ελληνικά", "", "長" * 10000, "'")),
        _same_both(ColumnSchema("lt", "longtext"), StringType(), ("", "עברית", "", "\U0001f600" * 5000, "`")),
        Case(
            ColumnSchema("bn", "binary", length=4),
            BinaryType(),
            (b"", b"\xff\xff\xff\xff", b"", b"\x80\x7f", b"ab"),
            (b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x80\x7f\x00\x00", b"ab\x00\x00"),
        ),
        _same_both(ColumnSchema("vb", "varbinary", length=256), BinaryType(), (b"", BYTES, b"", b"\x00", BYTES[::-1])),
        _same_both(ColumnSchema("tb", "tinyblob"), BinaryType(), (b"", BYTES[:255], b"", b"\xff", BYTES[1:])),
        _same_both(ColumnSchema("bl", "blob"), BinaryType(), (b"", BYTES * 255, b"", b"\x00" * 3, BYTES)),
        _same_both(ColumnSchema("mb", "mediumblob"), BinaryType(), (b"", BYTES * 64, b"", b"=", BYTES)),
        _same_both(ColumnSchema("lb", "longblob"), BinaryType(), (b"", BYTES * 128, b"", b"==", BYTES)),
        _same_both(
            ColumnSchema("js", "json"),
            StringType(),
            ("{}", '{"k": [1, 2.5, "中"], "n": null, "s": "\\"q\\""}', "[]", "null", '"text"'),
        ),
        _same_both(
            ColumnSchema("en", "enum", elements=("small", "medium", "大 large")),
            StringType(),
            ("small", "大 large", "small", "medium", "medium"),
        ),
        _same_both(
            ColumnSchema("st", "set", elements=("x", "y", "中")),
            StringType(),
            ("", "x,y,中", "", "y", "x,中"),
        ),
        Case(
            ColumnSchema("dt", "date"),
            DateType(),
            (date(1000, 1, 1), date(9999, 12, 31), date(1970, 1, 1), date(2024, 2, 29), ZERO_DATE),
            (date(1000, 1, 1), date(9999, 12, 31), date(1970, 1, 1), date(2024, 2, 29), None),
        ),
    ]
    cases += [_datetime_case(fsp) for fsp in range(7)]
    cases += [_timestamp_case(fsp) for fsp in range(7)]
    cases += [_time_case(fsp) for fsp in range(7)]
    return cases


CASES = {case.column.name: case for case in _cases()}
#: bit(64) twice (2**64-1, 2**63), zero DATE once, zero DATETIME(0..6) and TIMESTAMP(0..6) 7 times each.
EXPECTED_UNREPRESENTABLE = 2 + 1 + 7 + 7


def wide_schema(database: str) -> TableSchema:
    columns = (ColumnSchema("id", "int", nullable=False), *(c.column for c in CASES.values()))
    return TableSchema(database, TABLE, columns, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))


def wide_rows() -> list[dict[str, Any]]:
    rows = [
        {"id": row_id, **{name: case.values[i] for name, case in CASES.items()}} for i, row_id in enumerate(ROW_IDS)
    ]
    rows.insert(NULL_ROW - 1, {"id": NULL_ROW, **dict.fromkeys(CASES)})
    return rows
