"""Byte-level text of the Go JSON writers TiCDC's encoders use, beyond :mod:`go_json`.

* numbers: Go ``strconv.FormatFloat`` shortest ``'e'`` form, and the float rules of
  ``encoding/json`` (Open protocol) and of jsoniter 1.1.12 (``stream_float.go``, Debezium): fixed
  notation, switching to ``'e'`` below 1e-6 and from 1e21 (compared in float32 for FLOAT);
  ``encoding/json`` then shortens ``e-07`` to ``e-7``, jsoniter does not;
* strings: jsoniter ``Stream.WriteString`` (no HTML escapes, only ``" \\ \\n \\r \\t`` short,
  other control characters ``\\u00xx``; Debezium) and easyjson ``jwriter.String`` / goccy
  ``go-json`` with its default options (the same plus ``< > &`` and U+2028/U+2029 as
  ``\\uXXXX``, but no ``\\b``/``\\f`` short escapes; Canal-JSON);
* ``strconv.Quote`` of raw bytes (Open protocol binary CHAR/VARCHAR);
* :func:`dumps`: compact JSON from dicts, lists and :class:`Members` in the order built, with a
  chosen string escaper and :class:`RawJson` for pre-formatted numbers.

Floats are never passed to :func:`dumps`: every encoder formats them the Go way first.
"""

from __future__ import annotations

import math
import struct
import unicodedata
from collections.abc import Callable
from decimal import Decimal

from ticdc_sim import go_json

_FLOAT32_1E_6: float = struct.unpack("<f", struct.pack("<f", 1e-6))[0]
_FLOAT32_1E21: float = struct.unpack("<f", struct.pack("<f", 1e21))[0]


class RawJson(str):
    """JSON text written verbatim by :func:`dumps` (a number already formatted the Go way)."""

    __slots__ = ()


class Members(list[tuple[str, object]]):
    """A JSON object as ordered (name, value) pairs; unlike a dict it may repeat a name, as
    TiCDC's streaming writers sometimes do."""


# ------------------------------------------------------------------------------------ numbers
def _float32(value: float) -> float:
    single: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return single


def shortest_digits(value: float, bits: int) -> tuple[str, int]:
    """(digits, exponent) of the shortest decimal that reads back as ``value``: value = 0.d1d2… * 10**exponent."""
    if bits == 64:
        text = repr(abs(value))
    elif bits == 32:
        single = abs(_float32(value))
        text = repr(single)
        for precision in range(1, 10):
            candidate = f"{single:.{precision}g}"
            try:
                round_trips = _float32(float(candidate)) == single
            except OverflowError:  # rounds beyond the largest float32
                round_trips = False
            if round_trips:
                text = candidate
                break
    else:
        raise ValueError(f"bits must be 32 or 64, got {bits}")
    _sign, digits, exponent = Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    return "".join(map(str, digits)), exponent + len(digits)


def format_float_f(value: float, bits: int) -> str:
    """Go ``strconv.FormatFloat(v, 'f', -1, bits)``: shortest round-trip digits, never an exponent."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} has no Go 'f' format TiCDC would send")
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, exponent = shortest_digits(value, bits)
    if exponent <= 0:
        return f"{sign}0.{'0' * -exponent}{digits}"
    if exponent >= len(digits):
        return sign + digits + "0" * (exponent - len(digits))
    return f"{sign}{digits[:exponent]}.{digits[exponent:]}"


def format_float_e(value: float, bits: int) -> str:
    """Go ``strconv.FormatFloat(v, 'e', -1, bits)``: ``d.ddde±XX`` with at least two exponent digits."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} has no Go 'e' format TiCDC would send")
    if value == 0:
        return ("-" if math.copysign(1.0, value) < 0 else "") + "0e+00"
    digits, exponent = shortest_digits(value, bits)
    power = exponent - 1
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    sign = "-" if value < 0 else ""
    return f"{sign}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"


def _exponent_form(value: float, bits: int) -> bool:
    magnitude = abs(_float32(value)) if bits == 32 else abs(value)
    if magnitude == 0:
        return False
    if bits == 32:
        return magnitude < _FLOAT32_1E_6 or magnitude >= _FLOAT32_1E21
    return magnitude < 1e-6 or magnitude >= 1e21


def encoding_json_float(value: float, bits: int) -> str:
    """A float32/float64 as Go ``encoding/json`` writes it (``floatEncoder.encode``)."""
    if not _exponent_form(value, bits):
        return format_float_f(value, bits)
    text = format_float_e(value, bits)
    if len(text) >= 4 and text[-4] == "e" and text[-3] == "-" and text[-2] == "0":
        text = text[:-2] + text[-1]  # e-07 → e-7
    return text


