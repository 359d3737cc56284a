"""Planning an offset-ordered apply: positions as JSON, segments per schema version, barrier cuts."""

from __future__ import annotations

from ticdc_lake.apply.offset_plan import (
    VersionRange,
    final_offsets,
    format_offsets,
    parse_offsets,
    plan_segments,
)


def test_offsets_round_trip_as_compact_sorted_json() -> None:
    offsets = {("t-b", 1): 7, ("t-a", 10): 3, ("t-a", 2): 0}
    text = format_offsets(offsets)
    assert text == '{"t-a/2":0,"t-a/10":3,"t-b/1":7}'
    assert parse_offsets(text) == offsets
    assert parse_offsets(None) == {}


def test_one_segment_per_version_each_ending_where_its_rows_end() -> None:
    ranges = [
        VersionRange(5, "t", 0, 10, 19, 6),
        VersionRange(9, "t", 0, 20, 29, 4),
        VersionRange(5, "t", 1, 3, 4, 2),
        VersionRange(9, "t", 1, 8, 8, 1),
    ]
    segments = plan_segments(ranges, {("t", 0): 10, ("t", 1): 3}, {("t", 0): 40, ("t", 1): 12})
    assert not isinstance(segments, str)
    assert [(s.version, s.events, s.after) for s in segments] == [
        (5, 8, {("t", 0): 20, ("t", 1): 5}),
        (9, 5, {("t", 0): 40, ("t", 1): 12}),
    ]


def test_versions_that_interleave_in_a_partition_cannot_be_ordered() -> None:
    ranges = [VersionRange(5, "t", 0, 10, 19, 6), VersionRange(9, "t", 0, 15, 29, 4)]
    reason = plan_segments(ranges, {}, {("t", 0): 30})
    assert reason == (
        "in t/0 rows of schema version 5 (offsets 10..19) and 9 (offsets 15..29) interleave; "
        "per partition versions must only move forward"
    )


def test_a_barrier_ddl_ends_the_window_at_its_copy() -> None:
    ends = {("t", 0): 50, ("t", 1): 20}
    assert final_offsets(ends, {("t", 0): 31}, {("t", 0): 10}) == {("t", 0): 31, ("t", 1): 20}
    assert final_offsets(ends, {("t", 0): 5}, {("t", 0): 10}) == {("t", 0): 10, ("t", 1): 20}
