"""The reference model of the upstream TiDB tables: the test oracle.

Tables are keyed by ``(database, table)``; rows by their handle key (the primary key), or for a
keyless table (``allow_keyless``) by a hidden row id, so that identical rows coexist. Row values
are plain Python values (:data:`~ticdc_sim.column_types.Value`): int for integer
types (BIGINT UNSIGNED up to 2**64-1), Decimal with the column scale for DECIMAL, float for
FLOAT/DOUBLE, str for CHAR/VARCHAR/TEXT/JSON/ENUM/SET/TIME, bytes for BINARY/VARBINARY/BLOB,
``date`` for DATE, naive ``datetime`` for DATETIME, UTC-aware ``datetime`` for TIMESTAMP, None
for NULL. The full history is kept, so :meth:`UpstreamModel.rows_at` answers for any TSO.

DDL: each table is a :class:`~ticdc_sim.model_lineage.Lineage` (its names, schema
versions, DDLs and rows); RENAME moves it, DROP ends it, a later CREATE of the name starts a new
one. An ALTER rewrites every live row at its commit TSO (:mod:`~ticdc_sim.model_alter`),
TRUNCATE deletes them there. Post schemas come from the DDL's specs, never from its SQL text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.column_types import Value, normalize_value
from ticdc_sim.ddl_specs import AlterSpec
from ticdc_sim.model_alter import check_post_schema, expected_post_schema, rewrite_rows
from ticdc_sim.model_apply import TransactionStage
from ticdc_sim.model_lineage import DdlRecord, Key, Lineage, Row, RowVersion, TableRef, key_sort_value

__all__ = ["DdlChange", "DmlOp", "Key", "Lineage", "Row", "RowChange", "TableRef", "Transaction", "UpstreamModel"]


class DmlOp(StrEnum):
    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"


@dataclass(frozen=True, slots=True)
class RowChange:
    """One row event as TiCDC emits it: full images, ``before`` for UPDATE/DELETE, ``after`` for
    INSERT/UPDATE. ``split`` marks the DELETE and INSERT halves of a key-changing UPDATE."""

    op: DmlOp
    database: str
    table: str
    before: Mapping[str, Value] | None = None
    after: Mapping[str, Value] | None = None
    split: bool = False

    def table_ref(self) -> TableRef:
        return (self.database, self.table)


@dataclass(frozen=True, slots=True)
class DdlChange:
    """A DDL event. ``ddl_type`` is the Simple-protocol subtype (CREATE, ALTER, ERASE, RENAME,
    TRUNCATE, CINDEX, DINDEX, QUERY); ``table`` and ``table_schema`` are the table after the DDL
    (the new name for RENAME; no schema for DROP TABLE and database DDL), ``pre_table_schema``
    the table before it. Build them with :mod:`ticdc_sim.ddl_changes`."""

    ddl_type: str
    sql: str
    database: str
    table: str | None
    table_schema: TableSchema | None
    pre_table_schema: TableSchema | None = None


@dataclass(frozen=True, slots=True)
class Transaction:
    """Row changes committed together at ``commit_ts`` (TiCDC order: as listed)."""

    commit_ts: int
    changes: tuple[RowChange, ...]


class UpstreamModel:
    """Upstream tables with their full history (a plain-Python stand-in for TiDB)."""

    def __init__(self, *, allow_keyless: bool = False, repeated_keys: bool = False) -> None:
        """``allow_keyless``: accept tables without a primary or NOT NULL unique key (multisets,
        TiCDC ``force-replicate``); ``repeated_keys``: let a transaction change a key several
        times (bursts, applied in order)."""
        self._allow_keyless = allow_keyless
        self._repeated_keys = repeated_keys
        #: Live tables by current name.
        self._tables: dict[TableRef, Lineage] = {}
        #: Every table ever created, in creation order.
        self._lineages: list[Lineage] = []
        self._last_ts = 0
        self._ddls: list[tuple[int, DdlChange]] = []
        self._transactions: list[Transaction] = []

    # ----------------------------------------------------------------- schema
    def apply_ddl(self, commit_ts: int, ddl: DdlChange, specs: Sequence[AlterSpec] = ()) -> None:
        """Apply one DDL at ``commit_ts`` (after every earlier commit).

        CREATE, ERASE (DROP TABLE), TRUNCATE, RENAME, ALTER/CINDEX/DINDEX (``specs`` say how the
        rows change; the DdlChange's post schema must follow from them) and QUERY (``DROP
        DATABASE`` drops the database's tables; anything else is history only). A table must
        keep a primary or NOT NULL unique key.
        """
        self.apply_ddls(commit_ts, [(ddl, tuple(specs))])

    def apply_ddls(self, commit_ts: int, ddls: Sequence[tuple[DdlChange, Sequence[AlterSpec]]]) -> None:
        """Apply several DDL events that share ``commit_ts`` (one ``RENAME TABLE a TO b, c TO d``)."""
        if not ddls:
            raise SchemaError("apply_ddls needs at least one DDL")
        self._check_after_last(commit_ts, f"DDL {ddls[0][0].sql!r}")
        for ddl, specs in ddls:
            self._apply_one(commit_ts, ddl, tuple(specs))
            self._ddls.append((commit_ts, ddl))
        self._last_ts = commit_ts

    def _apply_one(self, ts: int, ddl: DdlChange, specs: tuple[AlterSpec, ...]) -> None:
        where = f"{ddl.database}.{ddl.table}"
        if ddl.ddl_type == "CREATE":
            self._create(ts, ddl, where)
        elif ddl.ddl_type == "QUERY":
            if " ".join(ddl.sql.upper().split()[:2]) in ("DROP DATABASE", "DROP SCHEMA"):
                for ref in [r for r in self._tables if r[0] == ddl.database]:
                    self._tables.pop(ref).dropped_ts = ts
        elif ddl.ddl_type == "ERASE":
            lineage = self._table(ddl.database, self._named(ddl))
            lineage.dropped_ts = ts
            lineage.ddls.append(DdlRecord(ts, ddl.ddl_type, ddl.sql, specs, lineage.schema, None))
            del self._tables[lineage.name]
        elif ddl.ddl_type in ("TRUNCATE", "RENAME", "ALTER", "CINDEX", "DINDEX"):
            self._change(ts, ddl, specs, where)
        else:
            raise SchemaError(f"DDL type {ddl.ddl_type!r} ({ddl.sql!r}) is not supported by the model")

    def _create(self, ts: int, ddl: DdlChange, where: str) -> None:
        schema = ddl.table_schema
        if schema is None:
            raise SchemaError(f"CREATE TABLE {where}: the DDL carries no table schema")
        ref = (schema.database, schema.table)
        if ref in self._tables:
            raise SchemaError(f"table {where} already exists in the reference model")
        key = schema.handle_key()
        if not key and not self._allow_keyless:
            raise SchemaError(f"table {where} has no primary or NOT NULL unique key; the model needs one")
        lineage = Lineage(len(self._lineages), ts, key, [(ts, ref)], [(ts, schema)])
        lineage.ddls.append(DdlRecord(ts, ddl.ddl_type, ddl.sql, (), None, schema))
        self._lineages.append(lineage)
        self._tables[ref] = lineage

    def _change(self, ts: int, ddl: DdlChange, specs: tuple[AlterSpec, ...], where: str) -> None:
        post = ddl.table_schema
        if post is None:
            raise SchemaError(f"{ddl.ddl_type} {where} ({ddl.sql!r}): the DDL carries no table schema")
        old_ref = self._old_name(ddl)
        lineage = self._table(*old_ref)
        pre = lineage.schema
        if ddl.ddl_type == "TRUNCATE":
            for key in lineage.live_keys():
                lineage.append(key, RowVersion(ts, None, None))
        elif ddl.ddl_type == "RENAME":
            new_ref = (post.database, post.table)
            if new_ref in self._tables:
                raise SchemaError(f"RENAME TABLE ({ddl.sql!r}): table {post.database}.{post.table} already exists")
            del self._tables[old_ref]
            self._tables[new_ref] = lineage
            lineage.names.append((ts, new_ref))
        else:
            steps = expected_post_schema(pre, specs, where) if specs else [pre]
            if specs:
                check_post_schema(steps[-1], post, f"{where} ({ddl.sql!r})")
            rewrite_rows(lineage, steps, specs, post, ts, ddl.sql)
        lineage.schemas.append((ts, post))
        lineage.ddls.append(DdlRecord(ts, ddl.ddl_type, ddl.sql, specs, pre, post))

    def _named(self, ddl: DdlChange) -> str:
        if ddl.table is None:
            raise SchemaError(f"{ddl.ddl_type} DDL {ddl.sql!r} names no table")
        return ddl.table

    def _old_name(self, ddl: DdlChange) -> TableRef:
        if ddl.ddl_type == "RENAME":
            if ddl.pre_table_schema is None:
                raise SchemaError(f"RENAME TABLE ({ddl.sql!r}): the DDL carries no pre-table schema (the old name)")
            return (ddl.pre_table_schema.database, ddl.pre_table_schema.table)
        return (ddl.database, self._named(ddl))

    def tables(self) -> list[TableRef]:
        return sorted(self._tables)

    def schema(self, database: str, table: str) -> TableSchema:
        return self._table(database, table).schema

    def key_columns(self, database: str, table: str) -> tuple[str, ...]:
        return self._table(database, table).key_columns

    def key_of(self, database: str, table: str, row: Mapping[str, Value]) -> Key:
        return tuple(row[name] for name in self._table(database, table).key_columns)

    # ------------------------------------------------------------------- rows
    def normalize_row(self, database: str, table: str, row: Mapping[str, Value]) -> Row:
        """``row`` checked against the schema and normalized the way TiDB stores it."""
        schema = self._table(database, table).schema
        where = f"{database}.{table}"
        unknown = sorted(set(row) - {c.name for c in schema.columns})
        if unknown:
            raise SchemaError(f"{where}: unknown columns {unknown}")
        missing = [c.name for c in schema.columns if c.name not in row]
        if missing:
            raise SchemaError(f"{where}: row image lacks columns {missing} (images are full rows)")
        return {c.name: normalize_value(c, row[c.name], where) for c in schema.columns}

    def apply(self, transaction: Transaction) -> Transaction:
        """Apply a transaction; returns it with normalized images (as TiCDC would send them).

        Checks what TiDB guarantees: commit TSOs strictly increase, INSERT keys are new,
        UPDATE/DELETE ``before`` images equal the current rows, and a key is touched at most once
        per transaction (the halves of a split key-changing UPDATE touch two different keys)
        unless the model allows ``repeated_keys`` (then events apply in order, see
        :mod:`~ticdc_sim.model_apply`). Keyless tables hold multisets.
        """
        self._check_after_last(transaction.commit_ts, "transaction")
        normalized: list[RowChange] = []
        stage = TransactionStage(transaction.commit_ts, self._repeated_keys)
        for change in transaction.changes:
            table = self._table(change.database, change.table)
            where = f"{change.database}.{change.table} at commit_ts {transaction.commit_ts}"
            before = self._checked_before(table, change, where, stage)
            after = (
                self.normalize_row(change.database, change.table, change.after) if change.after is not None else None
            )
            if (change.op is DmlOp.DELETE) != (after is None):
                raise SchemaError(f"{where}: {change.op} must {'' if after is None else 'not '}carry `after`")
            if table.key_columns:
                stage.stage_keyed(table, change.op, before, after, where)
            else:
                stage.stage_keyless(table, change.op, before, where, after)
            normalized.append(RowChange(change.op, change.database, change.table, before, after, change.split))
        self._last_ts = transaction.commit_ts
        stage.commit()
        result = Transaction(transaction.commit_ts, tuple(normalized))
        self._transactions.append(result)
        return result

    def _checked_before(self, table: Lineage, change: RowChange, where: str, stage: TransactionStage) -> Row | None:
        if change.op is DmlOp.INSERT:
            if change.before is not None:
                raise SchemaError(f"{where}: INSERT must not carry `before`")
            return None
        if change.before is None:
            raise SchemaError(f"{where}: {change.op} needs the full `before` image")
        before = self.normalize_row(change.database, change.table, change.before)
        if not table.key_columns:
            return before  # a keyless table: the copy is found when staging
        key = self.key_of(change.database, change.table, before)
        current = stage.current(table, key)
        if current != before:
            raise SchemaError(
                f"{where}: {change.op} `before` image {before!r} differs from the current row {current!r}"
            )
        return before

    def row(self, database: str, table: str, key: Key) -> Row | None:
        current = self._table(database, table).current(tuple(key))
        return dict(current) if current is not None else None

    def rows(self, database: str, table: str) -> list[Row]:
        """Current rows, sorted by key."""
        return self.rows_at(database, table, self._last_ts)

    def keys(self, database: str, table: str) -> list[Key]:
        """Current keys in insertion-history order (stable, for seeded choices)."""
        return self._table(database, table).live_keys()

    def rows_at(self, database: str, table: str, tso: int) -> list[Row]:
        """The table named ``database.table`` as of ``tso`` (commits <= tso), sorted by key, in the
        schema in effect then. A renamed table's rows include those from before the rename; a name
        that did not exist at ``tso`` (not yet created, dropped, renamed away) has no rows."""
        lineage = self.lineage_at(database, table, tso)
        return rows_of(lineage, tso) if lineage is not None else []

    def schema_at(self, database: str, table: str, tso: int) -> TableSchema | None:
        """The schema of ``database.table`` in effect at ``tso``; None when no such table existed then."""
        lineage = self.lineage_at(database, table, tso)
        return lineage.schema_at(tso) if lineage is not None else None

    def schema_history(self, database: str, table: str) -> list[tuple[int, TableSchema]]:
        """``(commit_ts, schema)`` of every version of the table now (or last) named ``database.table``,
        including versions from before a rename."""
        return list(self.last_lineage(database, table).schemas)

    def lineage_at(self, database: str, table: str, tso: int) -> Lineage | None:
        """The table that had the name ``database.table`` at ``tso`` (None if none had)."""
        self.last_lineage(database, table)
        for lineage in reversed(self._lineages):
            if lineage.name_at(tso) == (database, table):
                return lineage
        return None

    def last_lineage(self, database: str, table: str) -> Lineage:
        """The live table of that name, else the last one that had it; SchemaError if none ever had."""
        if (database, table) in self._tables:
            return self._tables[(database, table)]
        for lineage in reversed(self._lineages):
            if any(ref == (database, table) for _, ref in lineage.names):
                return lineage
        raise SchemaError(f"table {database}.{table} never existed in the reference model (create it first)")

    def lineages(self) -> Sequence[Lineage]:
        """Every table ever created, in creation order (read-only use)."""
        return tuple(self._lineages)

    # ---------------------------------------------------------------- history
    @property
    def last_commit_ts(self) -> int:
        return self._last_ts

    def transactions(self) -> Sequence[Transaction]:
        return tuple(self._transactions)

    def ddls(self) -> Sequence[tuple[int, DdlChange]]:
        return tuple(self._ddls)

    def _check_after_last(self, commit_ts: int, what: str) -> None:
        if commit_ts <= self._last_ts:
            raise SchemaError(f"{what}: commit_ts {commit_ts} is not after the previous commit_ts {self._last_ts}")

    def _table(self, database: str, table: str) -> Lineage:
        try:
            return self._tables[(database, table)]
        except KeyError:
            raise SchemaError(f"table {database}.{table} is not in the reference model (create it first)") from None


def rows_of(lineage: Lineage, tso: int) -> list[Row]:
    """``lineage``'s rows as of ``tso`` (a drop ignored), sorted by key, as copies."""
    result = [(key, dict(version.row)) for key, version in lineage.versions_at(tso) if version.row is not None]
    result.sort(key=lambda item: key_sort_value(item[0]))
    return [row for _, row in result]
