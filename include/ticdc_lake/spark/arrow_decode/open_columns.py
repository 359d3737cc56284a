"""Open Protocol column values → canonical text, a whole Arrow column at a time.

The vector twins of ``ticdc_lake.protocols.open_values.canonical_value`` (and, for ENUM/SET, of the
naming ``schema_facts`` does when a row binds to a schema): the same dispatch on the type code and
flags, the same bounds, the same texts, computed with ``pyarrow.compute`` and numpy over whole
arrays. A twin says, row by row, whether it vouches for its text (``ok``); a row it does not vouch
for goes to the Python decoder, which stays the specification. ``ok`` is never True where the
scalar converter raises or writes another text; it may be False where the scalar would accept.

The twins read the ``"v"`` member as ``pyarrow.json`` reads it under :attr:`ColumnReader.arrow_type`
(``int64``/``uint64`` integers, ``float64`` FLOAT/DOUBLE, strings): the caller compares the JSON
text of what was read with the message byte for byte (``open_batch``), so the value the twin sees is
the one the Python decoder parses. FLOAT/DOUBLE rely on that: the text a double is written with is
the text sent, which ``float_text`` keeps (a JSON integer, kept by ``str``, reads the same but for
``-0``, which is never taken).

Where a twin declines what the scalar takes: integers are exact; binary CHAR/VARCHAR (Go-quoted
bytes) only with the escapes ``strconv.Quote`` writes (``\\xNN``, ``\\uNNNN``, the one-letter ones;
not ``\\U`` or octal); BLOB types only as standard base64 with zero padding bits; TEXT types the
same, decoding to UTF-8; TIMESTAMP as Simple JSON's twin takes it (not the zero TIMESTAMP, not a
wall time the zone skips, not from 2038 on in a zone with rules); DATE, TIME, DATETIME, DECIMAL,
JSON and VECTOR texts exactly as their checks accept them. Types without a twin (the reader is
None; the group's rows go to Python): the unsupported and unknown codes, ENUM/SET columns the bound
schema cannot name (no members, or a SET of more than ``simple_columns.MAX_SET_MEMBERS``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.canonical import INTEGER_BITS, YEAR_BOUNDS, bit_bounds, integer_bounds
from ticdc_lake.protocols.open_values import (
    BASE64_CODES,
    ENUM_SET_CODES,
    FLAG_BINARY,
    FLAG_UNSIGNED,
    QUOTED_STRING_CODES,
    column_type_text,
)
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.spark.arrow_decode import simple_columns
from ticdc_lake.spark.arrow_decode.debezium_columns import Canonical, ColumnReader
from ticdc_lake.spark.arrow_decode.row_batches import utf8_texts

_STRING = pa.string()
_NULL_TEXT = pa.scalar(None, _STRING)
#: Standard padded base64 whose unused padding bits are zero: what ``base64_text`` returns unchanged.
_BASE64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$"
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_SEXTETS = np.zeros(256, dtype=np.uint32)
_SEXTETS[np.frombuffer(_ALPHABET, dtype=np.uint8)] = np.arange(64, dtype=np.uint32)
_LETTERS = np.frombuffer(_ALPHABET, dtype=np.uint8)
_BACKSLASH, _QUOTE_BYTE, _NEWLINE = ord("\\"), ord('"'), ord("\n")
#: Byte after a backslash -> the byte its escape stands for (``go_unquote``'s simple escapes), else -1.
_SIMPLE_BYTES = np.full(256, -1, dtype=np.int64)
for _letter, _byte in {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}.items():
    _SIMPLE_BYTES[ord(_letter)] = _byte
#: Hex digit byte -> its value, else -1.
_HEX_VALUES = np.full(256, -1, dtype=np.int64)
for _digit in "0123456789abcdefABCDEF":
    _HEX_VALUES[ord(_digit)] = int(_digit, 16)
_PAD = ord("=")
#: ENUM indexes the Python decoder names (``schema_facts._ENUM_INDEX_MAX``).
_ENUM_INDEX_MAX = (1 << 16) - 1
#: Codes whose text ``simple_columns`` checks as Simple JSON does: the same canonical functions.
_SIMPLE_TYPES = {10: "date", 14: "date", 11: "time", 12: "datetime", 246: "decimal", 245: "json", 225: "json"}


def column_reader(code: int, flags: int, column: ColumnSchema | None, server_time_zone: str) -> ColumnReader | None:
    """The twin of ``canonical_value(code, flags, v, zone)`` for a column of type ``code`` with
    ``flags``; ``column`` is the bound schema's column (ENUM/SET members). None: no twin."""
    try:
        base = column_type_text(code, flags).removesuffix(" unsigned")
    except ValueError:
        return None
    unsigned = bool(flags & FLAG_UNSIGNED)
    if base in INTEGER_BITS:
        low, high = integer_bounds(base, unsigned)
        return ColumnReader(pa.uint64() if unsigned else pa.int64(), _integers(low, high))
    if code == 13:
        return ColumnReader(pa.int64(), _integers(*YEAR_BOUNDS))
    if code == 16:
        return ColumnReader(pa.uint64(), _integers(*bit_bounds(None)))
    if code in ENUM_SET_CODES:
        return _members(column, server_time_zone)
    if code in (4, 5):
        return ColumnReader(pa.float64(), _float)
    if code in QUOTED_STRING_CODES:
        return ColumnReader(_STRING, _quoted_bytes if flags & FLAG_BINARY else _text)
    if code in BASE64_CODES:
        return ColumnReader(_STRING, _base64_binary if flags & FLAG_BINARY else _base64_text)
    if code == 7:
        return ColumnReader(_STRING, _timestamp(server_time_zone))
    mysql_type = _SIMPLE_TYPES.get(code)
    if mysql_type is None:
        return None
    reader = simple_columns.column_reader(ColumnSchema("v", mysql_type), server_time_zone)
    return None if reader is None else ColumnReader(_STRING, reader.canonical)


