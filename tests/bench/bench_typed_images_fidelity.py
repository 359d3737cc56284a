"""Fidelity part of ``bench_typed_images.py``: values that are hard to carry, through every carrier.

Two versions of one table (version 2 adds a column and widens ``n`` from INT to BIGINT); every
carrier writes each image with its own version's types and is read typed for the latest version.
Today's path (the map of canonical text and ``merge_sql.typed_projection``) is the reference: each
carrier must give the same typed values and the same count of values Iceberg cannot hold, and
should keep what the map keeps (absent vs NULL, the text of a value Iceberg cannot hold).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
from bench_typed_images import (  # type: ignore[import-not-found,unused-ignore]
    MAP_ARROW,
    VARIANT_ARROW,
    jvm_bad,
    jvm_variant,
    map_array,
    read_items,
    variant_path,
)
from typed_images_probe import AvroImages, Column, VariantImages  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake.apply.merge_sql import BAD_VALUES_COLUMN, TargetColumn, spark_type, typed_projection
from ticdc_lake.identifiers import quote, sql_string

V1 = (
    Column("k", "long"),
    Column("d65", "string"),  # DECIMAL(65,30): wider than Iceberg's 38 digits, kept as text
    Column("d38", "decimal(38,10)"),
    Column("u64", "decimal(20,0)"),  # BIGINT UNSIGNED
    Column("day", "date"),
    Column("dt", "timestamp"),  # DATETIME(6)
    Column("ts", "timestamptz"),  # TIMESTAMP(3)
    Column("bin", "binary"),
    Column("f", "float"),
    Column("dbl", "double"),
    Column("t", "string"),  # TIME
    Column("n", "int"),
)
V2 = (*V1[:-1], Column("n", "long"), Column("extra", "long"))
CASES: list[tuple[int, str, dict[str, str | None]]] = [
    (
        1,
        "ordinary values, 65- and 38-digit decimals, 2^64-1, leap day, UTC instant, binary",
        {
            "k": "1",
            "d65": "12345678901234567890123456789012345.123456789012345678901234567890",
            "d38": "1234567890123456789012345678.1234567890",
            "u64": "18446744073709551615",
            "day": "2024-02-29",
            "dt": "2023-11-30 12:34:56.123",
            "ts": "2024-01-01T00:00:00.250Z",
            "bin": "//4AgA==",
            "f": "3.14",
            "dbl": "0.1",
            "t": "-838:59:59",
            "n": "7",
        },
    ),
    (
        1,
        "zero date, zero datetime, zero timestamp (Iceberg cannot hold them: counted); n NULL",
        {"k": "2", "day": "0000-00-00", "dt": "0000-00-00 00:00:00", "ts": "0000-00-00 00:00:00", "n": None},
    ),
    (
        1,
        "2023-02-31, a zero month, a decimal rounded to its scale; n absent",
        {"k": "3", "day": "2023-02-31", "dt": "2020-00-15 10:00:00", "d38": "0.00000000005", "bin": ""},
    ),
    (
        1,
        "year 0, the last microsecond, the epoch, negative decimal, INT minimum",
        {
            "k": "4",
            "day": "0000-01-01",
            "dt": "9999-12-31 23:59:59.999999",
            "ts": "1970-01-01T00:00:00Z",
            "d38": "-0.0000000001",
            "u64": "0",
            "f": "-0.5",
            "n": "-2147483648",
        },
    ),
    (2, "version 2: the added column, n above INT after widening", {"k": "5", "n": "2147483648", "extra": "9"}),
]


def _columns(version: int) -> tuple[Column, ...]:
    return V1 if version == 1 else V2


def _write_rows(carrier: str, version: int, images: list[dict[str, str | None]]) -> pa.RecordBatch:
    columns = _columns(version)
    arrays: list[pa.Array] = [pa.array([int(i["k"] or 0) for i in images], pa.int64())]
    arrays.append(pa.array([version] * len(images), pa.int32()))
    arrays.append(map_array(images))  # the reference, beside every carrier
    if carrier == "variant_py":
        encoder = VariantImages(columns)
        encoded = [encoder.encode(i) for i in images]
        values = pa.array([value for value, _ in encoded], pa.binary())
        metadata = pa.array([encoder.metadata] * len(images), pa.binary())
        arrays.append(pa.StructArray.from_arrays([values, metadata], fields=list(VARIANT_ARROW)))
        arrays.append(pa.array([bad for _, bad in encoded], pa.int32()))
    elif carrier == "avro":
        from fastavro import parse_schema, schemaless_writer

        avro = AvroImages(columns)
        schema = parse_schema(avro.schema)
        blobs, untyped, absent = [], [], []
        for one in images:
            record, bad, missing = avro.record(one)
            buffer = io.BytesIO()
            schemaless_writer(buffer, schema, record)
            blobs.append(buffer.getvalue())
            untyped.append(list(bad.items()) or None)
            absent.append(missing or None)
        arrays += [pa.array(blobs, pa.binary()), pa.array(untyped, MAP_ARROW), pa.array(absent, pa.list_(pa.string()))]
    names = [
        "row_key",
        "version",
        "image",
        *(["after", "bad"] if carrier != "avro" else ["after", "untyped", "absent"]),
    ]
    if carrier in ("map", "variant_jvm"):
        names = names[:3]
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _frame(spark: Any, carrier: str) -> Any:
    """The carrier's rows of every case, as the decode stage would have written them."""
    frames = []
    for version in (1, 2):
        images = [image for v, _, image in CASES if v == version]
        table = pa.Table.from_batches([_write_rows(carrier, version, images)])
        frame = _from_arrow(spark, table)
        if carrier == "variant_jvm":
            columns = _columns(version)
            frame = frame.selectExpr(
                "*", f"{jvm_variant(columns, 'image')} AS `after`", f"{jvm_bad(columns, 'image')} AS bad"
            )
        frames.append(frame)
    return frames


