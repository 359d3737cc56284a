"""``did you mean ...?`` hints for configuration errors (plain difflib)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """``"; did you mean '@hourly'?"`` for the closest of ``choices``, or ``""`` when none is close."""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
