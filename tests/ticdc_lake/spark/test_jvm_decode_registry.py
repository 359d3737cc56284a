"""Which protocols decode in the JVM, and the Arrow conversion sorting their image keys to match."""

from __future__ import annotations

from decimal import Decimal

from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.spark.decode_arrow import SORTED_IMAGE_PROTOCOLS
from ticdc_lake.spark.jvm_decode.frames import local_root
from ticdc_lake.spark.jvm_decode.registry import CARRIER_PROTOCOLS, jvm_by_default, jvm_decoder_for
from ticdc_lake.spark.jvm_decode.simple_json import MAX_TABLE_VERSIONS, column_spec, table_versions


def test_protocols_whose_jvm_decoder_returns_maps_are_those_whose_images_are_sorted() -> None:
    with_maps = {p.value for p in Protocol if jvm_decoder_for(p) is not None and p not in CARRIER_PROTOCOLS}
    assert with_maps == SORTED_IMAGE_PROTOCOLS == {"simple-json"}
    assert {p for p in CARRIER_PROTOCOLS if jvm_decoder_for(p) is not None} == {Protocol.DEBEZIUM}


def test_landed_files_are_read_in_the_jvm_only_when_local() -> None:
    assert local_root("file:///lake/landing/", "orders") == "/lake/landing/orders"
    assert local_root("/lake/landing", "orders") == "/lake/landing/orders"
    assert local_root("s3://bucket/landing", "orders") is None


def test_column_specs_follow_the_python_converters_order() -> None:
    assert column_spec(ColumnSchema("a", "bigint", unsigned=True)) == ("int", Decimal(0), Decimal(2**64 - 1), None)
    assert column_spec(ColumnSchema("a", "year")) == ("int", Decimal(0), Decimal(2155), None)
    assert column_spec(ColumnSchema("a", "bit", length=3)) == ("int", Decimal(0), Decimal(7), None)
    assert column_spec(ColumnSchema("a", "varbinary")) == ("binary", None, None, None)
    assert column_spec(ColumnSchema("a", "json")) == ("text", None, None, None)
    assert column_spec(ColumnSchema("a", "numeric")) == ("decimal", None, None, None)
    assert column_spec(ColumnSchema("a", "enum", elements=("x", "y"))) == ("enum", None, None, ["x", "y"])
    assert column_spec(ColumnSchema("a", "enum")) == ("fallback", None, None, None)
    assert column_spec(ColumnSchema("a", "set", elements=tuple("abc"))) == ("set", None, None, ["a", "b", "c"])
    assert column_spec(ColumnSchema("a", "set", elements=tuple(str(i) for i in range(63)))) == (
        "fallback",
        None,
        None,
        None,
    )
    assert column_spec(ColumnSchema("a", "geometry")) == ("fallback", None, None, None)


def test_the_jvm_checks_the_newest_version_of_each_table_first_and_at_most_64() -> None:
    columns = (ColumnSchema("id", "int"),)
    lookup = MemorySchemaLookup(
        [*(TableSchema("db", "a", columns, version=v) for v in range(71)), TableSchema("db", "b", columns, version=5)]
    )
    covered = [(database, table, version) for database, table, version, _ in table_versions(lookup)]
    assert MAX_TABLE_VERSIONS == 64
    assert covered == [("db", "a", 70), ("db", "b", 5), *(("db", "a", v) for v in range(69, 7, -1))]


def test_the_jvm_path_is_the_default_only_for_debezium_runs_whose_every_version_it_takes() -> None:
    lean = TableSchema(
        "db",
        "t",
        (ColumnSchema("id", "bigint"), ColumnSchema("s", "varchar"), ColumnSchema("u", "int", unsigned=True)),
        version=1,
    )
    priced = TableSchema("db", "d", (ColumnSchema("id", "int"), ColumnSchema("price", "decimal", 10, 2)), version=3)
    unsigned_big = TableSchema("db", "u", (ColumnSchema("id", "bigint", unsigned=True),), version=4)
    bits = TableSchema("db", "f", (ColumnSchema("id", "int"), ColumnSchema("mask", "bit", 8)), version=6)
    binary = TableSchema("db", "b", (ColumnSchema("id", "int"), ColumnSchema("raw", "varbinary")), version=5)
    assert jvm_by_default(Protocol.DEBEZIUM, MemorySchemaLookup([lean]), CodecOptions())
    dates = TableSchema(
        "db",
        "w",
        (
            ColumnSchema("on", "date"),
            ColumnSchema("at", "datetime"),
            ColumnSchema("y", "year"),
            ColumnSchema("ts", "timestamp"),
            ColumnSchema("flag", "bit", 1),
            ColumnSchema("doc", "json"),
            ColumnSchema("e", "enum", elements=("a",)),
            ColumnSchema("st", "set", elements=("a",)),
            ColumnSchema("t", "time"),
        ),
        version=2,
    )
    assert jvm_by_default(Protocol.DEBEZIUM, MemorySchemaLookup([lean, dates]), CodecOptions())
    assert not jvm_by_default(Protocol.SIMPLE_JSON, MemorySchemaLookup([lean]), CodecOptions())
    assert not jvm_by_default(Protocol.DEBEZIUM, MemorySchemaLookup(), CodecOptions())
    # With the TiDB extension a binary column's text is base64 (its tidb_type says so); without, the
    # decoder cannot tell it from a text, so it leaves the rows to Python.
    assert jvm_by_default(Protocol.DEBEZIUM, MemorySchemaLookup([lean, binary]), CodecOptions())
    assert not jvm_by_default(
        Protocol.DEBEZIUM, MemorySchemaLookup([lean, binary]), CodecOptions(enable_tidb_extension=False)
    )
    for other in (priced, unsigned_big, bits):
        assert not jvm_by_default(Protocol.DEBEZIUM, MemorySchemaLookup([lean, other]), CodecOptions()), other.table
    narrowed = MemorySchemaLookup([lean])
    narrowed.carried[("db", "t", 1)] = ("long", "long", "string")  # a text column carried as another type
    assert not jvm_by_default(Protocol.DEBEZIUM, narrowed, CodecOptions())
