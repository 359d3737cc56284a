"""The JSON text an encoder that writes compact JSON gives for Arrow values, a whole column at a time.

The vector decode reads a payload with ``pyarrow.json`` and takes a row only when the text this
module writes for what was read equals the payload bytes as sent (``debezium_batch``). Equal text
means the reader saw every member, in the sent order, no member twice, no other member, numbers
in the one form this module writes (``-0``, ``1.0``, ``1e2`` in an integer column are not), strings
with exactly the escapes TiCDC's JSON writer makes (a ``\u00e9`` or a surrogate pair escape is
not one of them), so the row reads to exactly the document the Python decoder reads.

Supported types: struct, int64, uint64, float64, string, bool and null; :func:`text_type` says which Arrow
type a JSON value of the first row reads as, or None where this module cannot write it.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

Piece: TypeAlias = pa.Array | pa.Scalar
_NULL = pa.scalar("null")
_QUOTE = pa.scalar('"')
#: What jsoniter's ``Stream.WriteString`` (TiCDC's ``util.JSONWriter``) escapes: the quote, the
#: backslash and the control characters (``\n``, ``\r``, ``\t`` short, the others ``\u00xx``);
#: everything else, non-ASCII and ``<>&`` included, is written as it is.
_NEEDS_ESCAPE = r'["\\\x00-\x1f]'
_SHORT_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))
_CONTROL = r"[\x00-\x1f]"


def text_type(value: Any) -> pa.DataType | None:
    """The Arrow type to read a member as, from its value in one row (None: not supported)."""
    if value is None:
        return pa.null()
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, dict):
        fields = []
        for name, member in value.items():
            kind = text_type(member)
            if kind is None or not isinstance(name, str):
                return None
            fields.append(pa.field(name, kind))
        return pa.struct(fields)
    return None


def json_text(values: pa.Array, *, escapes: bool = True) -> pa.Array:
    """The JSON text of each value (a string array without nulls: JSON ``null`` for a null).
    ``escapes`` False: the caller knows no string needs one (no backslash in the texts read)."""
    return _join(_pieces(values, escapes), len(values))


class MemberTexts:
    """The JSON texts of a struct's members, made once, for writing its rows with the members in
    several orders (each a permutation of the struct's field names)."""

    def __init__(self, values: pa.StructArray, *, escapes: bool = True) -> None:
        self.count = len(values)
        self.members = {
            values.type.field(index).name: _pieces(child, escapes) for index, child in enumerate(values.flatten())
        }

    def text(self, order: list[str], rows: pa.Array | None = None) -> pa.Array:
        """The JSON text of each row (of ``rows`` only, in their order, where given) with the members in ``order``."""
        pieces: list[Piece] = [pa.scalar("{")]
        for index, name in enumerate(order):
            pieces.append(pa.scalar(("," if index else "") + f'"{name}":'))
            member = self.members[name]
            pieces.extend(p.take(rows) if rows is not None and isinstance(p, pa.Array) else p for p in member)
        pieces.append(pa.scalar("}"))
        return _join(pieces, self.count if rows is None else len(rows))


def _pieces(values: pa.Array, escapes: bool) -> list[Piece]:
    """The text of ``values`` as pieces to concatenate: constant runs become scalars."""
    kind = values.type
    if pa.types.is_struct(kind):
        if values.null_count:
            return [pc.if_else(values.is_valid(), _join(_struct_pieces(values, escapes), len(values)), _NULL)]
        return _struct_pieces(values, escapes)
    if pa.types.is_null(kind) or values.null_count == len(values):
        return [_NULL]
    if len(values) > 1 and not values.null_count and not pa.types.is_boolean(kind):
        low, high = pc.min_max(values).values()
        if low == high:  # the same value in every row (a TiCDC source field): written once
            return [pa.scalar(_leaf_text(values.slice(0, 1), escapes)[0].as_py())]
    return [_leaf_text(values, escapes)]


def _leaf_text(values: pa.Array, escapes: bool) -> pa.Array:
    kind = values.type
    if pa.types.is_boolean(kind):
        text = pc.if_else(values, pa.scalar("true"), pa.scalar("false"))
    elif pa.types.is_integer(kind) or pa.types.is_floating(kind):
        text = values.cast(pa.string())  # a double as its shortest round-trip text (``1.5``, ``100``, ``1e+16``)
    elif pa.types.is_string(kind):
        text = pc.binary_join_element_wise(_QUOTE, _escaped(values) if escapes else values, _QUOTE, "")
    else:
        raise TypeError(f"json_text: {kind} is not supported")
    return text.fill_null("null") if values.null_count else text


def _escaped(values: pa.Array) -> pa.Array:
    """The strings with jsoniter's escapes; only the strings that need one are rewritten."""
    needs = pc.match_substring_regex(values, _NEEDS_ESCAPE).fill_null(False)
    if not pc.any(needs).as_py():
        return values
    rows = pa.array(np.flatnonzero(needs.to_numpy(zero_copy_only=False)))
    some = values.take(rows)
    for raw, escape in _SHORT_ESCAPES:
        some = pc.replace_substring(some, raw, escape)
    if pc.any(pc.match_substring_regex(some, _CONTROL)).as_py():
        for code in range(0x20):
            some = pc.replace_substring(some, chr(code), f"\\u{code:04x}")
    return pc.replace_with_mask(values, needs, some)


def _struct_pieces(values: pa.StructArray, escapes: bool) -> list[Piece]:
    pieces: list[Piece] = [pa.scalar("{")]
    for index, child in enumerate(values.flatten()):
        name = values.type.field(index).name
        pieces.append(pa.scalar(("," if index else "") + f'"{name}":'))
        pieces.extend(_pieces(child, escapes))
    pieces.append(pa.scalar("}"))
    return pieces


def _join(pieces: list[Piece], count: int) -> pa.Array:
    """Concatenate pieces row by row; adjacent scalars are merged first."""
    merged: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, pa.Scalar) and merged and isinstance(merged[-1], pa.Scalar):
            merged[-1] = pa.scalar(merged[-1].as_py() + piece.as_py())
        else:
            merged.append(piece)
    arrays = [p for p in merged if not isinstance(p, pa.Scalar)]
    if not arrays:
        return pa.repeat(merged[0] if merged else pa.scalar(""), count)
    if len(merged) == 1:
        return arrays[0]
    return pc.binary_join_element_wise(*merged, "")