def _from_arrow(spark: Any, table: pa.Table) -> Any:
    """A DataFrame of ``table`` made by a Python worker (``mapInArrow``), as decode makes its rows."""
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = from_arrow_schema(table.schema)
    batches = table.to_batches()
    return spark.range(1).mapInArrow(lambda _: iter(batches), schema)


def _typed(spark: Any, carrier: str) -> dict[int, dict[str, Any]]:
    """Per key: the typed values for the latest version, the bad-value count, what is present/kept."""
    rows: dict[int, dict[str, Any]] = {}
    for version, frame in zip((1, 2), _frame(spark, carrier), strict=True):
        columns = _columns(version)
        if carrier == "map":
            typed = frame.selectExpr(
                "row_key", *typed_projection("image", [TargetColumn(c.name, c.iceberg_type) for c in V2]), "image"
            )
        elif carrier == "avro":
            schema = json.dumps(AvroImages(columns).schema)
            have = {c.name: i for i, c in enumerate(columns)}
            items = [
                f"CAST(r.c{have[c.name]} AS {spark_type(c.iceberg_type)}) AS {quote(c.name)}"
                if c.name in have
                else f"CAST(NULL AS {spark_type(c.iceberg_type)}) AS {quote(c.name)}"
                for c in V2
            ]
            typed = frame.selectExpr("row_key", f"from_avro(`after`, {sql_string(schema)}) AS r", "untyped", "absent")
            typed = typed.selectExpr(
                "row_key", *items, f"coalesce(size(untyped), 0) AS {BAD_VALUES_COLUMN}", "untyped", "absent"
            )
        else:
            presence = [f"variant_get(`after`, {variant_path(c.name)}) IS NOT NULL AS `has_{c.name}`" for c in V2]
            kept = [f"try_variant_get(`after`, {variant_path(c.name)}, 'string') AS `text_{c.name}`" for c in V2]
            typed = frame.selectExpr("row_key", *read_items(carrier, V2), *presence, *kept)
        shown = [f"{'hex' if c.iceberg_type == 'binary' else 'string'}({quote(c.name)}) AS {quote(c.name)}" for c in V2]
        others = [quote(name) for name in typed.columns if name not in {"row_key", *(c.name for c in V2)}]
        for row in typed.selectExpr("row_key", *shown, *others).collect():
            rows[row["row_key"]] = row.asDict(recursive=True)
    return rows


