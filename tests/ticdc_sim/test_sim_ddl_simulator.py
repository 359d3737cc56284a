"""The simulator's DDL API: commit TSOs, emitted events, bootstrap state and the workload after DDL."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.catalog import TEMPLATES, column
from ticdc_sim.ddl_changes import AddColumnSpec, AddIndexSpec, AlterSpec, DropColumnSpec
from ticdc_sim.encoding import EncodedMessage
from ticdc_sim.model import DdlChange, DmlOp, RowChange, Transaction
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder
from ticdc_sim.simulator import OutMessage, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

DB = "shop"


def _sim(tables: int = 4, **kwargs: Any) -> TicdcSimulator:
    sim = TicdcSimulator(seed=11, partitions=2, workload=WorkloadConfig(tables=tables), **kwargs)
    sim.run_transactions(30)
    sim.take()
    return sim


def _ddls(messages: Sequence[OutMessage]) -> list[dict[str, Any]]:
    return [json.loads(m.value) for m in messages if m.kind == "DDL" and m.partition == 0]


def _touch(sim: TicdcSimulator, table: str, count: int = 5) -> list[Transaction]:
    return [sim.commit(sim.workload.next_changes(sim.model, only=[(DB, table)])) for _ in range(count)]


def _images(transactions: Sequence[Transaction]) -> list[dict[str, Any]]:
    return [dict(image) for t in transactions for c in t.changes for image in (c.before, c.after) if image is not None]


def test_add_column_is_one_alter_event_then_a_forced_watermark_and_dml_in_the_new_schema() -> None:
    sim = _sim()
    before = sim.model.schema(DB, "orders")
    commit_ts = sim.add_column(DB, "orders", column("priority", "int", nullable=False, default="3"), after="status")
    messages = sim.take()
    assert [(m.kind, m.partition) for m in messages] == [
        ("DDL", 0),
        ("DDL", 1),
        ("WATERMARK", 0),
        ("WATERMARK", 1),
    ]
    assert {m.commit_ts for m in messages} == {commit_ts}
    assert commit_ts == sim.checkpoint_ts == sim.model.last_commit_ts
    [ddl] = _ddls(messages)
    assert (ddl["type"], ddl["commitTs"]) == ("ALTER", commit_ts)
    assert ddl["sql"] == ("ALTER TABLE `shop`.`orders` ADD COLUMN `priority` int NOT NULL DEFAULT '3' AFTER `status`")
    after = sim.model.schema(DB, "orders")
    assert ddl["tableSchema"]["version"] == after.version
    assert after.version is not None
    assert before.version is not None
    assert before.version < after.version < commit_ts
    assert after.table_id == before.table_id
    assert [c.name for c in after.columns][4:7] == ["status", "priority", "created_at"]
    assert {r["priority"] for r in sim.model.rows_at(DB, "orders", commit_ts)} == {3}
    images = _images(_touch(sim, "orders"))
    assert images
    assert all(list(image) == [c.name for c in after.columns] for image in images)


def test_alter_table_with_several_specs_is_one_event() -> None:
    sim = _sim()
    specs: list[AlterSpec] = [
        AddColumnSpec(column("tier", "varchar", length=8, default="basic")),
        DropColumnSpec("avatar"),
    ]
    commit_ts = sim.alter_table(DB, "accounts", [*specs, AddIndexSpec("idx_owner", ("owner",))])
    [ddl] = _ddls(sim.take())
    assert ddl["type"] == "ALTER"
    assert ddl["sql"].startswith("ALTER TABLE `shop`.`accounts` ADD COLUMN `tier` varchar(8) ")
    assert ddl["sql"].endswith(", DROP COLUMN `avatar`, ADD INDEX `idx_owner` (`owner`)")
    assert sim.model.ddls()[-1][0] == commit_ts
    images = _images(_touch(sim, "accounts"))
    assert all("tier" in image and "avatar" not in image for image in images)


def test_every_single_ddl_method_commits_one_ddl_and_returns_its_tso() -> None:
    sim = _sim()
    calls = [
        lambda: sim.drop_column(DB, "orders", "note"),
        lambda: sim.rename_column(DB, "orders", "city", "town"),
        lambda: sim.modify_column(DB, "orders", column("amount", "decimal", length=16, scale=2, nullable=False)),
        lambda: sim.create_index(DB, "order_lines", "idx_label", ("label",)),
        lambda: sim.drop_index(DB, "order_lines", "idx_sku"),
        lambda: sim.create_index(DB, "orders", "uk", ("id", "customer"), unique=True),
        lambda: sim.drop_primary_key(DB, "orders"),
        lambda: sim.add_primary_key(DB, "orders", ("id",)),
    ]
    types = []
    for call in calls:
        commit_ts = call()
        assert sim.model.ddls()[-1][0] == commit_ts == sim.checkpoint_ts
        [ddl] = _ddls(sim.take())
        types.append(ddl["type"])
        _touch(sim, "orders", 2)
        _touch(sim, "order_lines", 2)
    assert types == ["ALTER", "ALTER", "ALTER", "CINDEX", "DINDEX", "CINDEX", "DINDEX", "CINDEX"]
    assert sim.model.key_columns(DB, "orders") == ("id",)
    assert [c.name for c in sim.model.schema(DB, "orders").columns][:3] == ["id", "customer", "town"]


def test_rename_tables_emits_one_event_per_table_sharing_one_commit_tso() -> None:
    sim = _sim()
    rows = sim.model.rows(DB, "orders")
    commit_ts = sim.rename_tables([(DB, "orders", DB, "orders_new"), (DB, "accounts", "other", "accounts")])
    messages = sim.take()
    assert [(m.kind, m.partition, m.commit_ts) for m in messages[:4]] == [
        ("DDL", 0, commit_ts),
        ("DDL", 1, commit_ts),
        ("DDL", 0, commit_ts),
        ("DDL", 1, commit_ts),
    ]
    first, second = _ddls(messages)
    assert (first["type"], first["sql"]) == ("RENAME", "RENAME TABLE `shop`.`orders` TO `shop`.`orders_new`")
    assert (second["type"], second["sql"]) == ("RENAME", "RENAME TABLE `shop`.`accounts` TO `other`.`accounts`")
    assert [ts for ts, _ in sim.model.ddls()][-2:] == [commit_ts, commit_ts]
    assert sim.model.rows("shop", "orders_new") == rows
    assert sim.model.rows_at(DB, "orders", commit_ts) == []
    assert ("other", "accounts") in sim.workload.tables()
    assert (DB, "orders") not in sim.workload.tables()
    images = _images(sim.run_transactions(30))
    assert images
    assert all(t.changes[0].table != "orders" or t.changes[0].database != DB for t in sim.model.transactions()[-30:])
    with pytest.raises(ValueError, match="not for"):
        sim.workload.next_changes(sim.model, only=[(DB, "orders")])


def test_rename_keeps_bootstrap_state_truncate_forgets_it() -> None:
    sim = _sim(tables=1)
    sim.rename_table(DB, "orders", DB, "orders2")
    sim.take()
    _touch(sim, "orders2", 1)
    assert "BOOTSTRAP" not in [m.kind for m in sim.take()]  # same table id: known to the worker
    sim.advance(5)
    bootstraps = [json.loads(m.value) for m in sim.take() if m.kind == "BOOTSTRAP"]
    assert [b["tableSchema"]["table"] for b in bootstraps] == ["orders2", "orders2"]  # new version: resent
    old_id = sim.model.schema(DB, "orders2").table_id
    commit_ts = sim.truncate_table(DB, "orders2")
    [ddl] = _ddls(sim.take())
    assert ddl["type"] == "TRUNCATE"
    assert sim.model.schema(DB, "orders2").table_id != old_id
    assert sim.model.rows_at(DB, "orders2", commit_ts) == []
    [txn] = _touch(sim, "orders2", 1)
    assert {c.op for c in txn.changes} == {DmlOp.INSERT}  # no keys left to update or delete
    assert [m.kind for m in sim.take()][:2] == ["BOOTSTRAP", "BOOTSTRAP"]


def test_drop_table_stops_its_dml_and_create_again_is_a_fresh_table() -> None:
    sim = _sim()
    schema = sim.model.schema(DB, "order_lines")
    drop_ts = sim.drop_table(DB, "order_lines")
    [ddl] = _ddls(sim.take())
    assert ddl["type"] == "ERASE"
    assert (DB, "order_lines") not in sim.workload.tables()
    sim.run_transactions(20)
    assert all(c.table != "order_lines" for t in sim.model.transactions()[-20:] for c in t.changes)
    created = sim.create_table(TableSchema(DB, "order_lines", schema.columns, schema.indexes, source="simulator"))
    assert created.table_id != schema.table_id
    sim.workload.attach(created)
    _touch(sim, "order_lines", 3)
    assert sim.model.rows_at(DB, "order_lines", drop_ts - 1) != []
    assert len(sim.model.rows(DB, "order_lines")) <= 9
    assert [ts for ts, _ in sim.model.schema_history(DB, "order_lines")] == [sim.model.ddls()[-1][0]]


def test_drop_database_is_one_query_event_and_drops_its_tables() -> None:
    sim = _sim()
    sim.create_database("scratch")
    kept = sim.create_table(TEMPLATES[1].build("scratch", "kept"))
    sim.workload.attach(kept)
    _touch_ref = sim.workload.next_changes(sim.model, only=[("scratch", "kept")])
    sim.commit(_touch_ref)
    sim.take()
    commit_ts = sim.drop_database("scratch")
    [ddl] = _ddls(sim.take())
    assert (ddl["type"], ddl["sql"], ddl["commitTs"]) == ("QUERY", "DROP DATABASE `scratch`", commit_ts)
    assert ("scratch", "kept") not in sim.model.tables()
    assert ("scratch", "kept") not in sim.workload.tables()
    sim.run_transactions(5)


class _SilentOnDrop(SimpleJsonEncoder):
    """A protocol that sends nothing for DROP TABLE (the ``encode_ddl`` → None contract)."""

    def encode_ddl(self, ddl: DdlChange, commit_ts: int, build_ts: int) -> EncodedMessage:
        if ddl.ddl_type == "ERASE":
            return None  # type: ignore[return-value]  # the base contract allows None; Simple never does
        return super().encode_ddl(ddl, commit_ts, build_ts)


def test_a_ddl_the_protocol_does_not_send_is_committed_and_moves_the_watermark() -> None:
    sim = _sim(encoder=_SilentOnDrop())
    commit_ts = sim.drop_table(DB, "orders")
    assert [(m.kind, m.commit_ts) for m in sim.take()] == [("WATERMARK", commit_ts), ("WATERMARK", commit_ts)]
    assert (DB, "orders") not in sim.model.tables()


def test_failed_ddl_changes_nothing() -> None:
    sim = _sim()
    last = sim.model.last_commit_ts
    with pytest.raises(SchemaError, match="part of index"):
        sim.drop_column(DB, "orders", "id")
    with pytest.raises(SchemaError, match="not modelled"):
        sim.modify_column(DB, "orders", column("amount", "double"))
    assert sim.model.last_commit_ts == last
    assert [m for m in sim.take() if m.kind == "DDL"] == []


def test_the_same_seed_gives_the_same_bytes_through_ddl() -> None:
    def run() -> list[bytes]:
        sim = _sim()
        sim.add_column(DB, "orders", column("x", "int", default="1"))
        sim.rename_tables([(DB, "accounts", DB, "acc")])
        sim.truncate_table(DB, "order_lines")
        sim.run_transactions(20)
        return [m.value for m in sim.messages()]

    assert run() == run()


def test_expected_wrappers_default_to_the_checkpoint() -> None:
    sim = _sim()
    sim.drop_column(DB, "orders", "note")
    row = sim.model.rows(DB, "orders")[0]
    sim.commit([RowChange(DmlOp.UPDATE, DB, "orders", row, {**row, "city": "Bern"})])
    columns = sim.expected_iceberg_columns(DB, "orders")
    assert [name for name, _ in columns] == [c.name for c in sim.model.schema(DB, "orders").columns]
    assert len(sim.expected_iceberg_rows(DB, "orders")) == len(sim.model.rows(DB, "orders"))
    assert sim.expected_iceberg_key(DB, "orders") == ("id",)
    sim.drop_table(DB, "orders")
    assert len(sim.expected_iceberg_rows(DB, "orders")) == len(sim.model.rows_at(DB, "orders", sim.checkpoint_ts - 1))
    assert sim.expected_iceberg_key(DB, "orders") == ("id",)
