"""Sound byte pre-filters for JSON messages: may this JSON text hold the member ``"name": value``?

The decode stage's schema pass reads only the messages a decoder's ``may_carry_schema`` lets
through, so a pre-filter may say yes to a message without schema facts (it costs time) but never
no to one with them (the rows of its batch would bind to the wrong schema). TiCDC writes compact
JSON, but a relay that re-serializes messages may write any valid JSON: whitespace around the
``:`` (``"isDdl": true``) and any character of a string escaped as ``\\uXXXX``. :func:`has_member`
tolerates both and still answers most row messages with one search of a literal pattern.

:func:`has_member` only searches for byte patterns, so where it holds for some bytes it holds for
any bytes that contain them: the schema pass may run it once on a whole block of landed records,
whose decompressed bytes hold every record's key and value (``Decoder.schema_block_test``).
"""

from __future__ import annotations

import re
from functools import cache

from ticdc_lake import byte_search

#: A block's value tokens are searched one by one only up to this many (``_literals_in``).
_SEARCHED_VALUES = 2
#: JSON's whitespace (RFC 8259) as a pattern: space, tab, line feed, carriage return, any number.
_SPACES = b"[ \\t\\n\\r]*"


def has_member(text: bytes, name: str, values: tuple[str, ...] | None = None) -> bool:
    """False only if ``text`` cannot be JSON holding an object member ``name`` whose value is one
    of ``values`` (JSON tokens as TiCDC writes them: ``true``, ``2``, ``"CREATE"``; None: any value).

    Over-approximates: the name may match inside a string or a nested object. Without any ``\\u``
    in ``text`` every string is written literally, so one pattern of the quoted name, whitespace,
    ``:``, whitespace and a value token decides (a regular expression search: about 1.5 µs over a
    4 KB Debezium message where a ``find`` of the quoted name took 2.3); otherwise a pattern that
    allows each character of the name and of string values to be escaped does.
    """
    if b"\\" in text and b"\\u" in text:  # one byte first: memchr, ten times faster on a 4 KB message
        return _pattern(name, values).search(text) is not None
    if len(text) >= byte_search.LARGE and not _literals_in(text, name, values):
        return False  # a whole block of records: plain searches first (below)
    return _literal(name, values).search(text) is not None


def _literals_in(text: bytes, name: str, values: tuple[str, ...] | None) -> bool:
    """Whether ``text`` holds the quoted name and (where there are few) one of the value tokens,
    each written literally: a text without ``\\u`` that lacks them cannot match :func:`_literal`.
    On a whole block of records each is a ``memmem`` (``byte_search``), which costs less than the
    regular expression's own search for the name; on one message (a few KB) both cost about the
    same, so a message keeps the expression alone."""
    if not byte_search.contains(text, b'"' + name.encode() + b'"'):
        return False
    if values is None or len(values) > _SEARCHED_VALUES:
        return True  # a search per value costs more than the expression's one pass (Simple JSON's DDL types)
    return any(byte_search.contains(text, value.encode()) for value in values)


@cache
def _literal(name: str, values: tuple[str, ...] | None) -> re.Pattern[bytes]:
    """The member written without escapes, JSON whitespace allowed around the ``:``."""
    member = re.escape(b'"' + name.encode() + b'"') + _SPACES + b":"
    if values is None:
        return re.compile(member)
    return re.compile(member + _SPACES + b"(?:" + b"|".join(re.escape(v.encode()) for v in values) + b")")


@cache
def _pattern(name: str, values: tuple[str, ...] | None) -> re.Pattern[bytes]:
    member = b'"' + _string_body(name) + b'"' + _SPACES + b":"
    if values is None:
        return re.compile(member)
    alternatives = b"|".join(_token(value) for value in values)
    return re.compile(member + _SPACES + b"(?:" + alternatives + b")")


def _token(value: str) -> bytes:
    """A JSON token as a pattern: a string's characters may be escaped, other tokens are literal."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return b'"' + _string_body(value[1:-1]) + b'"'
    return re.escape(value.encode())


def _string_body(text: str) -> bytes:
    """Each character literally or as a ``\\uXXXX`` escape (hex digits in either case)."""
    parts = []
    for char in text:
        digits = "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in f"{ord(char):04x}")
        parts.append(b"(?:" + re.escape(char.encode()) + b"|\\\\u" + digits.encode() + b")")
    return b"".join(parts)
