"""Bursts: several changes on ONE key inside one transaction, applied in order by the model."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.column_types import Value
from ticdc_sim.model import DdlChange, DmlOp, RowChange, Transaction, UpstreamModel
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

DB, TB = "app", "users"


def _model(repeated_keys: bool = True) -> UpstreamModel:
    cols = (column("id", "bigint", nullable=False), column("name", "varchar", length=20))
    schema = TableSchema(DB, TB, cols, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))
    model = UpstreamModel(repeated_keys=repeated_keys)
    model.apply_ddl(10, DdlChange("CREATE", "CREATE TABLE ...", DB, TB, schema))
    model.apply(Transaction(20, (RowChange(DmlOp.INSERT, DB, TB, None, {"id": 1, "name": "a"}),)))
    return model


def _ins(id_: int, name: str) -> RowChange:
    return RowChange(DmlOp.INSERT, DB, TB, None, {"id": id_, "name": name})


def _upd(before: tuple[int, str], after: tuple[int, str]) -> RowChange:
    return RowChange(
        DmlOp.UPDATE,
        DB,
        TB,
        dict(zip(("id", "name"), before, strict=True)),
        dict(zip(("id", "name"), after, strict=True)),
    )


def _del(id_: int, name: str, split: bool = False) -> RowChange:
    return RowChange(DmlOp.DELETE, DB, TB, {"id": id_, "name": name}, None, split)


@pytest.mark.parametrize(
    ("changes", "final"),
    [
        ((_ins(2, "x"), _upd((2, "x"), (2, "y")), _upd((2, "y"), (2, "z"))), [(1, "a"), (2, "z")]),
        ((_upd((1, "a"), (1, "b")), _del(1, "b")), []),
        ((_del(1, "a"), _ins(1, "again")), [(1, "again")]),
        ((_upd((1, "a"), (5, "k")), _upd((5, "k"), (5, "k2"))), [(5, "k2")]),
        (
            (
                _del(1, "a", split=True),
                RowChange(DmlOp.INSERT, DB, TB, None, {"id": 6, "name": "s"}, split=True),
                _upd((6, "s"), (6, "t")),
                _del(6, "t"),
                _ins(6, "u"),
            ),
            [(6, "u")],
        ),
    ],
)
def test_model_applies_a_burst_in_order(changes: tuple[RowChange, ...], final: list[tuple[int, str]]) -> None:
    model = _model()
    applied = model.apply(Transaction(30, changes))
    assert [c.op for c in applied.changes] == [c.op for c in changes]
    assert model.rows(DB, TB) == [{"id": i, "name": n} for i, n in final]
    assert model.rows_at(DB, TB, 20) == [{"id": 1, "name": "a"}]
    # one version per key per commit: the final state
    assert all(len([v for v in h if v.ts == 30]) <= 1 for h in model.lineage_at(DB, TB, 30).versions.values())  # type: ignore[union-attr]


def test_burst_events_are_checked_against_the_state_the_earlier_events_left() -> None:
    model = _model()
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(30, (_upd((1, "a"), (1, "b")), _upd((1, "a"), (1, "c")))))
    assert str(caught.value) == (
        "app.users at commit_ts 30: UPDATE `before` image {'id': 1, 'name': 'a'} differs from the current row "
        "{'id': 1, 'name': 'b'}"
    )
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(30, (_ins(2, "x"), _ins(2, "y"))))
    assert str(caught.value) == "app.users at commit_ts 30: INSERT to key (2,), which already exists"
    assert model.rows(DB, TB) == [{"id": 1, "name": "a"}]


def test_without_repeated_keys_the_model_still_refuses_a_second_change() -> None:
    model = _model(repeated_keys=False)
    with pytest.raises(SchemaError) as caught:
        model.apply(Transaction(30, (_upd((1, "a"), (1, "b")), _del(1, "a"))))
    assert str(caught.value) == "app.users at commit_ts 30: key (1,) is changed twice in one transaction"


def _replay(
    transactions: list[Transaction],
    start: Mapping[tuple[str, str], dict[tuple[Value, ...], dict[str, Value]]],
    keys: Mapping[tuple[str, str], tuple[str, ...]],
) -> dict[tuple[str, str], dict[tuple[Value, ...], dict[str, Value]]]:
    """An independent oracle: apply the events one by one to dicts."""
    state = {ref: dict(rows) for ref, rows in start.items()}
    for transaction in transactions:
        for change in transaction.changes:
            ref = change.table_ref()
            rows = state.setdefault(ref, {})
            if change.before is not None:
                key = tuple(change.before[k] for k in keys[ref])
                assert rows.pop(key) == dict(change.before)
            if change.after is not None:
                key = tuple(change.after[k] for k in keys[ref])
                assert key not in rows
                rows[key] = dict(change.after)
    return state


@pytest.mark.parametrize("split", [True, False])
def test_workload_bursts_touch_one_key_and_the_oracle_is_the_final_state(split: bool) -> None:
    sim = TicdcSimulator(
        seed=11,
        partitions=2,
        workload=WorkloadConfig(tables=4, burst_probability=1.0, split_key_updates=split),
    )
    sim.setup()
    transactions = sim.run_transactions(80)
    keys = {ref: sim.model.key_columns(*ref) for ref in sim.model.tables()}
    seen_ops: set[tuple[DmlOp, ...]] = set()
    for transaction in transactions:
        assert 2 <= len(transaction.changes) <= 10
        assert len({c.table_ref() for c in transaction.changes}) == 1
        # the changes chain on one key: each event's before image is the previous event's after image,
        # except across a key-changing update (DELETE old + INSERT new) or a DELETE and re-INSERT
        for prev, nxt in zip(transaction.changes, transaction.changes[1:], strict=False):
            if nxt.before is not None and prev.after is not None:
                assert nxt.before == prev.after
            if prev.op is DmlOp.DELETE and nxt.op is DmlOp.INSERT and not prev.split:
                ref = prev.table_ref()
                assert prev.before is not None
                assert nxt.after is not None
                assert [prev.before[k] for k in keys[ref]] == [nxt.after[k] for k in keys[ref]]
        seen_ops.add(tuple(c.op for c in transaction.changes))
        assert all(c.op is not DmlOp.UPDATE for c in transaction.changes if c.split)
    assert len(seen_ops) > 10
    assert any(c.split for t in transactions for c in t.changes) == split
    assert any(ops[i] is DmlOp.DELETE and ops[i + 1] is DmlOp.INSERT for ops in seen_ops for i in range(len(ops) - 1))
    final = _replay(transactions, {}, keys)
    for ref in sim.model.tables():
        assert sim.model.rows(*ref) == sorted(final.get(ref, {}).values(), key=lambda r: [r[k] for k in keys[ref]])
        assert len(sim.expected_iceberg_rows(*ref)) == len(final.get(ref, {}))


def test_a_burst_is_emitted_once_per_key_in_its_partition() -> None:
    """TiKV keeps one mutation per key per transaction: TiCDC sends each key's net change once."""
    sim = TicdcSimulator(
        seed=5, partitions=3, dispatch="table", workload=WorkloadConfig(tables=1, burst_probability=1.0)
    )
    sim.setup()
    sim.take()
    bursts = 0
    for _ in range(20):
        transaction = sim.run_transactions(1)[0]
        dml = [json.loads(m.value) for m in sim.take() if m.kind == "DML"]
        keys = [json.dumps(m.get("data") or m.get("old"), sort_keys=True) for m in dml]
        bursts += len(transaction.changes) > 1
        assert len(dml) <= len(transaction.changes)
        assert len({m["commitTs"] for m in dml}) <= 1
        assert len(keys) == len(set(keys))
    assert bursts > 0


def test_default_workload_makes_no_bursts_and_keeps_its_stream() -> None:
    def stream(config: WorkloadConfig) -> list[bytes]:
        sim = TicdcSimulator(seed=4, workload=config)
        sim.run_transactions(30)
        return [m.value for m in sim.messages()]

    assert stream(WorkloadConfig()) == stream(WorkloadConfig(burst_probability=0.0, keyless_tables=0))
    with pytest.raises(ValueError, match="burst_probability"):
        WorkloadConfig(burst_probability=1.5)
