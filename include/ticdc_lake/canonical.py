"""The canonical text of a column value, per MySQL type (``docs/canonical-values.md``).

Every protocol decoder turns the values it reads into these texts, so that row images compare
and apply the same way whatever protocol carried them. The helpers are protocol-free: each takes
the text (or number) a protocol sent, checks it and returns the canonical text. A value that does
not fit its type raises :class:`ValueError` with a short reason; the decoder wraps it in a
:class:`ticdc_lake.errors.DecodeError` that adds the protocol, the column and the table.

The checks are cheap string tests (no regular expressions): they run once per value.
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

ZERO_DATE = "0000-00-00"
ZERO_DATETIME = "0000-00-00 00:00:00"
MAX_UNSIGNED_BIGINT = (1 << 64) - 1

#: Width in bits of each MySQL integer type.
INTEGER_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
#: YEAR holds 0 (the zero year) or 1901..2155.
YEAR_BOUNDS = (0, 2155)
_MAX_TIME_HOURS = 838
_MAX_INT_DIGITS = 20


def integer_bounds(mysql_type: str, unsigned: bool) -> tuple[int, int]:
    """Smallest and largest value of an integer type (``tinyint`` .. ``bigint``)."""
    bits = INTEGER_BITS.get(mysql_type)
    if bits is None:
        raise ValueError(f"{mysql_type!r} is not a MySQL integer type ({', '.join(INTEGER_BITS)})")
    if unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def bit_bounds(length: int | None) -> tuple[int, int]:
    """Bounds of BIT(length); an unknown or out-of-range length allows all 64 bits."""
    bits = length if length is not None and 1 <= length <= 64 else 64
    return 0, (1 << bits) - 1


def parse_integer(text: str, low: int, high: int) -> int:
    """Parse base-10 integer text exactly (never through a float) and check ``low <= v <= high``.

    Only ASCII digits with an optional leading ``-`` are accepted: no ``+``, spaces, underscores
    or other Unicode digits, which Python's ``int()`` would otherwise take.
    """
    digits = text[1:] if text[:1] == "-" else text
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"{text!r} is not a base-10 integer")
    if len(digits) > _MAX_INT_DIGITS:
        raise ValueError(f"{text} is outside the range {low}..{high}")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"{text} is outside the range {low}..{high}")
    return value


def integer_text(text: str, low: int, high: int) -> str:
    """Canonical integer text: validated, without leading zeros (``"007"`` → ``"7"``)."""
    value = parse_integer(text, low, high)
    if (text[0] == "0" and len(text) > 1) or text[:2] == "-0":
        return str(value)
    return text


def float_text(text: str) -> str:
    """FLOAT/DOUBLE: the text as sent, once it is known to parse as a finite number."""
    if not text or not text.isascii() or "_" in text or text[0] <= " " or text[-1] <= " ":
        raise ValueError(f"{text!r} is not a floating-point number")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a floating-point number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite floating-point number")
    return text


def decimal_text(text: str) -> str:
    """DECIMAL: the exact text as sent (``"1.500"``, ``"-0.10"``), checked to be ``-?D+(.D+)?``."""
    body = text[1:] if text[:1] == "-" else text
    whole, dot, fraction = body.partition(".")
    if not (whole.isascii() and whole.isdigit()) or (dot and not (fraction.isascii() and fraction.isdigit())):
        raise ValueError(f"{text!r} is not a decimal number")
    return text


def base64_text(text: str) -> str:
    """Binary strings: standard base64 with padding, validated strictly.

    The canonical text is the standard encoding of the bytes. A text whose unused padding bits
    are not zero (``"QR=="`` for the byte ``A``) decodes to the same bytes as ``"QQ=="`` and is
    returned in that standard form; every other text is returned as sent.
    """
    try:
        raw = binascii.a2b_base64(text, strict_mode=True)
    except ValueError as exc:
        raise ValueError(f"{_short(text)!r} is not standard padded base64 ({exc})") from None
    if text.endswith("="):
        tail = raw[len(raw) - len(raw) % 3 :]
        standard = binascii.b2a_base64(tail, newline=False).decode("ascii")
        if not text.endswith(standard):
            return text[:-4] + standard
    return text


def is_zero_date(text: str) -> bool:
    """True for MySQL's zero date/datetime: ``0000-00-00``, ``0000-00-00 00:00:00[.000…]``."""
    if text == ZERO_DATE:
        return True
    if not text.startswith(ZERO_DATETIME):
        return False
    rest = text[len(ZERO_DATETIME) :]
    return rest == "" or (rest[0] == "." and 2 <= len(rest) <= 7 and rest.count("0") == len(rest) - 1)


def date_text(text: str) -> str:
    """DATE ``YYYY-MM-DD`` as sent. Zero parts (``0000-00-00``, ``2020-00-00``) are allowed,
    as MySQL allows them outside strict SQL modes; the calendar itself is not checked."""
    if len(text) != 10 or not text.isascii() or not _date_ok(text):
        raise ValueError(f"{_short(text)!r} is not a DATE value YYYY-MM-DD")
    return text


