"""Reading the table of a message a decoder rejected (``Decoder.locate``): the shared parts.

Each protocol module reads its own fields (its ``find_location``) with these helpers. A
quarantined message holds back only what it can affect: its table when the message names it for
certain, else every table of its topic. The readers look only at the fields that name the table
and the commit TSO, so a bad value, an unknown type or a missing field elsewhere does not hide
the table. They never guess: a message that cannot be parsed as a whole, a DDL that renames (two
tables) and a batch of several tables give no table. Each may raise; ``Decoder.locate`` turns
any exception into None.
"""

from __future__ import annotations

import json
from typing import Any

from ticdc_lake.canonical import MAX_UNSIGNED_BIGINT
from ticdc_lake.protocols.base import MessageLocation
from ticdc_lake.protocols.ddl_text import ddl_type_from_sql

Doc = dict[str, Any]


def json_object(data: bytes) -> Doc | None:
    """``data`` parsed as a JSON object, else None."""
    doc = json.loads(data.decode("utf-8"))
    return doc if isinstance(doc, dict) else None


def location(database: object, table: object, commit_ts: object = None, *, rename: bool = False) -> MessageLocation:
    """A location from raw field values: names that are not non-empty strings, or a rename, give no table."""
    db = database if isinstance(database, str) and database else None
    name = table if isinstance(table, str) and table and db is not None and not rename else None
    return MessageLocation(db, name, uint64(commit_ts))


def renames(query: str) -> bool:
    """Whether a DDL text renames (so names two tables)."""
    return ddl_type_from_sql(query, unknown=None) == "RENAME"


def uint64(value: object) -> int | None:
    """``value`` if it is an unsigned 64-bit integer, else None."""
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
