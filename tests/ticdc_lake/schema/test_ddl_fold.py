"""DDL text folded into table schemas in commit order: chains, shared TSOs, copies, renames, drops, errors."""

from __future__ import annotations

from dataclasses import replace

from ticdc_lake.schema.ddl_fold import DDL_STEP, DROPPED, DdlFact, FoldedDdl, fold_ddls, number_ddls
from ticdc_lake.schema.ddl_parser import parse_create_table
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema

CREATE = "CREATE TABLE orders (id BIGINT PRIMARY KEY, amount DECIMAL(12,2), note VARCHAR(20))"


def ddl(
    ts: int, sql: str, table: str | None = "orders", *, partition: int = 0, offset: int = 0, **kw: object
) -> DdlFact:
    return DdlFact(ts, "shop", table, None, sql, "t", partition, offset, **kw)  # type: ignore[arg-type]


def names(schema: TableSchema | None) -> list[str]:
    assert schema is not None
    return [c.name for c in schema.columns]


def fold(facts: list[DdlFact], lookup: MemorySchemaLookup | None = None) -> dict[int, FoldedDdl]:
    results = fold_ddls(facts, lookup if lookup is not None else MemorySchemaLookup(), "canal-json")
    return {key[0] * 10 + facts_index(facts, key): r for key, r in results.items()}


def facts_index(facts: list[DdlFact], key: object) -> int:
    return min(f.ordinal for f in facts if f.key == key)


def test_a_chain_of_alters_gives_each_ddl_its_pre_and_post_schema() -> None:
    lookup = MemorySchemaLookup()
    facts = [
        ddl(100, CREATE),
        ddl(200, "ALTER TABLE orders ADD COLUMN paid TINYINT(1) NOT NULL DEFAULT 0 AFTER amount", offset=1),
        ddl(300, "ALTER TABLE orders DROP COLUMN note, MODIFY amount DECIMAL(14,2)", offset=2),
        ddl(400, "ALTER TABLE orders RENAME COLUMN paid TO is_paid", offset=3),
    ]
    r = fold(facts, lookup)
    assert r[1000].pre_table_schema is None
    assert names(r[1000].table_schema) == ["id", "amount", "note"]
    assert names(r[2000].table_schema) == ["id", "amount", "paid", "note"]
    assert names(r[3000].table_schema) == ["id", "amount", "paid"]
    assert names(r[4000].table_schema) == ["id", "amount", "is_paid"]
    for ts, before in ((200, 100), (300, 200), (400, 300)):
        assert r[ts * 10].pre_table_schema == r[before * 10].table_schema
    post = r[3000].table_schema
    assert post is not None
    assert post.column("amount") is not None
    assert (post.version, post.source, post.column("amount").length) == (300, "canal-json-ddl", 14)  # type: ignore[union-attr]
    assert all(x.error is None for x in r.values())
    latest = lookup.latest("shop", "orders", 250)
    assert latest is not None
    assert latest.version == 200
    assert names(latest) == ["id", "amount", "paid", "note"]


def test_ddls_sharing_a_tso_keep_their_order_and_the_last_one_holds_the_version() -> None:
    lookup = MemorySchemaLookup()
    facts = list(
        number_ddls(
            [
                ddl(100, CREATE),
                ddl(200, "ALTER TABLE orders ADD COLUMN b INT", offset=1),
                ddl(200, "ALTER TABLE orders ADD COLUMN c INT AFTER b", offset=2),
            ]
        )
    )
    assert [f.ordinal for f in facts] == [0, 0, 1]
    results = fold_ddls(list(reversed(facts)), lookup, "open")  # input order does not matter
    first, second = results[facts[1].key], results[facts[2].key]
    assert names(first.table_schema) == ["id", "amount", "note", "b"]
    assert second.pre_table_schema == first.table_schema
    assert names(second.table_schema) == ["id", "amount", "note", "b", "c"]
    assert second.table_schema is not None
    assert second.table_schema.extra[DDL_STEP] == 1
    assert DDL_STEP not in (first.table_schema.extra if first.table_schema else {})
    assert names(lookup.latest("shop", "orders", 200)) == ["id", "amount", "note", "b", "c"]


def test_broadcast_and_redelivered_copies_fold_once() -> None:
    per_partition = [
        [
            ddl(100, CREATE, partition=p, offset=0),
            ddl(200, "ALTER TABLE orders ADD COLUMN b INT", partition=p, offset=5),
        ]
        for p in range(3)
    ]
    redelivered = [ddl(200, "ALTER TABLE orders ADD COLUMN b INT", partition=1, offset=9)]
    facts = list(number_ddls([f for part in per_partition for f in part] + redelivered))
    assert facts[-1].ordinal == 0
    results = fold_ddls(facts, MemorySchemaLookup(), "open")
    assert len(results) == 2
    assert all(r.error is None for r in results.values())  # a second ADD COLUMN b would have failed
    assert names(results[facts[1].key].table_schema) == ["id", "amount", "note", "b"]


