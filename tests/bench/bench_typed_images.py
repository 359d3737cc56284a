"""Typed row images: what each carrier of row images costs to write (decode) and to read typed (apply).

    .venv/bin/python tests/bench/bench_typed_images.py [--rows 1000000] [--carriers map,avro,...]

Local Spark on 2 cores, a JDBC (SQLite) Iceberg catalog in a temporary folder. For ``--rows``
images of one 10-column table (the column kinds of the benchmarks) each carrier is written by
Python workers (``mapInArrow``, as the decode stage writes ``change_events``) into an Iceberg
table, then read back as the typed MERGE source (typed columns and the count of values Iceberg
cannot hold), materialized with the ``noop`` sink. Carriers:

- ``none``: the images are made and dropped (the cost every carrier shares; subtract it);
- ``map``: today's ``MAP<STRING,STRING>`` of canonical text, typed with ``merge_sql.typed_projection``;
- ``variant_jvm``: the same map, typed once in the JVM at write time into a ``VARIANT``
  (``to_variant_object`` of the map's values cast to their types), read with ``try_variant_get``;
- ``variant_py``: a ``VARIANT`` built by the Python worker (``typed_images_probe.VariantImages``);
  both variants count the values the types cannot hold once, at write time (column ``bad``);
- ``avro``: one Avro record per image (fastavro, one writer schema per table version), read with
  spark-avro's ``from_avro``;
- ``struct``: a typed struct of one table version, converted a column at a time by Arrow's casts:
  the floor of the read side (a column per table version, which one ``change_events`` cannot hold).

Then a fidelity check: values of docs/canonical-values.md that are hard to carry, through every
carrier, against today's path. Prints figures only; see docs/typed-row-images.md.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import bench_support as support  # type: ignore[import-not-found,unused-ignore]  # beside this file
import pyarrow as pa
from bench_typed_images_jvm import (  # type: ignore[import-not-found,unused-ignore]
    JVM_CARRIERS,
    jvm_columns,
    jvm_typed_frame,
    jvm_write,
)
from typed_images_probe import AvroImages, Column, VariantImages  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake.apply.merge_sql import BAD_VALUES_COLUMN, TargetColumn, spark_type, typed_projection, typed_value
from ticdc_lake.identifiers import quote, sql_string

#: The benchmark table: (name, Iceberg type) as ``type_mapping.iceberg_type`` maps its MySQL types.
COLUMNS = (
    Column("id", "long"),  # BIGINT
    Column("customer", "string"),  # VARCHAR(64)
    Column("amount", "decimal(12,2)"),  # DECIMAL(12,2)
    Column("quantity", "int"),  # INT
    Column("ratio", "double"),  # DOUBLE
    Column("born", "date"),  # DATE
    Column("created_at", "timestamp"),  # DATETIME(6)
    Column("updated_at", "timestamptz"),  # TIMESTAMP(3)
    Column("payload", "binary"),  # VARBINARY(64)
    Column("lifetime", "decimal(20,0)"),  # BIGINT UNSIGNED
)
CARRIERS = ("none", "map", "variant_jvm", "variant_py", "avro", "struct", *JVM_CARRIERS)
MAP_ARROW = pa.map_(pa.string(), pa.string())
VARIANT_ARROW = pa.struct(
    [
        pa.field("value", pa.binary(), nullable=False),
        pa.field("metadata", pa.binary(), nullable=False, metadata={b"variant": b"true"}),
    ]
)


def image(i: int) -> dict[str, str | None]:
    """Row ``i`` as canonical text (what a decoder hands over today)."""
    return {
        "id": str(i),
        "customer": f"customer {i % 977} Zürich",
        "amount": f"{i % 100000}.{i % 100:02d}",
        "quantity": str(i % 1000),
        "ratio": str((i % 1000) / 8),
        "born": f"{1950 + i % 60:04d}-{1 + i % 12:02d}-{1 + i % 28:02d}",
        "created_at": f"2026-11-{1 + i % 28:02d} 10:{i % 60:02d}:{(i * 7) % 60:02d}.{i % 1000000:06d}",
        "updated_at": f"2026-11-21T08:{i % 60:02d}:00.{i % 1000:03d}Z",
        "payload": base64.b64encode(bytes([i % 256, 0xAD, 0xBE, 0xEF])).decode(),
        "lifetime": str(2**64 - 1 - i) if i % 10 else None,
    }


def map_array(images: Sequence[dict[str, str | None]]) -> pa.Array:
    """Images as one Arrow map column, as ``decode_arrow`` builds it."""
    offsets: list[int] = [0]
    keys: list[str] = []
    values: list[str | None] = []
    for one in images:
        keys.extend(one)
        values.extend(one.values())
        offsets.append(len(keys))
    return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(keys), pa.array(values), type=MAP_ARROW)


def carrier_columns(carrier: str) -> str:
    """The table's columns beside ``id`` and ``version`` (Spark DDL)."""
    return {
        "none": "",
        "map": ", `after` MAP<STRING, STRING>",
        "variant_jvm": ", `after` VARIANT, bad INT",
        "variant_py": ", `after` VARIANT, bad INT",
        "avro": ", `after` BINARY, untyped MAP<STRING, STRING>, absent ARRAY<STRING>",
        "struct": f", `after` STRUCT<{', '.join(f'{quote(c.name)}: {spark_type(c.iceberg_type)}' for c in COLUMNS)}>",
    }[carrier]


