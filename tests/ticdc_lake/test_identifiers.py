"""The reversible mapping of upstream names to Iceberg names, and Spark SQL quoting."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ticdc_lake.config import TargetTables
from ticdc_lake.errors import SchemaError
from ticdc_lake.identifiers import (
    ESCAPED_CHARACTERS,
    UPSTREAM_DATABASE_PROPERTY,
    UPSTREAM_TABLE_PROPERTY,
    iceberg_column_name,
    iceberg_namespace_name,
    iceberg_table_name,
    qualified,
    quote,
    sql_string,
    table_comment,
    upstream_name,
    upstream_properties,
)


@pytest.mark.parametrize(
    ("upstream", "iceberg"),
    [
        ("orders", "orders"),
        ("select", "select"),
        ("Order Items", "Order Items"),
        ("订单", "订单"),
        ("a`b'c\"d", "a`b'c\"d"),
        ("a.b", "a%2Eb"),
        (".", "%2E"),
        ("..", "%2E%2E"),
        ("a/b", "a%2Fb"),
        ("a\\b", "a%5Cb"),
        ("a:b", "a%3Ab"),
        ("a#b", "a%23b"),
        ("a?b", "a%3Fb"),
        ("50%", "50%25"),
        ("a%2Eb", "a%252Eb"),
        ("tab\there", "tab%09here"),
        ("nul\x00", "nul%00"),
        ("del\x7f", "del%7F"),
        ("é-*+&=@!$,;()[]{}|~^<> ", "é-*+&=@!$,;()[]{}|~^<> "),
    ],
)
def test_only_the_characters_that_break_are_escaped(upstream: str, iceberg: str) -> None:
    assert iceberg_table_name(upstream) == iceberg
    assert iceberg_namespace_name(upstream) == iceberg
    assert upstream_name(iceberg) == upstream


def test_the_escaped_set_is_exactly_the_documented_one() -> None:
    controls = {chr(c) for c in range(0x20)} | {"\x7f"}
    assert controls | {"%", ".", "/", "\\", ":", "#", "?"} == ESCAPED_CHARACTERS


def test_column_names_are_kept() -> None:
    for name in ("a.b", "select", "a`b", "中文", "a%b", " lead", "a\tb"):
        assert iceberg_column_name(name) == name


def test_case_is_kept() -> None:
    assert iceberg_table_name("Orders") == "Orders"
    assert iceberg_table_name("orders") == "orders"


def test_a_64_character_name_stays_within_one_path_segment() -> None:
    # MySQL names have at most 64 characters; escaped ASCII takes 3 bytes, so 192 < 255.
    assert len(iceberg_table_name("." * 64).encode()) == 192
    assert len(iceberg_table_name("表" * 64).encode()) == 192


@pytest.mark.parametrize("bad", ["", "a.b", "a/b", "50%", "a%2", "a%2e", "a%41", "a%zz", "tab\t"])
def test_names_the_mapping_cannot_make_are_refused(bad: str) -> None:
    with pytest.raises(SchemaError) as info:
        upstream_name(bad)
    assert "was not made by ticdc_lake.identifiers" in str(info.value)
    assert "ticdc.upstream-table" in str(info.value)


def test_the_refusal_says_why() -> None:
    with pytest.raises(SchemaError) as info:
        upstream_name("a%41b")
    assert str(info.value) == (
        "Iceberg name 'a%41b' was not made by ticdc_lake.identifiers ('%41' escapes 'A', which is never escaped); "
        "read the upstream name from the table property 'ticdc.upstream-table' instead (docs/identifiers.md)"
    )
    with pytest.raises(SchemaError) as info:
        upstream_name("a.b/c")
    assert "(it holds '.', '/' unescaped)" in str(info.value)


def test_empty_upstream_names_are_refused() -> None:
    with pytest.raises(SchemaError, match="upstream table name is empty"):
        iceberg_table_name("")
    with pytest.raises(SchemaError, match="upstream database name is empty"):
        iceberg_namespace_name("")


_NAMES = st.text(min_size=1, max_size=64)


@given(_NAMES)
def test_round_trip_over_arbitrary_unicode(name: str) -> None:
    mapped = iceberg_table_name(name)
    assert upstream_name(mapped) == name
    assert iceberg_namespace_name(name) == mapped
    assert not set(mapped) & (ESCAPED_CHARACTERS - {"%"})
    assert iceberg_table_name(upstream_name(mapped)) == mapped


@given(_NAMES, _NAMES)
def test_distinct_names_stay_distinct(a: str, b: str) -> None:
    assert (iceberg_table_name(a) == iceberg_table_name(b)) == (a == b)


@given(st.text(alphabet=st.sampled_from([*sorted(ESCAPED_CHARACTERS), "a", "2", "E", "F"]), min_size=1))
def test_upstream_name_inverts_or_refuses(text: str) -> None:
    try:
        upstream = upstream_name(text)
    except SchemaError:
        return
    assert iceberg_table_name(upstream) == text


def test_namespace_template_gets_the_escaped_database() -> None:
    assert TargetTables().namespace_for("shop.eu") == "shop%2Eeu"
    assert TargetTables(namespace="cdc_{database}").namespace_for("订单库") == "cdc_订单库"
    assert TargetTables(namespace="cdc_{database}").namespace_for("a/b") == "cdc_a%2Fb"


def test_upstream_names_are_recorded_exactly() -> None:
    assert upstream_properties("shop.eu", "a'b") == {
        UPSTREAM_DATABASE_PROPERTY: "shop.eu",
        UPSTREAM_TABLE_PROPERTY: "a'b",
    }
    assert table_comment("d`b", "it's") == "'TiCDC `d``b`.`it\\'s`'"


def test_spark_quoting() -> None:
    assert quote("a`b") == "`a``b`"
    assert qualified("lake", "a%2Eb", "t") == "`lake`.`a%2Eb`.`t`"
    assert sql_string("it's a \\ test") == "'it\\'s a \\\\ test'"
