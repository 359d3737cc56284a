"""Sound byte pre-filters for JSON messages: may this JSON text hold the member ``"name": value``?

The decode stage's schema pass reads only the messages a decoder's ``may_carry_schema`` lets
through, so a pre-filter may say yes to a message without schema facts (it costs time) but never
no to one with them (the rows of its batch would bind to the wrong schema). TiCDC writes compact
JSON, but a relay that re-serializes messages may write any valid JSON: whitespace around the
``:`` (``"isDdl": true``) and any character of a string escaped as ``\\uXXXX``. :func:`has_member`
tolerates both and still answers most row messages with one substring search.
"""

from __future__ import annotations

import re
from functools import cache

#: JSON's whitespace (RFC 8259): space, tab, line feed, carriage return.
_WHITESPACE = b" \t\n\r"
_COLON = ord(":")


def has_member(text: bytes, name: str, values: tuple[str, ...] | None = None) -> bool:
    """False only if ``text`` cannot be JSON holding an object member ``name`` whose value is one
    of ``values`` (JSON tokens as TiCDC writes them: ``true``, ``2``, ``"CREATE"``; None: any value).

    Over-approximates: the name may match inside a string or a nested object. Without any ``\\u``
    in ``text`` every string is written literally, so a search for the quoted name and a look past
    the whitespace after it decide; otherwise a pattern that allows each character of the name and
    of string values to be escaped does.
    """
    if b"\\" in text and b"\\u" in text:  # one byte first: memchr, ten times faster on a 4 KB message
        return _pattern(name, values).search(text) is not None
    quoted, tokens = _literals(name, values)
    at = text.find(quoted)
    while at >= 0:
        end = _skip_whitespace(text, at + len(quoted))
        if (
            end < len(text)
            and text[end] == _COLON
            and (tokens is None or text.startswith(tokens, _skip_whitespace(text, end + 1)))
        ):
            return True
        at = text.find(quoted, at + 1)
    return False


@cache
def _literals(name: str, values: tuple[str, ...] | None) -> tuple[bytes, tuple[bytes, ...] | None]:
    """The quoted name and the value tokens as bytes (built once per pair, not per message)."""
    return b'"' + name.encode() + b'"', None if values is None else tuple(v.encode() for v in values)


def _skip_whitespace(text: bytes, at: int) -> int:
    while at < len(text) and text[at] in _WHITESPACE:
        at += 1
    return at


@cache
def _pattern(name: str, values: tuple[str, ...] | None) -> re.Pattern[bytes]:
    member = b'"' + _string_body(name) + b'"[ \\t\\n\\r]*:'
    if values is None:
        return re.compile(member)
    alternatives = b"|".join(_token(value) for value in values)
    return re.compile(member + b"[ \\t\\n\\r]*(?:" + alternatives + b")")


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