def _arrow_type(iceberg_type: str) -> pa.DataType:
    simple = {"long": pa.int64(), "int": pa.int32(), "double": pa.float64(), "float": pa.float32()}
    simple.update({"date": pa.date32(), "timestamp": pa.timestamp("us"), "timestamptz": pa.timestamp("us", "UTC")})
    if iceberg_type in simple:
        return simple[iceberg_type]
    precision, scale = iceberg_type[len("decimal(") : -1].split(",")
    return pa.decimal128(int(precision), int(scale))


def struct_array(images: Sequence[dict[str, str | None]], columns: Sequence[Column]) -> pa.Array:
    """A typed struct per image, converted a column at a time by Arrow's casts (no bad values here:
    a cast that fails would fall back to :func:`typed_images_probe.typed_value` per value)."""
    import pyarrow.compute as pc

    arrays = []
    for c in columns:
        texts = [one.get(c.name) for one in images]
        if c.iceberg_type == "binary":
            arrays.append(pa.array([None if t is None else base64.b64decode(t) for t in texts], pa.binary()))
        elif c.iceberg_type == "string":
            arrays.append(pa.array(texts, pa.string()))
        else:
            arrays.append(pc.cast(pa.array(texts, pa.string()), _arrow_type(c.iceberg_type)))
    return pa.StructArray.from_arrays(arrays, names=[c.name for c in columns])


def arrow_columns(
    carrier: str, images: list[dict[str, str | None]], columns: Sequence[Column]
) -> tuple[list[pa.Array], list[str]]:
    """The carrier's Arrow columns of ``images`` (one table version) and their names."""
    if carrier in ("map", "variant_jvm"):
        return [map_array(images)], ["after"]
    if carrier == "variant_py":
        encoder = VariantImages(columns)
        encoded = [encoder.encode(one) for one in images]
        values = pa.array([value for value, _ in encoded], pa.binary())
        metadata = pa.repeat(pa.scalar(encoder.metadata, pa.binary()), len(images))
        variants = pa.StructArray.from_arrays([values, metadata], fields=list(VARIANT_ARROW))
        return [variants, pa.array([bad for _, bad in encoded], pa.int32())], ["after", "bad"]
    if carrier == "struct":
        return [struct_array(images, columns)], ["after"]
    if carrier == "avro":
        from fastavro import parse_schema, schemaless_writer

        avro = AvroImages(columns)
        schema = parse_schema(avro.schema)
        blobs, untyped, absent = [], [], []
        buffer = io.BytesIO()
        for one in images:
            record, bad, missing = avro.record(one)
            buffer.seek(0)
            buffer.truncate()
            schemaless_writer(buffer, schema, record)
            blobs.append(buffer.getvalue())
            untyped.append(list(bad.items()) or None)
            absent.append(missing or None)
        return [
            pa.array(blobs, pa.binary()),
            pa.array(untyped, MAP_ARROW),
            pa.array(absent, pa.list_(pa.string())),
        ], ["after", "untyped", "absent"]
    return [], []


