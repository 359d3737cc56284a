"""Simple JSON column values → canonical text, a whole Arrow column at a time.

The vector twins of ``ticdc_lake.protocols.simple_rows.converter_for``: the same dispatch on the
column's MySQL type, the same bounds and texts, computed with ``pyarrow.compute`` over whole arrays.
A twin says, row by row, whether it vouches for its text (``ok``); a row it does not vouch for goes
to the Python decoder, which stays the specification. ``ok`` is never True where the scalar
converter raises or writes another text; it may be False where the scalar would accept (the row
then only costs the Python path): integers, ENUM and SET indexes are taken only in their canonical
form (no leading zero, no ``-0``), base64 only with zero padding bits, a TIMESTAMP only where its
wall time exists exactly once or is the earlier of two (never in a skipped hour), never the zero
TIMESTAMP. Types the scalar converter does not support, and SET with more than
:data:`MAX_SET_MEMBERS` members, get no reader at all.

Every non-null value of Simple JSON is a JSON string, but TIMESTAMP's ``{"location","value"}``
object (read as a struct of two strings).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.canonical import INTEGER_BITS, YEAR_BOUNDS, bit_bounds, integer_bounds, zone_info
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.schema.type_mapping import is_binary_type
from ticdc_lake.spark.arrow_decode.debezium_columns import Canonical, ColumnReader

#: SET columns with more members than this have no twin (the bitmask must fit a signed 64-bit integer).
MAX_SET_MEMBERS = 62
_STRING = pa.string()
_NULL_TEXT = pa.scalar(None, _STRING)
#: The TIMESTAMP object ``{"location": .., "value": ..}``, members in the order TiCDC writes them.
TIMESTAMP_TYPE = pa.struct([pa.field("location", _STRING), pa.field("value", _STRING)])
_TEXT_TYPES = frozenset(
    {"char", "varchar", "var_string", "tinytext", "text", "mediumtext", "longtext", "json", "vector"}
)
#: Locations that mean "the TiCDC server's zone" (``simple_rows._SERVER_ZONE_NAMES``).
_SERVER_ZONE_NAMES = ("", "Local")

#: Integer text in canonical form: what ``integer_text`` returns unchanged (bounds checked apart).
_CANONICAL_INTEGER = r"^(?:0|-?[1-9][0-9]{0,19})$"
#: Canonical unsigned integer text below 9 * 10**18 (within int64).
_CANONICAL_UNSIGNED = r"^(?:0|[1-9][0-9]{0,17}|[1-8][0-9]{18})$"
#: Standard padded base64 whose unused padding bits are zero: what ``base64_text`` returns unchanged.
_BASE64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$"
#: What ``float_text`` accepts, but a leading ``+``, ``.5``, ``5.`` (parsed, finiteness checked apart).
_FLOAT = r"^-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$"
DECIMAL_PATTERN = r"^-?[0-9]+(?:\.[0-9]+)?$"
DATE_PATTERN = r"[0-9]{4}-(?:0[0-9]|1[0-2])-(?:[0-2][0-9]|3[01])"
_FRACTION = r"(?:\.[0-9]{1,6})?"
DATETIME_PATTERN = r"^" + DATE_PATTERN + r" (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]" + _FRACTION + "$"
#: Hours 00..99 or 100..838.
TIME_PATTERN = r"^-?(?:[0-9]{2}|[0-7][0-9]{2}|8[0-2][0-9]|83[0-8]):[0-5][0-9]:[0-5][0-9]" + _FRACTION + "$"
#: A TIMESTAMP wall time of Python's calendar range, read to the second apart from its fraction.
_WALL_TIME = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}" + _FRACTION + "$"
_WALL_FORMAT = "%Y-%m-%d %H:%M:%S"
#: UTC seconds of the first and last second Python's ``datetime`` holds (years 1..9999).
_FIRST_SECOND = pa.scalar(-62135596800, pa.int64()).cast(pa.timestamp("s"))
_LAST_SECOND = pa.scalar(253402300799, pa.int64()).cast(pa.timestamp("s"))
#: 2038-01-01 00:00:00: a zone's wall times from here on go to Python (``timestamp_twin``).
_RULES_END = pa.scalar(2145916800, pa.int64()).cast(pa.timestamp("s"))


def column_reader(column: ColumnSchema, server_time_zone: str) -> ColumnReader | None:
    """The twin of ``converter_for(column, server_time_zone)``; None where the type has none (the
    table version's rows then decode in Python)."""
    mysql_type = column.mysql_type
    if mysql_type in INTEGER_BITS:
        return ColumnReader(_STRING, integer_twin(*integer_bounds(mysql_type, column.unsigned)))
    if mysql_type == "year":
        return ColumnReader(_STRING, integer_twin(*YEAR_BOUNDS))
    if mysql_type == "bit":
        return ColumnReader(_STRING, integer_twin(*bit_bounds(column.length)))
    if is_binary_type(mysql_type):
        return ColumnReader(_STRING, matching_twin(_BASE64))
    if mysql_type in _TEXT_TYPES:
        return ColumnReader(_STRING, text_twin)
    if mysql_type in ("float", "double"):
        return ColumnReader(_STRING, float_twin)
    if mysql_type in ("decimal", "numeric"):
        return ColumnReader(_STRING, matching_twin(DECIMAL_PATTERN))
    if mysql_type == "date":
        return ColumnReader(_STRING, matching_twin("^" + DATE_PATTERN + "$"))
    if mysql_type == "datetime":
        return ColumnReader(_STRING, matching_twin(DATETIME_PATTERN))
    if mysql_type == "time":
        return ColumnReader(_STRING, time_twin)
    if mysql_type == "timestamp":
        return ColumnReader(TIMESTAMP_TYPE, timestamp_twin(server_time_zone))
    if mysql_type == "enum":
        return ColumnReader(_STRING, enum_twin(column.elements or ()))
    if mysql_type == "set" and len(column.elements or ()) <= MAX_SET_MEMBERS:
        return ColumnReader(_STRING, set_twin(column.elements or ()))
    return None


def integer_twin(low: int, high: int) -> Canonical:
    """``integer_text`` of a canonical integer text: bounds compared as digit strings (exact at any size)."""
    highest, lowest = str(high), str(-low) if low < 0 else None

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = typed(values, _STRING)
        negative = pc.starts_with(values, "-")
        digits = pc.if_else(negative, pc.utf8_slice_codeunits(values, 1), values)
        below = _at_most(digits, highest)
        above = _at_most(digits, lowest) if lowest is not None else pa.repeat(pa.scalar(False), len(values))
        valid = pc.and_(pc.match_substring_regex(values, _CANONICAL_INTEGER), pc.if_else(negative, above, below))
        return finish(values, valid, values)

    return canonical


def _at_most(digits: pa.Array, bound: str) -> pa.Array:
    """Per row: the digit string (no leading zero) is a number at most ``bound``."""
    length = pc.utf8_length(digits)
    shorter = pc.less(length, len(bound))
    same = pc.and_(pc.equal(length, len(bound)), pc.less_equal(digits, bound))
    return pc.or_(shorter, same)


def text_twin(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    values = typed(values, _STRING)
    return finish(values, None, values)


def matching_twin(pattern: str) -> Canonical:
    """Values returned as sent where they match ``pattern`` (the scalar's exact accepted set)."""

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = typed(values, _STRING)
        return finish(values, pc.match_substring_regex(values, pattern), values)

    return canonical


def float_twin(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``float_text``: the text as sent where it reads as a finite double."""
    values = typed(values, _STRING)
    shaped = pc.match_substring_regex(values, _FLOAT)
    doubles = pc.if_else(shaped, values, "0").cast(pa.float64())
    return finish(values, pc.and_(shaped, pc.is_finite(doubles)), values)


def time_twin(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``time_text``: ``[-]HH:MM:SS[.f…]`` as sent, hours up to 838."""
    values = typed(values, _STRING)
    return finish(values, pc.match_substring_regex(values, TIME_PATTERN), values)


def enum_twin(members: Sequence[str]) -> Canonical:
    """``enum_name``: a canonical index 0..len(members) named (0: the empty text)."""
    names = pa.array(["", *members], _STRING)

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = typed(values, _STRING)
        index = _canonical_unsigned(values)
        valid = pc.and_(pc.greater_equal(index, 0), pc.less_equal(index, len(members)))
        return finish(values, valid, names.take(pc.if_else(valid, index, 0)))

    return canonical


def set_twin(members: Sequence[str]) -> Canonical:
    """``set_names``: a canonical bitmask below 2**len(members), its members joined by ``,``."""
    limit = 1 << len(members)

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        values = typed(values, _STRING)
        mask = _canonical_unsigned(values)
        valid = pc.and_(pc.greater_equal(mask, 0), pc.less(mask, limit))
        if not members:
            return finish(values, valid, pa.repeat(pa.scalar(""), len(values)))
        # ",name" for each member whose bit is set, joined, then the first comma cut.
        named = [
            pc.if_else(pc.not_equal(pc.bit_wise_and(mask, 1 << bit), 0), "," + name, "")
            for bit, name in enumerate(members)
        ]
        joined = named[0] if len(named) == 1 else pc.binary_join_element_wise(*named, "")
        return finish(values, valid, pc.utf8_slice_codeunits(joined, 1))

    return canonical


def _canonical_unsigned(values: pa.Array) -> pa.Array:
    """The value as int64 where it is a canonical unsigned integer below 9 * 10**18; else -1."""
    shaped = pc.match_substring_regex(values, _CANONICAL_UNSIGNED).fill_null(False)
    return pc.if_else(shaped, values, "-1").cast(pa.int64())


def timestamp_twin(server_time_zone: str) -> Canonical:
    """``timestamp_utc_text``: the wall time read in the object's zone, written ``YYYY-MM-DDTHH:MM:SS[.f…]Z``
    in UTC; a wall time the zone skips, or that would leave years 1..9999, goes to Python."""

    def canonical(values: pa.Array) -> tuple[pa.Array, pa.Array]:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        count = len(values)
        valid = values.is_valid()
        if not pc.any(valid).as_py():
            return pa.nulls(count, _STRING), pa.repeat(pa.scalar(True), count)
        locations = values.field("location")
        locations = pc.if_else(pc.is_in(locations, pa.array(_SERVER_ZONE_NAMES)), server_time_zone, locations)
        local = values.field("value")
        shaped = pc.and_(valid, pc.match_substring_regex(local, _WALL_TIME)).fill_null(False)
        head = pc.utf8_slice_codeunits(local, 0, 19)
        wall = pc.strptime(pc.if_else(shaped, head, _NULL_TEXT), format=_WALL_FORMAT, unit="s", error_is_null=True)
        shaped = pc.and_(shaped, pc.equal(wall.cast(_STRING), head)).fill_null(False)  # a real date and time
        texts = pa.nulls(count, _STRING)
        taken = pa.repeat(pa.scalar(False), count)
        encoded = pc.dictionary_encode(locations)
        for code, name in enumerate(encoded.dictionary.to_pylist()):
            rows = pc.and_(shaped, pc.equal(encoded.indices, code)).fill_null(False)
            if name is None or not pc.any(rows).as_py() or not _known_zone(name):
                continue
            try:
                utc = pc.assume_timezone(wall, timezone=name, ambiguous="earliest", nonexistent="earliest")
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
            naive = utc.cast(pa.timestamp("s"))
            # Not in a skipped hour, years 1..9999 in UTC; in a zone with rules, before 2038 (Arrow's
            # time zone database ignores the daylight saving rules that Python applies after 2037).
            exact = pc.and_(pc.equal(pc.local_timestamp(utc), wall), _between(naive))
            if name != "UTC":
                exact = pc.and_(exact, pc.less(wall, _RULES_END))
            rows = pc.and_(rows, exact.fill_null(False))
            iso = pc.utf8_replace_slice(naive.cast(_STRING), start=10, stop=11, replacement="T")
            text = pc.binary_join_element_wise(iso, pc.utf8_slice_codeunits(local, 19), "Z", "")
            texts = pc.if_else(rows, text, texts)
            taken = pc.or_(taken, rows)
        return texts, pc.or_(pc.invert(valid), taken)

    return canonical


def _known_zone(name: str) -> bool:
    try:
        zone_info(name)
    except ValueError:
        return False
    return True


def _between(utc: pa.Array) -> pa.Array:
    return pc.and_(pc.greater_equal(utc, _FIRST_SECOND), pc.less_equal(utc, _LAST_SECOND))


def typed(values: pa.Array | pa.ChunkedArray, arrow_type: pa.DataType) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values if values.type == arrow_type else values.cast(arrow_type)


def finish(values: pa.Array, valid: pa.Array | None, texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(texts, ok): ok True for nulls and valid values; the text null wherever ok is False or the value null."""
    present = values.is_valid()
    if valid is None:
        if texts is not values:
            texts = pc.if_else(present, texts, _NULL_TEXT)
        return texts, pa.repeat(pa.scalar(True), len(values))
    taken = pc.and_(present, valid.fill_null(False))
    return pc.if_else(taken, texts, _NULL_TEXT), pc.or_(pc.invert(present), taken)
