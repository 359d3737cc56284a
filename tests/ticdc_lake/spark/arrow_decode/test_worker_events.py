"""The facts a decode task records of a vector-decoded batch equal those its Python loop records."""

from __future__ import annotations

import random

from ticdc_lake.events import ChangeEvent, EventKind, Op, SourcePosition
from ticdc_lake.spark.arrow_decode.worker_events import first_start_rows, partition_counts
from ticdc_lake.spark.decode_arrow import events_to_arrow


def _events(seed: int) -> list[ChangeEvent]:
    rng = random.Random(seed)
    events = []
    for n in range(500):
        table = rng.choice(["a", "b", "c"])
        events.append(
            ChangeEvent(
                kind=EventKind.DML,
                position=SourcePosition(rng.choice(["t1", "t2"]), rng.randrange(3), n),
                commit_ts=rng.randrange(100, 110),
                database="db",
                table=table,
                op=Op.INSERT,
                schema_version=0 if table != "c" else 7,
                after={"id": str(n)},
            )
        )
    return events


def test_counts_and_first_rows_at_the_start_schema() -> None:
    events = _events(3)
    batch = events_to_arrow("p", "b", "r", events)
    expected_counts: dict[tuple[str, int], int] = {}
    for e in events:
        key = (e.position.topic, e.position.partition)
        expected_counts[key] = expected_counts.get(key, 0) + 1
    assert {(t, p): n for t, p, n in partition_counts(batch)} == expected_counts
    expected_first: dict[tuple[str, str], tuple[int, str, int, int]] = {}
    for e in events:
        if e.schema_version == 0:
            assert e.database is not None
            assert e.table is not None
            rank = (e.commit_ts, e.position.topic, e.position.partition, e.position.offset)
            expected_first[(e.database, e.table)] = min(expected_first.get((e.database, e.table), rank), rank)
    assert {(d, t): rank for d, t, rank in first_start_rows(batch)} == expected_first
    assert set(expected_first) == {("db", "a"), ("db", "b")}


def test_no_start_rows_without_version_zero() -> None:
    events = [e for e in _events(4) if e.table == "c"]
    assert first_start_rows(events_to_arrow("p", "b", "r", events)) == []
