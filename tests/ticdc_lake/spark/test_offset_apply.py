"""Offset-ordered apply (no commit TSO, no watermark) on a real lake: positions, replays, order, versions."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.ticdc_lake.spark.apply_lake import TOPIC, ApplyLake
from ticdc_lake.apply.offset_plan import OFFSETS_PROP
from ticdc_lake.config import Protocol
from ticdc_lake.schema.ddl_parser import parse_create_table
from ticdc_lake.spark import target_tables
from ticdc_lake.spark.apply_job import run_apply
from ticdc_lake.spark.arrow_decode.image_records import layout_fingerprint
from ticdc_lake.spark.target_tables import TargetTable

pytestmark = pytest.mark.spark

CREATE = "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))"
CREATE_V2 = "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), w INT)"


class OffsetLake(ApplyLake):
    """ApplyLake as a canal-json pipeline without the TiDB extension: rows at chosen offsets, no TSO."""

    def __post_init__(self) -> None:
        super().__post_init__()
        codec = self.pipeline.codec.model_copy(update={"enable_tidb_extension": False})
        self.pipeline = self.pipeline.model_copy(update={"protocol": Protocol.CANAL_JSON, "codec": codec})
        assert self.pipeline.offset_ordered

    def version(self, version: int, query: str, table: str = "t") -> None:
        schema = replace(parse_create_table(query.replace(" t ", f" {table} "), "db"), version=version)
        self._history(version, schema, "inferred", query)

    def put(self, partition: int, op: str, after: dict[str, Any] | None, before: dict[str, Any] | None = None,
            version: int = 1, table: str = "t", offset: int | None = None) -> None:  # fmt: skip
        def text(image: dict[str, Any] | None) -> dict[str, str | None] | None:
            return None if image is None else {k: None if v is None else str(v) for k, v in image.items()}

        at = self.offsets.get(partition, 0) if offset is None else offset
        self.offsets[partition] = max(self.offsets.get(partition, 0), at + 1)
        self.rows.append(
            {"topic": TOPIC, "partition": partition, "offset": at, "idx": 0, "status": "READY", "kind": "DML",
             "commit_ts": Decimal(0), "database": "db", "table": table, "op": op, "before": text(before),
             "after": text(after), "schema_version": Decimal(version)}
        )  # fmt: skip

    def run(self, run_id: str) -> None:
        """Land what was put (no watermark, as the decoder reports for these settings) and apply."""
        self.land(0, run_id)
        self.spark.sql(
            f"UPDATE {self.tables.decoded_batches} SET max_watermark = NULL, watermarks = 0 "
            f"WHERE pipeline = '{self.pipeline_id}'"
        )
        run_apply(self.spark, self.config, self.pipeline, run_id)

    def offsets_of(self, table: str = "t") -> dict[str, int]:
        target = TargetTable.for_upstream(self.pipeline, "db", table)
        snapshot = target_tables.iceberg_table(self.spark, target).currentSnapshot()
        return dict(json.loads(str(snapshot.summary().get(OFFSETS_PROP))))

    def rows_of(self, run_id: str, table: str = "t") -> Any:
        return self.spark.sql(
            "SELECT status, events_in, replays_skipped, window_start, watermark, message "
            f"FROM {self.tables.run_ledger} "
            f"WHERE pipeline = '{self.pipeline_id}' AND run_id = '{run_id}' AND `table` = '{table}'"
        ).first()


def test_positions_order_and_replays(spark: Any, lake_home: Path, tmp_path: Path) -> None:
    lake = OffsetLake(spark, lake_home, tmp_path)
    lake.version(1, CREATE)
    lake.put(0, "I", {"id": 1, "v": "a"})
    lake.put(0, "D", None, {"id": 1, "v": "a"})  # insert then delete of one key: the row is gone
    lake.put(0, "I", {"id": 2, "v": "a"})
    lake.put(1, "I", {"id": 3, "v": "a"})
    lake.put(1, "U", {"id": 3, "v": "b"}, {"id": 3, "v": "a"})
    lake.run("run-1")
    assert lake.content("db", "t") == [(2, "a"), (3, "b")]
    assert lake.offsets_of() == {f"{TOPIC}/0": 3, f"{TOPIC}/1": 2}
    row = lake.rows_of("run-1")
    assert (row["status"], row["events_in"], row["replays_skipped"], row["window_start"], row["watermark"]) == (
        "APPLIED",
        5,
        0,
        None,
        None,
    )
    assert "offset-ordered apply" in row["message"]
    assert f"{TOPIC}/0@3" in row["message"]

    lake.run("run-2")  # nothing new: a no-op
    assert lake.rows_of("run-2")["status"] == "NOOP"
    # The same landed offsets decoded again (a replay of landed offsets) and one fresh event after them.
    lake.put(0, "I", {"id": 1, "v": "zombie"}, offset=0)
    lake.put(0, "I", {"id": 2, "v": "stale"}, offset=2)
    lake.put(0, "I", {"id": 4, "v": "new"}, offset=3)
    lake.run("run-3")
    assert lake.content("db", "t") == [(2, "a"), (3, "b"), (4, "new")]
    row = lake.rows_of("run-3")
    assert (row["status"], row["events_in"], row["replays_skipped"]) == ("APPLIED", 1, 2)
    # The position is the landed prefix's end (ApplyLake lands one more offset per partition each run).
    assert lake.offsets_of() == {f"{TOPIC}/0": 5, f"{TOPIC}/1": 4}


def test_version_change_adds_the_column_and_keyless_rows_count_once(
    spark: Any, lake_home: Path, tmp_path: Path
) -> None:
    lake = OffsetLake(spark, lake_home, tmp_path)
    lake.version(1, CREATE)
    lake.version(2, CREATE_V2)
    lake.version(1, "CREATE TABLE k (msg VARCHAR(10))", table="k")
    lake.put(0, "I", {"id": 1, "v": "a"})
    lake.put(1, "I", {"id": 2, "v": "a"})
    lake.put(0, "I", {"id": 3, "v": "b", "w": 7}, version=2)
    lake.put(1, "U", {"id": 2, "v": "c", "w": 8}, {"id": 2, "v": "a", "w": None}, version=2)
    for offset in (5, 7, 9):  # the same row three times (no transaction identity: three copies)
        lake.put(0, "I", {"msg": "x"}, table="k", offset=offset)
    lake.put(1, "D", None, {"msg": "x"}, table="k")
    lake.run("run-1")
    assert lake.columns("db", "t") == [("id", "int"), ("v", "string"), ("w", "int")]
    assert lake.content("db", "t") == [(1, "a", None), (2, "c", 8), (3, "b", 7)]
    assert lake.content("db", "k") == [("x",), ("x",)]
    row = lake.rows_of("run-1")
    assert (row["status"], row["events_in"]) == ("APPLIED", 4)
    assert "schema version 1 -> 2" in row["message"]
    assert lake.offsets_of() == {f"{TOPIC}/0": 10, f"{TOPIC}/1": 3}


def test_truncate_without_tso_holds_the_table_at_its_copy(spark: Any, lake_home: Path, tmp_path: Path) -> None:
    lake = OffsetLake(spark, lake_home, tmp_path)
    lake.version(1, CREATE)
    lake.put(0, "I", {"id": 1, "v": "a"})
    lake.put(1, "I", {"id": 2, "v": "a"})
    for partition in (0, 1):
        at = lake.offsets.get(partition, 0)
        lake.offsets[partition] = at + 1
        lake.rows.append(
            {"topic": TOPIC, "partition": partition, "offset": at, "idx": 0, "status": "READY", "kind": "DDL",
             "commit_ts": Decimal(0), "database": "db", "table": "t", "ddl_type": "TRUNCATE",
             "ddl_query": "TRUNCATE TABLE t"}
        )  # fmt: skip
    lake.put(0, "I", {"id": 3, "v": "after"})
    lake.run("run-1")
    assert lake.content("db", "t") == [(1, "a"), (2, "a")]
    row = lake.rows_of("run-1")
    assert row["status"] == "HELD"
    assert "TRUNCATE, DROP or RENAME" in row["message"]
    assert f"{TOPIC}/0@1" in row["message"]
    assert lake.offsets_of() == {f"{TOPIC}/0": 1, f"{TOPIC}/1": 1}


def test_records_of_another_layout_hold_the_table_unread(spark: Any, lake_home: Path, tmp_path: Path) -> None:
    lake = OffsetLake(spark, lake_home, tmp_path)
    lake.version(1, CREATE)
    lake.put(0, "I", {"id": 1, "v": "a"})
    lake.run("run-1")
    assert lake.content("db", "t") == [(1, "a")]
    # A row whose record was written with another layout (an older release's rules) for version 1.
    lake.put(0, "I", {"id": 2, "v": "b"})
    lake.rows[-1]["record_layout"] = 7
    lake.put(1, "I", {"id": 3, "v": "c"})
    lake.run("run-2")
    assert lake.content("db", "t") == [(1, "a")]  # nothing of the table applied, the row of partition 1 neither
    row = lake.rows_of("run-2")
    mine = layout_fingerprint(("id", "v"), ("int", "string"), ("id",))
    assert row["status"] == "HELD"
    assert row["message"].endswith(
        "; row events of db.t carry typed records written by another release's layout rules (schema version 1: "
        f"written as layout 7, this release reads it as layout {mine} (id int, v string)); read with this "
        "release's layout their values would be wrong, so nothing of the table is applied. Rebuild it from the "
        f"landed batches, which decodes them again (`ticdc-lake rebuild --pipeline {lake.pipeline_id} --table "
        "db.t`, docs/rebuild.md)"
    )
    assert lake.offsets_of() == {f"{TOPIC}/0": 1, f"{TOPIC}/1": 1}
