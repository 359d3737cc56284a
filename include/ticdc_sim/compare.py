"""Compare an Iceberg table's rows with the reference model's expected rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]


def _frozen(row: Row, columns: Sequence[str]) -> tuple[tuple[str, Any], ...]:
    return tuple((c, row.get(c)) for c in columns)


def table_differences(expected: Sequence[Row], actual: Sequence[Row], limit: int = 10) -> list[str]:
    """Human-readable differences between two row multisets (empty when equal).

    Columns are those of the expected rows; an actual row with other columns differs.
    """
    columns = sorted({c for row in expected for c in row} | {c for row in actual for c in row})
    want = Counter(_frozen(r, columns) for r in expected)
    have = Counter(_frozen(r, columns) for r in actual)
    problems: list[str] = []
    if len(expected) != len(actual):
        problems.append(f"expected {len(expected)} row(s), found {len(actual)}")
    for row, count in (want - have).items():
        problems.append(f"missing {count}x: {dict(row)}")
    for row, count in (have - want).items():
        problems.append(f"unexpected {count}x: {dict(row)}")
    return problems[: limit + 1]
