"""A seeded random multi-table workload: which tables exist and what each transaction changes.

The workload only proposes changes; the simulator commits them to the reference model and
encodes them. It follows TiDB/TiCDC rules: at most one event per key per transaction, full
before/after images, and a key-changing UPDATE split (by default) into DELETE(old image) +
INSERT(new image) with the DELETEs of a table first, as TiCDC does unless
``output-raw-change-event=true``.

Options beyond that (off by default, so a seed's stream does not change): ``burst_probability``
(several changes on one key in one transaction, :mod:`~ticdc_sim.workload_burst`) and
``keyless_tables`` (tables without a key whose rows are multisets,
:mod:`~ticdc_sim.workload_keyless`).
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.catalog import TableTemplate, keyless_layout, table_layout
from ticdc_sim.column_types import INTEGER_TYPES, Value, integer_range
from ticdc_sim.model import DmlOp, Key, Row, RowChange, TableRef, Transaction, UpstreamModel
from ticdc_sim.random_values import ValueGenerator
from ticdc_sim.workload_burst import BurstMixin
from ticdc_sim.workload_keyless import KeylessRows, keyless_change

_CODE_PREFIXES = ("ACC-", "KTO-", "客户-", "Zü-", "🚀-")


@dataclass(frozen=True, slots=True)
class OperationMix:
    """Relative weights of the row operations in transactions."""

    insert: float = 0.45
    update: float = 0.3
    delete: float = 0.1
    key_update: float = 0.15

    def __post_init__(self) -> None:
        weights = (self.insert, self.update, self.delete, self.key_update)
        if any(w < 0 for w in weights) or self.insert <= 0:
            raise ValueError(f"operation mix {self}: weights must be >= 0 and insert > 0")


@dataclass(frozen=True, slots=True)
class WorkloadConfig:
    tables: int = 3
    databases: int = 1
    database_prefix: str = "shop"
    min_rows_per_transaction: int = 1
    max_rows_per_transaction: int = 6
    #: Chance that a transaction touches two tables instead of one.
    multi_table_probability: float = 0.2
    null_probability: float = 0.15
    mix: OperationMix = field(default_factory=OperationMix)
    #: Split key-changing UPDATEs into DELETE + INSERT (TiCDC's default). False emits them as
    #: UPDATE with the old and new keys (``output-raw-change-event=true``).
    split_key_updates: bool = True
    #: Chance that a transaction is a burst of 2-5 changes on ONE key (``workload_burst``).
    burst_probability: float = 0.0
    #: Extra ``event_log`` tables without any key, holding multisets (``workload_keyless``).
    keyless_tables: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.burst_probability <= 1.0 or self.keyless_tables < 0:
            raise ValueError(f"workload needs 0 <= burst_probability <= 1 and keyless_tables >= 0, got {self}")
        if self.tables < 1 or not 1 <= self.databases <= self.tables:
            raise ValueError(f"workload needs tables >= 1 and 1 <= databases <= tables, got {self}")
        if not 1 <= self.min_rows_per_transaction <= self.max_rows_per_transaction:
            raise ValueError(f"workload needs 1 <= min_rows <= max_rows per transaction, got {self}")


class _LiveKeys:
    """Keys of existing rows with O(1) random choice and removal (stable for a seed)."""

    def __init__(self) -> None:
        self._keys: list[Key] = []
        self._position: dict[Key, int] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._position

    def add(self, key: Key) -> None:
        self._position[key] = len(self._keys)
        self._keys.append(key)

    def remove(self, key: Key) -> None:
        index = self._position.pop(key)
        last = self._keys.pop()
        if index < len(self._keys):
            self._keys[index] = last
            self._position[last] = index

    def choice(self, rng: random.Random) -> Key:
        return self._keys[rng.randrange(len(self._keys))]


@dataclass(slots=True)
class _TableState:
    ref: TableRef
    template: TableTemplate | None
    schema: TableSchema
    key_columns: tuple[str, ...]
    live: _LiveKeys = field(default_factory=_LiveKeys)
    next_id: int = 1
    #: The template's key style while the key is the template's; ``generic`` otherwise (integer
    #: key columns then take ``next_id``, so they stay unique on their own, others random values).
    key_style: str = "generic"

    def __post_init__(self) -> None:
        self.refresh_key_style()

    def refresh_key_style(self) -> None:
        if self.template is not None and self.key_columns == self.template.build(*self.ref).handle_key():
            self.key_style = self.template.key_style
        else:
            self.key_style = "generic"


class Workload(BurstMixin):
    """Seeded generator of table schemas and transactions over an :class:`UpstreamModel`."""

    def __init__(self, rng: random.Random, config: WorkloadConfig | None = None, server_time_zone: str = "UTC") -> None:
        self._rng = rng
        self.config = config or WorkloadConfig()
        self._values = ValueGenerator(rng, self.config.null_probability, server_time_zone=server_time_zone)
        cfg = self.config
        self._layout = table_layout(cfg.tables, cfg.databases, cfg.database_prefix) + keyless_layout(
            cfg.keyless_tables, cfg.databases, cfg.database_prefix
        )
        self._states: dict[TableRef, _TableState] = {}

    def table_schemas(self) -> list[TableSchema]:
        """The tables to create, in creation order (no table id and version yet)."""
        return [template.build(db, name) for db, name, template in self._layout]

    def attach(self, schema: TableSchema) -> None:
        """Start generating rows for a created table (``schema`` as committed, with its version).

        Tables outside the workload's layout get random keys; attaching again starts afresh.
        """
        ref = (schema.database, schema.table)
        template = next((t for db, name, t in self._layout if (db, name) == ref), None)
        self._states[ref] = _TableState(ref, template, schema, schema.handle_key())

    def follow_ddl(self, model: UpstreamModel, renames: Mapping[TableRef, TableRef]) -> None:
        """Follow committed DDL: generate in the current schema, under a table's new name
        (``renames``: old -> new, in statement order), never for dropped tables; a table whose
        schema changed (TRUNCATE included) takes its live keys from the model."""
        live_tables = set(model.tables())
        states: dict[TableRef, _TableState] = {}
        for ref, state in self._states.items():
            new_ref = ref
            for old, new in renames.items():
                if old == new_ref:
                    new_ref = new
            if new_ref not in live_tables:
                continue
            schema = model.schema(*new_ref)
            if new_ref != ref or schema != state.schema:
                state.ref, state.schema, state.key_columns = new_ref, schema, schema.handle_key()
                state.refresh_key_style()
                state.live = _LiveKeys()
                for key in model.keys(*new_ref):
                    state.live.add(key)
            states[new_ref] = state
        self._states = states

    def observe(self, transaction: Transaction) -> None:
        """Track a committed transaction (generated or not) so that later choices see its keys."""
        for change in transaction.changes:
            state = self._states.get(change.table_ref())
            if state is None or not state.key_columns:
                continue
            if change.before is not None:
                old_key = tuple(change.before[name] for name in state.key_columns)
                if old_key in state.live:
                    state.live.remove(old_key)
            if change.after is not None:
                new_key = tuple(change.after[name] for name in state.key_columns)
                if new_key not in state.live:
                    state.live.add(new_key)
                if state.key_style == "sequence" and isinstance(new_key[0], int):
                    state.next_id = max(state.next_id, new_key[0] + 1)
                elif state.key_style == "generic":
                    ints = [v for v in new_key if isinstance(v, int)]
                    state.next_id = max([state.next_id, *(v + 1 for v in ints)])

    def databases(self) -> list[str]:
        return list(dict.fromkeys(db for db, _, _ in self._layout))

    def tables(self) -> list[TableRef]:
        """The tables the workload currently generates rows for."""
        return sorted(self._states)

    def next_changes(self, model: UpstreamModel, only: Sequence[TableRef] | None = None) -> list[RowChange]:
        """The row changes of one transaction, in the order TiCDC emits them (``only``: limited
        to those attached tables).

        Call :meth:`observe` with the committed transaction before asking for the next one.
        """
        if not self._states:
            raise ValueError("the workload has no attached tables; create them first")
        rng = self._rng
        refs = sorted(self._states)
        if only is not None:
            unknown = sorted(set(only) - set(refs))
            if unknown or not only:
                raise ValueError(f"the workload generates rows for {refs}, not for {unknown or 'no table'}")
            refs = sorted(set(only))
        if self.config.burst_probability > 0 and rng.random() < self.config.burst_probability:
            burst = self._burst(model, refs)
            if burst is not None:
                return burst
        count = 2 if len(refs) > 1 and rng.random() < self.config.multi_table_probability else 1
        chosen = rng.sample(refs, count)
        rows = rng.randint(self.config.min_rows_per_transaction, self.config.max_rows_per_transaction)
        per_table: dict[TableRef, list[RowChange]] = {ref: [] for ref in chosen}
        touched: set[tuple[TableRef, Key]] = set()
        keyless = KeylessRows(model)
        for i in range(rows):
            state = self._states[chosen[i % count]]
            if not state.key_columns:
                rows_now = keyless.rows(state.ref)
                change = keyless_change(self._rng, self._values, self.config.mix, state.schema, rows_now)
                per_table[state.ref].append(change)
                continue
            per_table[state.ref].extend(self._one_change(state, model, touched))
        changes: list[RowChange] = []
        for ref in chosen:
            table_changes = per_table[ref]
            if any(c.split for c in table_changes):
                order = {DmlOp.DELETE: 0, DmlOp.UPDATE: 1, DmlOp.INSERT: 2}
                table_changes.sort(key=lambda c: order[c.op])
            changes.extend(table_changes)
        return changes

    # ------------------------------------------------------------------ internals
    def _one_change(
        self, state: _TableState, model: UpstreamModel, touched: set[tuple[TableRef, Key]]
    ) -> list[RowChange]:
        mix = self.config.mix
        op = self._rng.choices(
            ("insert", "update", "delete", "key_update"), (mix.insert, mix.update, mix.delete, mix.key_update)
        )[0]
        key = self._pick_existing(state, touched) if op != "insert" else None
        db, table = state.ref
        if key is None:
            after = self._new_row(state, touched)
            return [RowChange(DmlOp.INSERT, db, table, None, after)]
        touched.add((state.ref, key))
        before = model.row(db, table, key)
        assert before is not None, f"{db}.{table}: the workload's key {key!r} is not in the model"
        if op == "delete":
            return [RowChange(DmlOp.DELETE, db, table, before, None)]
        if op == "update":
            return [RowChange(DmlOp.UPDATE, db, table, before, self._changed(state, before, key_too=False))]
        after = self._changed(state, before, key_too=True, touched=touched)
        if not self.config.split_key_updates:
            return [RowChange(DmlOp.UPDATE, db, table, before, after)]
        return [
            RowChange(DmlOp.DELETE, db, table, before, None, split=True),
            RowChange(DmlOp.INSERT, db, table, None, after, split=True),
        ]

    def _pick_existing(self, state: _TableState, touched: set[tuple[TableRef, Key]]) -> Key | None:
        for _ in range(8):
            if not len(state.live):
                return None
            key = state.live.choice(self._rng)
            if (state.ref, key) not in touched:
                return key
        return None

    def _new_row(self, state: _TableState, touched: set[tuple[TableRef, Key]]) -> Row:
        row: Row = {c.name: self._values.value(c) for c in state.schema.columns}
        row.update(self._new_key(state, touched))
        return row

    def _changed(
        self,
        state: _TableState,
        before: Row,
        key_too: bool,
        touched: set[tuple[TableRef, Key]] | None = None,
    ) -> Row:
        after = dict(before)
        if key_too:
            assert touched is not None
            after.update(self._new_key(state, touched))
        mutable = [c for c in state.schema.columns if c.name not in state.key_columns]
        wanted = self._rng.randint(0 if key_too else 1, min(3, len(mutable)))
        changed = 0
        for column in self._rng.sample(mutable, len(mutable)):
            if changed >= wanted:
                break
            for _ in range(6):
                candidate = self._values.value(column)
                if candidate != before[column.name]:
                    after[column.name] = candidate
                    changed += 1
                    break
        if not key_too and changed == 0:
            raise ValueError(f"{state.ref}: could not find a different value for any column")
        return after

    def _new_key(self, state: _TableState, touched: set[tuple[TableRef, Key]]) -> dict[str, Value]:
        """Values for the key columns that no live row and no change of this transaction uses."""
        schema = state.schema
        for _ in range(1000):
            values: dict[str, Value] = {}
            style = state.key_style
            if style == "sequence":
                values[state.key_columns[0]] = state.next_id
                state.next_id += 1
            elif style == "code":
                prefix = self._rng.choice(_CODE_PREFIXES)
                values[state.key_columns[0]] = self._values.code(prefix, 6)
            elif style == "generic":
                for name in state.key_columns:
                    col = schema.column(name)
                    assert col is not None
                    if col.mysql_type in INTEGER_TYPES and state.next_id <= integer_range(col)[1]:
                        values[name] = state.next_id
                        state.next_id += 1
                    else:
                        values[name] = self._values.non_null(col)
            else:
                for name in state.key_columns:
                    col = schema.column(name)
                    assert col is not None
                    values[name] = self._rng.randint(1, 5000 if col.mysql_type == "bigint" else 40)
            key = tuple(values[name] for name in state.key_columns)
            if key not in state.live and (state.ref, key) not in touched:
                touched.add((state.ref, key))
                return values
        raise ValueError(f"{state.ref}: no free key found after 1000 attempts; the key space is full")
