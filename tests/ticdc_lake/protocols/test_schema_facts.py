"""Schema facts after decoding: DDL text to table schema, rows bound to the schema at their TSO."""

from __future__ import annotations

from dataclasses import replace

from ticdc_lake.events import ChangeEvent, EventFacts, EventKind, EventStatus, Op, SourcePosition
from ticdc_lake.protocols.schema_facts import complete_events, infer_schema, schema_note
from ticdc_lake.schema.ddl_fold import DdlFact, fold_ddls
from ticdc_lake.schema.inference import INFERRED_SOURCE, MISSING_FACTS
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema

POSITION = SourcePosition("t", 0, 7)


def _schema(version: int, colors: tuple[str, ...] = ("red", "green", "blue")) -> TableSchema:
    return TableSchema(
        "shop",
        "items",
        (
            ColumnSchema("id", "int", nullable=False),
            ColumnSchema("color", "enum", elements=colors),
            ColumnSchema("tags", "set", elements=("a", "b", "c")),
        ),
        (IndexSchema("primary", ("id",), primary=True, unique=True),),
        version=version,
        source="canal-json-ddl",
    )


def _row(commit_ts: int, after: dict[str, str | None], unresolved: list[str]) -> ChangeEvent:
    event = ChangeEvent(EventKind.DML, POSITION, commit_ts, "shop", "items", op=Op.INSERT, after=after)
    event.facts = EventFacts(unresolved_enum_set=tuple(unresolved))
    return event


def test_latest_picks_the_newest_version_not_after_the_commit_ts() -> None:
    lookup = MemorySchemaLookup([_schema(100), _schema(300), _schema(200)])
    assert lookup.latest("shop", "items", 99) is None
    assert [lookup.latest("shop", "items", ts).version for ts in (100, 250, 300, 10**19)] == [  # type: ignore[union-attr]
        100,
        200,
        300,
        300,
    ]
    assert lookup.latest("shop", "other", 500) is None


def test_enum_and_set_numbers_are_named_with_the_schema_in_effect() -> None:
    lookup = MemorySchemaLookup([_schema(100), _schema(200, ("red", "green", "blue", "black"))])
    early = _row(150, {"id": "1", "color": "3", "tags": "5"}, ["color", "tags"])
    late = _row(250, {"id": "2", "color": "4", "tags": "0"}, ["color", "tags"])
    complete_events([early, late], lookup, "canal-json")
    assert early.after == {"id": "1", "color": "blue", "tags": "a,c"}
    assert early.schema_version == 100
    assert late.after == {"id": "2", "color": "black", "tags": ""}
    assert late.schema_version == 200
    assert early.facts.unresolved_enum_set is None
    assert early.status is EventStatus.READY


def test_nulls_and_absent_columns_stay_as_they_were() -> None:
    event = _row(150, {"id": "1", "color": None}, ["color", "tags"])
    complete_events([event], MemorySchemaLookup([_schema(100)]), "open")
    assert event.after == {"id": "1", "color": None}


def test_numbers_without_a_known_schema_make_the_row_pending() -> None:
    event = _row(50, {"id": "1", "color": "2"}, ["color"])
    complete_events([event], MemorySchemaLookup([_schema(100)]), "open")
    assert event.status is EventStatus.PENDING
    assert event.after == {"id": "1", "color": "2"}
    assert event.pending_reason == (
        "ENUM/SET column(s) ['color'] of shop.items were sent as numbers and no table schema at or before "
        "commit ts 50 is known to name them"
    )


def test_an_index_beyond_the_members_keeps_the_row_pending_with_the_reason() -> None:
    event = _row(150, {"id": "1", "color": "9"}, ["color"])
    complete_events([event], MemorySchemaLookup([_schema(100)]), "open")
    assert event.status is EventStatus.PENDING
    assert event.pending_reason == (
        "shop.items column 'color' (schema version 100): ENUM index 9 is beyond the 3 members ('red', 'green', 'blue')"
    )


def test_rows_without_numbers_are_bound_or_left_unversioned() -> None:
    bound = _row(150, {"id": "1"}, [])
    alone = ChangeEvent(EventKind.DML, POSITION, 150, "shop", "nothing", op=Op.INSERT, after={"id": "1"})
    complete_events([bound, alone], MemorySchemaLookup([_schema(100)]), "debezium")
    assert bound.schema_version == 100
    assert alone.schema_version is None
    assert alone.status is EventStatus.READY


def test_simple_rows_keep_their_own_version() -> None:
    event = _row(150, {"id": "1"}, [])
    event.schema_version = 42
    complete_events([event], MemorySchemaLookup([_schema(100)]), "simple-json")
    assert event.schema_version == 42


def test_a_table_schema_without_version_takes_the_ddl_commit_ts() -> None:
    schema = _schema(100)
    ddl = ChangeEvent(EventKind.DDL, POSITION, 777, "shop", "items", ddl_type="ALTER", ddl_query="ALTER ...")
    ddl.table_schema = TableSchema(schema.database, schema.table, schema.columns, schema.indexes, source="x")
    complete_events([ddl], MemorySchemaLookup(), "debezium")
    assert ddl.table_schema.version == 777


