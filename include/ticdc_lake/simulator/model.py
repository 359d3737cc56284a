"""The reference model of the upstream TiDB tables: the test oracle.

Tables are keyed by ``(database, table)``; rows by their handle key (the primary key). Row values
are plain Python values (:data:`~ticdc_lake.simulator.column_types.Value`): int for integer
types (BIGINT UNSIGNED up to 2**64-1), Decimal with the column scale for DECIMAL, float for
FLOAT/DOUBLE, str for CHAR/VARCHAR/TEXT/JSON/ENUM/SET/TIME, bytes for BINARY/VARBINARY/BLOB,
``date`` for DATE, naive ``datetime`` for DATETIME, UTC-aware ``datetime`` for TIMESTAMP, None
for NULL. The full history is kept, so :meth:`UpstreamModel.rows_at` answers for any TSO.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.simulator.column_types import Value, normalize_value

Row = dict[str, Value]
Key = tuple[Value, ...]
TableRef = tuple[str, str]


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
    """A DDL event. ``ddl_type`` is the Simple-protocol subtype (CREATE, QUERY, ...)."""

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


@dataclass(slots=True)
class _Table:
    schema: TableSchema
    created_ts: int
    key_columns: tuple[str, ...]
    #: key -> [(commit_ts, row or None when deleted)], commit_ts ascending.
    versions: dict[Key, list[tuple[int, Row | None]]] = field(default_factory=dict)

    def current(self, key: Key) -> Row | None:
        history = self.versions.get(key)
        return history[-1][1] if history else None


class UpstreamModel:
    """Upstream tables with their full history (a plain-Python stand-in for TiDB)."""

    def __init__(self) -> None:
        self._tables: dict[TableRef, _Table] = {}
        self._last_ts = 0
        self._ddls: list[tuple[int, DdlChange]] = []
        self._transactions: list[Transaction] = []

    # ----------------------------------------------------------------- schema
    def apply_ddl(self, commit_ts: int, ddl: DdlChange) -> None:
        """Apply a DDL at ``commit_ts``. Supported: CREATE (table) and QUERY (kept as history only).

        A created table must have a primary or NOT NULL unique key.
        """
        where = f"{ddl.database}.{ddl.table}"
        if ddl.ddl_type == "CREATE":
            schema = ddl.table_schema
            if schema is None:
                raise SchemaError(f"CREATE TABLE {where}: the DDL carries no table schema")
            ref = (schema.database, schema.table)
            if ref in self._tables:
                raise SchemaError(f"table {where} already exists in the reference model")
            key = schema.handle_key()
            if not key:
                raise SchemaError(f"table {where} has no primary or NOT NULL unique key; the model needs one")
            self._advance(commit_ts, f"CREATE TABLE {where}")
            self._tables[ref] = _Table(schema=schema, created_ts=commit_ts, key_columns=key)
        elif ddl.ddl_type == "QUERY":
            self._advance(commit_ts, f"DDL {ddl.sql!r}")
        else:
            raise SchemaError(f"DDL type {ddl.ddl_type!r} ({ddl.sql!r}) is not supported by the model yet")
        self._ddls.append((commit_ts, ddl))

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
        per transaction (the halves of a split key-changing UPDATE touch two different keys).
        """
        self._check_after_last(transaction.commit_ts, "transaction")
        normalized: list[RowChange] = []
        touched: set[tuple[str, str, Key]] = set()
        staged: list[tuple[_Table, Key, Row | None]] = []
        for change in transaction.changes:
            table = self._table(change.database, change.table)
            where = f"{change.database}.{change.table} at commit_ts {transaction.commit_ts}"
            before = self._checked_before(table, change, where)
            after = (
                self.normalize_row(change.database, change.table, change.after) if change.after is not None else None
            )
            if (change.op is DmlOp.DELETE) != (after is None):
                raise SchemaError(f"{where}: {change.op} must {'' if after is None else 'not '}carry `after`")
            old_key = self.key_of(change.database, change.table, before) if before is not None else None
            new_key = self.key_of(change.database, change.table, after) if after is not None else None
            if new_key is not None and new_key != old_key and table.current(new_key) is not None:
                raise SchemaError(f"{where}: {change.op} to key {new_key!r}, which already exists")
            for key in dict.fromkeys(k for k in (old_key, new_key) if k is not None):
                marker = (change.database, change.table, key)
                if marker in touched:
                    raise SchemaError(f"{where}: key {key!r} is changed twice in one transaction")
                touched.add(marker)
            if old_key is not None and old_key != new_key:
                staged.append((table, old_key, None))
            if new_key is not None:
                staged.append((table, new_key, after))
            normalized.append(RowChange(change.op, change.database, change.table, before, after, change.split))
        self._last_ts = transaction.commit_ts
        for table, key, row in staged:
            table.versions.setdefault(key, []).append((transaction.commit_ts, row))
        result = Transaction(transaction.commit_ts, tuple(normalized))
        self._transactions.append(result)
        return result

    def _checked_before(self, table: _Table, change: RowChange, where: str) -> Row | None:
        if change.op is DmlOp.INSERT:
            if change.before is not None:
                raise SchemaError(f"{where}: INSERT must not carry `before`")
            return None
        if change.before is None:
            raise SchemaError(f"{where}: {change.op} needs the full `before` image")
        before = self.normalize_row(change.database, change.table, change.before)
        key = self.key_of(change.database, change.table, before)
        if table.current(key) != before:
            raise SchemaError(
                f"{where}: {change.op} `before` image {before!r} differs from the current row {table.current(key)!r}"
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
        t = self._table(database, table)
        return [k for k, history in t.versions.items() if history[-1][1] is not None]

    def rows_at(self, database: str, table: str, tso: int) -> list[Row]:
        """The table as of ``tso``: exactly the transactions with commit_ts <= tso, sorted by key."""
        t = self._table(database, table)
        result: list[tuple[Key, Row]] = []
        for key, history in t.versions.items():
            position = bisect.bisect_right(history, tso, key=lambda version: version[0])
            if position and (row := history[position - 1][1]) is not None:
                result.append((key, dict(row)))
        result.sort(key=lambda item: _sort_key(item[0]))
        return [row for _, row in result]

    # ---------------------------------------------------------------- history
    @property
    def last_commit_ts(self) -> int:
        return self._last_ts

    def transactions(self) -> Sequence[Transaction]:
        return tuple(self._transactions)

    def ddls(self) -> Sequence[tuple[int, DdlChange]]:
        return tuple(self._ddls)

    def _advance(self, commit_ts: int, what: str) -> None:
        self._check_after_last(commit_ts, what)
        self._last_ts = commit_ts

    def _check_after_last(self, commit_ts: int, what: str) -> None:
        if commit_ts <= self._last_ts:
            raise SchemaError(f"{what}: commit_ts {commit_ts} is not after the previous commit_ts {self._last_ts}")

    def _table(self, database: str, table: str) -> _Table:
        try:
            return self._tables[(database, table)]
        except KeyError:
            raise SchemaError(f"table {database}.{table} is not in the reference model (create it first)") from None


def _sort_key(key: Key) -> tuple[tuple[int, object], ...]:
    # NULL never appears in a key, but keep the sort total anyway.
    return tuple((0, v) if v is not None else (1, 0) for v in key)
