"""A transaction's statements on one key reach Kafka as that key's net mutation."""

from __future__ import annotations

from collections.abc import Sequence

from ticdc_sim.model import DmlOp, RowChange
from ticdc_sim.net_mutations import net_mutations


def _key(database: str, table: str) -> Sequence[str]:
    return ("id",) if table == "t" else ()


def ins(row: dict[str, object]) -> RowChange:
    return RowChange(DmlOp.INSERT, "d", "t", after=row)  # type: ignore[arg-type]


def upd(old: dict[str, object], new: dict[str, object]) -> RowChange:
    return RowChange(DmlOp.UPDATE, "d", "t", before=old, after=new)  # type: ignore[arg-type]


def dele(row: dict[str, object]) -> RowChange:
    return RowChange(DmlOp.DELETE, "d", "t", before=row)  # type: ignore[arg-type]


A1, A2, A3 = {"id": 1, "v": "a"}, {"id": 1, "v": "b"}, {"id": 1, "v": "c"}
B = {"id": 2, "v": "x"}


def test_statements_on_one_key_collapse() -> None:
    assert net_mutations([ins(A1), upd(A1, A2), dele(A2)], _key) == []
    assert net_mutations([upd(A1, A2), upd(A2, A3)], _key) == [upd(A1, A3)]
    assert net_mutations([dele(A1), ins(A2)], _key) == [upd(A1, A2)]
    assert net_mutations([ins(A1), upd(A1, B)], _key) == [ins(B)]
    assert net_mutations([upd(A1, A2), upd(A2, B)], _key) == [dele(A1), ins(B)]


def test_transactions_touching_each_key_once_are_unchanged() -> None:
    changes = [ins(A1), upd(B, {"id": 3, "v": "y"}), dele({"id": 4})]
    assert net_mutations(changes, _key) == changes
    keyless = [RowChange(DmlOp.INSERT, "d", "k", after={"v": 1})] * 2
    assert net_mutations(keyless, _key) == keyless