def test_create_table_text_becomes_a_versioned_schema() -> None:
    ddl = ChangeEvent(
        EventKind.DDL,
        POSITION,
        555,
        "shop",
        "items",
        table_id=12,
        ddl_type="CREATE",
        ddl_query="CREATE TABLE `items` (`id` INT NOT NULL PRIMARY KEY, `color` ENUM('red','green') DEFAULT NULL)",
    )
    complete_events([ddl], MemorySchemaLookup(), "canal-json")
    schema = ddl.table_schema
    assert schema is not None
    assert (schema.database, schema.table, schema.version, schema.table_id, schema.source) == (
        "shop",
        "items",
        555,
        12,
        "canal-json-ddl",
    )
    assert [(c.name, c.mysql_type, c.nullable, c.elements) for c in schema.columns] == [
        ("id", "int", False, None),
        ("color", "enum", True, ("red", "green")),
    ]
    assert schema.handle_key() == ("id",)


def test_an_unreadable_create_keeps_no_schema_and_says_why() -> None:
    ddl = ChangeEvent(
        EventKind.DDL, POSITION, 555, "shop", "items", ddl_type="CREATE", ddl_query="CREATE TABLE items (((("
    )
    complete_events([ddl], MemorySchemaLookup(), "open")
    assert ddl.table_schema is None
    assert "CREATE TABLE items ((((" in (ddl.schema_error or "")


def _ddl(ts: int, sql: str) -> ChangeEvent:
    return ChangeEvent(EventKind.DDL, POSITION, ts, "shop", "items", ddl_type="ALTER", ddl_query=sql)


def test_ddl_events_get_the_folded_schemas_and_rows_bind_to_the_post_alter_version() -> None:
    create = "CREATE TABLE items (id INT PRIMARY KEY, color ENUM('red','green'))"
    alter = "ALTER TABLE items MODIFY color ENUM('red','green','blue')"
    broken = "ALTER TABLE items DROP COLUMN nope"
    facts = [
        DdlFact(100, "shop", "items", "CREATE", create, "t", 0, 1),
        DdlFact(200, "shop", "items", "ALTER", alter, "t", 0, 2),
        DdlFact(300, "shop", "items", "ALTER", broken, "t", 0, 3),
    ]
    lookup = MemorySchemaLookup()
    lookup.add_folded(fold_ddls(facts, lookup, "canal-json"))
    events = [_ddl(200, alter), _row(250, {"id": "1", "color": "3"}, ["color"]), _ddl(300, broken)]
    complete_events(events, lookup, "canal-json")
    altered, row, failed = events
    assert altered.table_schema is not None
    assert altered.pre_table_schema is not None
    assert (altered.table_schema.version, altered.pre_table_schema.version) == (200, 100)
    assert (row.schema_version, row.after) == (200, {"id": "1", "color": "blue"})
    assert failed.table_schema is None
    assert failed.pre_table_schema == altered.table_schema
    assert "DROP COLUMN nope" in (failed.schema_error or "")


def test_rows_of_a_never_seen_table_bind_to_an_inferred_schema_keeping_enum_numbers() -> None:
    lookup = MemorySchemaLookup()
    lookup.infer_missing = True
    row = _row(900, {"id": "1", "color": "2", "tags": "5"}, ["color", "tags"])
    row.column_types = {"id": "int", "color": "enum", "tags": "set"}
    row.facts = replace(row.facts, handle_key=("id",))
    complete_events([row], lookup, "canal-json")
    assert (row.status, row.schema_version, row.after) == (
        EventStatus.READY,
        0,
        {"id": "1", "color": "2", "tags": "5"},
    )
    inferred = lookup.get("shop", "items", 0)
    assert inferred is not None
    assert inferred.source == "inferred-from-rows"
    assert inferred.handle_key() == ("id",)


def test_rows_of_a_known_table_before_its_first_version_still_wait() -> None:
    lookup = MemorySchemaLookup([_schema(100)])
    lookup.infer_missing = True
    row = _row(50, {"id": "1", "color": "2"}, ["color"])
    row.column_types = {"id": "int", "color": "enum"}
    complete_events([row], lookup, "canal-json")
    assert row.status is EventStatus.PENDING
    assert lookup.get("shop", "items", 0) is None


def _unknown_reason(protocol: str, commit_ts: int, columns: str, version: int, source: str) -> str:
    return (
        f"{protocol}: row event for shop.items at commit ts {commit_ts} (topic t partition 0 offset 7) has "
        f"column(s) {columns} that schema version {version} ({source}) lacks: no DDL adding them was seen before it "
        "(a DDL this pipeline never received, or a baseline statement older than the ADD COLUMN). The row waits "
        "instead of being applied without those values, and the table is held before it: docs/schema-evolution.md, "
        "'Columns no schema announced' says what to do"
    )


