"""The net-change rule (``ticdc_lake.apply.net_change``) as Spark DataFrame operations."""

from __future__ import annotations

from collections.abc import Sequence

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
    changed = F.col("op") == Op.UPDATE.value
    if key:
        changed = changed & ~_key_of("before", key).eqNullSafe(_key_of("after", key))
    else:
        changed = changed & ~F.col("before").isNull()
    position = [F.col(c) for c in ("commit_ts", "topic", "partition", "offset", "idx")]
    delete_rank, upsert_rank = OP_RANK[Op.DELETE], OP_RANK[Op.INSERT]
    deletes = events.where(F.col("op") == Op.DELETE.value).select(
        F.col("before").alias("image"), F.lit("D").alias("op"), F.lit(delete_rank).alias("rank"), *position
    )
    upserts = events.where(F.col("op").isin(Op.INSERT.value, Op.UPDATE.value)).select(
        F.col("after").alias("image"), F.lit("U").alias("op"), F.lit(upsert_rank).alias("rank"), *position
    )
    old_keys = events.where(changed).select(
        F.col("before").alias("image"), F.lit("D").alias("op"), F.lit(delete_rank).alias("rank"), *position
    )
    candidates = deletes.unionByName(upserts).unionByName(old_keys).withColumn("key", _key_of("image", key))
    by_tso = [] if offset_ordered else [F.col("commit_ts").desc(), F.col("rank").desc()]
    order = Window.partitionBy("key").orderBy(
        *by_tso,
        F.col("topic").desc(),
        F.col("partition").desc(),
        F.col("offset").desc(),
        F.col("idx").desc(),
    )
    return (
        candidates.withColumn("n", F.row_number().over(order)).where(F.col("n") == 1).select("image", "op", "commit_ts")
    )
