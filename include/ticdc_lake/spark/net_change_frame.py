"""The net-change rule (``ticdc_lake.apply.net_change``) as Spark DataFrame operations."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ticdc_lake.apply.net_change import OP_RANK
from ticdc_lake.events import Op
from ticdc_lake.spark.record_images import VersionLayout, carries_records
from ticdc_lake.spark.record_projection import keys_from_records

#: The image columns of a net change: the text map, its typed carrier (``record_images``) and its version.
IMAGE_COLUMNS = ("image", "record", "untyped", "schema_version")
#: (image column, suffix of the event's column for it); ``key_texts``: the image's key texts.
_PARTS = (("image", ""), ("record", "_record"), ("untyped", "_untyped"), ("key_texts", "_key"))


def _key_value(
    image: str,
    texts: str,
    record: str,
    untyped: str,
    key: Sequence[str],
    trusted: Column,
    layouts: Sequence[VersionLayout] = (),
) -> Column:
    """An image's key: the texts of ``key`` in the map (canonical text whatever the column type: one
    array type for every table), or, where ``trusted`` (the row's version has the key ``key``) and
    the row carries them, the key texts decode wrote beside its record, which are those texts; a
    row that carries no map but a record of one of ``layouts``' versions, the texts read from the
    record (``record_projection.keys_from_records``). The four are column names."""
    looked_up = F.array(*[F.col(image)[k] for k in key])
    chosen = F.when(trusted & F.col(texts).isNotNull(), F.col(texts))
    if layouts:
        read = keys_from_records(record, untyped, layouts, key)
        chosen = chosen.when(F.col(image).isNull() & F.col(record).isNotNull(), read)
    return chosen.otherwise(looked_up)


def _side_key(side: str, key: Sequence[str], trusted: Column, layouts: Sequence[VersionLayout] = ()) -> Column:
    image, record, untyped, texts = (f"{side}{part}" for _, part in _PARTS)
    return _key_value(image, texts, record, untyped, key, trusted, layouts)


def _key_changed(key: Sequence[str], trusted: Column, layouts: Sequence[VersionLayout] = ()) -> Column:
    """Whether an event's before and after images have different keys (``_key_value``)."""
    return ~_side_key("before", key, trusted, layouts).eqNullSafe(_side_key("after", key, trusted, layouts))


def net_changes(
    events: DataFrame,
    key: Sequence[str],
    offset_ordered: bool = False,
    key_versions: Collection[int] = (),
    layouts: Sequence[VersionLayout] = (),
) -> DataFrame:
    """One row per value of the (non-empty) ``key``: columns ``image`` (map of canonical text; NULL
    where the winner has none or left it behind for its record), the same image's typed carrier (``record``,
    ``untyped``: NULL where the row has none) and ``schema_version``, ``op`` ('D' or 'U'),
    ``commit_ts``.

    ``events`` holds DML rows of one table and segment (columns op, before, after, their carrier
    ``before_record`` ... ``after_key``, schema_version, commit_ts, topic, partition, offset, idx).
    Key-changing updates are split into delete + insert first. ``key_versions``: the schema
    versions whose handle key is ``key``; their rows' keys are the key texts they carry, the other
    rows' are looked up in their maps, or, for a row that carries no map, read from its record
    with its version's layout (one of ``layouts``). ``offset_ordered``: events carry no commit
    TSO, only the source position orders them.
    """
    if not key:
        raise ValueError("net_changes needs the key columns: rows without a key merge as multisets (multiset_frame)")
    trusted = F.col("schema_version").isin(sorted(key_versions)) if key_versions else F.lit(False)
    changed = _key_changed(key, trusted, layouts)
    key_of = partial(_key_value, key=key, trusted=trusted, layouts=layouts)
    ranked = _net(events, changed, key_of, [], offset_ordered, trusted=trusted)
    return ranked.where(F.col("n") == 1).select(*IMAGE_COLUMNS, _op(), "commit_ts")


def net_changes_by_table(
    events: DataFrame, keys: Mapping[tuple[str, str], Sequence[str]], texts_of: Collection[tuple[str, str]] = ()
) -> DataFrame:
    """:func:`net_changes` of several keyed tables in one job: the rule partitioned by (database,
    table, key) instead of by key, each table with its own key columns (``keys``, none empty).
    ``texts_of``: the tables whose rows' keys are the key texts they carry
    (:func:`net_changes_and_duplicates`).

    ``events`` holds the READY DML rows of whole windows of these tables (also columns database and
    table); the result has columns database, table, the image columns (``IMAGE_COLUMNS``), op,
    commit_ts, the same rows per table as :func:`net_changes` of that table's rows alone.
    """
    return (
        net_changes_and_duplicates(events, keys, texts_of)
        .where(F.col("winner"))
        .select("database", "table", *IMAGE_COLUMNS, "op", "commit_ts")
    )


def _image_parts(image: Column, record: Column, untyped: Column, carried: Column) -> list[Column]:
    """What identifies an image in a hash: its typed record and untyped texts where the row carries
    them, else its map (entry order is the writer's, the same for every copy of a message)."""
    by_record = [record.isNull(), record, F.map_keys(untyped), F.map_values(untyped)]
    by_map = [image.isNull(), F.map_keys(image), F.map_values(image)]
    return [F.when(carried, part) for part in by_record] + [F.when(~carried, part) for part in by_map]


def identity_hash() -> Column:
    """A row event's identity for the keyed duplicate rule (``ticdc_lake.apply.duplicates``): a
    64-bit hash of commit TSO, op and both images (``_image_parts``)."""
    carried = carries_records()
    images = [
        c
        for side in ("before", "after")
        for c in _image_parts(F.col(side), F.col(f"{side}_record"), F.col(f"{side}_untyped"), carried)
    ]
    return F.xxhash64(F.col("commit_ts"), F.col("op"), *images)


def net_changes_and_duplicates(
    events: DataFrame, keys: Mapping[tuple[str, str], Sequence[str]], texts_of: Collection[tuple[str, str]] = ()
) -> DataFrame:
    """:func:`net_changes_by_table` and the keyed rule's duplicates from the same read of ``events``.
    ``texts_of``: the tables every version of whose rows has the table's key; a row of one of those
    that carries key texts (decode wrote them beside its record) is keyed by them, any other row by
    its map.

    Columns database, table, the image columns (``IMAGE_COLUMNS``), op, commit_ts, ``winner`` (the
    net change of its key: the rows of :func:`net_changes_by_table`) and ``duplicate`` (the event
    repeats one of an earlier source position: same commit TSO, op and images,
    ``ticdc_lake.apply.duplicates``); a row that is only a duplicate carries no image. Copies of one
    event have the same key, commit TSO and rank, so they meet among the peers of the net-change
    window, which the window's sort already ordered: no second read, shuffle or sort. Per table and
    commit TSO, the ``duplicate`` rows are the rule's count. ``events`` holds rows of the tables of
    ``keys`` only.
    """
    by_key: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for name, key in keys.items():
        by_key.setdefault(tuple(key), []).append(name)

    def per_key(value: Callable[[tuple[str, ...]], Column]) -> Column:
        # Tables that share their key columns share one expression; the last key needs no test.
        *tested, (_, last) = [(names, value(key)) for key, names in by_key.items()]
        chosen = last
        for names, this in reversed(tested):
            mine = F.lit(False)
            for database, table in names:
                mine = mine | ((F.col("database") == database) & (F.col("table") == table))
            chosen = F.when(mine, this).otherwise(chosen)
        return chosen

    trusted = F.lit(True)
    for database, table in (name for name in keys if name not in texts_of):
        trusted = trusted & ~((F.col("database") == database) & (F.col("table") == table))

    def key_of(image: str, texts: str, record: str, untyped: str) -> Column:
        return per_key(lambda key: _key_value(image, texts, record, untyped, key, trusted))

    changed = per_key(lambda key: _key_changed(key, trusted))
    ranked = _net(events, changed, key_of, ["database", "table"], False, True, trusted=trusted)
    # Peers: one key's candidates at one commit TSO and rank; they are neighbours in the window's
    # order. Only a candidate with a peer can repeat one, so only those hash their image (with the
    # rest of the event's identity, ``rest``) and take part in the second window, which the
    # winners alone pass through otherwise. A primary candidate (not the old key of a key-changing
    # update, whose ``rest`` is null) is a duplicate when a peer of the same identity ranks after it
    # (n larger: an earlier source position, or the same one, which row_number still tells apart).
    image_parts = _image_parts(F.col("image"), F.col("record"), F.col("untyped"), F.col("record").isNotNull())
    found = ranked.where((F.col("n") == 1) | F.col("peered")).withColumn(
        "same", F.when(F.col("peered") & F.col("rest").isNotNull(), F.xxhash64("rest", *image_parts))
    )
    peers = (
        Window.partitionBy("bucket", "database", "table", "key")
        .orderBy(F.col("commit_ts").desc(), F.col("rank").desc())
        .rangeBetween(Window.currentRow, Window.currentRow)
    )
    seen = F.collect_list(F.when(F.col("same").isNotNull(), F.struct("same", "n"))).over(peers)
    later = F.exists(seen, lambda p: (p["same"] == F.col("same")) & (p["n"] > F.col("n")))
    flagged = found.withColumn("duplicate", F.col("same").isNotNull() & later).withColumn("winner", F.col("n") == 1)
    return flagged.where(F.col("winner") | F.col("duplicate")).select(
        "database",
        "table",
        *[F.when(F.col("winner"), F.col(c)).alias(c) for c in IMAGE_COLUMNS],
        _op(),
        "commit_ts",
        "winner",
        "duplicate",
    )


def _candidate_parts(side: str, trusted: Column | None) -> list[Column]:
    """A candidate's ``_PARTS`` from the event's ``side`` image: without its map where ``trusted``
    and the row carries the image's record and key texts (``_net``)."""
    image, record, untyped, texts = (F.col(f"{side}{part}") for _, part in _PARTS)
    if trusted is not None:
        image = F.when(~trusted | record.isNull() | texts.isNull(), image)
    return [image, record, untyped, texts]


def _op() -> Column:
    return F.when(F.col("rank") == OP_RANK[Op.DELETE], F.lit("D")).otherwise(F.lit("U")).alias("op")


def _net(
    events: DataFrame,
    changed_key: Column,
    key_of: Callable[[str, str, str, str], Column],
    groups: Sequence[str],
    offset_ordered: bool,
    identity: bool = False,
    trusted: Column | None = None,
) -> DataFrame:
    """The rule: candidates (deletes, upserts, the old image of a key-changing update), then ranked
    per ``groups`` and key by commit TSO, deletes first, source position (column ``n``: 1 is the
    net change). Columns ``groups``, commit_ts, the image columns (``IMAGE_COLUMNS``), rank (op:
    ``_op``), key, n. ``identity``: the
    candidates also carry ``rest`` (an event's identity but its candidate's image: a hash of op and
    the other image; null for the old key of a key-changing update) and ``peered`` (whether a
    candidate of the same key, commit TSO and rank is next to it in the window's order).
    ``trusted``: where the rows are keyed by the key texts they carry; a candidate of such a row
    that carries its record and key texts leaves its map behind (``image`` NULL), since its key
    is its texts and the MERGE source types it from its record
    (``record_projection.carried_projection``): the window's sort and the cache move records, not
    maps. Where not given, every candidate keeps its map.

    Each event gives its one or two candidates in one pass (``inline`` of an array), so ``events``
    is read once: a union of three selections of it would scan its source, and decode its images,
    three times. The window is partitioned by a hash of groups and key first (column ``bucket``),
    so its sort compares one long for almost every pair of rows."""
    op = F.col("op")
    changed = (op == Op.UPDATE.value) & changed_key
    position = [F.col(c) for c in ("commit_ts", "topic", "partition", "offset", "idx")]
    kept = [F.col(g) for g in groups]
    delete_rank, upsert_rank = OP_RANK[Op.DELETE], OP_RANK[Op.INSERT]
    deleted = op == Op.DELETE.value
    sides = {side: _candidate_parts(side, trusted) for side in ("before", "after")}
    own = [
        *[
            F.when(deleted, b).otherwise(a).alias(c)
            for (c, _), b, a in zip(_PARTS, sides["before"], sides["after"], strict=True)
        ],
        F.col("schema_version"),
        F.when(deleted, F.lit(delete_rank)).otherwise(F.lit(upsert_rank)).alias("rank"),
    ]
    old = [
        *[part.alias(c) for (c, _), part in zip(_PARTS, sides["before"], strict=True)],
        F.col("schema_version"),
        F.lit(delete_rank).alias("rank"),
    ]
    if identity:
        image, record, untyped = (
            F.when(deleted, F.col(f"after{part}")).otherwise(F.col(f"before{part}")) for _, part in _PARTS[:3]
        )
        own.append(F.xxhash64(op, *_image_parts(image, record, untyped, carries_records())).alias("rest"))
        old.append(F.lit(None).cast("bigint").alias("rest"))
    both = F.when(changed, F.array(F.struct(*own), F.struct(*old))).otherwise(F.array(F.struct(*own)))
    candidates = (
        events.where(op.isin(Op.DELETE.value, Op.INSERT.value, Op.UPDATE.value))
        .select(*kept, *position, F.inline(both))
        .withColumn("key", key_of("image", "key_texts", "record", "untyped"))
        .withColumn("bucket", F.xxhash64(*kept, F.col("key")))
    )
    by_tso = [] if offset_ordered else [F.col("commit_ts").desc(), F.col("rank").desc()]
    order = Window.partitionBy(F.col("bucket"), *kept, F.col("key")).orderBy(
        *by_tso,
        F.col("topic").desc(),
        F.col("partition").desc(),
        F.col("offset").desc(),
        F.col("idx").desc(),
    )
    ranked = [F.row_number().over(order).alias("n")]
    if identity:  # the same window operator: no second pass over the sorted rows
        ts, rank = F.col("commit_ts"), F.col("rank")
        previous = F.lag(ts).over(order).eqNullSafe(ts) & F.lag(rank).over(order).eqNullSafe(rank)
        following = F.lead(ts).over(order).eqNullSafe(ts) & F.lead(rank).over(order).eqNullSafe(rank)
        ranked.append((previous | following).alias("peered"))
    return candidates.select("*", *ranked)
