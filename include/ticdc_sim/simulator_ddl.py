"""The simulator's DDL API: one method per DDL kind, each committing one DDL statement.

Every method builds the DdlChange structurally (:mod:`ticdc_sim.ddl_changes`), lets
time pass like TiDB's DDL owner does (the new schema version is a TSO taken just before the commit
TSO), commits it to the model and emits it (``TicdcSimulator._commit_ddls``); it returns the
commit TSO. Mixed into :class:`~ticdc_sim.simulator.TicdcSimulator`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim.ddl_changes import (
    AddColumnSpec,
    AddIndexSpec,
    AlterSpec,
    DropColumnSpec,
    DropPrimaryKeySpec,
    ModifyColumnSpec,
    RenameColumnSpec,
    alter_change,
    create_index_change,
    drop_database_change,
    drop_index_change,
    drop_table_change,
    rename_table_change,
    truncate_table_change,
)
from ticdc_sim.ddl_specs import PRIMARY

if TYPE_CHECKING:
    import random

    from ticdc_sim.clock import SimClock
    from ticdc_sim.model import DdlChange, UpstreamModel


class DdlApi:
    """DDL methods of the simulator (see the module docstring)."""

    if TYPE_CHECKING:
        _model: UpstreamModel
        _clock: SimClock
        _rng: random.Random

        def _gap(self) -> timedelta: ...
        def _pass_time(self, delta: timedelta) -> None: ...
        def _allocate_id(self) -> int: ...
        def _commit_ddls(self, ddls: Sequence[tuple[DdlChange, tuple[AlterSpec, ...]]]) -> int: ...

    def alter_table(self, database: str, table: str, specs: Sequence[AlterSpec]) -> int:
        """One ``ALTER TABLE`` statement with several specs: one DDL event (ALTER, or CINDEX/DINDEX
        for a single index spec)."""
        pre = self._model.schema(database, table)
        version = self._schema_version()
        return self._commit_ddls([(alter_change(pre, specs, version), tuple(specs))])

    def add_column(
        self, database: str, table: str, column: ColumnSchema, *, first: bool = False, after: str | None = None
    ) -> int:
        """``ADD COLUMN``; existing rows get ``column.default`` (or the type's implicit default)."""
        return self.alter_table(database, table, [AddColumnSpec(column, first=first, after=after)])

    def drop_column(self, database: str, table: str, name: str) -> int:
        return self.alter_table(database, table, [DropColumnSpec(name)])

    def rename_column(self, database: str, table: str, old: str, new: str) -> int:
        return self.alter_table(database, table, [RenameColumnSpec(old, new)])

    def modify_column(self, database: str, table: str, column: ColumnSchema) -> int:
        """``MODIFY COLUMN`` to ``column`` (same name); values converted as MySQL does (ddl_values)."""
        return self.alter_table(database, table, [ModifyColumnSpec(column)])

    def add_primary_key(self, database: str, table: str, columns: Sequence[str]) -> int:
        """``ADD PRIMARY KEY (...)`` (TiDB adds it NONCLUSTERED); the columns become NOT NULL."""
        return self.alter_table(database, table, [AddIndexSpec(PRIMARY, tuple(columns), unique=True, primary=True)])

    def drop_primary_key(self, database: str, table: str) -> int:
        """``DROP PRIMARY KEY``; a NOT NULL unique index must remain to key the rows."""
        return self.alter_table(database, table, [DropPrimaryKeySpec()])

    def create_index(self, database: str, table: str, name: str, columns: Sequence[str], unique: bool = False) -> int:
        """``CREATE [UNIQUE] INDEX`` (CINDEX); rows unchanged."""
        pre = self._model.schema(database, table)
        ddl, spec = create_index_change(pre, name, columns, unique, self._schema_version())
        return self._commit_ddls([(ddl, (spec,))])

    def drop_index(self, database: str, table: str, name: str) -> int:
        """``DROP INDEX name ON t`` (DINDEX); rows unchanged."""
        pre = self._model.schema(database, table)
        ddl, spec = drop_index_change(pre, name, self._schema_version())
        return self._commit_ddls([(ddl, (spec,))])

    def rename_table(self, database: str, table: str, new_database: str, new_table: str) -> int:
        """``RENAME TABLE``: rows and history follow the table; the old name no longer exists."""
        return self.rename_tables([(database, table, new_database, new_table)])

    def rename_tables(self, renames: Sequence[tuple[str, str, str, str]]) -> int:
        """``RENAME TABLE a TO b, c TO d``: TiCDC emits one RENAME event per table, in statement
        order, all with the statement's commit TSO."""
        if not renames:
            raise SchemaError("rename_tables needs at least one (database, table, new_database, new_table)")
        version = self._schema_version()
        renamed: dict[tuple[str, str], TableSchema] = {}
        ddls: list[tuple[DdlChange, tuple[AlterSpec, ...]]] = []
        for database, table, new_database, new_table in renames:
            pre = renamed.pop((database, table), None) or self._model.schema(database, table)
            ddl = rename_table_change(pre, new_database, new_table, version)
            assert ddl.table_schema is not None
            renamed[(new_database, new_table)] = ddl.table_schema
            ddls.append((ddl, ()))
        return self._commit_ddls(ddls)

    def truncate_table(self, database: str, table: str) -> int:
        """``TRUNCATE TABLE``: every row gone at the commit TSO; the table gets a new id."""
        pre = self._model.schema(database, table)
        version = self._schema_version()
        return self._commit_ddls([(truncate_table_change(pre, self._allocate_id(), version), ())])

    def drop_table(self, database: str, table: str) -> int:
        """``DROP TABLE`` (ERASE); a later ``create_table`` of the name makes a fresh table."""
        pre = self._model.schema(database, table)
        self._pass_time(self._gap())
        return self._commit_ddls([(drop_table_change(pre), ())])

    def drop_database(self, database: str) -> int:
        """``DROP DATABASE`` (one QUERY event); its tables are dropped in the model."""
        self._pass_time(self._gap())
        return self._commit_ddls([(drop_database_change(database), ())])

    def _schema_version(self) -> int:
        """A TSO just before the DDL's commit TSO, as TiDB's table info UpdateTS."""
        self._pass_time(self._gap())
        version = self._clock.next_tso()
        self._pass_time(timedelta(milliseconds=self._rng.randint(1, 20)))
        return version
