"""``segment_merge.merge_changes`` into a keyed table that holds no row: the rows its MERGE would
insert, written by a validated overwrite of the empty table, give what the MERGE gives."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import functions as F

from tests.ticdc_lake.spark.carrier_rows import without_carrier
from ticdc_lake import table_markers
from ticdc_lake.apply.merge_sql import OP_COLUMN, TargetColumn, typed_projection
from ticdc_lake.identifiers import quote
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.spark import target_tables
from ticdc_lake.spark.record_images import (
    SIDES,
    VersionLayout,
    keys_from_maps,
    records_from_maps,
    untyped_from_maps,
)
from ticdc_lake.spark.segment_merge import insert_into_empty, merge_changes
from ticdc_lake.spark.target_tables import NoRows, TargetTable

pytestmark = [pytest.mark.spark]

SCHEMA = TableSchema(
    "shop",
    "items",
    (ColumnSchema("id", "int", nullable=False), ColumnSchema("born", "date"), ColumnSchema("note", "varchar")),
    (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
)
COLUMNS = [TargetColumn("id", "int"), TargetColumn("born", "date"), TargetColumn("note", "string")]


Image = Mapping[str, str | None]


def _dml(spark: Any, rows: Sequence[tuple[str, Image | None, Image | None, int]]) -> Any:
    return without_carrier(
        spark.createDataFrame(
            [(op, before, after, Decimal(ts), "t", 0, i, 0) for i, (op, before, after, ts) in enumerate(rows)],
            "op STRING, before MAP<STRING,STRING>, after MAP<STRING,STRING>, commit_ts DECIMAL(20,0), "
            "topic STRING, `partition` INT, `offset` BIGINT, idx INT",
        )
    )


def _rows(spark: Any, target: TargetTable) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.table(target.sql_name).collect())


def _summary(spark: Any, target: TargetTable) -> dict[str, str]:
    return target_tables.latest_snapshot(spark, target)[1]


def test_into_an_empty_table_gives_the_rows_and_counts_of_the_merge(spark: Any) -> None:
    """Key 1 inserted and deleted in the same segment, key 2 inserted then updated to a zero date,
    key 3 inserted with one: the empty table gets what the MERGE gives a table holding another row."""
    namespace = f"empty_{uuid.uuid4().hex[:8]}"
    dml = _dml(
        spark,
        [
            ("I", None, {"id": "1", "born": "2020-01-01", "note": "a"}, 10),
            ("I", None, {"id": "2", "born": "2020-01-02", "note": "b"}, 11),
            ("D", {"id": "1", "born": "2020-01-01", "note": "a"}, None, 12),
            ("U", {"id": "2", "born": "2020-01-02", "note": "b"}, {"id": "2", "born": "0000-00-00", "note": "c"}, 13),
            ("I", None, {"id": "3", "born": "0000-00-00", "note": "d"}, 14),
        ],
    )
    empty, held = TargetTable("lake", namespace, "empty"), TargetTable("lake", namespace, "held")
    for target in (empty, held):
        target_tables.create(spark, target, SCHEMA)
    spark.sql(f"INSERT INTO {held.sql_name} VALUES (100, DATE'1999-01-01', 'other')")
    assert target_tables.no_rows(spark, empty) == NoRows(None)
    assert target_tables.no_rows(spark, held) is None
    props = {table_markers.APPLIED_TS: "14"}
    got_empty, _ = merge_changes(spark, empty, dml, ("id",), COLUMNS, props)
    got_held, _ = merge_changes(spark, held, dml, ("id",), COLUMNS, props)
    want = [(2, None, "c"), (3, None, "d")]
    assert _rows(spark, empty) == want
    assert _rows(spark, held) == [*want, (100, date(1999, 1, 1), "other")]
    counts = {"rows_inserted": 2, "rows_updated": 0, "rows_deleted": 0, "unrepresentable_values": 2}
    counts |= {"typed_from_records": 0, "net_changes": 3, "rendered_values": 0}  # rows without a record: from maps
    assert got_empty == got_held == counts
    assert _summary(spark, empty)[table_markers.APPLIED_TS] == "14"
    assert _summary(spark, empty)["added-records"] == "2"
    assert target_tables.applied_position(spark, empty)[0] == 14


def test_only_deletes_into_an_empty_table_still_commit_the_position(spark: Any) -> None:
    """A segment whose net changes are all deletes writes no row but commits its applied position,
    the exactly-once marker; the table then holds no row at that snapshot."""
    target = TargetTable("lake", f"empty_{uuid.uuid4().hex[:8]}", "gone")
    target_tables.create(spark, target, SCHEMA)
    dml = _dml(spark, [("D", {"id": "7", "born": "2020-01-01", "note": "x"}, None, 20)])
    got, snapshot_id = merge_changes(spark, target, dml, ("id",), COLUMNS, {table_markers.APPLIED_TS: "20"})
    zero = ("rows_inserted", "rows_updated", "rows_deleted", "unrepresentable_values", "typed_from_records")
    assert got == {**dict.fromkeys(zero, 0), "net_changes": 1, "rendered_values": 0}
    assert _rows(spark, target) == []
    assert target_tables.applied_position(spark, target) == (20, snapshot_id)
    assert target_tables.no_rows(spark, target) == NoRows(snapshot_id)


@pytest.mark.parametrize("with_snapshot", [False, True])
def test_a_commit_after_the_table_was_found_empty_fails_the_write(spark: Any, with_snapshot: bool) -> None:
    """Rows someone else commits between finding the table empty and the write make the write fail
    (Iceberg's serializable validation, as a MERGE's): nothing of it is committed."""
    target = TargetTable("lake", f"empty_{uuid.uuid4().hex[:8]}", "raced")
    target_tables.create(spark, target, SCHEMA)
    if with_snapshot:
        only_deletes = _dml(spark, [("D", {"id": "7", "born": "2020-01-01", "note": "x"}, None, 20)])
        merge_changes(spark, target, only_deletes, ("id",), COLUMNS, {table_markers.APPLIED_TS: "20"})
    found = target_tables.no_rows(spark, target)
    assert found is not None
    assert (found.snapshot_id is not None) == with_snapshot
    spark.sql(f"INSERT INTO {target.sql_name} VALUES (5, DATE'2020-01-05', 'theirs')")
    typed = spark.sql(f"SELECT 5 AS image_id, 'U' AS {quote(OP_COLUMN)}").selectExpr(
        *typed_projection("map('id', CAST(image_id AS STRING), 'note', 'mine')", COLUMNS), quote(OP_COLUMN)
    )
    with pytest.raises(Exception, match="Found conflicting files that can contain records matching true"):
        insert_into_empty(typed, target, COLUMNS, found)
    assert _rows(spark, target) == [(5, date(2020, 1, 5), "theirs")]


@pytest.mark.parametrize("layout", ["ADD PARTITION FIELD bucket(4, id)", "WRITE ORDERED BY id"])
def test_the_write_counts_what_the_merge_counts_whether_or_not_it_shuffles(spark: Any, layout: str) -> None:
    """Into an empty table the write itself counts the unrepresentable values (the deleted image's
    zero date too) unless the table's layout makes it shuffle, where they are counted before it:
    both give the MERGE's rows and counts."""
    namespace = f"empty_{uuid.uuid4().hex[:8]}"
    dml = _dml(
        spark,
        [
            ("I", None, {"id": "1", "born": "0000-00-00", "note": "a"}, 10),
            ("D", {"id": "1", "born": "0000-00-00", "note": "a"}, None, 11),
            ("I", None, {"id": "2", "born": "2020-02-30", "note": "b"}, 12),
            ("I", None, {"id": "3", "born": "2020-01-03", "note": "c"}, 13),
        ],
    )
    plain, shuffled, held = (TargetTable("lake", namespace, name) for name in ("plain", "shuffled", "held"))
    for target in (plain, shuffled, held):
        target_tables.create(spark, target, SCHEMA)
    spark.sql(f"ALTER TABLE {shuffled.sql_name} {layout}")
    spark.sql(f"INSERT INTO {held.sql_name} VALUES (100, DATE'1999-01-01', 'other')")
    assert target_tables.no_rows(spark, plain) == NoRows(None, write_shuffles=False)
    assert target_tables.no_rows(spark, shuffled) == NoRows(None, write_shuffles=True)
    props = {table_markers.APPLIED_TS: "13"}
    got = [merge_changes(spark, t, dml, ("id",), COLUMNS, props)[0] for t in (plain, shuffled, held)]
    counts = {"rows_inserted": 2, "rows_updated": 0, "rows_deleted": 0, "unrepresentable_values": 2}
    assert got == [{**counts, "typed_from_records": 0, "net_changes": 3, "rendered_values": 0}] * 3
    want = [(2, None, "b"), (3, date(2020, 1, 3), "c")]
    assert _rows(spark, plain) == _rows(spark, shuffled) == want
    assert _rows(spark, held) == [*want, (100, date(1999, 1, 1), "other")]