def test_a_row_with_columns_its_schema_lacks_waits_with_the_reason() -> None:
    """Canal-JSON rows with v2..v5 after a missed DDL: never bound (and applied) without them."""
    row = _row(150, {"id": "1", "color": "red", "v2": "a", "v3": None, "v4": "c", "v5": "d"}, [])
    complete_events([row], MemorySchemaLookup([_schema(100)]), "canal-json")
    assert (row.status, row.schema_version) == (EventStatus.PENDING, None)
    assert row.pending_reason == _unknown_reason("canal-json", 150, "v2, v3, v4, v5", 100, "canal-json-ddl")
    assert row.unknown_columns == ("v2", "v3", "v4", "v5")
    assert schema_note(row) == row.pending_reason


def test_a_column_only_in_the_before_image_also_waits_and_names_compare_without_case() -> None:
    row = ChangeEvent(
        EventKind.DML, POSITION, 150, "shop", "items", op=Op.DELETE, before={"ID": "1", "Color": "red", "age": "3"}
    )
    complete_events([row], MemorySchemaLookup([_schema(100)]), "debezium")
    assert row.status is EventStatus.PENDING
    assert row.pending_reason == _unknown_reason("debezium", 150, "age", 100, "canal-json-ddl")


def test_a_row_that_gained_a_column_over_an_inferred_schema_waits() -> None:
    """Debezium: the Connect schema gains ``age`` with no DDL; the first row's inferred version 0 lacks it."""
    lookup = MemorySchemaLookup()
    lookup.infer_missing = True
    first = _row(900, {"id": "1"}, [])
    first.column_types, first.facts = {"id": "int"}, EventFacts(key_columns=("id",), unresolved_enum_set=())
    later = _row(950, {"id": "2", "age": "30"}, [])
    later.column_types, later.facts = (
        {"id": "int", "age": "int"},
        EventFacts(key_columns=("id",), unresolved_enum_set=()),
    )
    complete_events([first, later], lookup, "debezium")
    assert (first.status, first.schema_version) == (EventStatus.READY, 0)
    assert (later.status, later.schema_version) == (EventStatus.PENDING, None)
    assert later.pending_reason == _unknown_reason("debezium", 950, "age", 0, "inferred-from-rows")


def test_a_row_before_a_known_drop_keeps_the_dropped_column() -> None:
    dropped = TableSchema("shop", "items", (ColumnSchema("id", "int", nullable=False),), version=200)
    lookup = MemorySchemaLookup([_schema(100), dropped])
    before, after = _row(150, {"id": "1", "color": "red"}, []), _row(250, {"id": "1", "color": "red"}, [])
    complete_events([before, after], lookup, "debezium")
    assert (before.status, before.schema_version) == (EventStatus.READY, 100)
    assert (after.status, after.schema_version) == (EventStatus.PENDING, None)
    assert after.pending_reason == _unknown_reason("debezium", 250, "color", 200, "unknown")


def test_offset_ordered_rows_are_left_to_their_own_rule() -> None:
    row = _row(0, {"id": "1", "age": "3"}, [])
    row.facts = replace(row.facts, offset_ordered=True)
    complete_events([row], MemorySchemaLookup([_schema(0)]), "avro")
    assert (row.status, row.schema_version) == (EventStatus.READY, 0)


def test_a_canal_row_gives_a_version_zero_schema_with_its_key_and_missing_facts() -> None:
    row = ChangeEvent(EventKind.DML, SourcePosition("t", 0, 1), 500, "shop", "legacy", op=Op.INSERT)
    row.column_types = {"id": "bigint", "price": "decimal", "state": "enum", "note": "varchar"}
    row.facts = EventFacts(handle_key=("id",), primary_key=("id",))
    schema = infer_schema(row)
    assert schema is not None
    assert (schema.database, schema.table, schema.version, schema.source) == ("shop", "legacy", 0, INFERRED_SOURCE)
    assert [(c.name, c.mysql_type, c.nullable) for c in schema.columns] == [
        ("id", "bigint", False),
        ("price", "decimal", True),
        ("state", "enum", True),
        ("note", "varchar", True),
    ]
    assert schema.indexes == (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
    assert schema.extra[MISSING_FACTS] == [
        "column 'price': DECIMAL precision and scale unknown; the Iceberg column is a string",
        "column 'state': ENUM members unknown; values are kept as the numbers the rows send",
        "nullability and defaults: not in the rows; columns outside the key are nullable, without default",
    ]


def test_a_row_without_types_or_key_infers_nothing_or_no_key() -> None:
    row = ChangeEvent(EventKind.DML, SourcePosition("t", 0, 1), 5, "shop", "t", op=Op.INSERT)
    assert infer_schema(row) is None
    row.column_types = {"a": "int"}
    schema = infer_schema(row)
    assert schema is not None
    assert schema.handle_key() == ()
    assert "key: the rows name none; apply uses the whole row" in schema.extra[MISSING_FACTS]
