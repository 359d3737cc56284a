"""Model values → the Python values pyiceberg returns (docs/type-mapping.md)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.column_types import Value
from ticdc_sim.expected import expected_iceberg_rows, expected_iceberg_value
from ticdc_sim.model import DdlChange, DmlOp, RowChange, Transaction, UpstreamModel


@pytest.mark.parametrize(
    ("col", "value", "expected"),
    [
        (column("c", "tinyint"), -128, -128),
        (column("c", "smallint"), 32767, 32767),
        (column("c", "mediumint"), -8388608, -8388608),
        (column("c", "int"), -2147483648, -2147483648),
        (column("c", "year"), 2024, 2024),
        (column("c", "int", unsigned=True), 4294967295, 4294967295),
        (column("c", "bigint"), -9223372036854775808, -9223372036854775808),
        (column("c", "bigint", unsigned=True), 18446744073709551615, Decimal("18446744073709551615")),
        (column("c", "bigint", unsigned=True), 0, Decimal("0")),
        (column("c", "bit", length=8), 161, 161),
        (column("c", "float"), 3.140000104904175, 3.140000104904175),
        (column("c", "double"), 0.1, 0.1),
        (column("c", "decimal", length=12, scale=2), Decimal("-12.50"), Decimal("-12.50")),
        (column("c", "decimal", length=65, scale=4), Decimal("1.2500"), "1.2500"),
        (column("c", "varchar", length=32), "Zürich 東京 🚀", "Zürich 東京 🚀"),
        (column("c", "char", length=4), "ab", "ab"),
        (column("c", "text"), "line1\nline2", "line1\nline2"),
        (column("c", "json"), '{"a": [1, 2]}', '{"a": [1, 2]}'),
        (column("c", "enum", elements=("new", "paid")), "paid", "paid"),
        (column("c", "set", elements=("a", "b", "c")), "a,c", "a,c"),
        (column("c", "time", fsp=3), "-12:34:56.123", "-12:34:56.123"),
        (column("c", "varbinary", length=8), b"\xff\xfe\x00", b"\xff\xfe\x00"),
        (column("c", "binary", length=4), b"ab\x00\x00", b"ab\x00\x00"),
        (column("c", "blob"), b"\x80", b"\x80"),
        (column("c", "date"), date(1969, 7, 20), date(1969, 7, 20)),
        (
            column("c", "datetime", fsp=6),
            datetime(2024, 1, 1, 0, 0, 0, 123456),
            datetime(2024, 1, 1, 0, 0, 0, 123456),
        ),
        (
            column("c", "timestamp", fsp=3),
            datetime(2024, 1, 1, 8, 0, 0, 120000, tzinfo=timezone(timedelta(hours=8))),
            datetime(2024, 1, 1, 0, 0, 0, 120000, tzinfo=UTC),
        ),
        (column("c", "varchar", length=8), None, None),
    ],
)
def test_each_type_maps_to_the_pyiceberg_value(col: ColumnSchema, value: object, expected: object) -> None:
    result = expected_iceberg_value(col, value)
    assert result == expected
    assert type(result) is type(expected)
    if isinstance(expected, Decimal):
        assert isinstance(result, Decimal)
        assert result.as_tuple().exponent == expected.as_tuple().exponent
    if isinstance(expected, datetime):
        assert isinstance(result, datetime)
        assert result.tzinfo == expected.tzinfo


def test_decimal_is_quantized_to_the_column_scale() -> None:
    result = expected_iceberg_value(column("c", "decimal", length=10, scale=3), Decimal("2.5"))
    assert str(result) == "2.500"


def test_a_wrong_model_value_is_reported() -> None:
    with pytest.raises(SchemaError) as caught:
        expected_iceberg_value(column("amount", "decimal", length=10, scale=2), 1.5)
    assert str(caught.value) == "column 'amount' (decimal(10,2)): model value 1.5 is not a Decimal"
    with pytest.raises(SchemaError) as caught:
        expected_iceberg_value(ColumnSchema("g", "geometry"), "POINT(1 1)")
    assert str(caught.value) == "column 'g' (geometry): no Iceberg mapping for MySQL type 'geometry'"


def test_expected_rows_at_a_tso() -> None:
    cols = (
        column("id", "bigint", unsigned=True, nullable=False),
        column("amount", "decimal", length=10, scale=2),
        column("at", "timestamp", fsp=0),
        column("state", "enum", elements=("new", "paid")),
    )
    schema = TableSchema("db", "t", cols, (IndexSchema("primary", ("id",), primary=True, unique=True),))
    model = UpstreamModel()
    model.apply_ddl(5, DdlChange("CREATE", "CREATE TABLE ...", "db", "t", schema))
    first: dict[str, Value] = {
        "id": 2**64 - 1,
        "amount": Decimal("1.5"),
        "at": datetime(2030, 1, 1, tzinfo=UTC),
        "state": "new",
    }
    second: dict[str, Value] = {"id": 7, "amount": None, "at": None, "state": "paid"}
    model.apply(Transaction(10, (RowChange(DmlOp.INSERT, "db", "t", None, first),)))
    model.apply(
        Transaction(
            20,
            (
                RowChange(DmlOp.INSERT, "db", "t", None, second),
                RowChange(DmlOp.UPDATE, "db", "t", model.rows("db", "t")[0], {**first, "state": "paid"}),
            ),
        )
    )
    assert expected_iceberg_rows(model, "db", "t", 9) == []
    assert expected_iceberg_rows(model, "db", "t", 10) == [
        {
            "id": Decimal("18446744073709551615"),
            "amount": Decimal("1.50"),
            "at": datetime(2030, 1, 1, tzinfo=UTC),
            "state": "new",
        }
    ]
    assert expected_iceberg_rows(model, "db", "t", 20) == [
        {"id": Decimal(7), "amount": None, "at": None, "state": "paid"},
        {
            "id": Decimal("18446744073709551615"),
            "amount": Decimal("1.50"),
            "at": datetime(2030, 1, 1, tzinfo=UTC),
            "state": "paid",
        },
    ]