def _integers(low: int, high: int) -> Canonical:
    """``_integer``: the number as ``str`` writes it, within ``low..high``."""

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = _combined(values)
        inside = pc.and_(
            pc.greater_equal(values, pa.scalar(low, values.type)), pc.less_equal(values, pa.scalar(high, values.type))
        )
        return _finish(values, inside, values.cast(_STRING))

    return canonical


def _float(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``float_text`` of the text a double is written with (the text sent, checked by the caller);
    ``-0`` (a JSON integer the Python decoder writes ``0``) is never vouched for."""
    values = _combined(values)
    texts = values.cast(_STRING)
    return _finish(values, pc.and_(pc.is_finite(values), pc.not_equal(texts, "-0")), texts)


def _text(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    values = _combined(values)
    return _finish(values, None, values)


def _quoted_bytes(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Binary CHAR/VARCHAR: ``go_unquote`` of the text, written in base64 (the escapes ``\\xNN``,
    ``\\uNNNN`` and ``\\a \\b \\f \\n \\r \\t \\v \\\\ \\"`` undone; a text with any other escape, a lone
    backslash, or an unescaped quote or newline is not vouched for)."""
    values = _combined(values)
    raw, ok = go_unquoted(values.fill_null(""))
    return _finish(values, ok, base64_encoded(raw))


def go_unquoted(values: pa.StringArray) -> tuple[pa.BinaryArray, pa.Array]:
    """The bytes of each text (no nulls) as ``open_values.go_unquote`` gives them, for the escapes
    ``strconv.Quote`` writes for bytes, and per text whether it had only those (empty bytes where not)."""
    values = pa.concat_arrays([values]) if values.offset else values
    count = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[: count + 1].astype(np.int64)
    data = values.buffers()[2]
    raw = (
        np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]].copy()
        if data is not None
        else np.zeros(0, np.uint8)
    )
    starts, ends = offsets[:-1] - offsets[0], offsets[1:] - offsets[0]
    owner = np.repeat(np.arange(count), ends - starts)
    bad = np.zeros(count, dtype=bool)
    keep = np.ones(len(raw), dtype=bool)
    literal = np.ones(len(raw), dtype=bool)  # not part of an escape
    slash = raw == _BACKSLASH
    if slash.any():
        # An escape starts at every other backslash of a run of them (``\\\\`` is one escape).
        first = np.zeros(len(raw), dtype=bool)
        first[starts[starts < ends]] = True
        previous = np.concatenate(([False], slash[:-1]))
        run_start = slash & (~previous | first)
        run_begin = np.flatnonzero(run_start)
        run_id = np.cumsum(run_start)
        position = np.arange(len(raw))
        escape = np.flatnonzero(slash & ((position - run_begin[np.maximum(run_id - 1, 0)]) % 2 == 0))
        end = ends[owner[escape]]
        last = len(raw) - 1
        has_letter = escape + 1 < end
        letter = np.where(has_letter, raw[np.minimum(escape + 1, last)], 0)
        simple = np.where(has_letter, _SIMPLE_BYTES[letter], -1)
        digits = _HEX_VALUES[raw[np.minimum(escape[:, None] + np.arange(2, 6), last)]]
        hexed = (letter == ord("x")) & (escape + 3 < end) & (digits[:, :2] >= 0).all(axis=1)
        rune = (digits * np.array([4096, 256, 16, 1])).sum(axis=1)
        runed = (letter == ord("u")) & (escape + 5 < end) & (digits >= 0).all(axis=1)
        runed &= (rune < 0xD800) | (rune > 0xDFFF)
        good = (simple >= 0) | hexed | runed
        bad[owner[escape[~good]]] = True
        keep_escape = good
        escape, simple, hexed, runed, rune = (a[keep_escape] for a in (escape, simple, hexed, runed, rune))
        byte = digits[keep_escape, 0] * 16 + digits[keep_escape, 1]
        raw[escape] = np.where(hexed, byte, simple).astype(np.uint8)
        # \uNNNN: the rune's UTF-8 bytes (1 to 3) over the escape's first characters.
        size = np.where(rune < 0x80, 1, np.where(rune < 0x800, 2, 3))
        utf8 = np.stack(
            [
                np.where(size == 1, rune, np.where(size == 2, 0xC0 | rune >> 6, 0xE0 | rune >> 12)),
                np.where(size == 2, 0x80 | rune & 0x3F, 0x80 | (rune >> 6) & 0x3F),
                0x80 | rune & 0x3F,
            ],
            axis=1,
        ).astype(np.uint8)
        for n in range(3):
            wrote = runed & (size > n)
            raw[escape[wrote] + n] = utf8[wrote, n]
        width = np.where(hexed, 4, np.where(runed, 6, 2))  # characters of the escape
        kept = np.where(runed, size, 1)  # bytes it stands for, at its start
        for extra in range(1, 6):
            dropped = (extra < width) & (extra >= kept)
            keep[escape[dropped] + extra] = False
            literal[escape[extra < width] + extra] = False
        literal[escape] = False
    bad[owner[literal & ((raw == _QUOTE_BYTE) | (raw == _NEWLINE))]] = True
    keep &= ~bad[owner]
    lengths = np.bincount(owner[keep], minlength=count)
    out_offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    body = raw[keep]
    unquoted = pa.Array.from_buffers(
        pa.binary(), count, [None, pa.py_buffer(out_offsets.tobytes()), pa.py_buffer(body.tobytes())]
    )
    return unquoted, pa.array(~bad)