def make_batches(carrier: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def batches(source: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in source:
            ids = batch.column(0).to_pylist()
            images = [image(i) for i in ids]
            arrays, names = arrow_columns(carrier, images, COLUMNS)
            version = pa.repeat(pa.scalar(1, pa.int32()), len(ids))
            yield pa.RecordBatch.from_arrays([batch.column(0), version, *arrays], names=["id", "version", *names])

    return batches


def jvm_variant(columns: Sequence[Column], source: str = "after") -> str:
    """SQL typing a map once into a VARIANT object: absent keys stay absent, NULL stays a variant
    null, and a text the type cannot hold stays in the variant as that text."""
    cases = " ".join(
        f"WHEN {sql_string(c.name)} THEN "
        + (
            "CAST(v AS VARIANT)"
            if c.iceberg_type == "string"
            else f"coalesce(CAST({typed_value('v', c.iceberg_type)} AS VARIANT), CAST(v AS VARIANT))"
        )
        for c in columns
    )
    return f"to_variant_object(transform_values({source}, (k, v) -> CASE k {cases} ELSE CAST(v AS VARIANT) END))"


def jvm_bad(columns: Sequence[Column], source: str = "after") -> str:
    """SQL counting the values of a map its columns' types cannot hold (as ``typed_projection``)."""
    parts = [
        f"CASE WHEN {source}[{sql_string(c.name)}] IS NOT NULL "
        f"AND {typed_value(f'{source}[{sql_string(c.name)}]', c.iceberg_type)} IS NULL THEN 1 ELSE 0 END"
        for c in columns
        if c.iceberg_type != "string"
    ]
    return f"({' + '.join(parts) or '0'})"


def variant_path(name: str) -> str:
    return sql_string("$[" + json.dumps(name) + "]")


def read_items(carrier: str, columns: Sequence[Column]) -> list[str]:
    """SELECT items of the typed MERGE source: one typed column per column and the bad-value count."""
    if carrier in ("map", "none"):
        return typed_projection("after", [TargetColumn(c.name, c.iceberg_type) for c in columns])
    if carrier == "struct":  # a bad-value count would be a column written at decode
        return [*(f"`after`.{quote(c.name)} AS {quote(c.name)}" for c in columns), f"0 AS {BAD_VALUES_COLUMN}"]
    if carrier.startswith("variant"):
        # Counted at write time: the target's types are the version's or lossless widenings of them
        # (a type change that is not would need the check here, for its column only).
        items = [
            f"try_variant_get(`after`, {variant_path(c.name)}, '{spark_type(c.iceberg_type)}') AS {quote(c.name)}"
            for c in columns
        ]
        return [*items, f"bad AS {BAD_VALUES_COLUMN}"]
    items = [f"r.c{i} AS {quote(c.name)}" for i, c in enumerate(columns)]  # avro: after from_avro AS r
    return [*items, f"coalesce(size(untyped), 0) AS {BAD_VALUES_COLUMN}"]


def typed_frame(spark: Any, table: str, carrier: str, columns: Sequence[Column]) -> Any:
    if carrier in ("none", "jvm_none"):
        return spark.table(table).selectExpr("id")
    if carrier in JVM_CARRIERS:
        return jvm_typed_frame(spark, table, carrier, COLUMNS)
    frame = spark.table(table)
    if carrier == "avro":
        schema = json.dumps(AvroImages(columns).schema)
        frame = frame.selectExpr(f"from_avro(`after`, {sql_string(schema)}) AS r", "untyped")
        return frame.selectExpr(*read_items(carrier, columns))
    return frame.selectExpr(*read_items(carrier, columns))


def session(workdir: Path) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ticdc_lake.spark.settings import spark_jars

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-typed-images")
        .config("spark.jars", ",".join(spark_jars()))
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.lake.type", "jdbc")
        .config("spark.sql.catalog.lake.uri", f"jdbc:sqlite:{workdir}/catalog.db")
        .config("spark.sql.catalog.lake.jdbc.schema-version", "V1")
        .config("spark.sql.catalog.lake.warehouse", f"file://{workdir}/warehouse")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
    return spark


def create(spark: Any, table: str, carrier: str) -> None:
    version = "3" if "variant" in carrier else "2"
    columns = jvm_columns(carrier, COLUMNS) if carrier in JVM_CARRIERS else carrier_columns(carrier)
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, version INT{columns}) USING iceberg "
        f"TBLPROPERTIES ('format-version'='{version}', 'write.parquet.compression-codec'='zstd')"
    )


