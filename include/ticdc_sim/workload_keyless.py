"""Row changes of keyless tables (no primary or unique key; TiCDC ``force-replicate``).

Their rows form a multiset: about a quarter of the INSERTs copy an existing row exactly, UPDATE
changes one copy (full before and after images; sometimes into a copy of another row), DELETE
removes one copy (full before image). The reference model keeps every copy
(:mod:`~ticdc_sim.model_apply`). Key-changing updates do not exist without a key, so
the ``key_update`` weight counts as ``update``.

Dispatch: tiflow's index-value dispatcher hashes the schema and table names plus the columns
flagged as handle key (``partition/index_value.go``); a keyless table has no such column
(``TableInfo.initColumnsFlag``), so its rows go where the table dispatcher sends them: one
partition per table (:func:`~ticdc_sim.dispatch.index_value_partition` with an empty
key does the same).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ticdc_sim.model import DmlOp, Row, RowChange, TableRef, UpstreamModel

if TYPE_CHECKING:
    from ticdc_lake.schema.table_schema import TableSchema
    from ticdc_sim.random_values import ValueGenerator
    from ticdc_sim.workload import OperationMix

#: Share of keyless INSERTs that copy an existing row exactly.
DUPLICATE_PROBABILITY = 0.25
#: Share of keyless UPDATEs whose new image copies another existing row.
UPDATE_TO_COPY_PROBABILITY = 0.2


class KeylessRows:
    """The working multiset of each keyless table during one transaction (model rows + the
    transaction's changes so far), so that later changes pick copies that still exist."""

    def __init__(self, model: UpstreamModel) -> None:
        self._model = model
        self._rows: dict[TableRef, list[Row]] = {}

    def rows(self, ref: TableRef) -> list[Row]:
        if ref not in self._rows:
            self._rows[ref] = self._model.rows(*ref)
        return self._rows[ref]


def keyless_change(
    rng: random.Random, values: ValueGenerator, mix: OperationMix, schema: TableSchema, rows: list[Row]
) -> RowChange:
    """One row event on the keyless table ``schema`` whose copies are ``rows`` (updated in place)."""
    db, table = schema.database, schema.table
    op = rng.choices(("insert", "update", "delete"), (mix.insert, mix.update + mix.key_update, mix.delete))[0]
    if not rows:
        op = "insert"
    if op == "insert":
        if rows and rng.random() < DUPLICATE_PROBABILITY:
            after = dict(rows[rng.randrange(len(rows))])
        else:
            after = {c.name: values.value(c) for c in schema.columns}
        rows.append(after)
        return RowChange(DmlOp.INSERT, db, table, None, after)
    index = rng.randrange(len(rows))
    before = rows[index]
    if op == "delete":
        del rows[index]
        return RowChange(DmlOp.DELETE, db, table, before, None)
    others = [row for row in rows if row != before]
    if others and rng.random() < UPDATE_TO_COPY_PROBABILITY:
        after = dict(others[rng.randrange(len(others))])
    else:
        after = _changed(rng, values, schema, before)
    rows[index] = after
    return RowChange(DmlOp.UPDATE, db, table, before, after)


def _changed(rng: random.Random, values: ValueGenerator, schema: TableSchema, before: Row) -> Row:
    after = dict(before)
    for column in rng.sample(list(schema.columns), rng.randint(1, min(3, len(schema.columns)))):
        for _ in range(6):
            candidate = values.value(column)
            if candidate != before[column.name]:
                after[column.name] = candidate
                break
    if after == before:
        raise ValueError(f"{schema.database}.{schema.table}: could not find a different value for any column")
    return after
