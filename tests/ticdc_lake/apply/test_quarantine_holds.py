"""Holds of quarantined messages: only their table, or every table of their topic, at the watermark before them."""

from __future__ import annotations

from ticdc_lake.apply.quarantine_holds import Hold, Holds, Quarantined, compute_holds, watermark_before

CONFIG = "/etc/lake/pipelines.yaml"


def _row(offset: int, table: str | None, mark: int | None, partition: int = 0, topic: str = "t") -> Quarantined:
    return Quarantined(topic, partition, offset, "db" if table else None, table, "simple-json: bad", mark)


def test_watermark_before_is_the_highest_at_a_lower_offset() -> None:
    marks = [(3, 100), (7, 200), (9, 300)]
    assert [watermark_before(marks, o) for o in (0, 3, 4, 7, 8, 9, 10)] == [None, None, 100, 100, 200, 200, 300]
    assert watermark_before([], 5) is None


def test_a_message_that_tells_its_table_holds_only_that_table() -> None:
    holds = compute_holds([_row(17, "a", 200, partition=1)], CONFIG)
    assert holds.topics == {}
    assert holds.tables == {
        ("db", "a"): Hold(
            200,
            "held: the message at topic 't' partition 1 offset 17 could not be decoded (simple-json: bad); "
            "table db.a is held at commit ts 200, the last watermark before it in its partition. Fix the producer "
            "and re-decode, or set policies.on_decode_error: skip for this pipeline in /etc/lake/pipelines.yaml "
            "to record it as skipped and go on",
            "t",
        )
    }
    assert holds.for_table("db", "a", "t") == holds.tables[("db", "a")]
    assert holds.for_table("db", "b", "t") is None


def test_a_message_without_table_holds_every_table_of_its_topic_only() -> None:
    holds = compute_holds([_row(5, None, 150, topic="t1")], CONFIG)
    assert holds.tables == {}
    assert set(holds.topics) == {"t1"}
    hold = holds.topics["t1"]
    assert hold.position == 150
    assert "every table of topic 't1' (the message does not tell its table) is held at commit ts 150" in hold.reason
    assert holds.for_table("db", "x", "t1") == hold
    assert holds.for_table("db", "x", "t2") is None
    assert holds.for_table("db", "x", None) is None


def test_several_messages_hold_at_the_lowest_watermark_and_say_how_many() -> None:
    rows = [_row(30, "a", 300, partition=0), _row(12, "a", 120, partition=2), _row(40, "a", 350, partition=0)]
    hold = compute_holds(rows, CONFIG).tables[("db", "a")]
    assert hold.position == 120
    assert "partition 2 offset 12" in hold.reason
    assert "(and 2 more quarantined message(s))" in hold.reason


def test_the_lower_of_table_and_topic_hold_wins() -> None:
    holds = compute_holds([_row(30, "a", 300), _row(8, None, 90, partition=1)], CONFIG)
    assert holds.for_table("db", "a", "t") == holds.topics["t"]
    assert holds.for_table("db", "a", "t").position == 90  # type: ignore[union-attr]
    holds = compute_holds([_row(30, "a", 80), _row(8, None, 90, partition=1)], CONFIG)
    assert holds.for_table("db", "a", "t") == holds.tables[("db", "a")]


def test_no_watermark_before_the_message_holds_at_the_applied_position() -> None:
    hold = compute_holds([_row(0, "a", None)], CONFIG).tables[("db", "a")]
    assert hold.position == 0
    assert "is held at its applied position (no watermark before the message in its partition)" in hold.reason


def test_nothing_quarantined_holds_nothing() -> None:
    holds = compute_holds([], CONFIG)
    assert holds == Holds()
    assert not holds
