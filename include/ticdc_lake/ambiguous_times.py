"""TIMESTAMP values TiCDC may have sent one daylight-saving shift early (``docs/canonical-values.md``).

TiDB stores a TIMESTAMP as a UTC instant. TiCDC's mounter turns it into wall time in the server's
zone (``cdc/entry/mounter.go``: ``rowcodec.NewDatumMapDecoder(reqCols, m.tz)``), and every
protocol starts from that text. In the hour repeated when daylight saving time ends, two instants
have the same wall time (``America/New_York``: 05:30Z and 06:30Z are both 01:30 on 2024-11-03),
so one of the two occurrences is lost before any encoder runs, and nothing in a message (commit
TS, ``source.ts_ms``, the column type) tells which one a value was:

* the protocols that send the wall time (Simple, Canal-JSON, Open, avro) are read by decode with
  ``fold=0``: a value of the repeated interval is its **first** occurrence, ``[T - shift, T)``
  for a shift at instant ``T``; a second-occurrence value arrives one shift early;
* Debezium turns the wall time back into UTC itself, with Go's ``time.Date``
  (``pkg/sink/codec/debezium/codec.go``: ``t.GoTime(c.config.TimeZone)``), which uses the offset in
  force at the wall time read as UTC: the first occurrence in zones west of UTC (New York:
  ``[T - shift, T)``, second-occurrence values one shift early), the **second** in zones east of
  it (Berlin: ``[T, T + shift)``, first-occurrence values one shift late).

What can be said is which received values are *ambiguous*: those in the interval a protocol maps
both occurrences to. Apply counts them (ledger ``ambiguous_time_values``) and names the columns in
the log, so a reader knows how many may be a shift off.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

#: TiDB's TIMESTAMP range ends in 2038; intervals are listed from the epoch to its end.
FIRST_YEAR, LAST_YEAR = 1970, 2038
_DAY = timedelta(days=1)
_SECOND = timedelta(seconds=1)
_MICROSECOND = timedelta(microseconds=1)


#: How the received UTC instant was made from the wall time: decode's ``fold=0`` or Go's ``time.Date``.
FOLD0, GO = "fold0", "go"


@lru_cache(maxsize=32)
def shifts(zone: str) -> tuple[tuple[datetime, timedelta, timedelta], ...]:
    """The backward shifts of ``zone`` from 1970 to 2038: (instant T, offset before, offset after)."""
    info = ZoneInfo(zone)
    found: list[tuple[datetime, timedelta, timedelta]] = []
    for before, after in _offset_changes(info):
        low, high = before, after  # the offset drops somewhere in (low, high]
        while high - low > _SECOND:
            middle = (low + (high - low) / 2).replace(microsecond=0)
            if _offset(info, middle) == _offset(info, low):
                low = middle
            else:
                high = middle
        found.append((high, _offset(info, low), _offset(info, high)))
    return tuple(found)


@lru_cache(maxsize=64)
def repeated_intervals(zone: str, reading: str = FOLD0) -> tuple[tuple[datetime, datetime], ...]:
    """The UTC intervals ``[start, end)`` that both occurrences of a repeated wall time of ``zone``
    arrive in, for ``reading`` (module docstring); empty for zones without backward shifts (UTC)."""
    found: list[tuple[datetime, datetime]] = []
    for moment, before, after in shifts(zone):
        shift = before - after
        if reading == FOLD0:
            parts = [(moment - shift, moment)]
        else:  # Go: the first occurrence while the wall time read as UTC is before T, else the second
            parts = [(moment - shift, min(moment, moment - before)), (max(moment, moment - after), moment + shift)]
        found.extend((start, end) for start, end in parts if start < end)
    return tuple(found)


def is_ambiguous(utc_text: str, zone: str, reading: str = FOLD0) -> bool:
    """Whether a canonical TIMESTAMP ``YYYY-MM-DDTHH:MM:SS[.f…]Z`` may be a shift off in ``zone``."""
    if len(utc_text) < 20 or not utc_text.endswith("Z") or utc_text[10:11] != "T":
        return False  # zero timestamps are kept as sent, without Z
    moment = datetime.fromisoformat(utc_text[:19]).replace(tzinfo=UTC)
    return any(start <= moment < end for start, end in repeated_intervals(zone, reading))


@lru_cache(maxsize=64)
def text_prefixes(zone: str, reading: str = FOLD0) -> tuple[tuple[int, frozenset[str]], ...]:
    """The ambiguous instants of ``zone`` as prefixes of canonical TIMESTAMP text: (length, prefixes)
    pairs, whole hours as ``YYYY-MM-DDTHH`` (13), else minutes (16) or seconds (19), so a value is
    ambiguous when its first ``length`` characters are in the set (what Spark checks)."""
    groups: dict[int, set[str]] = {}
    for start, end in repeated_intervals(zone, reading):
        for length, step in ((13, timedelta(hours=1)), (16, timedelta(minutes=1)), (19, _SECOND)):
            if _aligned(start, step) and _aligned(end, step):
                groups.setdefault(length, set()).update(_texts(start, end, step, length))
                break
    return tuple((length, frozenset(texts)) for length, texts in sorted(groups.items()))


@lru_cache(maxsize=64)
def instant_buckets(zone: str, reading: str = FOLD0) -> tuple[tuple[int, frozenset[int]], ...]:
    """The ambiguous instants of ``zone`` as buckets of microseconds since the epoch: (step, buckets)
    pairs, with the steps of :func:`text_prefixes` (an hour, a minute, a second), so an instant ``m``
    (a typed TIMESTAMP) is ambiguous when ``floor(m / step)`` is in the set: the same values
    :func:`text_prefixes` finds by their canonical text."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    groups: dict[int, set[int]] = {}
    for start, end in repeated_intervals(zone, reading):
        for step in (timedelta(hours=1), timedelta(minutes=1), _SECOND):
            if _aligned(start, step) and _aligned(end, step):
                groups.setdefault(step // _MICROSECOND, set()).update(
                    range((start - epoch) // step, (end - epoch) // step)
                )
                break
    return tuple((step, frozenset(buckets)) for step, buckets in sorted(groups.items(), reverse=True))


def _texts(start: datetime, end: datetime, step: timedelta, length: int) -> Iterator[str]:
    moment = start
    while moment < end:
        yield moment.strftime("%Y-%m-%dT%H:%M:%S")[:length]
        moment += step


def _aligned(moment: datetime, step: timedelta) -> bool:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) % step == timedelta(0)


def _offset_changes(info: ZoneInfo) -> Iterator[tuple[datetime, datetime]]:
    """Consecutive days (UTC midnight) between which the zone's UTC offset drops."""
    day = datetime(FIRST_YEAR, 1, 1, tzinfo=UTC)
    end = datetime(LAST_YEAR + 1, 1, 1, tzinfo=UTC)
    offset = _offset(info, day)
    while day < end:
        following = day + _DAY
        next_offset = _offset(info, following)
        if next_offset < offset:
            yield day, following
        day, offset = following, next_offset


def _offset(info: ZoneInfo, moment: datetime) -> timedelta:
    offset = moment.astimezone(info).utcoffset()
    assert offset is not None
    return offset