def test_rows_with_records_are_merged_from_their_records(spark: Any) -> None:
    """The first test's segment with each image's typed record and key texts (as decode writes
    them, version 1) and empty maps: the tables get the same rows and counts (the zero dates are in
    the records' untyped texts), so the net changes are keyed by the key texts and the MERGE source
    reads the records."""
    layout = VersionLayout(1, ("id", "born", "note"), ("int", "date", "string"), ("id",))
    images = [
        ("I", None, {"id": "1", "born": "2020-01-01", "note": "a"}, 10),
        ("I", None, {"id": "2", "born": "2020-01-02", "note": "b"}, 11),
        ("D", {"id": "1", "born": "2020-01-01", "note": "a"}, None, 12),
        ("U", {"id": "2", "born": "2020-01-02", "note": "b"}, {"id": "2", "born": "0000-00-00", "note": "c"}, 13),
        ("I", None, {"id": "3", "born": "0000-00-00", "note": "d"}, 14),
    ]
    dml = _dml(spark, images).withColumn("schema_version", F.lit(1).cast("decimal(20,0)"))
    dml = _carried(dml, [layout])
    emptied = dml.withColumns({side: F.map_filter(side, lambda k, v: F.lit(False)) for side in ("before", "after")})
    namespace = f"records_{uuid.uuid4().hex[:8]}"
    empty, held = TargetTable("lake", namespace, "empty"), TargetTable("lake", namespace, "held")
    for target in (empty, held):
        target_tables.create(spark, target, SCHEMA)
    spark.sql(f"INSERT INTO {held.sql_name} VALUES (2, DATE'1999-01-01', 'old'), (100, DATE'1999-01-01', 'other')")
    props = {table_markers.APPLIED_TS: "14"}
    got_empty, _ = merge_changes(spark, empty, emptied, ("id",), COLUMNS, props, layouts=[layout])
    got_held, _ = merge_changes(spark, held, emptied, ("id",), COLUMNS, props, layouts=[layout])
    want = [(2, None, "c"), (3, None, "d")]
    assert _rows(spark, empty) == want
    assert _rows(spark, held) == [*want, (100, date(1999, 1, 1), "other")]
    # Three net changes (key 1's delete, keys 2 and 3), every one typed from its record.
    counts = {"rows_deleted": 0, "unrepresentable_values": 2, "typed_from_records": 3, "net_changes": 3}
    counts["rendered_values"] = 0
    assert got_empty == {"rows_inserted": 2, "rows_updated": 0, **counts}
    assert got_held == {"rows_inserted": 1, "rows_updated": 1, **counts}
    # Without the layouts the same rows are keyed and typed from their maps: maps that hold the key
    # only lose the values.
    lost = TargetTable("lake", namespace, "lost")
    target_tables.create(spark, lost, SCHEMA)
    key_only = {side: F.map_filter(side, lambda k, v: k == "id") for side in ("before", "after")}
    merge_changes(spark, lost, dml.withColumns(key_only), ("id",), COLUMNS, props)
    assert _rows(spark, lost) == [(2, None, None), (3, None, None)]


