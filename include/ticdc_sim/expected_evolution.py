"""How the Iceberg table of one upstream table evolves under the DDL policies (the oracle's side).

The Iceberg columns are replayed from the table's DDLs (docs/schema-evolution.md): ADD COLUMN inserts at
the upstream position and existing rows get the default; DROP COLUMN removes the column, or under
``on_drop_column: keep`` leaves it (rows written later hold NULL there); RENAME renames; MODIFY
keeps the Iceberg type when it is unchanged or a lossless widening, otherwise under
``keep_as_string`` the column becomes ``string`` (existing values as Spark's ``CAST(v AS
STRING)``, later values as the text of the new type) and under ``fail`` the table stops just
before that DDL. A row's Iceberg image is its last DML write replayed through the DDLs after it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal

from ticdc_lake.config import DropColumnPolicy, Policies, TypeChangePolicy
from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.schema.type_mapping import iceberg_type, is_lossless_widening
from ticdc_sim.column_types import INTEGER_TYPES, TEXT_TYPES, Value, decimal_text
from ticdc_sim.ddl_specs import (
    AddColumnSpec,
    AlterSpec,
    DropColumnSpec,
    ModifyColumnSpec,
    RenameColumnSpec,
    complete_column,
)
from ticdc_sim.ddl_values import default_value
from ticdc_sim.expected_values import IcebergValue, expected_iceberg_value
from ticdc_sim.model_lineage import DdlRecord, Lineage


@dataclass(frozen=True, slots=True)
class IceColumn:
    name: str
    iceberg_type: str
    #: The upstream column that feeds it; None once dropped (kept by policy).
    source: ColumnSchema | None
    #: Holds text since an incompatible MODIFY (``keep_as_string``).
    as_string: bool = False


State = list[IceColumn]
Values = dict[str, IcebergValue]


class _HaltError(Exception):
    """An incompatible MODIFY under ``on_incompatible_type_change: fail``: apply stops there."""


class Evolution:
    """The Iceberg columns of ``lineage`` at each of its DDLs up to ``tso``."""

    def __init__(self, lineage: Lineage, tso: int, policies: Policies) -> None:
        self.policies = policies
        self.where = "{}.{}".format(*lineage.name)
        records = [r for r in lineage.ddls if r.ts <= tso and r.ddl_type != "ERASE"]
        first = records[0].post
        assert first is not None, "a lineage starts with its CREATE"
        self.stages: list[tuple[int, State, DdlRecord | None]] = [
            (lineage.created_ts, [self._fresh(c) for c in first.columns], None)
        ]
        #: The TSO just before a DDL the policy refuses (the table is held there), else None.
        self.halted_at: int | None = None
        for record in records[1:]:
            try:
                state = self.apply(self.stages[-1][1], None, record)
            except _HaltError:
                self.halted_at = record.ts - 1
                break
            self.stages.append((record.ts, state, record))

    def columns(self) -> list[tuple[str, str]]:
        return [(c.name, c.iceberg_type) for c in self.stages[-1][1]]

    def image(self, written_ts: int, written: dict[str, Value]) -> Values:
        """The Iceberg row of an image written by DML at ``written_ts``, after every later DDL."""
        index = max(i for i, (ts, _, _) in enumerate(self.stages) if ts <= written_ts)
        values: Values = {c.name: self._convert(c, written) for c in self.stages[index][1]}
        for position in range(index + 1, len(self.stages)):
            record = self.stages[position][2]
            assert record is not None
            self.apply(self.stages[position - 1][1], values, record)
        return {c.name: values[c.name] for c in self.stages[-1][1]}

    def apply(self, state: State, values: Values | None, record: DdlRecord) -> State:
        """The state after ``record``; ``values`` (one row) is updated in place."""
        state = list(state)
        for spec in record.specs:
            state = self._apply_spec(state, values, spec)
        return state

    # ------------------------------------------------------------------ internals
    def _fresh(self, column: ColumnSchema) -> IceColumn:
        return IceColumn(column.name, iceberg_type(column, table=self.where), column)

    def _convert(self, column: IceColumn, written: dict[str, Value]) -> IcebergValue:
        if column.source is None:
            return None
        value = written[column.source.name]
        if column.as_string:
            return text_of(column.source, value, self.where)
        return expected_iceberg_value(column.source, value)

    def _apply_spec(self, state: State, values: Values | None, spec: AlterSpec) -> State:
        names = [c.name.lower() for c in state]
        if isinstance(spec, AddColumnSpec):
            column = complete_column(spec.column)
            if column.name.lower() in names:
                raise SchemaError(
                    f"{self.where}: ADD COLUMN {column.name!r} meets a dropped column kept by policy; the "
                    "oracle does not model that"
                )
            at = 0 if spec.first else len(state)
            if spec.after is not None and not spec.first:
                at = names.index(spec.after.lower()) + 1
            state.insert(at, self._fresh(column))
            if values is not None:
                values[column.name] = expected_iceberg_value(column, default_value(column, self.where))
        elif isinstance(spec, DropColumnSpec):
            at = names.index(spec.name.lower())
            if self.policies.on_drop_column is DropColumnPolicy.KEEP:
                state[at] = replace(state[at], source=None)
            else:
                dropped = state.pop(at)
                if values is not None:
                    values.pop(dropped.name)
        elif isinstance(spec, RenameColumnSpec):
            at = names.index(spec.old.lower())
            if spec.new.lower() in names and spec.new.lower() != spec.old.lower():
                raise SchemaError(f"{self.where}: RENAME COLUMN onto a dropped column kept by policy is not modelled")
            old = state[at]
            source = replace(old.source, name=spec.new) if old.source is not None else None
            state[at] = replace(old, name=spec.new, source=source)
            if values is not None:
                values[spec.new] = values.pop(old.name)
        elif isinstance(spec, ModifyColumnSpec):
            at = names.index(spec.column.name.lower())
            state[at] = self._modified(state[at], complete_column(spec.column), values)
        return state

    def _modified(self, old: IceColumn, new: ColumnSchema, values: Values | None) -> IceColumn:
        if old.as_string:
            return replace(old, source=new)
        new_type = iceberg_type(new, table=self.where)
        if new_type == old.iceberg_type or is_lossless_widening(old.iceberg_type, new_type):
            return IceColumn(old.name, new_type, new)
        if self.policies.on_incompatible_type_change is TypeChangePolicy.FAIL:
            raise _HaltError
        if values is not None:
            values[old.name] = spark_cast_to_string(old.iceberg_type, values[old.name], self.where)
        return IceColumn(old.name, "string", new, as_string=True)


def text_of(column: ColumnSchema, value: Value, where: str) -> str | None:
    """The canonical text of a model value written into a string-converted column."""
    if value is None:
        return None
    if column.mysql_type in INTEGER_TYPES or column.mysql_type == "year":
        return str(value)
    if column.mysql_type in TEXT_TYPES or column.mysql_type in ("enum", "set", "json", "time"):
        assert isinstance(value, str)
        return value
    if column.mysql_type == "decimal" and isinstance(value, Decimal):
        return decimal_text(column, value)
    raise SchemaError(
        f"{where}.{column.name}: the text form of a {column.type_text()} value in a keep_as_string column is "
        "not modelled by the oracle"
    )


def spark_cast_to_string(iceberg: str, value: IcebergValue, where: str) -> str | None:
    """Spark's ``CAST(value AS STRING)`` for an Iceberg value of type ``iceberg``."""
    if value is None:
        return None
    if iceberg in ("int", "long", "string") or iceberg.startswith("decimal("):
        if isinstance(value, Decimal):
            return format(value, "f")
        return str(value)
    if iceberg == "date" and isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    raise SchemaError(f"{where}: Spark's CAST of an Iceberg {iceberg} value to string is not modelled by the oracle")
