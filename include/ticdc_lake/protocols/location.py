"""Reading the table of a message a decoder rejected (``Decoder.locate``), per protocol shape.

A quarantined message holds back only what it can affect: its table when the message names it
for certain, else every table of its topic. These readers look only at the fields that name the
table and the commit TSO, so a bad value, an unknown type or a missing field elsewhere does not
hide the table. They never guess: a message that cannot be parsed as a whole, a DDL that renames
(two tables) and a batch of several tables give no table. Each may raise; ``Decoder.locate``
turns any exception into None.
"""

from __future__ import annotations

import json
from typing import Any

from ticdc_lake.canonical import MAX_UNSIGNED_BIGINT
from ticdc_lake.protocols.base import MessageLocation
from ticdc_lake.protocols.ddl_text import ddl_type_from_sql

Doc = dict[str, Any]
_SIMPLE_DML = frozenset({"INSERT", "UPDATE", "DELETE"})


def json_object(data: bytes) -> Doc | None:
    """``data`` parsed as a JSON object, else None."""
    doc = json.loads(data.decode("utf-8"))
    return doc if isinstance(doc, dict) else None


def location(database: object, table: object, commit_ts: object = None, *, rename: bool = False) -> MessageLocation:
    """A location from raw field values: names that are not non-empty strings, or a rename, give no table."""
    db = database if isinstance(database, str) and database else None
    name = table if isinstance(table, str) and table and db is not None and not rename else None
    return MessageLocation(db, name, _uint64(commit_ts))


def simple_location(doc: Doc) -> MessageLocation:
    """A Simple protocol message (JSON names; the Avro encoding reads the same fields)."""
    kind = doc.get("type")
    if kind in _SIMPLE_DML:
        return location(doc.get("database"), doc.get("table"), doc.get("commitTs"))
    after, before = doc.get("tableSchema"), doc.get("preTableSchema")
    names = [(s.get("schema"), s.get("table")) for s in (after, before) if isinstance(s, dict)]
    if not names:
        return location(None, None, doc.get("commitTs"))
    renamed = kind == "RENAME" or len(set(names)) > 1
    return location(names[0][0], names[0][1], doc.get("commitTs"), rename=renamed)


def debezium_location(payload: Doc) -> MessageLocation:
    """A Debezium value payload: ``payload.source`` names the table of rows and of table DDL."""
    source = payload.get("source")
    if not isinstance(source, dict):
        return location(None, None)
    if payload.get("op") == "m":
        return location(None, None, source.get("commit_ts"))
    renamed = False
    if "ddl" in payload and "op" not in payload:
        query = payload.get("ddl")
        changes = payload.get("tableChanges")
        first = changes[0] if isinstance(changes, list) and changes and isinstance(changes[0], dict) else {}
        renamed = not isinstance(query, str) or _renames(query) or str(first.get("id", "")).count('","') > 0
    return location(source.get("db"), source.get("table"), source.get("commit_ts"), rename=renamed)


def canal_location(doc: Doc) -> MessageLocation:
    """A Canal-JSON message: ``database``/``table``, the commit TSO from the TiDB extension."""
    extension = doc.get("_tidb")
    commit_ts = extension.get("commitTs") if isinstance(extension, dict) else None
    if doc.get("type") == "TIDB_WATERMARK":
        return location(None, None, extension.get("watermarkTs") if isinstance(extension, dict) else None)
    renamed = doc.get("isDdl") is True and (not isinstance(doc.get("sql"), str) or _renames(doc["sql"]))
    return location(doc.get("database"), doc.get("table"), commit_ts, rename=renamed)


def open_location(keys: list[Doc]) -> MessageLocation | None:
    """An Open Protocol batch (its key items): the table when every row and DDL item names the same one."""
    tables = {(k.get("scm"), k.get("tbl")) for k in keys if k.get("t") in (1, 2)}
    stamps = [ts for k in keys if (ts := _uint64(k.get("ts"))) is not None]
    commit_ts = min(stamps) if stamps else None
    if len(tables) != 1:
        return location(None, None, commit_ts)
    database, table = next(iter(tables))
    renamed = any(k.get("t") == 2 for k in keys)  # the DDL text is in the value: a rename cannot be ruled out
    return location(database, table, commit_ts, rename=renamed)


def _renames(query: str) -> bool:
    return ddl_type_from_sql(query, unknown=None) == "RENAME"


def _uint64(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_UNSIGNED_BIGINT:
        return value
    return None


class AvroPrefix:
    """Reads the leading fields of an Avro binary record in place (zig-zag varints, strings).

    Avro is positional, so the first fields of a record are what they are whatever follows: a tail
    that is cut or corrupt does not hide them.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def long(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.at]  # IndexError when cut: the caller gives up
            self.at += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
            if shift > 63:
                raise ValueError("varint longer than 10 bytes")

    def string(self) -> str:
        size = self.long()
        if size < 0 or self.at + size > len(self.data):
            raise ValueError("string beyond the end of the data")
        text = self.data[self.at : self.at + size].decode("utf-8")
        self.at += size
        return text


#: Simple Avro ``MessageType`` and ``DDLType`` enum indexes (``message.json``).
_AVRO_WATERMARK, _AVRO_BOOTSTRAP, _AVRO_DDL, _AVRO_DML = range(4)
_AVRO_DDL_RENAME = 3


def simple_avro_location(value: bytes, union_byte: int) -> MessageLocation | None:
    """A Simple Avro value: the names and commit TSO that lead the payload record."""
    if not value or value[0] != union_byte:
        return None
    reader = AvroPrefix(value[1:])
    kind = reader.long()
    if reader.long() != kind:  # the payload union index names the record of that kind
        return None
    reader.long()  # version
    if kind == _AVRO_DML:
        database, table = reader.string(), reader.string()
        reader.long()  # tableID
        reader.long()  # type
        return location(database, table, reader.long() % (1 << 64))
    if kind == _AVRO_WATERMARK:
        return location(None, None, reader.long() % (1 << 64))
    if kind == _AVRO_BOOTSTRAP:
        reader.long()  # buildTs
        return location(reader.string(), reader.string())
    if kind != _AVRO_DDL:
        return None
    rename = reader.long() == _AVRO_DDL_RENAME
    reader.string()  # sql
    commit_ts = reader.long() % (1 << 64)
    reader.long()  # buildTs
    if reader.long() != 1:  # tableSchema is null: a database DDL
        return location(None, None, commit_ts)
    return location(reader.string(), reader.string(), commit_ts, rename=rename)