def test_rename_chains_follow_the_table_and_the_old_name_is_gone() -> None:
    facts = [
        ddl(100, CREATE),
        ddl(200, "RENAME TABLE orders TO orders_v2", table="orders_v2"),
        ddl(300, "ALTER TABLE orders_v2 RENAME TO orders_v3", table="orders_v3"),
        ddl(400, "ALTER TABLE orders_v3 ADD COLUMN x INT", table="orders_v3"),
        ddl(500, "ALTER TABLE orders ADD COLUMN y INT"),
    ]
    lookup = MemorySchemaLookup()
    results = fold_ddls(facts, lookup, "canal-json")
    r = [results[f.key] for f in facts]
    assert r[1].pre_table_schema is not None
    assert r[1].pre_table_schema.table == "orders"
    assert r[1].table_schema is not None
    assert (r[1].table_schema.table, r[1].table_schema.version) == ("orders_v2", 200)
    assert r[2].pre_table_schema == r[1].table_schema
    assert r[2].table_schema is not None
    assert r[2].table_schema.table == "orders_v3"
    assert names(r[3].table_schema) == ["id", "amount", "note", "x"]
    assert r[4].table_schema is None
    assert r[4].error is not None
    assert "ALTER TABLE orders ADD COLUMN y INT" in r[4].error
    assert "shop.orders" in r[4].error


def test_a_swap_inside_one_rename_statement() -> None:
    other = "CREATE TABLE items (sku VARCHAR(8) PRIMARY KEY)"
    swap = "RENAME TABLE orders TO tmp, items TO orders, tmp TO items"
    facts = [ddl(100, CREATE), ddl(100, other, table="items", offset=1), ddl(200, swap, table="items", offset=2)]
    facts = list(number_ddls(facts))
    lookup = MemorySchemaLookup()
    results = fold_ddls(facts, lookup, "canal-json")
    swapped = results[facts[2].key]
    assert swapped.table_schema is not None
    assert swapped.table_schema.table == "items"
    assert names(swapped.table_schema) == ["id", "amount", "note"]
    assert names(lookup.latest("shop", "orders", 200)) == ["sku"]


def test_drop_then_create_gives_a_fresh_table() -> None:
    lookup = MemorySchemaLookup()
    facts = [
        ddl(100, CREATE),
        ddl(200, "DROP TABLE orders"),
        ddl(250, "ALTER TABLE orders ADD COLUMN z INT"),
        ddl(300, "CREATE TABLE orders (k INT PRIMARY KEY)"),
    ]
    results = fold_ddls(facts, lookup, "canal-json")
    dropped, alter, create = (results[f.key] for f in facts[1:])
    assert dropped.table_schema is None
    assert dropped.dropped == (("shop", "orders"),)
    assert names(dropped.pre_table_schema) == ["id", "amount", "note"]
    marker = lookup.get("shop", "orders", 200)
    assert marker is not None
    assert marker.extra[DROPPED] is True
    assert alter.error is not None
    assert "no schema of table shop.orders is known" in alter.error
    assert create.pre_table_schema is None
    assert names(create.table_schema) == ["k"]
    assert names(lookup.latest("shop", "orders", 300)) == ["k"]


def test_drop_database_drops_every_known_table_and_create_database_changes_none() -> None:
    lookup = MemorySchemaLookup()
    facts = [
        ddl(90, "CREATE DATABASE shop", table=None),
        ddl(100, CREATE),
        ddl(200, "DROP DATABASE shop", table=None),
    ]
    results = fold_ddls(facts, lookup, "open")
    assert results[facts[0].key] == FoldedDdl(None, None)
    assert results[facts[2].key].dropped == (("shop", "orders"),)
    assert results[facts[2].key].table_schema is None


def test_unreadable_or_inapplicable_ddl_gives_the_reason_and_keeps_the_last_good_schema() -> None:
    lookup = MemorySchemaLookup()
    facts = [
        ddl(100, CREATE),
        ddl(200, "ALTER TABLE orders FROBNICATE everything"),
        ddl(300, "ALTER TABLE orders DROP COLUMN nope"),
        ddl(400, "ALTER TABLE orders ADD COLUMN ok INT"),
    ]
    results = fold_ddls(facts, lookup, "canal-json")
    bad, missing, fine = (results[f.key] for f in facts[1:])
    assert bad.table_schema is None
    assert bad.error is not None
    assert "ALTER TABLE orders FROBNICATE everything" in bad.error
    assert missing.error is not None
    assert "'nope'" in missing.error
    assert "DROP COLUMN nope" in missing.error
    assert names(missing.pre_table_schema) == ["id", "amount", "note"]
    assert fine.error is None
    assert names(fine.table_schema) == ["id", "amount", "note", "ok"]