def datetime_text(text: str) -> str:
    """DATETIME ``YYYY-MM-DD HH:MM:SS[.f…]`` (1 to 6 fraction digits) as sent.

    Like DATE, zero parts are allowed and the calendar is not checked.
    """
    if _datetime_shape_ok(text):
        try:
            datetime.fromisoformat(text[:19])
        except ValueError:
            if _datetime_fields_ok(text):  # zero dates, zero parts, invalid days: rare
                return text
        else:
            if _fraction_ok(text[19:]):
                return text
    raise ValueError(f"{_short(text)!r} is not a DATETIME value YYYY-MM-DD HH:MM:SS[.ffffff]")


def time_text(text: str) -> str:
    """TIME ``[-]HH:MM:SS[.f…]`` as sent; hours may exceed 24, up to 838."""
    body = text[1:] if text[:1] == "-" else text
    hours, _, rest = body.partition(":")
    ok = (
        body.isascii()
        and 2 <= len(hours) <= 3
        and hours.isdigit()
        and int(hours) <= _MAX_TIME_HOURS
        and len(rest) >= 5
        and rest[2] == ":"
        and _two_digits_at_most(rest, 0, "59")
        and _two_digits_at_most(rest, 3, "59")
        and _fraction_ok(rest[5:])
    )
    if not ok:
        raise ValueError(f"{_short(text)!r} is not a TIME value [-]HH:MM:SS[.ffffff] (hours up to 838)")
    return text


@lru_cache(maxsize=256)
def zone_info(name: str) -> ZoneInfo:
    """The IANA time zone called ``name`` (cached)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{name!r} is not a known IANA time zone") from None


def timestamp_utc_text(local: str, zone: ZoneInfo) -> str:
    """TIMESTAMP: local wall time in ``zone`` → ``YYYY-MM-DDTHH:MM:SS[.f…]Z`` in UTC.

    The fraction digits are kept exactly as sent (zone offsets are whole seconds). A wall time
    that occurs twice (the hour repeated when daylight saving time ends) is read with
    ``fold=0``, i.e. as its first occurrence; a wall time skipped when daylight saving time
    starts is read with the offset in force before the change. A zero timestamp
    (``0000-00-00 00:00:00``) is returned as sent, without a zone.
    """
    if not (_datetime_shape_ok(local) and _fraction_ok(local[19:])):
        raise ValueError(f"{_short(local)!r} is not a TIMESTAMP value YYYY-MM-DD HH:MM:SS[.ffffff]")
    try:
        # Exactly 19 characters in this shape: fromisoformat cannot see a zone or a fraction.
        utc = datetime.fromisoformat(local[:19]).replace(tzinfo=zone).astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        if is_zero_date(local):
            return local
        raise ValueError(f"{local!r} is not a valid time in {zone.key} ({exc})") from None
    return utc.replace(tzinfo=None).isoformat() + local[19:] + "Z"


def enum_name(index: int, elements: Sequence[str] | None) -> str:
    """ENUM: the member at 1-based ``index``; 0 (MySQL's invalid value) → ``""``."""
    if index == 0:
        return ""
    if elements is None:
        raise ValueError(f"ENUM index {index} cannot be named: the column schema lists no members")
    if index > len(elements):
        raise ValueError(f"ENUM index {index} is beyond the {len(elements)} members {_members(elements)}")
    return elements[index - 1]


def set_names(bitmask: int, elements: Sequence[str] | None) -> str:
    """SET: the members whose bit is set, in definition order, joined by ``,`` (0 → ``""``)."""
    if bitmask == 0:
        return ""
    if elements is None:
        raise ValueError(f"SET bitmask {bitmask} cannot be named: the column schema lists no members")
    if bitmask >> len(elements):
        raise ValueError(f"SET bitmask {bitmask} has bits beyond the {len(elements)} members {_members(elements)}")
    return ",".join(name for bit, name in enumerate(elements) if bitmask >> bit & 1)


def _date_ok(text: str) -> bool:
    return (
        text[4] == "-"
        and text[7] == "-"
        and text[0:4].isdigit()
        and _two_digits_at_most(text, 5, "12")
        and _two_digits_at_most(text, 8, "31")
    )


def _datetime_shape_ok(text: str) -> bool:
    """Separators in place, 19 characters or 21 to 26 with a fraction, ASCII only."""
    size = len(text)
    return (
        (size == 19 or (21 <= size <= 26 and text[19] == "."))
        and text[4] == "-"
        and text[7] == "-"
        and text[10] == " "
        and text[13] == ":"
        and text[16] == ":"
        and text.isascii()
    )


def _datetime_fields_ok(text: str) -> bool:
    return (
        _date_ok(text)
        and _two_digits_at_most(text, 11, "23")
        and _two_digits_at_most(text, 14, "59")
        and _two_digits_at_most(text, 17, "59")
        and _fraction_ok(text[19:])
    )


def _two_digits_at_most(text: str, start: int, highest: str) -> bool:
    """Two ASCII digits at ``start`` no greater than ``highest`` (compared as text)."""
    part = text[start : start + 2]
    return len(part) == 2 and part.isdigit() and part <= highest


def _fraction_ok(rest: str) -> bool:
    return rest == "" or (rest[0] == "." and 2 <= len(rest) <= 7 and rest[1:].isdigit())


def _members(elements: Sequence[str]) -> str:
    return "(" + ", ".join(repr(e) for e in elements) + ")"


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
