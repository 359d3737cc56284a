"""The carried Iceberg type of each column per schema version: the DDL planner's rules over the history."""

from __future__ import annotations

from dataclasses import replace

from ticdc_lake.carried_types import HistoryVersion, carried_types, versions_of
from ticdc_lake.config import DropColumnPolicy, Policies, TypeChangePolicy
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema

PK = (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
ID = ColumnSchema("id", "int", nullable=False)
NOTE = ColumnSchema("note", "varchar", length=20)
V = 450_000_000_000_000_000


def _schema(version: int, *columns: ColumnSchema, table: str = "t", database: str = "db") -> TableSchema:
    return TableSchema(database, table, (ID, *columns), PK, version=V + version)


def _ddl(version: int, event: str, query: str, *columns: ColumnSchema, table: str = "t") -> HistoryVersion:
    return HistoryVersion(_schema(version, *columns, table=table), event, query)


def _types(history: list[HistoryVersion], policies: Policies | None = None) -> dict[tuple[str, int], tuple[str, ...]]:
    return {(table, version - V): types for (_, table, version), types in carried_types(history, policies).items()}


def test_versions_without_type_changes_carry_their_own_types() -> None:
    history = [
        _ddl(1, "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(20))", NOTE),
        _ddl(
            2, "ALTER", "ALTER TABLE t ADD COLUMN amount DECIMAL(12,2)", NOTE, ColumnSchema("amount", "decimal", 12, 2)
        ),
        _ddl(3, "ALTER", "ALTER TABLE t MODIFY amount DECIMAL(15,2)", NOTE, ColumnSchema("amount", "decimal", 15, 2)),
    ]
    assert _types(history) == {
        ("t", 1): ("int", "string"),
        ("t", 2): ("int", "string", "decimal(12,2)"),
        ("t", 3): ("int", "string", "decimal(15,2)"),  # a lossless widening: the target widens too
    }


def test_a_column_kept_as_string_carries_text_in_every_later_version_whatever_they_type_it() -> None:
    price = ColumnSchema("price", "varchar", length=20)
    history = [
        _ddl(1, "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, price VARCHAR(20))", price),
        _ddl(2, "ALTER", "ALTER TABLE t MODIFY price DOUBLE", ColumnSchema("price", "double")),
        _ddl(3, "ALTER", "ALTER TABLE t ADD COLUMN note VARCHAR(20)", ColumnSchema("price", "double"), NOTE),
        _ddl(4, "ALTER", "ALTER TABLE t MODIFY price DATETIME(3)", ColumnSchema("price", "datetime", fsp=3), NOTE),
    ]
    assert _types(history) == {
        ("t", 1): ("int", "string"),
        ("t", 2): ("int", "string"),
        ("t", 3): ("int", "string", "string"),
        ("t", 4): ("int", "string", "string"),
    }


def test_the_policy_fail_is_read_as_keep_as_string_since_a_held_table_resumes_only_under_it() -> None:
    history = [
        _ddl(1, "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, n INT)", ColumnSchema("n", "int")),
        _ddl(2, "ALTER", "ALTER TABLE t MODIFY n DATE", ColumnSchema("n", "date")),
    ]
    failing = Policies(on_incompatible_type_change=TypeChangePolicy.FAIL)
    assert _types(history, failing)[("t", 2)] == ("int", "string")


def test_renamed_columns_and_tables_keep_their_carried_type() -> None:
    history = [
        _ddl(1, "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, n DATE)", ColumnSchema("n", "date")),
        _ddl(2, "ALTER", "ALTER TABLE t MODIFY n BIGINT", ColumnSchema("n", "bigint")),
        _ddl(3, "ALTER", "ALTER TABLE t RENAME COLUMN n TO m", ColumnSchema("m", "bigint")),
        _ddl(4, "RENAME", "RENAME TABLE t TO u", ColumnSchema("m", "bigint"), table="u"),
        _ddl(5, "ALTER", "ALTER TABLE u CHANGE m k BIGINT", ColumnSchema("k", "bigint"), table="u"),
    ]
    types = _types(history)
    assert [types[("t", 2)], types[("t", 3)], types[("u", 4)], types[("u", 5)]] == [("int", "string")] * 4


def test_a_dropped_table_created_again_starts_from_its_own_types() -> None:
    history = [
        _ddl(1, "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, n DATE)", ColumnSchema("n", "date")),
        _ddl(2, "ALTER", "ALTER TABLE t MODIFY n DOUBLE", ColumnSchema("n", "double")),
        replace(_ddl(3, "ERASE", "DROP TABLE t", ColumnSchema("n", "double")), dropped=True),
        _ddl(4, "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, n DOUBLE)", ColumnSchema("n", "double")),
    ]
    types = _types(history)
    assert types[("t", 3)] == ("int", "string")
    assert types[("t", 4)] == ("int", "double")


def test_a_dropped_column_added_again_under_on_drop_column_drop_is_a_new_column() -> None:
    history = [
        _ddl(1, "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, n VARCHAR(20))", ColumnSchema("n", "varchar", 20)),
        _ddl(2, "ALTER", "ALTER TABLE t DROP COLUMN n"),
        _ddl(3, "ALTER", "ALTER TABLE t ADD COLUMN n DOUBLE", ColumnSchema("n", "double")),
    ]
    assert _types(history)[("t", 3)] == ("int", "double")
    kept = _types(history, Policies(on_drop_column=DropColumnPolicy.KEEP))
    assert kept[("t", 2)] == ("int",)


def test_a_bootstrap_is_no_ddl_so_the_target_keeps_its_types() -> None:
    """A BOOTSTRAP that types a column differently (no DDL seen) changes no Iceberg table: the
    values go into the target's type, as the map path's projection puts them (beyond it: NULL, counted)."""
    history = [
        _ddl(1, "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, n INT)", ColumnSchema("n", "int")),
        HistoryVersion(_schema(2, ColumnSchema("n", "bigint"), NOTE), "BOOTSTRAP"),
    ]
    assert _types(history)[("t", 2)] == ("int", "int", "string")


def test_a_table_met_mid_stream_starts_from_its_first_version() -> None:
    history = [
        HistoryVersion(_schema(-V, ColumnSchema("n", "date")), "inferred"),
        _ddl(5, "ALTER", "ALTER TABLE t MODIFY n INT", ColumnSchema("n", "int")),
    ]
    types = carried_types(history)
    assert types[("db", "t", 0)] == ("int", "date")
    assert types[("db", "t", V + 5)] == ("int", "string")


def test_a_version_with_a_column_iceberg_cannot_hold_carries_nothing() -> None:
    history = [_ddl(1, "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, g GEOMETRY)", ColumnSchema("g", "geometry"))]
    assert _types(history) == {}


def test_versions_of_takes_each_version_s_event_or_reads_it_from_the_schema() -> None:
    created = _schema(1, NOTE)
    altered = _schema(2, NOTE, ColumnSchema("amount", "int"))
    marker = replace(_schema(3, NOTE, ColumnSchema("amount", "int")), extra={"dropped": True})
    booted = _schema(1, table="u")
    schemas = {(s.database, s.table, s.version or 0): s for s in (created, altered, marker, booted)}
    events = {
        ("db", "t", V + 1): ("CREATE", "CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(20))", False),
        ("db", "t", V + 2): ("ALTER", "ALTER TABLE t ADD COLUMN amount INT", False),
    }
    assert versions_of(schemas, events) == [
        HistoryVersion(created, "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(20))"),
        HistoryVersion(altered, "ALTER", "ALTER TABLE t ADD COLUMN amount INT"),
        HistoryVersion(marker, "ERASE", None, dropped=True),  # a dropped marker the run's fold made
        HistoryVersion(booted, "inferred"),  # BOOTSTRAP, baseline, registry: no DDL
    ]
