"""The simulated wall clock and TSO allocator (no real time is ever read)."""

from __future__ import annotations

from datetime import datetime, timedelta

from ticdc_lake import tso


class SimClock:
    """A UTC clock that only moves when told to, and hands out strictly increasing TiDB TSOs.

    A TSO is ``physical ms << 18 | logical``; several TSOs allocated within the same simulated
    millisecond get increasing logical parts, like TiDB's PD.
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("SimClock needs a timezone-aware start datetime")
        self._now = start
        self._last_tso = 0

    @property
    def now(self) -> datetime:
        return self._now

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch (what TiCDC writes as ``buildTs``)."""
        return tso.physical_ms(tso.from_datetime(self._now))

    def advance(self, delta: timedelta) -> None:
        if delta < timedelta(0):
            raise ValueError(f"the simulated clock cannot go back (delta {delta})")
        self._now += delta

    def next_tso(self) -> int:
        """A TSO for the current simulated time, greater than every TSO handed out before."""
        candidate = tso.from_datetime(self._now)
        if candidate <= self._last_tso:
            candidate = self._last_tso + 1
        self._last_tso = candidate
        return candidate

    @property
    def last_tso(self) -> int:
        """The latest TSO handed out (0 before the first)."""
        return self._last_tso
