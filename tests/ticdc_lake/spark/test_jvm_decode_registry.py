"""Which protocols decode in the JVM, and the Arrow conversion sorting their image keys to match."""

from __future__ import annotations

from decimal import Decimal

from ticdc_lake.config import Protocol
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.spark.decode_arrow import SORTED_IMAGE_PROTOCOLS
from ticdc_lake.spark.jvm_decode.frames import local_root
from ticdc_lake.spark.jvm_decode.registry import jvm_decoder_for
from ticdc_lake.spark.jvm_decode.simple_json import MAX_TABLE_VERSIONS, column_spec, table_versions


def test_protocols_with_a_jvm_decoder_are_those_whose_images_are_sorted() -> None:
    assert {p.value for p in Protocol if jvm_decoder_for(p) is not None} == SORTED_IMAGE_PROTOCOLS == {"simple-json"}


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
