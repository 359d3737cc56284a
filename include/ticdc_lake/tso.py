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


#: The largest logical counter: the last TSO of a millisecond.
MAX_LOGICAL = (1 << LOGICAL_BITS) - 1
#: What :func:`parse_tso_or_time` accepts, for error messages and ``--help``.
TSO_OR_TIME_FORMS = (
    "a TSO (an unsigned 64-bit integer, e.g. 470614435430400000) or an ISO 8601 time "
    "(e.g. 2026-11-21T09:00:00Z, 2026-11-21T17:00:00+08:00; a time without a zone is UTC)"
)


def parse_tso_or_time(text: str, logical: int = 0) -> int:
    """A TSO given as an integer, or the TSO of an ISO 8601 time with ``logical`` as its counter.

    A time without a zone is read as UTC, the zone every TSO is shown in. Raises ValueError
    naming the accepted forms.
    """
    value = text.strip()
    if value.isdigit():
        return parse(value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{text!r} is not a TSO or a time; give {TSO_OR_TIME_FORMS}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if moment.timestamp() < 0:
        raise ValueError(f"{text!r} is before 1970-01-01T00:00:00Z, the earliest TSO")
    return from_datetime(moment, logical)
