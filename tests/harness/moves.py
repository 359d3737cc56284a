"""Random DDLs through the simulator's DDL API, chosen so that each is valid on the current model.

Only the DDL kinds tests/e2e/test_schema_evolution.py proves for every protocol: add, drop,
rename and widen a column, create and drop an index, truncate, rename and create a table. Columns
that are part of a key or an index are left alone (dropping or renaming those is another DDL kind).
Debezium sends DECIMAL as a float64: widened decimals stay within 15 digits there. A column added
NOT NULL has a default and a nullable one has none (Debezium sends a NULL as the default).
"""

from __future__ import annotations

import random
from dataclasses import replace

from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.schema.tidb_lengths import tidb_default_length
from ticdc_sim.catalog import TEMPLATES, column
from ticdc_sim.simulator import TicdcSimulator

#: Types a plain index can cover without a prefix length.
_INDEXABLE = frozenset({"varchar", "char", "int", "bigint", "smallint", "mediumint", "tinyint", "date", "datetime"})
_SMALL_INTS = frozenset({"tinyint", "smallint", "mediumint", "int"})
KINDS = (
    "add_column",
    "drop_column",
    "rename_column",
    "modify_column",
    "create_index",
    "drop_index",
    "truncate_table",
    "rename_table",
    "create_table",
)


def _indexed(schema: TableSchema) -> set[str]:
    return {name for index in schema.indexes for name in index.columns} | set(schema.handle_key())


def _free_columns(schema: TableSchema) -> list[ColumnSchema]:
    indexed = _indexed(schema)
    return [c for c in schema.columns if c.name not in indexed]


def _widened(col: ColumnSchema, protocol: str) -> ColumnSchema | None:
    if col.mysql_type == "varchar" and col.length is not None and col.length < 200:
        return replace(col, length=col.length + 16)
    if col.mysql_type == "decimal" and col.length is not None:
        limit = 15 if protocol == "debezium" else 38
        return replace(col, length=col.length + 2) if col.length + 2 <= limit else None
    if col.mysql_type in _SMALL_INTS and not col.unsigned:
        wider = replace(col, mysql_type="bigint", length=None)
        return replace(wider, length=tidb_default_length(wider))
    return None


class DdlMoves:
    """Makes random DDLs on the workload's tables; ``counter`` keeps new names unique."""

    def __init__(self, sim: TicdcSimulator, rng: random.Random, protocol: str) -> None:
        self.sim, self.rng, self.protocol = sim, rng, protocol
        self.counter = 0
        self.done: list[str] = []

    def random_ddl(self) -> str | None:
        """Commit one random DDL; returns its description, None when no kind applied."""
        tables = self.sim.workload.tables()
        if not tables:
            return None
        for kind in self.rng.sample(KINDS, len(KINDS)):
            database, table = self.rng.choice(tables)
            described: str | None = getattr(self, f"_{kind}")(database, table)
            if described is not None:
                self.done.append(described)
                return described
        return None

    def _name(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def _add_column(self, database: str, table: str) -> str:
        schema = self.sim.model.schema(database, table)
        name = self._name("x")
        if self.rng.random() < 0.5:
            new = column(name, "int", nullable=False, default=str(self.rng.randint(0, 9)))
        else:
            new = column(name, "varchar", length=16)
        after = self.rng.choice(schema.columns).name if self.rng.random() < 0.3 else None
        self.sim.add_column(database, table, new, after=after)
        return f"{database}.{table}: ADD COLUMN {name} {new.mysql_type}" + (f" AFTER {after}" if after else "")

    def _drop_column(self, database: str, table: str) -> str | None:
        schema = self.sim.model.schema(database, table)
        free = _free_columns(schema)
        if len(free) < 3:
            return None
        victim = self.rng.choice(free).name
        self.sim.drop_column(database, table, victim)
        return f"{database}.{table}: DROP COLUMN {victim}"

    def _rename_column(self, database: str, table: str) -> str | None:
        free = _free_columns(self.sim.model.schema(database, table))
        if not free:
            return None
        old = self.rng.choice(free).name
        new = self._name(f"{old[:12]}_r")
        self.sim.rename_column(database, table, old, new)
        return f"{database}.{table}: RENAME COLUMN {old} TO {new}"

    def _modify_column(self, database: str, table: str) -> str | None:
        schema = self.sim.model.schema(database, table)
        candidates = [(c, w) for c in _free_columns(schema) if (w := _widened(c, self.protocol))]
        if not candidates:
            return None
        old, new = self.rng.choice(candidates)
        self.sim.modify_column(database, table, new)
        before, after = f"{old.mysql_type}({old.length})", f"{new.mysql_type}({new.length})"
        return f"{database}.{table}: MODIFY COLUMN {old.name} {before} -> {after}"

    def _create_index(self, database: str, table: str) -> str | None:
        free = [c for c in _free_columns(self.sim.model.schema(database, table)) if c.mysql_type in _INDEXABLE]
        if not free:
            return None
        target = self.rng.choice(free).name
        name = self._name("idx_h")
        self.sim.create_index(database, table, name, (target,))
        return f"{database}.{table}: CREATE INDEX {name} ({target})"

    def _drop_index(self, database: str, table: str) -> str | None:
        schema = self.sim.model.schema(database, table)
        plain = [i.name for i in schema.indexes if not i.primary and not i.unique]
        if not plain:
            return None
        name = self.rng.choice(plain)
        self.sim.drop_index(database, table, name)
        return f"{database}.{table}: DROP INDEX {name}"

    def _truncate_table(self, database: str, table: str) -> str:
        self.sim.truncate_table(database, table)
        return f"{database}.{table}: TRUNCATE"

    def _rename_table(self, database: str, table: str) -> str:
        new = self._name(f"{table[:20]}_m")
        self.sim.rename_table(database, table, database, new)
        return f"{database}.{table}: RENAME TO {database}.{new}"

    def _create_table(self, database: str, table: str) -> str:
        template = self.rng.choice(TEMPLATES)
        name = self._name(f"new_{template.name}_")
        created = self.sim.create_table(template.build(database, name))
        self.sim.workload.attach(created)
        return f"CREATE TABLE {database}.{name} (like {template.name})"
