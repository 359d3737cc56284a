"""Two pipelines configured onto one target table: the second holds the table instead of taking the
first one's applied position as its own.

The applied position of a table (``ticdc.applied-ts``) is one pipeline's: another pipeline's events
at or below it would be counted as replays and skipped, and above it merged into rows that are not
its stream's. So apply holds a table whose newest applied snapshot another pipeline committed, says
which, and what to do; the first pipeline goes on applying to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ticdc_lake.spark.apply_lake import ApplyLake
from ticdc_lake.spark.apply_job import run_apply

pytestmark = [pytest.mark.spark]


def _stream(lake: ApplyLake, first_id: int, alter: bool = False) -> None:
    lake.ddl(100, "shop", "items", "CREATE", "CREATE TABLE items (id INT PRIMARY KEY, n INT)")
    lake.dml(110, "shop", "items", "I", {"id": first_id, "n": 1})
    lake.dml(120, "shop", "items", "I", {"id": first_id + 1, "n": 2})
    if alter:
        lake.ddl(150, "shop", "items", "ALTER", "ALTER TABLE items ADD COLUMN z INT")
        lake.dml(160, "shop", "items", "I", {"id": first_id + 2, "n": 3, "z": 3})
    lake.land(200)


def test_a_second_pipeline_holds_a_table_the_first_applies_to(spark: Any, lake_home: Path, tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    first = ApplyLake(spark, lake_home, tmp_path / "a", target_namespace="shared_{database}")
    second = ApplyLake(spark, lake_home, tmp_path / "b", target_namespace="shared_{database}")
    _stream(first, 1)
    _stream(second, 10, alter=True)  # the same table names and commit TSOs, other rows, and a DDL
    run_apply(spark, first.config, first.pipeline, "run-1")
    assert first.content("shop", "items") == [(1, 1), (2, 2)]

    summary = run_apply(spark, second.config, second.pipeline, "run-1")

    table = "lake.shared_shop.items"
    note = (
        f"{table} is applied by pipeline {first.pipeline_id!r} (its newest applied snapshot says so), not by "
        f"{second.pipeline_id!r}: two pipelines must not write one table, whose applied position is one "
        f"pipeline's. Give pipeline {second.pipeline_id!r} a target.namespace (or target.table) of its own; if "
        f"{second.pipeline_id!r} replaces {first.pipeline_id!r}, drop the table and run again to build it from "
        f"{second.pipeline_id!r}'s events"
    )
    assert summary.held == {"shop.items": note}
    assert second.ledger("run-1") == {"shop.items": ("HELD", note)}
    # Nothing of the second stream is merged, and nothing is counted as a replay and skipped.
    assert second.content("shop", "items") == [(1, 1), (2, 2)]
    assert second.columns("shop", "items") == [("id", "int"), ("n", "int")]

    # The first pipeline goes on.
    first.dml(210, "shop", "items", "U", {"id": 1, "n": 5}, before={"id": 1, "n": 1})
    first.land(300, run_id="run-2")
    assert run_apply(spark, first.config, first.pipeline, "run-2").held == {}
    assert first.content("shop", "items") == [(1, 5), (2, 2)]


def _foreign(table: str, owner: str, other: str, evidence: str) -> str:
    return (
        f"{table} is applied by pipeline {owner!r} ({evidence}), not by {other!r}: two pipelines must not write one "
        f"table, whose applied position is one pipeline's. Give pipeline {other!r} a target.namespace (or "
        f"target.table) of its own; if {other!r} replaces {owner!r}, drop the table and run again to build it from "
        f"{other!r}'s events"
    )


def test_tables_a_pipeline_made_or_truncated_are_its_own_before_any_row(
    spark: Any, lake_home: Path, tmp_path: Path
) -> None:
    """A table the first pipeline created and applied no row to (no snapshot says whose it is: its
    ``ticdc.ddl-pipeline`` property does), and one whose newest applied snapshot is the first
    pipeline's TRUNCATE, are held by the second pipeline too."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    first = ApplyLake(spark, lake_home, tmp_path / "a", target_namespace="made_{database}")
    second = ApplyLake(spark, lake_home, tmp_path / "b", target_namespace="made_{database}")
    first.ddl(100, "shop", "items", "CREATE", "CREATE TABLE items (id INT PRIMARY KEY, n INT)")
    first.ddl(101, "shop", "logs", "CREATE", "CREATE TABLE logs (id INT PRIMARY KEY, n INT)")
    first.dml(110, "shop", "logs", "I", {"id": 1, "n": 1})
    first.ddl(120, "shop", "logs", "TRUNCATE", "TRUNCATE TABLE logs")
    first.land(200)
    for table in ("items", "logs"):
        second.ddl(100, "shop", table, "CREATE", f"CREATE TABLE {table} (id INT PRIMARY KEY, n INT)")
        second.dml(130, "shop", table, "I", {"id": 7, "n": 7})
    second.land(200)
    run_apply(spark, first.config, first.pipeline, "run-1")
    assert first.content("shop", "items") == first.content("shop", "logs") == []

    summary = run_apply(spark, second.config, second.pipeline, "run-1")

    owner, other = first.pipeline_id, second.pipeline_id
    made = "no row is applied to it yet; its table property ticdc.ddl-pipeline says so"
    notes = {
        "shop.items": _foreign("lake.made_shop.items", owner, other, made),
        "shop.logs": _foreign("lake.made_shop.logs", owner, other, "its newest applied snapshot says so"),
    }
    assert summary.held == notes
    assert second.ledger("run-1") == {name: ("HELD", note) for name, note in notes.items()}
    assert second.content("shop", "items") == second.content("shop", "logs") == []


def test_an_offset_ordered_pipeline_holds_a_table_another_applies_to(
    spark: Any, lake_home: Path, tmp_path: Path
) -> None:
    """The offset-ordered apply reads only its own offsets from a table: it would merge its stream
    into the other pipeline's rows. It holds the table too."""
    from tests.ticdc_lake.spark.test_offset_apply import CREATE, OffsetLake

    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    first = ApplyLake(spark, lake_home, tmp_path / "a", target_namespace="mixed_{database}")
    first.ddl(100, "db", "t", "CREATE", CREATE)
    first.dml(110, "db", "t", "I", {"id": 1, "v": "a"})
    first.land(200)
    run_apply(spark, first.config, first.pipeline, "run-1")
    second = OffsetLake(spark, lake_home, tmp_path / "b", target_namespace="mixed_{database}")
    second.version(1, CREATE)
    second.put(0, "I", {"id": 2, "v": "b"})

    second.run("run-1")

    status, message = second.ledger("run-1")["db.t"]
    assert status == "HELD"
    assert message is not None
    assert f"lake.mixed_db.t is applied by pipeline {first.pipeline_id!r}" in message
    assert first.content("db", "t") == [(1, "a")]
