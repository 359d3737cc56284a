"""Protocol-free description of one version of an upstream table.

Filled by the decoders from whatever the protocol carries (Simple ``tableSchema``, Debezium
``tableChanges``, parsed DDL, registry schemas) and stored, one row per version, in the schema
history table.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ColumnSchema:
    name: str
    #: TiDB type name without attributes: int, bigint, varchar, varbinary, decimal, datetime, ...
    mysql_type: str
    #: Display length; the precision for DECIMAL.
    length: int | None = None
    #: Scale for DECIMAL.
    scale: int | None = None
    #: Fractional-second precision for DATETIME, TIMESTAMP and TIME.
    fsp: int | None = None
    unsigned: bool = False
    nullable: bool = True
    default: str | None = None
    charset: str | None = None
    collation: str | None = None
    #: ENUM / SET members in definition order.
    elements: tuple[str, ...] | None = None

    def is_binary_string(self) -> bool:
        """True for BINARY/VARBINARY/BLOB types (decided on the type name, never the charset)."""
        return "binary" in self.mysql_type or "blob" in self.mysql_type

    def type_text(self) -> str:
        """MySQL-style type text, for people: ``decimal(12,6) unsigned``, ``datetime(3)``."""
        text = self.mysql_type
        if self.mysql_type in ("decimal", "numeric") and self.length is not None:
            text += f"({self.length},{self.scale or 0})"
        elif self.mysql_type in ("datetime", "timestamp", "time") and self.fsp:
            text += f"({self.fsp})"
        elif self.mysql_type in ("enum", "set") and self.elements is not None:
            text += "(" + ",".join("'" + e.replace("'", "''") + "'" for e in self.elements) + ")"
        elif self.length is not None and self.length > 0 and self.mysql_type in _LENGTH_TYPES:
            text += f"({self.length})"
        if self.unsigned:
            text += " unsigned"
        return text


_LENGTH_TYPES = frozenset({"char", "varchar", "binary", "varbinary", "bit"})


@dataclass(frozen=True, slots=True)
class IndexSchema:
    name: str
    columns: tuple[str, ...]
    primary: bool = False
    unique: bool = False
    nullable: bool = False


@dataclass(frozen=True, slots=True)
class TableSchema:
    database: str
    table: str
    columns: tuple[ColumnSchema, ...]
    indexes: tuple[IndexSchema, ...] = ()
    table_id: int | None = None
    #: Schema version (TiDB table info UpdateTS for Simple); None where the protocol has none.
    version: int | None = None
    #: Where the facts came from: simple-bootstrap, simple-ddl, debezium-table-changes, ...
    source: str = "unknown"
    extra: dict[str, Any] = field(default_factory=dict)

    def column(self, name: str) -> ColumnSchema | None:
        for col in self.columns:
            if col.name == name:
                return col
        return None

    def handle_key(self) -> tuple[str, ...]:
        """The row key TiCDC uses: the primary key, else the narrowest all-NOT-NULL unique index.

        Ties go to the index listed first (protocols do not carry index ids). An empty tuple
        means the table has no key (TiCDC ``force-replicate``): apply uses the whole row.
        """
        for index in self.indexes:
            if index.primary:
                return index.columns
        candidates = []
        for position, index in enumerate(self.indexes):
            if not index.unique or not index.columns:
                continue
            cols = [self.column(name) for name in index.columns]
            if all(c is not None and not c.nullable for c in cols) and not index.nullable:
                candidates.append((len(index.columns), position, index.columns))
        if candidates:
            return min(candidates)[2]
        return ()

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> TableSchema:
        data = json.loads(text)
        columns = tuple(
            ColumnSchema(**{**c, "elements": tuple(c["elements"]) if c.get("elements") is not None else None})
            for c in data["columns"]
        )
        indexes = tuple(IndexSchema(**{**i, "columns": tuple(i["columns"])}) for i in data["indexes"])
        return TableSchema(
            database=data["database"],
            table=data["table"],
            columns=columns,
            indexes=indexes,
            table_id=data.get("table_id"),
            version=data.get("version"),
            source=data.get("source", "unknown"),
            extra=data.get("extra") or {},
        )
