"""What apply works out before it merges: replays, rows without commit TSO, schema versions, DDL order."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import functions as F

from ticdc_lake.config import PipelineConfig
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.spark.ddl_sequence import collect_ddls
from ticdc_lake.spark.record_images import VersionLayout, records_from_maps, untyped_from_maps, version_layouts
from ticdc_lake.spark.system_tables import COLUMNS
from ticdc_lake.spark.table_apply import group_net_changes, prepare_windows
from ticdc_lake.spark.table_window import SchemaVersions, TableWindow

pytestmark = [pytest.mark.spark]


#: A server zone with a repeated hour: apply counts the TIMESTAMP values in it from the rows.
ZONE = "America/New_York"


def _pipeline() -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "id": "p",
            "protocol": "avro",
            "kafka": {"topics": ["t"]},
            "landing_uri": "/tmp/landing",
            "catalog": "lake",
        }
    )


def _events(spark: Any, rows: list[dict[str, Any]]) -> Any:
    names = spark.createDataFrame([], COLUMNS["change_events"]).columns
    base = {"pipeline": "p", "batch_id": "b", "topic": "t", "idx": 0, "kind": "DML", "database": "shop"}
    base |= {"table": "items", "status": "READY", "schema_version": Decimal(1), "op": "I"}
    full = [{**base, **r, "commit_ts": Decimal(r["commit_ts"])} for r in rows]
    return spark.createDataFrame([tuple(r.get(n) for n in names) for r in full], COLUMNS["change_events"])


def test_replays_and_rows_without_commit_ts_are_counted_apart(spark: Any) -> None:
    rows = [
        ("DML", 100, "run-2"),  # a replay: this run landed it again, at or below applied
        ("DML", 150, "run-2"),  # a replay at the applied position itself
        ("DML", 150, "run-1"),  # applied by the earlier run: not a replay of this one
        ("DML", 151, "run-2"),  # fresh
        ("DML", 0, "run-2"),  # an avro tombstone: no commit TSO
        ("DML", 0, "run-1"),
        ("WATERMARK", 0, "run-2"),
    ]
    frame = _events(
        spark,
        [
            {"kind": kind, "commit_ts": ts, "run_id": run, "partition": 0, "offset": i, "after": {"id": str(i)}}
            for i, (kind, ts, run) in enumerate(rows)
        ],
    )
    window = TableWindow(_pipeline(), "run-2", "shop", "items", watermark=200, applied_ts=150)
    assert prepare_windows(spark, [window], frame, "run-2") is None  # one table: nothing cached
    assert (window.replays, window.unordered, window.ready, window.ready_versions) == (2, 2, 1, (1,))
    assert (window.duplicates, window.copy_duplicates) == ({}, {})
    window.unordered = 2
    row = window.ledger_row(LedgerStatus.APPLIED, None)
    assert row.message == (
        "2 row event(s) carry no commit TSO (Canal-JSON or avro without the TiDB extension, avro DELETE "
        "tombstones): they can only be ordered by Kafka offset and the TSO-ordered apply does not apply them "
        "(docs/protocols.md, Ordering)"
    )
    held = window.ledger_row(LedgerStatus.HELD, "DDL waits").message
    assert held is not None
    assert held.startswith("DDL waits; 2 row event(s) carry no commit TSO")


#: The one version of the duplicates' tables: rows decoded since the carrier carry its records.
MSG_LAYOUT = VersionLayout(1, ("msg",), ("string",), ())


@pytest.mark.parametrize("identity", [None, True])
@pytest.mark.parametrize("carried", ["none", "half"])
def test_duplicates_above_the_position_are_found_per_commit_ts_by_both_rules(
    spark: Any, identity: bool | None, carried: str
) -> None:
    """Keyed rule: every repeat of (commit TSO, op, images) is a duplicate. Multiset rule: per partition
    and transaction, the largest copy counts (``ticdc_lake.apply.duplicates``). ``identity``: counted
    by the counts job itself, or (two tables, by default) by the job over the tables' rows.
    ``carried``: rows decoded before the typed record carrier (none carries one), or, as across the
    upgrade that added it, the rows at even offsets carry theirs and the others get it at the read,
    so copies are found whichever way they were decoded."""
    a, b = {"msg": "a"}, {"msg": "b"}

    def dml(ts: int, partition: int, offset: int, after: dict[str, str], **extra: Any) -> dict[str, Any]:
        return {"commit_ts": ts, "partition": partition, "offset": offset, "after": after, "run_id": "r2", **extra}

    frame = _events(
        spark,
        [
            dml(160, 0, 1, a),
            dml(160, 0, 2, a),  # the same image twice in one copy: real copies without a key
            dml(160, 0, 3, b),
            dml(170, 0, 4, b, op="U", before=a),
            dml(160, 0, 6, a),  # transaction 160 again after a gap: a redelivered copy
            dml(160, 0, 7, a),
            dml(160, 0, 8, b),
            dml(160, 1, 1, a),  # the same change in another partition: adds up without a key
            dml(170, 0, 9, b, op="U", before={"msg": None}),  # another before image: not the same
            dml(170, 0, 10, b, op="U", before=a),
            dml(150, 0, 0, a),  # at the position: a replay, not a duplicate
            dml(150, 0, 5, a),
            dml(180, 1, 2, a, table="other"),
        ],
    )
    layouts = {}
    if carried == "half":
        frame = frame.withColumns(
            {
                f"{side}_{part}": F.when(F.col("offset") % 2 == 0, make(side, [MSG_LAYOUT]))
                for side in ("before", "after")
                for part, make in (("record", records_from_maps), ("untyped", untyped_from_maps))
            }
        )
        layouts = {("shop", "items"): [MSG_LAYOUT], ("shop", "other"): [MSG_LAYOUT]}
        if identity is None:  # without the carrier made at the read, copies in two forms differ
            window = TableWindow(_pipeline(), "r2", "shop", "items", watermark=200, applied_ts=150)
            other = TableWindow(_pipeline(), "r2", "shop", "other", watermark=200, applied_ts=150)
            prepare_windows(spark, [window, other], frame, "r2")
            assert window.duplicates != {160: 5, 170: 1}
    window = TableWindow(_pipeline(), "r2", "shop", "items", watermark=200, applied_ts=150)
    other = TableWindow(_pipeline(), "r2", "shop", "other", watermark=200, applied_ts=150)
    cached = prepare_windows(spark, [window, other], frame, "r2", identity=identity, layouts=layouts)
    assert cached is not None  # two tables have rows to apply: cached once
    cached.unpersist()
    assert (window.replays, window.ready) == (2, 10)
    assert window.duplicates == {160: 5, 170: 1}
    assert window.copy_duplicates == {160: 3, 170: 1}  # 170: offsets 4 and 9-10 are two copies
    assert (other.duplicates, other.copy_duplicates) == ({}, {})
    window.position = 165  # held before 170: this run counts the duplicates of (150, 165] only
    window.keyless = False
    assert window.duplicates_skipped() == 5
    window.keyless = True
    assert window.duplicates_skipped() == 3
    window.position = 200
    assert window.final_row().duplicates_skipped == 4


def test_schema_versions_by_commit_ts() -> None:
    history = SchemaVersions()
    first = TableSchema("shop", "items", (ColumnSchema("id", "int"),), version=10)
    second = TableSchema("shop", "items", (ColumnSchema("id", "int"), ColumnSchema("a", "int")), version=30)
    history.add(30, 300, second)
    history.add(10, 100, first)
    assert history.at(99) is None
    assert history.at(100) is first
    assert history.at(299) is first
    assert history.at(300) is second
    assert history.at(10**19) is second


def test_broadcast_and_redelivered_ddl_is_sequenced_once_in_statement_order(spark: Any) -> None:
    names = spark.createDataFrame([], COLUMNS["change_events"]).columns

    def ddl(partition: int, offset: int, ts: int, table: str, query: str) -> tuple[Any, ...]:
        values = {
            "pipeline": "p",
            "batch_id": "b",
            "topic": "t",
            "partition": partition,
            "offset": offset,
            "idx": 0,
            "kind": "DDL",
            "commit_ts": Decimal(ts),
            "database": "shop",
            "table": table,
            "ddl_type": "RENAME",
            "ddl_query": query,
            "status": "READY",
            "run_id": "r",
        }
        return tuple(values.get(n) for n in names)

    swap = "RENAME TABLE a TO b, c TO d"
    rows = [
        ddl(0, 5, 200, "b", swap),
        ddl(0, 6, 200, "d", swap),
        ddl(1, 2, 200, "b", swap),
        ddl(1, 3, 200, "d", swap),
        ddl(1, 9, 200, "b", swap),  # redelivered after a producer retry
        ddl(0, 1, 100, "x", "RENAME TABLE w TO x"),
    ]
    sequenced = collect_ddls(spark.createDataFrame(rows, COLUMNS["change_events"]))
    assert [(d.event.commit_ts, d.event.table, d.ordinal) for d in sequenced] == [
        (100, "x", 0),
        (200, "b", 0),
        (200, "d", 1),
    ]


def test_a_ledger_from_before_duplicates_skipped_gets_the_columns_and_takes_new_rows(spark: Any) -> None:
    from datetime import UTC, datetime

    from ticdc_lake.spark import ledger
    from ticdc_lake.spark.system_tables import SystemTables

    tables = SystemTables("lake", f"sys_{uuid.uuid4().hex[:8]}")
    old_columns = COLUMNS["run_ledger"].replace(", duplicates_skipped BIGINT, ambiguous_time_values BIGINT", "")
    assert old_columns != COLUMNS["run_ledger"]
    spark.sql(f"CREATE NAMESPACE lake.{tables.namespace}")
    spark.sql(f"CREATE TABLE {tables.run_ledger} ({old_columns}) USING iceberg")
    old = ledger.stage_row("p", "run-1", "apply", LedgerStatus.OK, datetime(2026, 11, 21, tzinfo=UTC), 1.0)
    spark.createDataFrame([ledger.values(old)[:-2]], old_columns).writeTo(tables.run_ledger).append()
    tables.ensure(spark)
    window = TableWindow(_pipeline(), "run-2", "shop", "items", watermark=200, applied_ts=150)
    window.position, window.duplicates, window.keyless = 200, {160: 2, 250: 1}, False
    ledger.append(spark, tables, [window.final_row()])
    got = spark.sql(
        f"SELECT run_id, duplicates_skipped, ambiguous_time_values FROM {tables.run_ledger} ORDER BY run_id"
    ).collect()
    assert [tuple(r) for r in got] == [("run-1", None, None), ("run-2", 2, 0)]


def _with_layouts(schema: TableSchema, layouts: bool = True) -> SchemaVersions:
    """``schema`` as version 1 of a history, with its record layout as apply derives it (none
    where ``layouts`` is false: a version decode writes no record for)."""
    versions = SchemaVersions()
    versions.add(1, 1, schema)
    if layouts:
        made = version_layouts({(schema.database, schema.table, 1): schema}, {})
        versions.layouts = {layout.version: layout for layout in made[(schema.database, schema.table)]}
    return versions


def test_net_changes_are_grouped_for_the_tables_whose_rows_make_one_keyed_merge(spark: Any) -> None:
    """``group_net_changes``: a table gets its part of the grouped net changes only when all its READY
    rows go into one MERGE by a key; a DDL between its first and last READY row, an earlier PENDING
    row or hold, no key, a version whose rows do not carry that key's texts (``untexted``: no record
    layout, so a row of it may be keyed by its map only), or a TIMESTAMP column whose ambiguous
    values the MERGE counts from the rows keep it per table. A DDL before its first READY row (its
    CREATE TABLE in the run) or after its last one cuts nothing off."""
    columns = (ColumnSchema("id", "int", nullable=False), ColumnSchema("v", "varchar"))
    names: tuple[str, ...] = ("keyed", "other", "ddl", "pending", "held", "keyless", "database", "stamped")
    names += ("created", "altered", "first", "last", "untexted")

    def history(table: str, database: str = "shop") -> SchemaVersions:
        key = () if table == "keyless" else (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
        stamp = (ColumnSchema("at", "timestamp"),) if table == "stamped" else ()
        return _with_layouts(TableSchema(database, table, columns + stamp, key), table != "untexted")

    rows = [
        {"database": "shop" if t != "database" else "gone", "table": t, "commit_ts": ts, "partition": 0}
        | {"offset": 1000 * i + ts, "op": op, "after": {"id": str(ts // 10 % 2), "v": str(ts)}, "run_id": "r2"}
        | ({"before": {"id": "2", "v": "x"}} if op == "U" else {})
        for i, t in enumerate(names)
        for ts, op in ((160, "I"), (170, "U"), (180, "I"))
    ]
    frame = _events(spark, rows)
    windows = {
        t: TableWindow(_pipeline(), "r2", "shop" if t != "database" else "gone", t, watermark=200, applied_ts=150)
        for t in names
    }
    windows["held"].hold_at = 170  # a quarantined message before its last row
    dst = _pipeline().model_copy(update={"codec": _pipeline().codec.model_copy(update={"server_time_zone": ZONE})})
    windows["stamped"] = TableWindow(dst, "r2", "shop", "stamped", watermark=200, applied_ts=150)
    histories = {(w.database, w.table): history(w.table, w.database) for w in windows.values()}
    cut = {("shop", "ddl"): [170], ("gone", ""): [165], ("shop", "created"): [155], ("shop", "altered"): [190]}
    cut |= {("shop", "first"): [155, 160], ("shop", "last"): [180, 190]}  # a DDL at the first or last row's TSO
    grouped_frames = []

    def group(live: Any, rows: Any) -> None:
        windows["pending"].pending_ts = 175  # as if a row at 175 waited for its schema
        grouped_frames.append(group_net_changes(spark, live, rows, histories, cut))

    cached = prepare_windows(spark, list(windows.values()), frame, "r2", group)
    assert cached is not None  # nine tables still read their rows: those are cached
    [net] = grouped_frames
    assert net is not None
    try:
        grouped = {t for t, w in windows.items() if w.net is not None}
        assert grouped == {"keyed", "other", "created", "altered"}
        assert (windows["created"].first_ready, windows["created"].last_ready) == (160, 180)
        assert windows["keyed"].net_key == ("id",)
        keyed = windows["keyed"].net
        assert keyed is not None
        got = sorted((r["op"], r["image"]["id"], r["image"]["v"], int(r["commit_ts"])) for r in keyed.collect())
        # 170 changed the key from 2 to 1: delete 2, then 1 as updated; 0 as inserted last at 180
        assert got == [("D", "2", "x", 170), ("U", "0", "180", 180), ("U", "1", "170", 170)]
    finally:
        net.unpersist()
        cached.unpersist()


def test_duplicates_of_grouped_and_other_tables_are_the_rules_counts(spark: Any) -> None:
    """With several tables the counts job reads no image: the grouped tables' duplicates come with
    their net changes, the other tables' (here a keyless one and one whose DDL cuts its rows) from
    one job over their rows; the counts are the keyed rule's (and the multiset rule's where the keyed
    one found some), as with one table."""
    columns = (ColumnSchema("id", "int", nullable=False), ColumnSchema("v", "varchar"))

    def history(table: str) -> SchemaVersions:
        key = () if table == "keyless" else (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
        return _with_layouts(TableSchema("shop", table, columns, key))

    def dml(table: str, ts: int, partition: int, offset: int, op: str = "I", **images: Any) -> dict[str, Any]:
        after = images.get("after", {"id": str(ts % 7), "v": table})
        return {"table": table, "commit_ts": ts, "partition": partition, "offset": offset, "op": op} | {
            "after": after if op != "D" else None,
            "before": images.get("before"),
            "run_id": "r2",
        }

    moved = {"before": {"id": "1", "v": "x"}, "after": {"id": "2", "v": "x"}}
    rows = []
    for table in ("keyed", "other", "keyless", "cut"):
        rows += [dml(table, 160, 0, 1), dml(table, 161, 0, 2), dml(table, 170, 0, 3, "U", **moved)]
        rows += [dml(table, 160, 0, 4), dml(table, 170, 1, 5, "U", **moved), dml(table, 170, 0, 6, "U", **moved)]
        rows += [dml(table, 180, 0, 7, "D", before={"id": "5", "v": "y"}), dml(table, 150, 0, 8)]  # 150: replay
    rows += [dml("keyless", 161, 0, 9), dml("keyless", 161, 0, 10)]  # one copy holds the row twice: real
    rows += [dml("keyed", 180, 1, 11, "D", before={"id": "5", "v": "y"})]
    frame = _events(spark, rows)
    names = ("keyed", "other", "keyless", "cut")
    windows = {t: TableWindow(_pipeline(), "r2", "shop", t, watermark=200, applied_ts=150) for t in names}
    histories = {("shop", t): history(t) for t in names}
    grouped_frames = []

    def group(live: Any, rows: Any) -> None:
        grouped_frames.append(group_net_changes(spark, live, rows, histories, {("shop", "cut"): [165]}))

    cached = prepare_windows(spark, list(windows.values()), frame, "r2", group)
    [net] = grouped_frames
    assert cached is not None  # two tables still read their rows
    assert net is not None
    try:
        assert {t for t, w in windows.items() if w.net is not None} == {"keyed", "other"}
        got = {t: (w.replays, w.ready, w.duplicates, w.copy_duplicates) for t, w in windows.items()}
        assert got == {
            "keyed": (1, 8, {160: 1, 170: 2, 180: 1}, {160: 1, 170: 1}),  # 180: two partitions, two copies
            "other": (1, 7, {160: 1, 170: 2}, {160: 1, 170: 1}),
            "keyless": (1, 9, {160: 1, 161: 2, 170: 2}, {160: 1, 161: 1, 170: 1}),
            "cut": (1, 7, {160: 1, 170: 2}, {160: 1, 170: 1}),
        }
        keyed = windows["keyed"].net
        assert keyed is not None
        assert sorted((r["op"], r["image"]["id"], int(r["commit_ts"])) for r in keyed.collect()) == [
            ("D", "1", 170),
            ("D", "5", 180),
            ("U", "0", 161),
            ("U", "2", 170),
            ("U", "6", 160),
        ]
    finally:
        net.unpersist()
        cached.unpersist()