def write(spark: Any, table: str, carrier: str, rows: int, partitions: int) -> None:
    from pyspark.sql.types import StructType

    from ticdc_lake.spark.system_tables import UNSHUFFLED_WRITE

    if carrier in JVM_CARRIERS:
        jvm_write(spark, table, carrier, COLUMNS, rows, partitions)
        return
    base = "map" if carrier == "variant_jvm" else carrier
    schema = StructType.fromDDL(f"id BIGINT, version INT{carrier_columns(base)}")
    frame = spark.range(0, rows, 1, partitions).mapInArrow(make_batches(base), schema)
    if carrier == "variant_jvm":
        frame = frame.selectExpr("id", "version", f"{jvm_variant(COLUMNS)} AS `after`", f"{jvm_bad(COLUMNS)} AS bad")
    if carrier == "none":
        frame.write.format("noop").mode("overwrite").save()
        return
    frame.writeTo(table).options(**UNSHUFFLED_WRITE).append()


def measured(sampler: Any, action: Callable[[], Any]) -> tuple[Any, float, dict[str, float]]:
    sampler.sample()
    before = sampler.cpu()
    started = time.perf_counter()
    result = action()
    wall = time.perf_counter() - started
    sampler.sample()
    after = sampler.cpu()
    return result, wall, {k: v - before.get(k, 0.0) for k, v in after.items()}


def table_bytes(spark: Any, table: str) -> int:
    row = spark.sql(f"SELECT coalesce(sum(file_size_in_bytes), 0) AS b FROM {table}.files").first()
    return int(row["b"])


def bench(spark: Any, sampler: Any, carriers: Sequence[str], rows: int, partitions: int) -> list[dict[str, Any]]:
    results = []
    write(spark, "", "none", 20_000, partitions)  # warm-up: Python workers started, classes loaded
    for carrier in carriers:
        table = f"lake.bench.images_{carrier}"
        create(spark, table, carrier)
        _, write_s, write_cpu = measured(sampler, partial(write, spark, table, carrier, rows, partitions))
        source = typed_frame(spark, table, carrier, COLUMNS)
        _, read_s, read_cpu = measured(sampler, source.write.format("noop").mode("overwrite").save)
        made_only = carrier in ("none", "jvm_none")
        bad = 0 if made_only else source.selectExpr(f"sum({BAD_VALUES_COLUMN})").first()[0]
        stored = 0 if made_only else table_bytes(spark, table)
        results.append(
            {"carrier": carrier, "write": (write_s, write_cpu), "read": (read_s, read_cpu), "bytes": stored, "bad": bad}
        )
        print(_line(results[-1], rows), flush=True)
    return results


def _cpu_text(cpu: dict[str, float]) -> str:
    total = sum(cpu.values())
    parts = " ".join(f"{k} {cpu.get(k, 0.0):.1f}" for k in ("driver", "jvm", "workers"))
    return f"CPU {total:6.1f} s ({parts})"


def _line(result: dict[str, Any], rows: int) -> str:
    (ws, wc), (rs, rc) = result["write"], result["read"]
    per = 1e6 / rows
    return (
        f"{result['carrier']:<12} write {ws:6.1f} s wall, {_cpu_text(wc)} = {sum(wc.values()) * per:5.1f} us/row | "
        f"read typed {rs:5.1f} s wall, {_cpu_text(rc)} = {sum(rc.values()) * per:5.1f} us/row | "
        f"{result['bytes'] / 1e6:7.1f} MB ({result['bytes'] / rows:5.1f} B/row) | bad values {result['bad']}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--carriers", default=",".join(CARRIERS))
    parser.add_argument("--fidelity-only", action="store_true")
    args = parser.parse_args()
    carriers = [c for c in args.carriers.split(",") if c]
    unknown = sorted(set(carriers) - set(CARRIERS))
    if unknown:
        parser.error(f"unknown carriers {unknown}; known: {', '.join(CARRIERS)}")
    with tempfile.TemporaryDirectory(prefix="bench-typed-images-") as folder:
        workdir = Path(folder)
        sampler = support.TreeSampler().start()
        spark, session_s = support.timed(lambda: session(workdir))
        print(
            f"typed row images: {args.rows:,} rows of {len(COLUMNS)} columns, local[2] on {os.cpu_count()} cores, "
            f"{args.partitions} write tasks, JDBC (SQLite) catalog, zstd Parquet; JVM start {session_s:.1f} s "
            f"(not counted); load average {os.getloadavg()[0]:.2f} at start",
            flush=True,
        )
        try:
            if not args.fidelity_only:
                bench(spark, sampler, carriers, args.rows, args.partitions)
            from bench_typed_images_fidelity import fidelity, upgrade_check  # type: ignore[import-not-found,unused-ignore]

            fidelity(spark)
            upgrade_check(spark)
        finally:
            print(f"load average {os.getloadavg()[0]:.2f} at end", flush=True)
            spark.stop()
            sampler.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