_MAKERS = (("record", records_from_maps), ("untyped", untyped_from_maps), ("key", keys_from_maps))


def _carried(dml: Any, layouts: Sequence[VersionLayout]) -> Any:
    """``dml`` with each image's carrier (record, untyped and key texts) made for ``layouts``, as decode does."""
    return dml.withColumns({f"{side}_{part}": make(side, layouts) for side in SIDES for part, make in _MAKERS})


def _mapless(dml: Any, layouts: Sequence[VersionLayout]) -> Any:
    """``dml`` with each image's carrier made for ``layouts`` and its maps left behind (NULL)."""
    return _carried(dml, layouts).withColumns({side: F.lit(None).cast("map<string,string>") for side in SIDES})


def test_rows_without_maps_of_a_version_keyed_otherwise_are_keyed_by_their_records(spark: Any) -> None:
    """Version 2's handle key is ``note``, not the table's ``id``: its key texts are another key's.
    Rows that carry no map, of both versions, give the rows the full maps give: version 1's keyed
    by their key texts, version 2's by the ``id`` their records hold."""
    v1 = VersionLayout(1, ("id", "born", "note"), ("int", "date", "string"), ("id",))
    v2 = VersionLayout(2, v1.names, v1.types, ("note",))
    images: list[tuple[str, Image | None, Image | None, int]] = [
        ("I", None, {"id": "1", "born": "2020-01-01", "note": "a"}, 10),
        ("I", None, {"id": "2", "born": "2020-01-02", "note": "b"}, 11),
        ("U", {"id": "1", "born": "2020-01-01", "note": "a"}, {"id": "1", "born": "2020-01-03", "note": "c"}, 12),
        ("D", {"id": "2", "born": "2020-01-02", "note": "b"}, None, 13),
        ("U", {"id": "1", "born": "2020-01-03", "note": "c"}, {"id": "4", "born": "2020-01-04", "note": "d"}, 14),
    ]
    versions = F.when(F.col("offset") % 2 == 0, 1).otherwise(2).cast("decimal(20,0)")
    dml = _dml(spark, images).withColumn("schema_version", versions)
    namespace = f"mapless_{uuid.uuid4().hex[:8]}"
    by_maps, by_records = TargetTable("lake", namespace, "maps"), TargetTable("lake", namespace, "records")
    for target in (by_maps, by_records):
        target_tables.create(spark, target, SCHEMA)
        spark.sql(f"INSERT INTO {target.sql_name} VALUES (2, DATE'1999-01-01', 'old')")
    props = {table_markers.APPLIED_TS: "14"}
    want, _ = merge_changes(spark, by_maps, dml, ("id",), COLUMNS, props)
    got, _ = merge_changes(spark, by_records, _mapless(dml, [v1, v2]), ("id",), COLUMNS, props, layouts=[v1, v2])
    assert _rows(spark, by_records) == _rows(spark, by_maps) == [(4, date(2020, 1, 4), "d")]
    assert got == {**want, "typed_from_records": 3}  # every net change: keys 1 and 2 deleted, key 4 inserted