def test_truncate_index_and_like_create_new_versions() -> None:
    facts = [
        ddl(100, CREATE, table_id=7),
        ddl(200, "TRUNCATE TABLE orders", table_id=8),
        ddl(300, "CREATE UNIQUE INDEX by_note ON orders (note)"),
        ddl(400, "CREATE TABLE orders_copy LIKE orders", table="orders_copy"),
        ddl(500, "DROP INDEX by_note ON orders"),
    ]
    results = fold_ddls(facts, MemorySchemaLookup(), "open")
    create, truncate, index, like, drop_index = (results[f.key] for f in facts)
    assert truncate.table_schema is not None
    assert create.table_schema is not None
    assert truncate.table_schema.columns == create.table_schema.columns
    assert (truncate.table_schema.version, truncate.table_schema.table_id) == (200, 8)
    assert index.table_schema is not None
    assert [i.name for i in index.table_schema.indexes] == ["PRIMARY", "by_note"]
    assert like.table_schema is not None
    assert like.table_schema.table == "orders_copy"
    assert [i.name for i in like.table_schema.indexes] == ["PRIMARY", "by_note"]
    assert drop_index.table_schema is not None
    assert [i.name for i in drop_index.table_schema.indexes] == ["PRIMARY"]


def test_a_carried_schema_is_kept_and_is_the_base_of_the_next_ddl_text() -> None:
    carried = replace(parse_create_table(CREATE, "shop"), version=150, source="debezium-table-changes")
    facts = [
        ddl(150, "CREATE TABLE orders (...)", table_schema=carried),
        ddl(250, "ALTER TABLE orders ADD COLUMN b INT"),
    ]
    results = fold_ddls(facts, MemorySchemaLookup(), "debezium")
    assert results[facts[0].key].table_schema is carried
    after = results[facts[1].key]
    assert after.pre_table_schema == carried
    assert names(after.table_schema) == ["id", "amount", "note", "b"]
    assert after.table_schema is not None
    assert after.table_schema.source == "debezium-ddl"


def test_a_ddl_landed_in_an_earlier_run_folds_again_to_the_same_schema() -> None:
    first = MemorySchemaLookup()
    facts = [ddl(100, CREATE), ddl(200, "ALTER TABLE orders ADD COLUMN b INT")]
    earlier = fold_ddls(facts, first, "canal-json")
    history = MemorySchemaLookup(first.as_mapping().values())  # what schema history holds now
    again = fold_ddls([*facts[1:], ddl(300, "ALTER TABLE orders ADD COLUMN c INT")], history, "canal-json")
    assert again[facts[1].key] == earlier[facts[1].key]
    assert names(history.latest("shop", "orders", 300)) == ["id", "amount", "note", "b", "c"]


def test_facts_travel_as_json() -> None:
    carried = replace(parse_create_table(CREATE, "shop"), version=150)
    fact = ddl(150, CREATE, table_schema=carried, ordinal=2, table_id=5)
    assert DdlFact.from_json(fact.to_json()) == fact


def test_table_names_in_ddl_text_compare_case_insensitively() -> None:
    facts = [ddl(100, CREATE), ddl(200, "ALTER TABLE ORDERS ADD COLUMN b INT"), ddl(300, "DROP TABLE Orders")]
    lookup = MemorySchemaLookup()
    results = fold_ddls(facts, lookup, "canal-json")
    altered = results[facts[1].key].table_schema
    assert altered is not None
    assert (altered.table, names(altered)) == ("orders", ["id", "amount", "note", "b"])
    assert results[facts[2].key].dropped == (("shop", "orders"),)


def test_a_carried_schema_without_pre_gets_the_one_in_effect_before() -> None:
    created = replace(parse_create_table(CREATE, "shop"), version=100, source="debezium-table-changes")
    indexed = replace(created, version=200, indexes=())
    renamed = replace(created, table="orders_v2", version=300)
    facts = [
        ddl(100, CREATE, table_schema=created),
        ddl(200, "CREATE INDEX i ON orders (note)", table_schema=indexed),
        ddl(300, "RENAME TABLE orders TO orders_v2", table="orders_v2", table_schema=renamed),
    ]
    results = fold_ddls(facts, MemorySchemaLookup(), "debezium")
    assert [results[f.key].pre_table_schema for f in facts] == [None, created, indexed]
