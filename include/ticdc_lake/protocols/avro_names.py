"""One upstream table is one table whatever TiCDC's avro encoder did to its name.

TiCDC's avro protocol names a row's table and columns by their Avro names, which it sanitizes
(``SanitizeName``: ``we ird`` → ``we_ird``), while its DDL messages (``avro-enable-watermark``)
carry the upstream names. The identity is the upstream name, as the DDL carries it: a row's
sanitized database, table and column names are mapped back to the tables and columns the folded
DDL (schemas of source ``avro-ddl``) name whose sanitized form matches. Nothing matches: the
sanitized name stays (a stream without DDL messages has no other name, and its versions come from
the registry under that name). Two upstream names match: a decode error naming both.

TiCDC's rule (``SanitizeName``, the same in release 7.5's ``avro.go`` and 8.x's
``pkg/sink/codec/common/helper.go``): every character outside ``[A-Za-z0-9_]`` becomes one ``_``
(``中文`` → ``__``), a leading digit is kept after a ``_`` (``1a`` → ``_1a``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent
from ticdc_lake.schema.table_schema import TableSchema

#: ``TableSchema.source`` suffix of versions folded from DDL text: the upstream names.
DDL_SOURCE_SUFFIX = "-ddl"
_MAX_TS = (1 << 64) - 1

TableName = tuple[str, str]


def sanitize_name(name: str) -> str:
    """TiCDC's ``SanitizeName`` (module docstring)."""
    out = []
    for index, char in enumerate(name):
        valid = char.isascii() and (char.isalpha() or char == "_" or (index > 0 and char.isdigit()))
        out.append(char if valid else "_" + char if char.isascii() and char.isdigit() else "_")
    return "".join(out)


class UpstreamNames:
    """The upstream tables and columns a lookup knows, indexed by their sanitized forms."""

    def __init__(self, schemas: Iterable[TableSchema]) -> None:
        self._tables: dict[TableName, set[TableName]] = {}
        self._schemas: dict[TableName, list[TableSchema]] = {}
        for schema in schemas:
            if not schema.source.endswith(DDL_SOURCE_SUFFIX):
                continue
            name = (schema.database, schema.table)
            self._schemas.setdefault(name, []).append(schema)
            self._tables.setdefault((sanitize_name(schema.database), sanitize_name(schema.table)), set()).add(name)

    def table(self, database: str, table: str, where: str) -> TableName | None:
        """The one upstream table whose sanitized name is ``database.table``; None if none is known."""
        found = self._tables.get((database, table), set())
        if len(found) > 1:
            names = " and ".join(f"{d}.{t}" for d, t in sorted(found))
            raise DecodeError(
                "avro",
                f"{where} names table {database}.{table}, which TiCDC's avro encoder writes for both upstream "
                f"tables {names} (it replaces characters outside [A-Za-z0-9_]); the row cannot be assigned to "
                "one of them. Rename one upstream table, or exclude one of them from the changefeed",
            )
        return next(iter(found)) if found else None

    def columns(self, name: TableName, commit_ts: int, sent: Iterable[str], where: str) -> Mapping[str, str]:
        """Sanitized column name -> upstream column, for the table's newest schema at ``commit_ts``."""
        schemas = [s for s in self._schemas.get(name, []) if s.version is None or s.version <= (commit_ts or _MAX_TS)]
        if not schemas:
            return {}
        schema = max(schemas, key=lambda s: s.version or 0)
        upstream: dict[str, set[str]] = {}
        for column in schema.columns:
            upstream.setdefault(sanitize_name(column.name), set()).add(column.name)
        mapping: dict[str, str] = {}
        for sent_name in sent:
            found = upstream.get(sent_name, set())
            if len(found) > 1:
                raise DecodeError(
                    "avro",
                    f"{where} has column {sent_name!r}, which TiCDC's avro encoder writes for both upstream columns "
                    f"{' and '.join(repr(c) for c in sorted(found))} of {name[0]}.{name[1]}; rename one upstream",
                )
            if found:
                mapping[sent_name] = next(iter(found))
        return mapping


def to_upstream(event: ChangeEvent, names: UpstreamNames) -> ChangeEvent:
    """``event`` (an avro row) renamed to the upstream table and columns ``names`` knows, in place."""
    if event.database is None or event.table is None:
        return event
    where = f"the row of {event.database}.{event.table} at commit ts {event.commit_ts}"
    name = names.table(event.database, event.table, where)
    if name is None:
        return event
    event.database, event.table = name
    sent = set(event.column_types or ()) | set(event.after or ()) | set(event.before or ())
    mapping = names.columns(name, event.commit_ts, sent, where)
    if all(mapping.get(c, c) == c for c in sent):
        return event
    if event.after is not None:
        event.after = {mapping.get(k, k): v for k, v in event.after.items()}
    if event.before is not None:
        event.before = {mapping.get(k, k): v for k, v in event.before.items()}
    if event.column_types is not None:
        event.column_types = {mapping.get(k, k): v for k, v in event.column_types.items()}
    if event.facts.handle_key is not None:
        event.facts = replace(event.facts, handle_key=tuple(mapping.get(k, k) for k in event.facts.handle_key))
    return event