def test_keys_whose_texts_spark_renders_otherwise_are_all_read_from_the_records(spark: Any) -> None:
    """A DECIMAL(10,2) key sent as ``1.5``: version 1's key texts say ``1.5``, a record of it read
    back says ``1.50``. With a version keyed otherwise in the segment, every row that carries no map
    is keyed by its record, so the insert (version 1) and the update (version 2) of one key meet:
    one row. Keyed by the texts where they could be, they would be two keys of one value."""
    schema = TableSchema(
        "shop",
        "codes",
        (ColumnSchema("code", "decimal", length=10, scale=2, nullable=False), ColumnSchema("note", "varchar")),
        (IndexSchema("PRIMARY", ("code",), primary=True, unique=True),),
    )
    columns = [TargetColumn("code", "decimal(10,2)"), TargetColumn("note", "string")]
    v1 = VersionLayout(1, ("code", "note"), ("decimal(10,2)", "string"), ("code",))
    v2 = VersionLayout(2, v1.names, v1.types, ("note",))
    images: list[tuple[str, Image | None, Image | None, int]] = [
        ("I", None, {"code": "1.5", "note": "a"}, 10),
        ("U", {"code": "1.5", "note": "a"}, {"code": "1.5", "note": "b"}, 11),
    ]
    dml = _dml(spark, images).withColumn("schema_version", F.col("offset").cast("decimal(20,0)") + 1)
    target = TargetTable("lake", f"codes_{uuid.uuid4().hex[:8]}", "codes")
    target_tables.create(spark, target, schema)
    props = {table_markers.APPLIED_TS: "11"}
    got, _ = merge_changes(spark, target, _mapless(dml, [v1, v2]), ("code",), columns, props, layouts=[v1, v2])
    assert _rows(spark, target) == [(Decimal("1.50"), "b")]
    assert (got["net_changes"], got["typed_from_records"]) == (1, 1)


