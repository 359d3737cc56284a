"""Which received TIMESTAMP values TiCDC may have sent one daylight-saving shift off.

The Go readings were checked against Go's ``time.Date`` (what TiCDC's Debezium encoder calls):
2024-11-03 01:30 in America/New_York -> 05:30Z (first occurrence), 2024-10-27 02:30 in
Europe/Berlin -> 01:30Z (second), 2024-04-07 01:45 in Australia/Lord_Howe -> 15:15Z (second).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ticdc_lake.ambiguous_times import (
    FOLD0,
    GO,
    instant_buckets,
    is_ambiguous,
    repeated_intervals,
    shifts,
    text_prefixes,
)


def _utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def _in_2024(zone: str, reading: str) -> list[tuple[datetime, datetime]]:
    return [i for i in repeated_intervals(zone, reading) if i[0].year == 2024]


def test_new_york_fall_back_is_read_as_the_first_occurrence_by_both_readings() -> None:
    assert [s for s in shifts("America/New_York") if s[0].year == 2024] == [
        (_utc(2024, 11, 3, 6), timedelta(hours=-4), timedelta(hours=-5))
    ]
    for reading in (FOLD0, GO):
        assert _in_2024("America/New_York", reading) == [(_utc(2024, 11, 3, 5), _utc(2024, 11, 3, 6))]
    # The value: upstream 06:30Z (the second 01:30) arrives as 05:30Z.
    assert is_ambiguous("2024-11-03T05:30:00Z", "America/New_York", GO)
    assert not is_ambiguous("2024-11-03T06:30:00Z", "America/New_York", GO)
    assert is_ambiguous("2024-11-03T05:59:59.999999Z", "America/New_York")
    assert not is_ambiguous("2024-11-03T04:59:59.9Z", "America/New_York")


def test_east_of_utc_go_picks_the_second_occurrence() -> None:
    assert _in_2024("Europe/Berlin", FOLD0) == [(_utc(2024, 10, 27, 0), _utc(2024, 10, 27, 1))]
    assert _in_2024("Europe/Berlin", GO) == [(_utc(2024, 10, 27, 1), _utc(2024, 10, 27, 2))]
    assert _in_2024("Australia/Lord_Howe", GO) == [(_utc(2024, 4, 6, 15), _utc(2024, 4, 6, 15, 30))]
    assert is_ambiguous("2024-04-06T15:15:00Z", "Australia/Lord_Howe", GO)


@pytest.mark.parametrize("zone", ["UTC", "Asia/Tokyo"])
def test_zones_without_backward_shifts_have_nothing_ambiguous(zone: str) -> None:
    assert repeated_intervals(zone, FOLD0) == repeated_intervals(zone, GO) == ()
    assert text_prefixes(zone) == ()


def test_zero_timestamps_and_the_spring_gap_are_not_ambiguous() -> None:
    assert not is_ambiguous("0000-00-00 00:00:00", "America/New_York")
    assert not is_ambiguous("2024-03-10T07:30:00Z", "America/New_York")  # 03:30 EDT, after the gap


def test_text_prefixes_cover_exactly_the_intervals() -> None:
    ((length, hours),) = text_prefixes("America/New_York")
    assert length == 13
    assert "2024-11-03T05" in hours
    assert "2024-11-03T06" not in hours
    assert len(hours) == len(repeated_intervals("America/New_York"))
    ((length, minutes),) = text_prefixes("Australia/Lord_Howe", GO)
    assert length == 16
    assert {m for m in minutes if m.startswith("2024-")} == {f"2024-04-06T15:{m:02d}" for m in range(30)}


@pytest.mark.parametrize(
    ("zone", "reading"), [("America/New_York", FOLD0), ("Europe/Berlin", GO), ("Australia/Lord_Howe", GO)]
)
def test_instant_buckets_are_the_text_prefixes_as_instants(zone: str, reading: str) -> None:
    """A typed instant is ambiguous by ``instant_buckets`` exactly when its canonical text is by
    ``text_prefixes``: every bucket is a prefix's instant, and instants around each interval's ends
    agree with ``is_ambiguous``."""
    epoch = _utc(1970, 1, 1)
    prefixes = text_prefixes(zone, reading)
    buckets = instant_buckets(zone, reading)
    as_text = {
        (epoch + timedelta(microseconds=step * b)).strftime("%Y-%m-%dT%H:%M:%S")[:length]
        for (step, found), (length, _) in zip(buckets, prefixes, strict=True)
        for b in found
    }
    assert as_text == {p for _, texts in prefixes for p in texts}

    def bucketed(moment: datetime) -> bool:
        micros = (moment - epoch) // timedelta(microseconds=1)
        return any(micros // step in found for step, found in buckets)

    for start, end in repeated_intervals(zone, reading):
        for moment in (start - timedelta(microseconds=1), start, end - timedelta(microseconds=1), end):
            text = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            assert bucketed(moment) == is_ambiguous(text, zone, reading), text
