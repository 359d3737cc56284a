"""The multiset rule for tables without a key (``ticdc_lake.apply.multiset``) as DataFrame operations.

:func:`multiset_deltas` turns a segment's DML into one signed count per distinct row image, with
one typed record of that image where its events carry one; :func:`multiset_source` types those
images for the target's columns (from the record where it can, ``record_projection``), reads how
many copies of each the target holds now, and produces the MERGE source: one ``D`` row per touched
image (its copies are deleted) and as many ``I`` rows as copies it must have afterwards (they are
inserted).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ticdc_lake.apply.merge_sql import BAD_VALUES_COLUMN, OP_COLUMN, TargetColumn
from ticdc_lake.events import Op
from ticdc_lake.identifiers import quote
from ticdc_lake.spark.record_images import VersionLayout, carries_records
from ticdc_lake.spark.record_projection import FROM_RECORD_COLUMN, RENDERED_COLUMN, carried_projection

DELTA = "__ticdc_lake_delta__"
CURRENT = "__ticdc_lake_current__"


def _sorted_entries(image: Column) -> Column:
    # Maps cannot be grouped on; their sorted entries can.
    return F.array_sort(F.map_entries(image))


def image_key(side: str) -> Column:
    """What groups an image: its typed record and sorted untyped texts where the event carries its
    records (so an event decoded before the carrier must get it at the read: ``table_apply``), else
    its sorted map entries; NULL without an image."""
    image, record, untyped = F.col(side), F.col(f"{side}_record"), F.col(f"{side}_untyped")
    carried = carries_records()
    entries = F.when(carried, F.when(untyped.isNotNull(), _sorted_entries(untyped))).otherwise(_sorted_entries(image))
    return F.when(
        image.isNotNull() | record.isNotNull(),
        F.struct(F.when(carried, record).alias("record"), entries.alias("entries")),
    )


def _carrier(side: str, typed_versions: Collection[int]) -> Column:
    """An image's map, typed record, untyped texts and version (the record parts NULL where the
    event has none); NULL without an image. An image with a record of one of ``typed_versions``
    leaves its map behind (NULL): the MERGE source types it from its record."""
    image, record = F.col(side), F.col(f"{side}_record")
    typed = record.isNotNull() & F.col("schema_version").isin(sorted(typed_versions)) if typed_versions else None
    return F.when(
        image.isNotNull() | record.isNotNull(),
        F.struct(
            (F.when(~typed, image) if typed is not None else image).alias("image"),
            record.alias("record"),
            F.col(f"{side}_untyped").alias("untyped"),
            F.col("schema_version"),
        ),
    )


def _any_carrier(column: str) -> Column:
    # Events of one image (``image_key``) under one segment's layouts carry the same values; any one
    # is read with its own version's layout, so whichever is taken types the image alike.
    return F.first(F.col(column), ignorenulls=True).alias(column)


def multiset_deltas(events: DataFrame, dedupe_copies: bool = True, typed_versions: Collection[int] = ()) -> DataFrame:
    """Columns ``image`` (map of canonical text), ``delta`` (copies gained, or lost if negative) and
    a typed record of the image (``record``, ``untyped``, ``schema_version``: NULL where no event of
    it carries one), as ``record_projection.carried_projection`` reads them.

    ``events``: DML rows of one table and segment (op, before, after, their carrier, schema_version,
    commit_ts, topic, partition, offset, idx). A transaction's events in a partition form a new copy
    after every offset gap. ``dedupe_copies=False`` (offset order, no transaction identity): every
    event counts once. ``typed_versions``: the versions whose records the MERGE source reads
    (its ``layouts``); an image with a record of one of them keeps no map (``_carrier``).
    """
    images = [
        image_key("before").alias("b"),
        image_key("after").alias("a"),
        _carrier("before", typed_versions).alias("bc"),
        _carrier("after", typed_versions).alias("ac"),
    ]
    if not dedupe_copies:
        once = events.select("op", *images)
        return _deltas(
            once.groupBy("op", "b", "a").agg(F.count(F.lit(1)).alias("times"), _any_carrier("bc"), _any_carrier("ac"))
        )
    txn = Window.partitionBy("topic", "partition", "commit_ts").orderBy("offset", "idx")
    gap = F.lag("offset").over(txn)
    starts = F.when(gap.isNull() | (F.col("offset") > gap + 1), 1).otherwise(0)
    numbered = events.withColumn("starts", starts).withColumn(
        "copy", F.sum("starts").over(txn.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    )
    identity = ["topic", "partition", "commit_ts", "op", "b", "a"]
    counted = (
        numbered.select("topic", "partition", "commit_ts", "op", "copy", *images)
        .groupBy(*identity, "copy")
        .agg(F.count(F.lit(1)).alias("n"), _any_carrier("bc"), _any_carrier("ac"))
        .groupBy(*identity)
        .agg(F.max("n").alias("times"), _any_carrier("bc"), _any_carrier("ac"))
    )
    return _deltas(counted)


def copy_duplicates(events: DataFrame) -> DataFrame:
    """Per (database, table, commit_ts): the events the copy rule above does not count (duplicates).

    The same numbering as :func:`multiset_deltas` (``ticdc_lake.apply.duplicates.multiset_duplicates``
    states it in plain Python); only commit TSOs with some are returned.
    """
    txn = Window.partitionBy("database", "table", "topic", "partition", "commit_ts").orderBy("offset", "idx")
    gap = F.lag("offset").over(txn)
    starts = F.when(gap.isNull() | (F.col("offset") > gap + 1), 1).otherwise(0)
    numbered = events.withColumn("starts", starts).withColumn(
        "copy", F.sum("starts").over(txn.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    )
    identity = ["database", "table", "topic", "partition", "commit_ts", "op", "b", "a"]
    return (
        numbered.select(*identity[:5], "op", "copy", image_key("before").alias("b"), image_key("after").alias("a"))
        .groupBy(*identity, "copy")
        .agg(F.count(F.lit(1)).alias("n"))
        .groupBy(*identity)
        .agg(F.sum("n").alias("n"), F.max("n").alias("kept"))
        .groupBy("database", "table", "commit_ts")
        .agg((F.sum("n") - F.sum("kept")).alias("duplicates"))
        .where(F.col("duplicates") > 0)
    )


def _deltas(counted: DataFrame) -> DataFrame:
    """Columns op, b, a (``image_key``), bc, ac (their carriers), times → one signed count per
    image, with its map and a record of it."""
    removed = counted.where(F.col("op").isin(Op.DELETE.value, Op.UPDATE.value) & F.col("b").isNotNull()).select(
        F.col("b").alias("image"), (-F.col("times")).alias("delta"), F.col("bc").alias("carrier")
    )
    added = counted.where(F.col("op").isin(Op.INSERT.value, Op.UPDATE.value) & F.col("a").isNotNull()).select(
        F.col("a").alias("image"), F.col("times").alias("delta"), F.col("ac").alias("carrier")
    )
    return (
        removed.unionByName(added)
        .groupBy("image")
        .agg(F.sum("delta").alias("delta"), _any_carrier("carrier"))
        .where(F.col("delta") != 0)
        .select(
            F.col("delta").cast("long").alias("delta"),
            *[F.col("carrier")[part].alias(part) for part in ("image", "record", "untyped", "schema_version")],
        )
    )


def multiset_source(
    deltas: DataFrame, target: DataFrame, columns: Sequence[TargetColumn], layouts: Sequence[VersionLayout] = ()
) -> DataFrame:
    """The MERGE source for a multiset table: typed columns, ``OP_COLUMN`` ('D' or 'I'), the count
    of unrepresentable values of the inserted rows, and ``DELTA``/``CURRENT`` on the 'D' rows for the
    ledger (rows inserted and deleted), with ``FROM_RECORD_COLUMN`` (1 where every image of the
    row was typed from its record) and ``RENDERED_COLUMN`` (the most values Spark rendered in one
    of its images). ``layouts``: the segment's versions', as
    ``record_projection.carried_projection`` reads the images' records (without: from the maps)."""
    names = [c.name for c in columns]
    typed = deltas.select(*carried_projection(columns, layouts), "delta")
    grouped = typed.groupBy(*[F.col(quote(n)) for n in names]).agg(
        F.sum("delta").alias("delta"),
        F.max(BAD_VALUES_COLUMN).alias(BAD_VALUES_COLUMN),
        F.min(FROM_RECORD_COLUMN).alias(FROM_RECORD_COLUMN),
        F.max(RENDERED_COLUMN).alias(RENDERED_COLUMN),
    )
    have = target.groupBy(*[F.col(quote(n)) for n in names]).agg(F.count(F.lit(1)).alias(CURRENT))
    g, h = grouped.alias("g"), have.alias("h")
    matched: Column = reduce(lambda x, y: x & y, [g[quote(n)].eqNullSafe(h[quote(n)]) for n in names])
    joined = g.join(h, matched, "left").select(
        *[g[quote(n)].alias(n) for n in names],
        g["delta"].alias(DELTA),
        F.coalesce(h[CURRENT], F.lit(0)).cast("long").alias(CURRENT),
        g[BAD_VALUES_COLUMN].alias(BAD_VALUES_COLUMN),
        g[FROM_RECORD_COLUMN].alias(FROM_RECORD_COLUMN),
        g[RENDERED_COLUMN].alias(RENDERED_COLUMN),
    )
    after = F.greatest(F.col(CURRENT) + F.col(DELTA), F.lit(0))
    plain = [F.col(quote(n)) for n in names]
    # One 'D' row per touched image (it matches nothing when the target has no copy): it carries the
    # counts the ledger needs.
    deletes = joined.select(
        *plain,
        F.lit("D").alias(OP_COLUMN),
        F.lit(0).alias(BAD_VALUES_COLUMN),
        F.col(DELTA),
        F.col(CURRENT),
        F.col(FROM_RECORD_COLUMN),
        F.col(RENDERED_COLUMN),
    )
    inserts = joined.select(
        *plain,
        F.explode(F.array_repeat(F.lit("I"), after.cast("int"))).alias(OP_COLUMN),
        F.col(BAD_VALUES_COLUMN),
        F.lit(None).cast("long").alias(DELTA),
        F.lit(None).cast("long").alias(CURRENT),
        F.lit(0).alias(FROM_RECORD_COLUMN),
        F.lit(0).alias(RENDERED_COLUMN),
    )
    return deletes.unionByName(inserts)