def jsoniter_float(value: float, bits: int) -> str:
    """A float32/float64 as jsoniter 1.1.12 ``WriteFloat32``/``WriteFloat64`` writes it."""
    if not _exponent_form(value, bits):
        return format_float_f(value, bits)
    return format_float_e(value, bits)


# ------------------------------------------------------------------------------------ strings
def _control_escapes() -> dict[int, str]:
    table = {code: f"\\u{code:04x}" for code in range(0x20)}
    table.update({ord('"'): '\\"', ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
    return table


_JSONITER_ESCAPES = _control_escapes()
_EASYJSON_ESCAPES = {
    **_JSONITER_ESCAPES,
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def jsoniter_string(text: str) -> str:
    """A JSON string as jsoniter's ``Stream.WriteString`` writes it (TiCDC ``util.JSONWriter``)."""
    return '"' + text.translate(_JSONITER_ESCAPES) + '"'


def easyjson_string(text: str) -> str:
    """A JSON string as easyjson ``jwriter.String`` (and goccy ``json.Marshal``) write it."""
    return '"' + text.translate(_EASYJSON_ESCAPES) + '"'


def encoding_json_string(text: str) -> str:
    """A JSON string as Go ``encoding/json`` writes it (Go 1.22+: ``\\b``/``\\f`` short, HTML-safe)."""
    return go_json.marshal(text).decode("utf-8")


_QUOTE_SHORT = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v"}
_UTF8_LENGTH = [1] * 0xC2 + [2] * (0xE0 - 0xC2) + [3] * 16 + [4] * 5 + [1] * 11


def go_quote_bytes(data: bytes) -> str:
    """Go ``strconv.Quote(string(data))`` without the outer quotes.

    Valid UTF-8 runes that Go deems printable stay literal; ``"`` and ``\\`` get a backslash;
    ``\\a \\b \\f \\n \\r \\t \\v`` are short escapes; other bytes below 0x20, 0x7F and bytes that are
    not valid UTF-8 become ``\\xNN``; other non-printable runes ``\\uNNNN``/``\\UNNNNNNNN``.
    Printability follows Python's ``unicodedata`` (letters, marks, numbers, punctuation, symbols
    and the ASCII space), which matches Go's ``unicode.IsPrint`` up to the Unicode version.
    """
    out: list[str] = []
    i, size = 0, len(data)
    while i < size:
        lead = data[i]
        width = _UTF8_LENGTH[lead]
        rune: str | None = None
        if width == 1 and lead < 0x80:
            rune = chr(lead)
        elif width > 1:
            try:
                decoded = data[i : i + width].decode("utf-8")
            except UnicodeDecodeError:
                decoded = ""
            rune = decoded if len(decoded) == 1 else None
        if rune is None:
            out.append(f"\\x{lead:02x}")
            i += 1
            continue
        out.append(_quote_rune(rune))
        i += len(rune.encode("utf-8"))
    return "".join(out)


def _quote_rune(rune: str) -> str:
    code = ord(rune)
    if rune in ('"', "\\"):
        return "\\" + rune
    if rune == " " or (code >= 0x21 and unicodedata.category(rune)[0] in "LMNPS"):
        return rune
    if code in _QUOTE_SHORT:
        return _QUOTE_SHORT[code]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


# ------------------------------------------------------------------------------------ documents
def dumps(document: object, string: Callable[[str], str]) -> str:
    """Compact JSON of ``document`` (dict, :class:`Members`, list, str, int, bool, None, :class:`RawJson`).

    Strings (names and values) are written with ``string``; objects keep their insertion order.
    """
    if document is None:
        return "null"
    if document is True:
        return "true"
    if document is False:
        return "false"
    if isinstance(document, RawJson):
        return str(document)
    if isinstance(document, str):
        return string(document)
    if isinstance(document, int):
        return str(document)
    if isinstance(document, Members):
        return "{" + ",".join(string(name) + ":" + dumps(value, string) for name, value in document) + "}"
    if isinstance(document, dict):
        return "{" + ",".join(string(name) + ":" + dumps(value, string) for name, value in document.items()) + "}"
    if isinstance(document, list | tuple):
        return "[" + ",".join(dumps(item, string) for item in document) + "]"
    raise TypeError(f"cannot write {type(document).__name__} {document!r} as Go JSON (format floats first)")