def _present(carrier: str, row: dict[str, Any], version: int) -> set[str]:
    """The columns the carrier says the image has (the others are absent, not NULL)."""
    if carrier == "map":
        return set(row["image"])
    if carrier == "avro":
        return {c.name for c in _columns(version)} - set(row["absent"] or ())
    return {c.name for c in V2 if row[f"has_{c.name}"]}


def fidelity(spark: Any) -> None:
    print("\nfidelity against today's map + try_cast (per case: typed values, bad-value count, absent vs NULL)")
    reference = _typed(spark, "map")
    for number, (version, what, _) in enumerate(CASES, 1):
        row = reference[number]
        print(f"  case {number} (v{version}) {what}: bad values {row[BAD_VALUES_COLUMN]}")
    for carrier in ("variant_jvm", "variant_py", "avro"):
        got = _typed(spark, carrier)
        diffs, absent_ok, text_ok = [], True, True
        for k, expected in reference.items():
            row, version = got[k], CASES[k - 1][0]
            for name in [*(c.name for c in V2), BAD_VALUES_COLUMN]:
                if row[name] != expected[name]:
                    diffs.append(f"case {k} {name}: {row[name]!r} instead of {expected[name]!r}")
            absent_ok = absent_ok and _present(carrier, row, version) == _present("map", expected, version)
            for column in V2:  # the text of each value the reference typed as NULL
                text = expected["image"].get(column.name)
                if text is None or expected[column.name] is not None or column.iceberg_type == "string":
                    continue
                held = (row["untyped"] or {}).get(column.name) if carrier == "avro" else row[f"text_{column.name}"]
                text_ok = text_ok and held == text
        print(
            f"  {carrier:<12} typed values and counts {'same' if not diffs else 'DIFFER'}; "
            f"absent vs NULL {'kept' if absent_ok else 'LOST'}; text of unrepresentable values "
            f"{'kept' if text_ok else 'LOST'}"
        )
        for line in diffs:
            print(f"      {line}")


def upgrade_check(spark: Any) -> None:
    """The migration step a typed carrier needs on an existing ``change_events`` (format version 2,
    row images as maps): upgrade the table to format version 3 in place and add a VARIANT column."""
    table = "lake.bench.upgrade_events"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, `after` MAP<STRING, STRING>) USING iceberg "
        "TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, map('a', '1'))")
    steps = [
        f"ALTER TABLE {table} SET TBLPROPERTIES ('format-version'='3')",
        f"ALTER TABLE {table} ADD COLUMN after_typed VARIANT",
        f"INSERT INTO {table} VALUES (2, map('a', '2'), parse_json('{{\"a\": 2}}'))",
    ]
    try:
        for step in steps:
            spark.sql(step)
        rows = spark.sql(
            "SELECT id, coalesce(try_variant_get(after_typed, '$.a', 'bigint'), try_cast(`after`['a'] AS BIGINT)) "
            f"AS a FROM {table} ORDER BY id"
        ).collect()
        version = spark.sql(f"SHOW TBLPROPERTIES {table} ('format-version')").collect()[0][1]
        print(
            f"\nmigration: format version 2 -> {version} in place, VARIANT column added; "
            f"rows {[tuple(r) for r in rows]}"
        )
    except Exception as exc:  # printed, not raised: the benchmark reports what works
        print(f"\nmigration: failed at a step: {str(exc).splitlines()[0][:300]}")
