"""Applying one transaction's row events to the lineages, in order, over the committed state.

A :class:`TransactionStage` holds the rows the transaction has written so far. With
``repeated_keys`` a key may change several times in one transaction (a burst): every event is
checked against the state left by the events before it, and only the final state per key is
committed. Without it, every ``before`` image is checked against the committed state and a key
may be changed once (the TiDB rule the workload follows by default).

Keyless tables (no primary or NOT NULL unique key, TiCDC ``force-replicate``) hold a multiset:
like TiDB's hidden ``_tidb_rowid``, every inserted copy gets a row id, its key is ``(rowid,)``.
An UPDATE or DELETE changes one copy equal to its ``before`` image: the one with the lowest row
id (any copy gives the same multiset; the choice only has to be deterministic).
"""

from __future__ import annotations

from ticdc_lake.errors import SchemaError
from ticdc_sim.model_lineage import Key, Lineage, Row, RowVersion


class TransactionStage:
    """The writes of one transaction before commit (see the module docstring)."""

    def __init__(self, commit_ts: int, repeated_keys: bool) -> None:
        self.commit_ts = commit_ts
        self.repeated_keys = repeated_keys
        self._rows: dict[tuple[int, Key], tuple[Lineage, Key, Row | None]] = {}
        self._touched: set[tuple[int, Key]] = set()
        self._next_rowid: dict[int, int] = {}

    def current(self, lineage: Lineage, key: Key) -> Row | None:
        """The row under ``key`` as the next event sees it."""
        if self.repeated_keys:
            staged = self._rows.get((lineage.lineage_id, key))
            if staged is not None:
                return staged[2]
        return lineage.current(key)

    def touch(self, lineage: Lineage, key: Key, where: str) -> None:
        """Refuse a second change of ``key`` unless bursts are allowed."""
        marker = (lineage.lineage_id, key)
        if marker in self._touched and not self.repeated_keys:
            raise SchemaError(f"{where}: key {key!r} is changed twice in one transaction")
        self._touched.add(marker)

    def put(self, lineage: Lineage, key: Key, row: Row | None) -> None:
        marker = (lineage.lineage_id, key)
        self._rows.pop(marker, None)  # re-inserted at the end: commit order follows the last write
        self._rows[marker] = (lineage, key, row)

    def new_rowid(self, lineage: Lineage) -> Key:
        """A fresh row id for an INSERT into a keyless table."""
        rowid = self._next_rowid.get(lineage.lineage_id, lineage.next_rowid)
        self._next_rowid[lineage.lineage_id] = rowid + 1
        return (rowid,)

    def find_copy(self, lineage: Lineage, row: Row) -> Key | None:
        """The row id of the live copy equal to ``row`` with the lowest id (keyless tables)."""
        keys = set(lineage.live_keys())
        keys.update(key for (lineage_id, key) in self._rows if lineage_id == lineage.lineage_id)
        for key in sorted(keys, key=lambda k: (k[0],)):
            current = self._rows.get((lineage.lineage_id, key))
            image = current[2] if current is not None else lineage.current(key)
            if image == row:
                return key
        return None

    def stage_keyed(self, table: Lineage, op: str, before: Row | None, after: Row | None, where: str) -> None:
        """Stage an event of a keyed table (``before`` already checked against :meth:`current`)."""
        old_key = tuple(before[name] for name in table.key_columns) if before is not None else None
        new_key = tuple(after[name] for name in table.key_columns) if after is not None else None
        if new_key is not None and new_key != old_key and self.current(table, new_key) is not None:
            raise SchemaError(f"{where}: {op} to key {new_key!r}, which already exists")
        for key in dict.fromkeys(k for k in (old_key, new_key) if k is not None):
            self.touch(table, key, where)
        if old_key is not None and old_key != new_key:
            self.put(table, old_key, None)
        if new_key is not None:
            self.put(table, new_key, after)

    def stage_keyless(self, table: Lineage, op: str, before: Row | None, where: str, after: Row | None) -> None:
        """Stage an event of a keyless table: INSERT adds a copy, UPDATE/DELETE change one copy."""
        if before is None:
            self.put(table, self.new_rowid(table), after)
            return
        copy = self.find_copy(table, before)
        if copy is None:
            raise SchemaError(
                f"{where}: {op} `before` image {before!r} matches no row of the keyless table; "
                "UPDATE/DELETE images must equal an existing copy"
            )
        self.put(table, copy, after)

    def commit(self) -> None:
        """Write the final state of every changed key at the commit TSO."""
        for lineage, key, row in self._rows.values():
            origin = (self.commit_ts, row) if row is not None else None
            lineage.append(key, RowVersion(self.commit_ts, row, origin))
        for lineage_id, rowid in self._next_rowid.items():
            for lineage, _, _ in self._rows.values():
                if lineage.lineage_id == lineage_id:
                    lineage.next_rowid = max(lineage.next_rowid, rowid)