def test_a_target_altered_outside_the_pipeline_gets_rendered_values_counted_and_logged(
    spark: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The history carries ``price`` as DOUBLE, the target holds it as string (altered outside the
    pipeline). Keyed by their key texts, the net changes leave their maps behind, so the MERGE
    source types them from their records: Spark's text of each double, each value counted and the
    table named in a warning. Without the layouts (rows keyed and typed from their maps) the
    target gets the texts as sent and nothing is counted."""
    schema = TableSchema(
        "shop",
        "prices",
        (ColumnSchema("id", "int", nullable=False), ColumnSchema("price", "varchar")),
        (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
    )
    columns = [TargetColumn("id", "int"), TargetColumn("price", "string")]
    layout = VersionLayout(1, ("id", "price"), ("int", "double"), ("id",))
    images: list[tuple[str, Image | None, Image | None, int]] = [
        ("I", None, {"id": "1", "price": "1e+10"}, 10),
        ("I", None, {"id": "2", "price": "1.50"}, 11),
        ("I", None, {"id": "3", "price": None}, 12),
        ("U", {"id": "1", "price": "1e+10"}, {"id": "1", "price": "0.1"}, 13),
    ]
    dml = _dml(spark, images).withColumn("schema_version", F.lit(1).cast("decimal(20,0)"))
    dml = _carried(dml, [layout])
    namespace = f"rendered_{uuid.uuid4().hex[:8]}"
    by_records, by_maps = TargetTable("lake", namespace, "records"), TargetTable("lake", namespace, "maps")
    for target in (by_records, by_maps):
        target_tables.create(spark, target, schema)
    props = {table_markers.APPLIED_TS: "13"}
    with caplog.at_level("WARNING", logger="ticdc_lake.spark.segment_merge"):
        got, _ = merge_changes(spark, by_records, dml, ("id",), columns, props, layouts=[layout])
    assert _rows(spark, by_records) == [(1, "0.1"), (2, "1.5"), (3, None)]
    assert (got["typed_from_records"], got["net_changes"], got["rendered_values"]) == (3, 3, 2)
    assert [r.getMessage() for r in caplog.records] == [
        f"apply: {by_records.display}: 2 value(s) written as Spark's text of their typed value, which may differ "
        "from the text TiCDC sent: the table's column types are not those its schema history gives (was it "
        "altered outside the pipeline?); see docs/typed-row-images.md"
    ]
    got, _ = merge_changes(spark, by_maps, dml, ("id",), columns, props)
    assert _rows(spark, by_maps) == [(1, "0.1"), (2, "1.50"), (3, None)]
    assert (got["typed_from_records"], got["rendered_values"]) == (0, 0)


KEYLESS = TableSchema(
    "shop",
    "notes",
    (ColumnSchema("id", "int"), ColumnSchema("born", "date"), ColumnSchema("note", "varchar")),
    (),
)


def test_images_of_a_keyless_table_are_typed_from_their_records(spark: Any) -> None:
    """The multiset rule's MERGE source reads each changed image's typed record: with maps whose
    texts are all altered (one to one, so images group as before) the tables get the rows and counts
    that the true maps give, every image typed from its record; without the layouts the altered
    texts are typed."""
    layout = VersionLayout(1, ("id", "born", "note"), ("int", "date", "string"), ())
    first, second = {"id": "1", "born": "2020-01-01", "note": "x"}, {"id": "2", "born": "0000-00-00", "note": "y"}
    images: list[tuple[str, Image | None, Image | None, int]] = [
        ("I", None, first, 10),
        ("I", None, first, 11),  # a second copy
        ("I", None, second, 12),
        ("U", first, {"id": "1", "born": "2020-01-05", "note": "z"}, 13),
        ("I", None, {"id": "3", "born": None, "note": "w"}, 14),
    ]
    dml = _dml(spark, images).withColumn("schema_version", F.lit(1).cast("decimal(20,0)"))
    dml = _carried(dml, [layout])
    altered = dml.withColumns(
        {side: F.transform_values(side, lambda k, v: F.concat(F.lit("~"), v)) for side in ("before", "after")}
    )
    namespace = f"keyless_{uuid.uuid4().hex[:8]}"
    names = ("by_maps", "by_records", "altered")
    targets = {name: TargetTable("lake", namespace, name) for name in names}
    for target in targets.values():
        target_tables.create(spark, target, KEYLESS)
        spark.sql(f"INSERT INTO {target.sql_name} VALUES (1, DATE'2020-01-01', 'x'), (9, NULL, 'old')")
    props = {table_markers.APPLIED_TS: "14"}
    want, _ = merge_changes(spark, targets["by_maps"], dml, (), COLUMNS, props)
    got, _ = merge_changes(spark, targets["by_records"], altered, (), COLUMNS, props, layouts=[layout])
    merge_changes(spark, targets["altered"], altered, (), COLUMNS, props)
    expected = [
        (1, date(2020, 1, 1), "x"),
        (1, date(2020, 1, 1), "x"),
        (1, date(2020, 1, 5), "z"),
        (2, None, "y"),
        (3, None, "w"),
        (9, None, "old"),
    ]
    assert _rows(spark, targets["by_maps"]) == _rows(spark, targets["by_records"]) == expected
    # Four images changed (the first one's copies, its update, the second and third images); the zero date counted.
    assert want == {**got, "typed_from_records": 0}
    assert got == {
        "rows_inserted": 4,
        "rows_updated": 0,
        "rows_deleted": 0,
        "unrepresentable_values": 1,
        "typed_from_records": 4,
        "net_changes": 4,
        "rendered_values": 0,
    }
    # From the altered maps, ids and dates are NULL and the notes are the altered texts.
    typed = {tuple(r) for r in spark.table(targets["altered"].sql_name).where("id IS NULL").collect()}
    assert typed == {(None, None, "~x"), (None, None, "~z"), (None, None, "~y"), (None, None, "~w")}