def _base64_binary(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """BLOB types: ``base64_text`` returns standard base64 with zero padding bits unchanged."""
    values = _combined(values)
    return _finish(values, pc.match_substring_regex(values, _BASE64), values)


def _base64_text(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """TEXT types: the standard base64 decoded, where its bytes are UTF-8 (Python's strict codec)."""
    values = _combined(values)
    shaped = pc.match_substring_regex(values, _BASE64).fill_null(False)
    decoded = utf8_texts(base64_decoded(pc.if_else(shaped, values, "")))
    return _finish(values, pc.and_(shaped, decoded.is_valid()), decoded)


def base64_decoded(values: pa.Array) -> pa.BinaryArray:
    """The bytes of each text, every one standard padded base64 (no nulls): since every length is a
    multiple of 4, the texts' bytes decode as one run of 4-character groups."""
    values = pa.concat_arrays([values]) if values.offset else values  # offsets from 0
    count = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[: count + 1].astype(np.int64)
    data = values.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]] if data is not None else np.zeros(0, np.uint8)
    groups = _SEXTETS[raw].reshape(-1, 4)
    words = groups[:, 0] << 18 | groups[:, 1] << 12 | groups[:, 2] << 6 | groups[:, 3]
    decoded = np.empty((len(groups), 3), dtype=np.uint8)
    decoded[:, 0] = words >> 16
    decoded[:, 1] = words >> 8
    decoded[:, 2] = words
    starts, stops = offsets[:-1] - offsets[0], offsets[1:] - offsets[0]
    present = stops > starts
    last = np.where(present, stops - 1, 0)
    pads = np.where(present, (raw[last] == _PAD).astype(np.int64) if len(raw) else 0, 0)
    pads += np.where(present, (raw[np.maximum(last - 1, 0)] == _PAD).astype(np.int64) if len(raw) else 0, 0)
    keep = np.ones(decoded.size, dtype=bool)
    ends = stops // 4 * 3
    keep[(ends - 1)[pads >= 1]] = False
    keep[(ends - 2)[pads >= 2]] = False
    lengths = (stops - starts) // 4 * 3 - pads
    out_offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    body = decoded.reshape(-1)[keep]
    return pa.Array.from_buffers(
        pa.binary(), count, [None, pa.py_buffer(out_offsets.tobytes()), pa.py_buffer(body.tobytes())]
    )


