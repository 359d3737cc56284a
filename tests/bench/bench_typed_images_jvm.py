"""Carriers of ``bench_typed_images.py`` whose values are typed in the JVM from the start.

What issue 14 item 1 leads to: a JVM decode (``from_json``/``from_avro`` with the table version's
schema) hands over typed values, never canonical text. Here Spark SQL makes the same images typed
from ``id`` (no Python at all), then each carrier is built from the typed struct:

- ``jvm_none``: the typed images made and dropped (the shared cost);
- ``jvm_struct``: the typed struct as it is (one column per table version: the floor);
- ``jvm_variant``: ``to_variant_object`` of the struct;
- ``jvm_avro``: ``to_avro`` of the struct with the version's writer schema (``AvroImages``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from typed_images_probe import AvroImages, Column  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake.apply.merge_sql import BAD_VALUES_COLUMN, spark_type
from ticdc_lake.identifiers import quote, sql_string

JVM_CARRIERS = ("jvm_none", "jvm_struct", "jvm_variant", "jvm_avro")
#: Typed values per column of ``bench_typed_images.COLUMNS``, from ``id`` (the same kinds of values).
VALUES = {
    "id": "id",
    "customer": "concat('customer ', id % 977, ' Zürich')",
    "amount": "CAST((id % 100000) + (id % 100) / 100 AS DECIMAL(12,2))",
    "quantity": "CAST(id % 1000 AS INT)",
    "ratio": "(id % 1000) / 8.0D",
    "born": "date_add(DATE'1950-01-01', CAST(id % 20000 AS INT))",
    "created_at": "CAST(timestamp_micros(1793000000000000 + id * 7) AS TIMESTAMP_NTZ)",
    "updated_at": "timestamp_millis(1794000000000 + id)",
    "payload": "unhex(concat(lpad(hex(id % 256), 2, '0'), 'ADBEEF'))",
    "lifetime": "CASE WHEN id % 10 = 0 THEN NULL ELSE CAST(18446744073709551615 - id AS DECIMAL(20,0)) END",
}


def _struct(columns: Sequence[Column], names: Sequence[str] | None = None) -> str:
    fields = ", ".join(
        f"{sql_string(name)}, CAST({VALUES[c.name]} AS {spark_type(c.iceberg_type)})"
        for c, name in zip(columns, names or [c.name for c in columns], strict=True)
    )
    return f"named_struct({fields})"


def jvm_columns(carrier: str, columns: Sequence[Column]) -> str:
    kinds = ", ".join(f"{quote(c.name)}: {spark_type(c.iceberg_type)}" for c in columns)
    return {
        "jvm_none": "",
        "jvm_struct": f", `after` STRUCT<{kinds}>",
        "jvm_variant": ", `after` VARIANT, bad INT",
        "jvm_avro": ", `after` BINARY, untyped MAP<STRING, STRING>, absent ARRAY<STRING>",
    }[carrier]


def jvm_write(spark: Any, table: str, carrier: str, columns: Sequence[Column], rows: int, partitions: int) -> None:
    from ticdc_lake.spark.system_tables import UNSHUFFLED_WRITE

    frame = spark.range(0, rows, 1, partitions)
    if carrier == "jvm_none":
        frame.selectExpr("id", f"{_struct(columns)} AS `after`").write.format("noop").mode("overwrite").save()
        return
    if carrier == "jvm_struct":
        after = [f"{_struct(columns)} AS `after`"]
    elif carrier == "jvm_variant":
        after = [f"to_variant_object({_struct(columns)}) AS `after`", "0 AS bad"]
    else:
        schema = json.dumps(AvroImages(columns).schema)
        struct = _struct(columns, [f"c{i}" for i in range(len(columns))])
        after = [
            f"to_avro({struct}, {sql_string(schema)}) AS `after`",
            "CAST(NULL AS MAP<STRING, STRING>) AS untyped",
            "CAST(NULL AS ARRAY<STRING>) AS absent",
        ]
    frame.selectExpr("id", "1 AS version", *after).writeTo(table).options(**UNSHUFFLED_WRITE).append()


def jvm_typed_frame(spark: Any, table: str, carrier: str, columns: Sequence[Column]) -> Any:
    from bench_typed_images import read_items  # type: ignore[import-not-found,unused-ignore]

    frame = spark.table(table)
    if carrier == "jvm_struct":
        return frame.selectExpr(
            *(f"`after`.{quote(c.name)} AS {quote(c.name)}" for c in columns), f"0 AS {BAD_VALUES_COLUMN}"
        )
    if carrier == "jvm_variant":
        return frame.selectExpr(*read_items("variant_py", columns))
    schema = json.dumps(AvroImages(columns).schema)
    frame = frame.selectExpr(f"from_avro(`after`, {sql_string(schema)}) AS r", "untyped")
    return frame.selectExpr(*read_items("avro", columns))
