from __future__ import annotations

import json

from ticdc_lake.schema.history import SchemaFact, collapse
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema


def schema(version: int, extra: bool = False) -> TableSchema:
    columns = [ColumnSchema("id", "bigint", nullable=False), ColumnSchema("amount", "decimal", length=12, scale=2)]
    if extra:
        columns.append(ColumnSchema("note", "varchar", length=64))
    return TableSchema("shop", "orders", tuple(columns), (IndexSchema("PRIMARY", ("id",), primary=True),), 7, version)


def fact(version: int, event: str, ts: int, offset: int, partition: int = 0) -> SchemaFact:
    return SchemaFact(
        schema(version, extra=version > 1),
        event,
        ts,
        "CREATE TABLE ..." if event != "BOOTSTRAP" else None,
        "t",
        partition,
        offset,
    )


def test_repeats_collapse_and_the_ddl_record_wins_over_bootstrap() -> None:
    entries = collapse(
        [
            fact(1, "BOOTSTRAP", 0, 1),
            fact(1, "CREATE", 100, 0, partition=2),
            fact(1, "CREATE", 100, 0, partition=1),  # the same DDL broadcast to another partition
            fact(1, "BOOTSTRAP", 0, 9),
            fact(2, "inferred", 200, 5),
            fact(2, "ALTER", 200, 5),
        ]
    )
    assert [(e.key, e.fact.event, e.fact.partition) for e in entries] == [
        (("shop", "orders", 1), "CREATE", 1),
        (("shop", "orders", 2), "ALTER", 0),
    ]


def test_bootstrap_only_version_is_kept() -> None:
    (entry,) = collapse([fact(3, "BOOTSTRAP", 0, 4), fact(3, "BOOTSTRAP", 0, 2)])
    assert (entry.fact.event, entry.fact.offset) == ("BOOTSTRAP", 2)


def test_rendered_columns_and_iceberg_schema() -> None:
    (entry,) = collapse([fact(2, "ALTER", 10, 0)])
    assert json.loads(entry.iceberg_schema_json()) == [
        {"name": "id", "type": "long", "required": False},
        {"name": "amount", "type": "decimal(12,2)", "required": False},
        {"name": "note", "type": "string", "required": False},
    ]
    columns = json.loads(entry.columns_json())
    assert [c["type"] for c in columns] == ["bigint", "decimal(12,2)", "varchar(64)"]
    assert json.loads(entry.indexes_json()) == [
        {"name": "PRIMARY", "columns": ["id"], "primary": True, "unique": False}
    ]


def test_several_versions_of_one_table_from_ddl_rows_and_the_drop_marker() -> None:
    from dataclasses import replace

    from ticdc_lake.schema.ddl_fold import DDL_STEP, DROPPED
    from ticdc_lake.schema.history import event_facts

    v1, v2 = replace(schema(100), source="open-ddl"), replace(schema(200, extra=True), source="open-ddl")
    v2_first_step = replace(v2, columns=v2.columns[:1])
    v2_last = replace(v2, extra={DDL_STEP: 1})
    rows = [
        ("DDL", "CREATE", "CREATE TABLE orders ...", 100, v1, None),
        ("DDL", "CREATE", "CREATE TABLE orders ...", 100, v1, None),  # broadcast copy
        ("DDL", "ALTER", "ALTER TABLE orders DROP amount", 200, v2_first_step, v1),
        ("DDL", "ALTER", "ALTER TABLE orders ADD amount ..., ADD note ...", 200, v2_last, v2_first_step),
        ("DDL", None, "DROP TABLE orders", 300, None, v2_last),
        ("DDL", "ALTER", "ALTER TABLE orders FROB", 250, None, None),  # no schema: no row
    ]
    facts = [f for kind, t, q, ts, post, pre in rows for f in event_facts(kind, t, q, ts, ("t", 0, ts), post, pre)]
    entries = collapse(facts)
    assert [(e.key[2], e.fact.event, e.fact.ddl_query, e.fact.dropped) for e in entries] == [
        (100, "CREATE", "CREATE TABLE orders ...", False),
        (200, "ALTER", "ALTER TABLE orders ADD amount ..., ADD note ...", False),
        (300, "ERASE", "DROP TABLE orders", True),
    ]
    marker = entries[2].fact.schema
    assert (marker.version, marker.columns, marker.extra[DROPPED]) == (300, v2.columns, True)


def test_drop_database_marks_each_live_table_of_the_database_dropped() -> None:
    from dataclasses import replace

    from ticdc_lake.schema.ddl_facts import DROPPED
    from ticdc_lake.schema.history import database_drop_facts

    orders_v1, orders_v2 = schema(10), schema(20, extra=True)
    gone = replace(schema(15), table="gone", extra={DROPPED: True})  # dropped before: no new marker
    later = replace(schema(40), table="later")  # created after the DROP DATABASE: untouched
    elsewhere = replace(schema(10), database="other")
    facts = database_drop_facts(
        "shop", 30, "DROP DATABASE shop", ("t", 0, 9), [orders_v1, orders_v2, gone, later, elsewhere]
    )
    assert [(f.schema.table, f.schema.version, f.event, f.dropped, f.commit_ts, f.offset) for f in facts] == [
        ("orders", 30, "ERASE", True, 30, 9)
    ]
    assert [c.name for c in facts[0].schema.columns] == ["id", "amount", "note"]  # the last columns
    assert facts[0].schema.extra[DROPPED] is True
