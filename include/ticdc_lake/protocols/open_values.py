"""Column values of the TiCDC Open Protocol (``docs/protocols.md``, "Open Protocol"; type codes:
``docs/type-mapping.md``).

Each column arrives as ``{"t": <MySQL type code>, "h": true?, "f": <flag bits>, "v": <value>}``.
The type code and the flags are all the schema the protocol carries: from them this module names
the MySQL type (``column_type_text``) and turns the value into its canonical text
(``canonical_value``, see ``docs/canonical-values.md``).
"""

from __future__ import annotations

import binascii
from typing import Final
from zoneinfo import ZoneInfo

from ticdc_lake.canonical import (
    INTEGER_BITS,
    MAX_UNSIGNED_BIGINT,
    YEAR_BOUNDS,
    base64_text,
    bit_bounds,
    date_text,
    datetime_text,
    decimal_text,
    float_text,
    integer_bounds,
    time_text,
    timestamp_utc_text,
)
from ticdc_lake.protocols.open_framing import JsonNumberText, describe

#: TiCDC column flag bits (``cdc/model/sink.go``, ``ColumnFlagType``).
FLAG_BINARY: Final = 1
FLAG_HANDLE_KEY: Final = 2
FLAG_GENERATED: Final = 4
FLAG_PRIMARY_KEY: Final = 8
FLAG_UNIQUE_KEY: Final = 16
FLAG_MULTIPLE_KEY: Final = 32
FLAG_NULLABLE: Final = 64
FLAG_UNSIGNED: Final = 128

#: Type code → (type name, type name when the binary flag is set). Codes are MySQL's.
_TYPE_NAMES: Final[dict[int, tuple[str, str]]] = {
    1: ("tinyint", "tinyint"),
    2: ("smallint", "smallint"),
    3: ("int", "int"),
    4: ("float", "float"),
    5: ("double", "double"),
    7: ("timestamp", "timestamp"),
    8: ("bigint", "bigint"),
    9: ("mediumint", "mediumint"),
    10: ("date", "date"),
    11: ("time", "time"),
    12: ("datetime", "datetime"),
    13: ("year", "year"),
    14: ("date", "date"),  # NEWDATE
    15: ("varchar", "varbinary"),
    16: ("bit", "bit"),
    225: ("vector", "vector"),
    245: ("json", "json"),
    246: ("decimal", "decimal"),
    247: ("enum", "enum"),
    248: ("set", "set"),
    249: ("tinytext", "tinyblob"),
    250: ("mediumtext", "mediumblob"),
    251: ("longtext", "longblob"),
    252: ("text", "blob"),
    253: ("var_string", "varbinary"),
    254: ("char", "binary"),
}
#: Codes the protocol can send but the decoder cannot turn into a value.
_UNSUPPORTED_CODES: Final = {6: "NULL", 255: "geometry"}
#: Types that print " unsigned" when flag 128 is set.
_SIGNED_NUMERIC: Final = frozenset({*INTEGER_BITS, "float", "double", "decimal"})
#: CHAR/VARCHAR/VAR_STRING: raw strings, Go-quoted when binary.
QUOTED_STRING_CODES: Final = frozenset({15, 253, 254})
#: TINY/MEDIUM/LONG/plain TEXT and BLOB: base64 whether binary or not.
BASE64_CODES: Final = frozenset({249, 250, 251, 252})
ENUM_SET_CODES: Final = frozenset({247, 248})


def column_type_text(code: int, flags: int) -> str:
    """MySQL type text for a type code and TiCDC flags: ``bigint unsigned``, ``varbinary``, ``text``.

    Raises ValueError for codes the decoder does not know or cannot decode.
    """
    names = _TYPE_NAMES.get(code)
    if names is None:
        if code in _UNSUPPORTED_CODES:
            raise ValueError(
                f"MySQL type code {code} ({_UNSUPPORTED_CODES[code]}) is not supported by the decoder; "
                "exclude the table from the pipeline (target.exclude) or ask for the type to be supported"
            )
        raise ValueError(
            f"unknown MySQL type code {code}: not a code TiCDC sends (docs/type-mapping.md lists them); "
            "exclude the table from the pipeline (target.exclude) or ask for the type to be supported"
        )
    name = names[1] if flags & FLAG_BINARY else names[0]
    if flags & FLAG_UNSIGNED and name in _SIGNED_NUMERIC:
        name += " unsigned"
    return name


