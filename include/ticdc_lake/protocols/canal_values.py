"""Column types and values of TiCDC's Canal-JSON protocol (``docs/protocols.md``, "Canal-JSON").

Every non-null value is a JSON string (``canalEntryBuilder.formatValue``); what it means comes
from the column's ``mysqlType`` text, which is either the bare TiDB type name (``int unsigned``,
``varbinary``, ``enum``) or, with the changefeed's ``content-compatible=true``, the full column
type (``int(11)``, ``decimal(10,2) unsigned``, ``enum('a','b')``, TiDB ``GetTypeDesc``).

:func:`parse_mysql_type` reads that text; :func:`canonical_value` turns one value into its
canonical text (``docs/canonical-values.md``).
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass
from typing import Final
from zoneinfo import ZoneInfo

from ticdc_lake.canonical import (
    INTEGER_BITS,
    YEAR_BOUNDS,
    bit_bounds,
    date_text,
    datetime_text,
    decimal_text,
    enum_name,
    float_text,
    integer_bounds,
    integer_text,
    parse_integer,
    set_names,
    time_text,
    timestamp_utc_text,
)

#: Largest ENUM index (65535 members) and SET bitmask (64 members).
_MAX_ENUM_INDEX: Final = (1 << 16) - 1
_MAX_SET_BITMASK: Final = (1 << 64) - 1
#: Text types whose value is the string itself.
_TEXT_TYPES: Final = frozenset(
    {"char", "varchar", "var_string", "text", "tinytext", "mediumtext", "longtext", "json", "vector"}
)
_OTHER_TYPES: Final = frozenset(
    {"float", "double", "decimal", "date", "datetime", "timestamp", "time", "year", "bit", "enum", "set"}
)
_SUFFIXES: Final = frozenset({"unsigned", "zerofill"})
#: ``format.OutputFormat`` escapes of TiDB (used for ENUM/SET members in ``GetTypeDesc``).
_MEMBER_ESCAPES: Final = {"0": "\0", "n": "\n", "r": "\r"}


@dataclass(frozen=True, slots=True)
class ColumnType:
    """One parsed ``mysqlType`` text."""

    #: The text as sent (kept in ``ChangeEvent.column_types``).
    text: str
    #: Lower-case type name without arguments or suffixes: ``int``, ``varbinary``, ``enum``.
    base: str
    unsigned: bool = False
    #: First numeric argument (length, precision, fsp, BIT width), content-compatible only.
    length: int | None = None
    #: Second numeric argument (DECIMAL scale), content-compatible only.
    scale: int | None = None
    #: ENUM/SET members, content-compatible only; ``None`` when the text is the bare name.
    members: tuple[str, ...] | None = None

    @property
    def binary(self) -> bool:
        """Binary string type: decided by the type name (``binary``/``blob``), never the charset."""
        return "binary" in self.base or "blob" in self.base

    @property
    def enum_or_set(self) -> bool:
        return self.base in ("enum", "set")


def parse_mysql_type(text: str) -> ColumnType:
    """Parse ``int unsigned``, ``varchar(20)``, ``decimal(10,2) unsigned zerofill``, ``enum('a','b')``.

    Raises ValueError for an unknown or unsupported type, or text that is not in TiDB's format.
    """
    open_at = text.find("(")
    if open_at < 0:
        words = text.split(" ")
        base, rest, args = words[0].lower(), words[1:], ""
    else:
        base = text[:open_at].lower()
        close_at = _closing_parenthesis(text, open_at)
        args = text[open_at + 1 : close_at]
        tail = text[close_at + 1 :]
        if tail and not tail.startswith(" "):
            raise ValueError(f"unexpected {tail!r} after the type arguments in {text!r}")
        rest = tail.split(" ")[1:] if tail else []
    if any(word not in _SUFFIXES for word in rest) or len(set(rest)) != len(rest):
        raise ValueError(f"unexpected words {' '.join(rest)!r} in type {text!r} (only unsigned, zerofill)")
    _check_known(base, text)
    if base in ("enum", "set"):
        members = _members(args, text) if open_at >= 0 else None
        return ColumnType(text, base, "unsigned" in rest, members=members)
    length, scale = _numbers(args, text) if open_at >= 0 else (None, None)
    return ColumnType(text, base, "unsigned" in rest, length, scale)


def canonical_value(column_type: ColumnType, value: object, zone: ZoneInfo) -> str:
    """The canonical text of one non-null Canal-JSON value.

    ENUM/SET values are the index / bitmask text; they are named when the type lists members and
    otherwise returned as canonical integer text (the caller records them as unresolved). Binary
    strings are latin-1 text (one character per byte) and become base64. TIMESTAMP is wall time in
    ``zone``. Raises ValueError with the reason when the value does not fit its type.
    """
    if not isinstance(value, str):
        raise ValueError(f"expected a JSON string, got {describe(value)}")
    base = column_type.base
    if base in INTEGER_BITS:
        return integer_text(value, *integer_bounds(base, column_type.unsigned))
    if column_type.binary:
        try:
            raw = value.encode("latin-1")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"binary value has character {value[exc.start]!r} at position {exc.start}, beyond U+00FF: "
                "TiCDC writes binary strings as ISO-8859-1, one character per byte"
            ) from None
        return binascii.b2a_base64(raw, newline=False).decode("ascii")
    if base in _TEXT_TYPES:
        return value
    if base == "enum":
        index = parse_integer(value, 0, _MAX_ENUM_INDEX)
        return str(index) if column_type.members is None else enum_name(index, column_type.members)
    if base == "set":
        bitmask = parse_integer(value, 0, _MAX_SET_BITMASK)
        return str(bitmask) if column_type.members is None else set_names(bitmask, column_type.members)
    if base == "bit":
        return integer_text(value, *bit_bounds(column_type.length))
    if base == "year":
        return integer_text(value, *YEAR_BOUNDS)
    if base in ("float", "double"):
        return float_text(value)
    if base == "timestamp":
        return timestamp_utc_text(value, zone)
    checks = {"decimal": decimal_text, "date": date_text, "datetime": datetime_text, "time": time_text}
    return checks[base](value)


def _check_known(base: str, text: str) -> None:
    if base in INTEGER_BITS or base in _TEXT_TYPES or base in _OTHER_TYPES:
        return
    if "binary" in base or "blob" in base:
        return
    if base == "geometry":
        raise ValueError(
            "type 'geometry' is not supported by the decoder; exclude the table from the pipeline "
            "(target.exclude) or ask for the type to be supported"
        )
    raise ValueError(
        f"unknown MySQL type {text!r}: not a type name TiCDC sends (docs/type-mapping.md lists them); "
        "exclude the table from the pipeline (target.exclude) or ask for the type to be supported"
    )


def _closing_parenthesis(text: str, open_at: int) -> int:
    """Index of the ``)`` closing the argument list, skipping quoted ENUM/SET members."""
    quoted = False
    i = open_at + 1
    while i < len(text):
        char = text[i]
        if char == "'":
            quoted = not quoted  # '' inside a member toggles twice: no net change
        elif char == ")" and not quoted:
            return i
        i += 1
    raise ValueError(f"unbalanced parenthesis or quote in type {text!r}")


def _numbers(args: str, text: str) -> tuple[int | None, int | None]:
    parts = args.split(",")
    if len(parts) > 2 or not all(p.isascii() and p.isdigit() for p in parts):
        raise ValueError(f"type arguments {args!r} of {text!r} are not one or two integers")
    return int(parts[0]), (int(parts[1]) if len(parts) == 2 else None)


def _members(args: str, text: str) -> tuple[str, ...]:
    """ENUM/SET members from ``'a','b''c'`` (``''`` is a quote; ``\\0 \\n \\r`` as TiDB escapes them).

    TiDB does not escape a backslash, so a member holding a backslash followed by ``0``, ``n``
    or ``r`` cannot be told from one holding that control character; it is read as the latter.
    """
    members: list[str] = []
    i, size = 0, len(args)
    while True:
        if i >= size or args[i] != "'":
            raise ValueError(f"ENUM/SET members in {text!r} must be quoted: 'a','b'")
        i += 1
        member: list[str] = []
        while True:
            if i >= size:
                raise ValueError(f"unterminated ENUM/SET member in {text!r}")
            char = args[i]
            if char == "'":
                if args[i + 1 : i + 2] == "'":
                    member.append("'")
                    i += 2
                    continue
                i += 1
                break
            if char == "\\" and args[i + 1 : i + 2] in _MEMBER_ESCAPES:
                member.append(_MEMBER_ESCAPES[args[i + 1]])
                i += 2
                continue
            member.append(char)
            i += 1
        members.append("".join(member))
        if i == size:
            return tuple(members)
        if args[i] != ",":
            raise ValueError(f"expected ',' between ENUM/SET members in {text!r}")
        i += 1


def describe(value: object) -> str:
    """A short description of a parsed JSON value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return 'string "' + (value if len(value) <= 40 else value[:40] + "…") + '"'
    if isinstance(value, list):
        return "an array"
    return "an object"
