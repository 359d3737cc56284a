"""The net-change rule (``ticdc_lake.apply.net_change``) as Spark DataFrame operations."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ticdc_lake.apply.net_change import OP_RANK
from ticdc_lake.events import Op


def _key_of(image: str, key: Sequence[str]) -> Column:
    if key:
        return F.struct(*[F.col(image)[k].alias(f"k{i}") for i, k in enumerate(key)])
    # No key (force-replicate tables): the whole row is the key.
    return F.array_sort(F.map_entries(F.col(image)))


def net_changes(events: DataFrame, key: Sequence[str], offset_ordered: bool = False) -> DataFrame:
    """One row per key: columns ``image`` (map of canonical text), ``op`` ('D' or 'U'), ``commit_ts``.

    ``events`` holds DML rows of one table and segment (columns op, before, after, commit_ts, topic,
    partition, offset, idx). Key-changing updates are split into delete + insert first.
    ``offset_ordered``: events carry no commit TSO, only the source position orders them.
    """
    changed = ~_key_of("before", key).eqNullSafe(_key_of("after", key)) if key else ~F.col("before").isNull()
    return _net(events, changed, lambda image: _key_of(image, key), [], offset_ordered).select(
        "image", "op", "commit_ts"
    )


def net_changes_by_table(events: DataFrame, keys: Mapping[tuple[str, str], Sequence[str]]) -> DataFrame:
    """:func:`net_changes` of several keyed tables in one job: the rule partitioned by (database,
    table, key) instead of by key, each table with its own key columns (``keys``, none empty).

    ``events`` holds the READY DML rows of whole windows of these tables (also columns database and
    table); the result has columns database, table, image, op, commit_ts, the same rows per table as
    :func:`net_changes` of that table's rows alone.
    """

    def key_of(image: str) -> Column:
        # Key values are canonical text whatever the column type: one array type for every table.
        value = F.lit(None).cast("array<string>")
        for (database, table), key in keys.items():
            mine = (F.col("database") == database) & (F.col("table") == table)
            value = F.when(mine, F.array(*[F.col(image)[k] for k in key])).otherwise(value)
        return value

    changed = ~key_of("before").eqNullSafe(key_of("after"))
    return _net(events, changed, key_of, ["database", "table"], False).select(
        "database", "table", "image", "op", "commit_ts"
    )


def _net(
    events: DataFrame,
    changed_key: Column,
    key_of: Callable[[str], Column],
    groups: Sequence[str],
    offset_ordered: bool,
) -> DataFrame:
    """The rule: candidates (deletes, upserts, the old image of a key-changing update), then the
    last per ``groups`` and key by commit TSO, deletes first, source position."""
    changed = (F.col("op") == Op.UPDATE.value) & changed_key
    position = [F.col(c) for c in ("commit_ts", "topic", "partition", "offset", "idx")]
    kept = [F.col(g) for g in groups]
    delete_rank, upsert_rank = OP_RANK[Op.DELETE], OP_RANK[Op.INSERT]
    deletes = events.where(F.col("op") == Op.DELETE.value).select(
        *kept, F.col("before").alias("image"), F.lit("D").alias("op"), F.lit(delete_rank).alias("rank"), *position
    )
    upserts = events.where(F.col("op").isin(Op.INSERT.value, Op.UPDATE.value)).select(
        *kept, F.col("after").alias("image"), F.lit("U").alias("op"), F.lit(upsert_rank).alias("rank"), *position
    )
    old_keys = events.where(changed).select(
        *kept, F.col("before").alias("image"), F.lit("D").alias("op"), F.lit(delete_rank).alias("rank"), *position
    )
    candidates = deletes.unionByName(upserts).unionByName(old_keys).withColumn("key", key_of("image"))
    by_tso = [] if offset_ordered else [F.col("commit_ts").desc(), F.col("rank").desc()]
    order = Window.partitionBy(*kept, F.col("key")).orderBy(
        *by_tso,
        F.col("topic").desc(),
        F.col("partition").desc(),
        F.col("offset").desc(),
        F.col("idx").desc(),
    )
    return candidates.withColumn("n", F.row_number().over(order)).where(F.col("n") == 1)