def canonical_value(code: int, flags: int, value: object, zone: ZoneInfo) -> str:
    """The canonical text of one non-null Open Protocol value.

    ENUM and SET values come back as their number (index or bitmask): the message has no members.
    TIMESTAMP values are read as wall time in ``zone`` (the TiCDC server's zone). Raises
    ValueError with the reason when the value does not fit its type.
    """
    type_name = column_type_text(code, flags)
    base = type_name.removesuffix(" unsigned")
    if base in INTEGER_BITS:
        return _integer(value, *integer_bounds(base, bool(flags & FLAG_UNSIGNED)))
    if code == 13:
        return _integer(value, *YEAR_BOUNDS)
    if code == 16:
        return _integer(value, *bit_bounds(None))
    if code in ENUM_SET_CODES:
        return _integer(value, 0, MAX_UNSIGNED_BIGINT)
    if code in (4, 5):
        if isinstance(value, JsonNumberText):
            return float_text(str(value))
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)  # Go prints a whole float64 without a fraction: 1.0 → 1
        raise _wrong(value, "a JSON number")
    text = _string(value)
    if code in QUOTED_STRING_CODES:
        if flags & FLAG_BINARY:
            return binascii.b2a_base64(go_unquote(text), newline=False).decode("ascii")
        return text
    if code in BASE64_CODES:
        canonical = base64_text(text)
        if flags & FLAG_BINARY:
            return canonical
        raw = binascii.a2b_base64(canonical)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"the base64 text decodes to bytes that are not UTF-8 ({exc})") from None
    if code == 7:
        return timestamp_utc_text(text, zone)
    return _TEXT_CHECKS[code](text)


def _identity(text: str) -> str:
    return text


_TEXT_CHECKS: Final = {
    10: date_text,
    14: date_text,
    11: time_text,
    12: datetime_text,
    246: decimal_text,
    245: _identity,
    225: _identity,
}


def go_unquote(text: str) -> bytes:
    """The bytes of a Go ``strconv.Quote`` result whose outer quotes were stripped.

    Implements Go's ``strconv.Unquote`` for a double-quoted string, returning bytes: ``\\xNN`` and
    ``\\NNN`` (octal) give one raw byte, ``\\uNNNN``/``\\UNNNNNNNN`` give the rune's UTF-8 bytes,
    ``\\a \\b \\f \\n \\r \\t \\v \\\\ \\"`` give their control byte, and literal characters give
    their UTF-8 bytes. An unescaped ``"``, a newline or any other escape is an error, as in Go.
    """
    if "\\" not in text:
        _check_literal(text, 0)
        return _utf8(text, 0)
    out = bytearray()
    i, size = 0, len(text)
    while i < size:
        char = text[i]
        if char != "\\":
            _check_literal(char, i)
            out += _utf8(char, i)
            i += 1
            continue
        if i + 1 >= size:
            raise ValueError(f"Go-quoted string ends with a lone backslash at character {i}")
        escape = text[i + 1]
        if escape in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[escape])
            i += 2
        elif escape in _HEX_DIGITS:
            digits = _HEX_DIGITS[escape]
            rune = _hex(text[i + 2 : i + 2 + digits], escape, i)
            if escape == "x":
                out.append(rune)
            else:
                if rune > 0x10FFFF or 0xD800 <= rune <= 0xDFFF:
                    raise ValueError(
                        f"escape \\{escape}{text[i + 2 : i + 2 + digits]} at character {i} is not a valid rune"
                    )
                out += chr(rune).encode("utf-8")
            i += 2 + digits
        elif "0" <= escape <= "7":
            octal = text[i + 1 : i + 4]
            if len(octal) != 3 or any(not "0" <= c <= "7" for c in octal) or int(octal, 8) > 255:
                raise ValueError(f"invalid octal escape \\{octal} at character {i} in Go-quoted string")
            out.append(int(octal, 8))
            i += 4
        else:
            raise ValueError(f"invalid escape \\{escape} at character {i} in Go-quoted string")
    return bytes(out)


_SIMPLE_ESCAPES: Final = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}
_HEX_DIGITS: Final = {"x": 2, "u": 4, "U": 8}


def _hex(digits: str, escape: str, at: int) -> int:
    size = _HEX_DIGITS[escape]
    if len(digits) != size or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise ValueError(f"escape \\{escape} at character {at} needs {size} hex digits, got {digits!r}")
    return int(digits, 16)


def _check_literal(text: str, at: int) -> None:
    for offset, char in enumerate(text):
        if char == '"' or char == "\n":
            raise ValueError(f"unescaped {char!r} at character {at + offset} in Go-quoted string")


def _utf8(text: str, at: int) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"lone surrogate at character {at + exc.start} in Go-quoted string") from None


def _integer(value: object, low: int, high: int) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        if not low <= value <= high:
            raise ValueError(f"{value} is outside the range {low}..{high}")
        return str(value)
    raise _wrong(value, "a JSON integer")


def _string(value: object) -> str:
    if isinstance(value, str) and not isinstance(value, JsonNumberText):
        return value
    raise _wrong(value, "a JSON string")


def _wrong(value: object, expected: str) -> ValueError:
    return ValueError(f"expected {expected}, got {describe(value)}")