def base64_encoded(values: pa.Array) -> pa.StringArray:
    """Standard padded base64 of each value's bytes (no nulls), all values at once."""
    values = pa.concat_arrays([values]) if values.offset else values  # offsets from 0
    count = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[: count + 1].astype(np.int64)
    lengths = np.diff(offsets)
    data = values.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]] if data is not None else np.zeros(0, np.uint8)
    padded = -(-lengths // 3) * 3
    starts = np.concatenate(([0], np.cumsum(padded)))
    # Each value's bytes moved to its run of whole 3-byte groups (the missing bytes zero).
    octets = np.zeros(int(starts[-1]), dtype=np.uint32)
    owner = np.repeat(np.arange(count), lengths)
    octets[starts[owner] + np.arange(len(raw)) - (offsets[owner] - offsets[0])] = raw
    groups = octets.reshape(-1, 3)
    words = groups[:, 0] << 16 | groups[:, 1] << 8 | groups[:, 2]
    chars = np.empty((len(groups), 4), dtype=np.uint8)
    for n in range(4):
        chars[:, n] = _LETTERS[(words >> (18 - 6 * n)) & 63]
    text = chars.reshape(-1)
    out_offsets = starts // 3 * 4
    missing = padded - lengths
    text[(out_offsets[1:] - 1)[missing >= 1]] = _PAD
    text[(out_offsets[1:] - 2)[missing >= 2]] = _PAD
    return pa.Array.from_buffers(
        _STRING, count, [None, pa.py_buffer(out_offsets.astype(np.int32).tobytes()), pa.py_buffer(text.tobytes())]
    )


def _timestamp(server_time_zone: str) -> Canonical:
    """``timestamp_utc_text(v, server zone)``: Simple JSON's twin of a TIMESTAMP sent in the server zone."""
    reader = simple_columns.column_reader(ColumnSchema("v", "timestamp"), server_time_zone)
    assert reader is not None

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = _combined(values)
        objects = pa.StructArray.from_arrays(
            [pa.repeat(pa.scalar(""), len(values)), values.fill_null("")],
            names=["location", "value"],
            mask=values.is_null(),
        )
        return reader.canonical(objects)

    return canonical


def _members(column: ColumnSchema | None, server_time_zone: str) -> ColumnReader | None:
    """ENUM index / SET bitmask named as ``schema_facts._named`` names them: by the bound column's
    members, as an ENUM where that column is one, as a SET otherwise."""
    if column is None or column.elements is None:
        return None
    kind = "enum" if column.mysql_type == "enum" else "set"
    if kind == "enum" and len(column.elements) > _ENUM_INDEX_MAX:
        return None
    reader = simple_columns.column_reader(ColumnSchema("v", kind, elements=column.elements), server_time_zone)
    if reader is None:
        return None
    named = reader.canonical

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        return named(_combined(values).cast(_STRING))

    return ColumnReader(pa.uint64(), canonical)


def _combined(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _finish(values: pa.Array, valid: pa.Array | None, texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(texts, ok): ok True for nulls and valid values; the text null wherever ok is False or the value null."""
    present = values.is_valid()
    if valid is None:
        return pc.if_else(present, texts, _NULL_TEXT), pa.repeat(pa.scalar(True), len(values))
    taken = pc.and_(present, valid.fill_null(False))
    return pc.if_else(taken, texts, _NULL_TEXT), pc.or_(pc.invert(present), taken)
