"""A topic whose every table left it (DROP, RENAME away, DROP DATABASE) stops holding the watermark."""

from __future__ import annotations

from ticdc_lake.apply.topic_retirement import Departure, NameActivity, retired_topics

A, B = ("shop", "a"), ("shop", "b")


def test_dropped_and_renamed_away_tables_retire_their_topics() -> None:
    activity = [NameActivity("t_a", A, 100), NameActivity("t_b", B, 90), NameActivity("t_c", ("x", "c"), 95)]
    departures = [Departure("t_a", A, 100), Departure("t_b", B, 120)]
    assert retired_topics(["t_a", "t_b", "t_c"], activity, departures, {}) == {"t_a": 100, "t_b": 120}
    assert retired_topics(["t_c"], activity, departures, {"x": 130}) == {"t_c": 130}


def test_a_name_that_came_back_or_a_second_table_keeps_the_topic_active() -> None:
    assert retired_topics(["t"], [NameActivity("t", A, 150)], [Departure("t", A, 100)], {}) == {}
    activity = [NameActivity("t", A, 90), NameActivity("t", B, 90)]
    assert retired_topics(["t"], activity, [Departure("t", A, 100)], {}) == {}
    assert retired_topics(["t"], activity, [Departure("t", A, 100), Departure("t", B, 110)], {}) == {"t": 110}


def test_no_evidence_no_retirement() -> None:
    assert retired_topics(["t"], [], [], {"shop": 5}) == {}
    assert retired_topics(["t"], [NameActivity("u", A, 1)], [Departure("u", A, 2)], {}) == {}
