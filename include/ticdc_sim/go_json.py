"""JSON bytes exactly as Go's ``encoding/json.Marshal`` writes them (what TiCDC sends).

Callers build dicts in Go struct field order (and sort Go map keys themselves); this module only
reproduces the byte-level details: compact separators, raw UTF-8, ``\\n \\r \\t \\b \\f`` short
escapes, other control characters as ``\\u00XX``, and the HTML-safe escapes Go applies by
default: ``<`` ``>`` ``&`` U+2028 U+2029 become ``\\u003c \\u003e \\u0026 \\u2028 \\u2029``.
"""

from __future__ import annotations

import json
import math
import struct
from decimal import Decimal

_HTML_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def marshal(document: object) -> bytes:
    """``document`` (dicts, lists, str, int, bool, None) as Go's ``json.Marshal`` bytes.

    The HTML escapes are applied to the whole text: ``<``, ``>``, ``&`` and U+2028/9 can only
    occur inside JSON strings, so this equals escaping string contents.
    """
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_HTML_ESCAPES).encode("utf-8")


def format_float(value: float, bits: int) -> str:
    """Go's ``strconv.FormatFloat(v, 'f', -1, bits)``: shortest round-trip digits, never an exponent."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} has no Go 'f' format TiCDC would send (TiDB stores 0 instead)")
    if bits == 64:
        digits = repr(value)
    elif bits == 32:
        digits = _shortest_float32(value)
    else:
        raise ValueError(f"bits must be 32 or 64, got {bits}")
    text = format(Decimal(digits), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _shortest_float32(value: float) -> str:
    single = struct.unpack("<f", struct.pack("<f", value))[0]
    for precision in range(1, 10):
        candidate = f"{single:.{precision}g}"
        try:
            rounded = struct.unpack("<f", struct.pack("<f", float(candidate)))[0]
        except OverflowError:  # e.g. 3.403e+38 next to the largest float32
            continue
        if rounded == single:
            return candidate
    return repr(single)  # pragma: no cover - 9 significant digits always round-trip
