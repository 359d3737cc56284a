"""TiDB TSO (timestamp oracle) helpers.

A TSO is an unsigned 64-bit integer: the physical part is milliseconds since the Unix epoch,
shifted left by 18 bits; the low 18 bits are a logical counter.
"""

from __future__ import annotations

from datetime import UTC, datetime

LOGICAL_BITS = 18
MAX_TSO = (1 << 64) - 1


def physical_ms(tso: int) -> int:
    """Milliseconds since the Unix epoch carried by ``tso``."""
    return tso >> LOGICAL_BITS


def to_datetime(tso: int) -> datetime:
    """The wall-clock time (UTC) of ``tso``."""
    return datetime.fromtimestamp(physical_ms(tso) / 1000, tz=UTC)


def from_datetime(moment: datetime, logical: int = 0) -> int:
    """The TSO for ``moment`` (timezone-aware) with the given logical counter."""
    if moment.tzinfo is None:
        raise ValueError("from_datetime needs a timezone-aware datetime")
    ms = round(moment.timestamp() * 1000)
    return (ms << LOGICAL_BITS) | logical


def parse(text: str | int) -> int:
    """Parse a TSO exactly (never through a float or a signed 64-bit integer)."""
    value = int(text)
    if not 0 <= value <= MAX_TSO:
        raise ValueError(f"TSO {text!r} is outside the unsigned 64-bit range")
    return value
