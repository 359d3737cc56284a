from __future__ import annotations

import pytest

from ticdc_lake.apply.merge_sql import TargetColumn, merge_statement, spark_type, typed_projection, typed_value


def test_typed_values_use_try_casts_and_base64() -> None:
    assert typed_value("x", "string") == "x"
    assert typed_value("x", "binary") == "try_to_binary(x, 'base64')"
    assert typed_value("x", "decimal(20,0)") == "try_cast(x AS DECIMAL(20,0))"
    assert typed_value("x", "timestamptz") == "try_cast(x AS TIMESTAMP)"
    assert typed_value("x", "timestamp") == "try_cast(x AS TIMESTAMP_NTZ)"
    with pytest.raises(ValueError, match="no Spark type for Iceberg type 'uuid'"):
        spark_type("uuid")


def test_projection_counts_values_that_could_not_be_represented() -> None:
    items = typed_projection("image", [TargetColumn("id", "long"), TargetColumn("na`me", "string")])
    assert items[0] == "try_cast(image['id'] AS BIGINT) AS `id`"
    assert items[1] == "image['na`me'] AS `na``me`"
    assert items[2] == (
        "(CASE WHEN image['id'] IS NOT NULL AND try_cast(image['id'] AS BIGINT) IS NULL THEN 1 ELSE 0 END)"
        " AS __ticdc_lake_unrepresentable__"
    )


def test_merge_joins_on_the_key_without_casts_on_the_target() -> None:
    sql = merge_statement("`c`.`d`.`t`", "src", [TargetColumn("id", "long"), TargetColumn("v", "string")], ["id"])
    assert sql.splitlines() == [
        "MERGE INTO `c`.`d`.`t` t USING src s ON t.`id` = s.`id`",
        "WHEN MATCHED AND s.`__ticdc_lake_op__` = 'D' THEN DELETE",
        "WHEN MATCHED THEN UPDATE SET t.`id` = s.`id`, t.`v` = s.`v`",
        "WHEN NOT MATCHED AND s.`__ticdc_lake_op__` <> 'D' THEN INSERT (`id`, `v`) VALUES (s.`id`, s.`v`)",
    ]


def test_merge_without_key_matches_every_column_null_safe() -> None:
    sql = merge_statement("t", "s", [TargetColumn("a", "int"), TargetColumn("b", "int")], [])
    assert "ON t.`a` <=> s.`a` AND t.`b` <=> s.`b`" in sql


def test_spark_column_types_read_back_as_iceberg_type_names() -> None:
    from ticdc_lake.apply.merge_sql import iceberg_type_of

    spark_names = ["int", "bigint", "float", "double", "date", "timestamp_ntz", "timestamp", "string", "binary"]
    assert [iceberg_type_of(n) for n in spark_names] == [
        "int",
        "long",
        "float",
        "double",
        "date",
        "timestamp",
        "timestamptz",
        "string",
        "binary",
    ]
    assert iceberg_type_of("decimal(20,0)") == "decimal(20,0)"
