"""Bursts: one transaction making 2-5 consecutive changes on ONE key of one table.

Steps: INSERT (a fresh key, or the key again after a DELETE, with other values), UPDATE of the
values, DELETE, or a key-changing UPDATE after which the burst goes on with the new key (split
into DELETE + INSERT halves under ``split_key_updates``, as TiCDC does by default). The model
applies the statements in order, so the expected rows are the final state.

TiKV stores one mutation per key per transaction, so TiCDC emits at most one event per key and
commit TSO: the simulator sends a burst as its net effect (``net_mutations``), as a real
changefeed would, and the apply stage must reach the model's final state from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ticdc_sim.model import DmlOp, Key, Row, RowChange, TableRef, UpstreamModel

if TYPE_CHECKING:
    import random

    from ticdc_sim.random_values import ValueGenerator
    from ticdc_sim.workload import WorkloadConfig, _TableState

#: Chance that a burst starts from an existing row (else from an INSERT of a fresh key).
BURST_FROM_EXISTING = 0.6
#: Relative weights of the steps on an existing row: update, delete, key-changing update.
BURST_STEP_WEIGHTS = (3.0, 1.0, 1.0)


class BurstMixin:
    """The burst generator of :class:`~ticdc_sim.workload.Workload`."""

    if TYPE_CHECKING:
        _rng: random.Random
        _values: ValueGenerator
        _states: dict[TableRef, _TableState]
        config: WorkloadConfig

        def _pick_existing(self, state: _TableState, touched: set[tuple[TableRef, Key]]) -> Key | None: ...
        def _new_row(self, state: _TableState, touched: set[tuple[TableRef, Key]]) -> Row: ...
        def _changed(
            self,
            state: _TableState,
            before: Row,
            key_too: bool,
            touched: set[tuple[TableRef, Key]] | None = None,
        ) -> Row: ...

    def _burst(self, model: UpstreamModel, refs: Sequence[TableRef]) -> list[RowChange] | None:
        """The changes of one burst transaction on a keyed table of ``refs`` (None: no keyed table)."""
        keyed = [ref for ref in refs if self._states[ref].key_columns]
        if not keyed:
            return None
        rng = self._rng
        state = self._states[keyed[rng.randrange(len(keyed))]]
        db, table = state.ref
        touched: set[tuple[TableRef, Key]] = set()
        key = self._pick_existing(state, touched) if rng.random() < BURST_FROM_EXISTING else None
        current = model.row(db, table, key) if key is not None else None
        changes: list[RowChange] = []
        for _ in range(rng.randint(2, 5)):
            if current is None:
                if key is None:
                    current = self._new_row(state, touched)
                    key = tuple(current[name] for name in state.key_columns)
                else:  # re-insert the deleted key with other values
                    current = {c.name: self._values.value(c) for c in state.schema.columns}
                    current.update(zip(state.key_columns, key, strict=True))
                touched.add((state.ref, key))
                changes.append(RowChange(DmlOp.INSERT, db, table, None, current))
                continue
            step = rng.choices(("update", "delete", "key_update"), BURST_STEP_WEIGHTS)[0]
            if step == "delete":
                changes.append(RowChange(DmlOp.DELETE, db, table, current, None))
                current = None
            elif step == "update":
                after = self._changed(state, current, key_too=False)
                changes.append(RowChange(DmlOp.UPDATE, db, table, current, after))
                current = after
            else:
                after = self._changed(state, current, key_too=True, touched=touched)
                if self.config.split_key_updates:
                    changes.append(RowChange(DmlOp.DELETE, db, table, current, None, split=True))
                    changes.append(RowChange(DmlOp.INSERT, db, table, None, after, split=True))
                else:
                    changes.append(RowChange(DmlOp.UPDATE, db, table, current, after))
                current = after
                key = tuple(after[name] for name in state.key_columns)
        return changes
