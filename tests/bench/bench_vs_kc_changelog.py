"""Current rows by key from the Iceberg Kafka Connect sink's changelog, and row-set differences.

The Apache sink (1.12.0) appends: every change becomes one row, the row image (the old image for a
DELETE) plus ``_cdc.op`` (``I``/``U``/``D``) and ``_cdc.offset`` (the Kafka offset). A table's
changes come from one partition (TiCDC dispatches by table), so the offset is the change order:
per key the row of the highest offset wins, and a ``D`` removes the key. A Kafka offset seen twice
is an at-least-once redelivery and must carry the same row; two different rows at one offset mean
the table was fed from more than one partition, which this reduction cannot order.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ChangelogRow:
    key: Hashable
    op: str
    offset: int
    values: tuple[Any, ...]


class ChangelogError(ValueError):
    pass


def current_rows(table: str, rows: Iterable[ChangelogRow]) -> dict[Hashable, tuple[Any, ...]]:
    """Key -> values of the rows a changelog leaves, by the rule above."""
    by_offset: dict[int, ChangelogRow] = {}
    for row in rows:
        if row.op not in ("I", "U", "D"):
            raise ChangelogError(f"{table}: offset {row.offset} has _cdc.op {row.op!r}, not I, U or D")
        seen = by_offset.setdefault(row.offset, row)
        if seen != row:
            raise ChangelogError(
                f"{table}: two different changes at Kafka offset {row.offset} ({seen} and {row}); "
                "the table's changes come from more than one partition, so offsets do not order them"
            )
    state: dict[Hashable, tuple[Any, ...]] = {}
    for offset in sorted(by_offset):
        row = by_offset[offset]
        if row.op == "D":
            state.pop(row.key, None)
        else:
            state[row.key] = row.values
    return state


def differences(
    left_name: str,
    left: Mapping[Hashable, tuple[Any, ...]],
    right_name: str,
    right: Mapping[Hashable, tuple[Any, ...]],
    limit: int = 5,
) -> list[str]:
    """The first ``limit`` keys whose rows differ (missing on one side, or other values), sorted."""
    out: list[str] = []
    keys = left.keys() | right.keys()
    try:
        ordered = sorted(keys)  # type: ignore[type-var]
    except TypeError:  # keys of mixed types
        ordered = sorted(keys, key=repr)
    for key in ordered:
        a, b = left.get(key), right.get(key)
        if a == b:
            continue
        if len(out) == limit:
            out.append("...")
            break
        if a is None:
            out.append(f"key {key!r}: only in {right_name} {b!r}")
        elif b is None:
            out.append(f"key {key!r}: only in {left_name} {a!r}")
        else:
            out.append(f"key {key!r}: {left_name} {a!r} != {right_name} {b!r}")
    return out
