"""What several protocols share: TiDB DDL action types and Go's float text.

Helpers used by more than one protocol module live here, so no decoder imports another
protocol's module for them. (The Simple protocol's value converters, shared by its JSON and Avro
encodings, are in ``simple_rows``.)
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal

_FLOAT64_BITS = 64

#: TiDB DDL action type (``meta/model`` ``ActionType``) → DDL type, the same mapping TiCDC's
#: Simple protocol uses (``pkg/sink/codec/simple/message.go``, ``getDDLType``). Every other
#: action (create/drop schema, views, sequences, placement, create tables, …) is ``QUERY``.
DDL_ACTIONS: dict[int, str] = {
    3: "CREATE",  # create table
    14: "RENAME",  # rename table
    47: "RENAME",  # rename tables
    7: "CINDEX",  # add index
    9: "CINDEX",  # add foreign key
    32: "CINDEX",  # add primary key
    8: "DINDEX",  # drop index
    10: "DINDEX",  # drop foreign key
    33: "DINDEX",  # drop primary key
    4: "ERASE",  # drop table
    11: "TRUNCATE",  # truncate table
    5: "ALTER",  # add column
    6: "ALTER",  # drop column
    12: "ALTER",  # modify column
    13: "ALTER",  # rebase auto id
    15: "ALTER",  # set default value
    17: "ALTER",  # modify table comment
    18: "ALTER",  # rename index
    19: "ALTER",  # add partition
    20: "ALTER",  # drop partition
    22: "ALTER",  # modify table charset and collate
    23: "ALTER",  # truncate partition
    41: "ALTER",  # alter index visibility
    61: "ALTER",  # multi-schema change
    64: "ALTER",  # reorganize partition
    71: "ALTER",  # alter table partition by
    72: "ALTER",  # remove partitioning
}


def ddl_type_for(action: int) -> str:
    """The DDL type (CREATE, ALTER, …, QUERY) of a TiDB DDL action type number."""
    return DDL_ACTIONS.get(action, "QUERY")


def go_float_text(value: float, bits: int) -> str:
    """Go's ``strconv.FormatFloat(value, 'f', -1, bits)``: the shortest digits that read back
    as the same float32/float64, in fixed notation (never an exponent)."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number (TiCDC sends 0 for NaN and infinities)")
    digits = Decimal(repr(value)) if bits == _FLOAT64_BITS else _shortest_float32(value)
    text = format(digits, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _shortest_float32(value: float) -> Decimal:
    """The shortest decimal that rounds (to nearest, ties to even) to the float32 ``value``;
    among equally short ones, the closest to it."""
    pattern = struct.unpack("<I", struct.pack("<f", value))[0]
    if pattern & 0x7FFFFFFF == 0:
        return Decimal("-0" if pattern >> 31 else "0")
    magnitude = pattern & 0x7FFFFFFF
    exact = Decimal(_f32(magnitude))
    low = (exact + Decimal(_f32(magnitude - 1))) / 2
    high = (exact + Decimal(_f32(magnitude + 1))) / 2 if magnitude < 0x7F7FFFFF else exact + (exact - low)
    inclusive = magnitude % 2 == 0
    for precision in range(1, 10):
        nearest = Decimal(f"{float(exact):.{precision - 1}e}")
        unit = Decimal(1).scaleb(nearest.adjusted() - precision + 1)
        fits = [
            candidate
            for candidate in (nearest - unit, nearest, nearest + unit)
            if low < candidate < high or (inclusive and candidate in (low, high))
        ]
        if fits:
            best = min(fits, key=lambda candidate: (abs(candidate - exact), candidate != nearest))
            return -best if pattern >> 31 else best
    return -exact if pattern >> 31 else exact  # pragma: no cover - 9 digits always suffice


def _f32(pattern: int) -> float:
    result: float = struct.unpack("<f", struct.pack("<I", pattern))[0]
    return result
