"""One MERGE of a segment's row events into a target table, shared by the TSO-ordered apply
(``table_apply``) and the offset-ordered one (``offset_merge``): the net changes (or, without a
key, the multiset counts), typed for the target's columns, the unrepresentable values and the key
bounds that let Iceberg prune the target, and the MERGE that commits ``props`` in its snapshot.

Into a keyed table that holds no row (created in this run, say) a MERGE could only insert its
non-delete source rows: those are written instead by an overwrite of the empty table, validated
as the MERGE is (serializable, from the snapshot found empty), so a commit by anyone else in
between fails it the same way (docs/apply-performance.md)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from ticdc_lake import failpoints
from ticdc_lake.apply.merge_sql import (
    BAD_VALUES_COLUMN,
    OP_COLUMN,
    TargetColumn,
    bound_literal,
    merge_statement,
    multiset_merge_statement,
)
from ticdc_lake.identifiers import quote
from ticdc_lake.spark import table_positions, target_tables
from ticdc_lake.spark.multiset_frame import CURRENT, DELTA, multiset_deltas, multiset_source
from ticdc_lake.spark.net_change_frame import net_changes
from ticdc_lake.spark.record_images import VersionLayout
from ticdc_lake.spark.record_projection import (
    FROM_RECORD_COLUMN,
    RENDERED_COLUMN,
    carried_projection,
    exact_texts,
)
from ticdc_lake.spark.target_tables import NoRows, TargetTable

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Typing:
    """How a MERGE source's rows were typed (``record_projection.carried_projection``)."""

    #: Rows (without a key: changed row images) typed from their records.
    from_records: int = 0
    #: Rows (changed row images).
    rows: int = 0
    #: Values written as Spark's rendering of their typed value (``RENDERED_COLUMN``).
    rendered: int = 0

    def counts(self) -> dict[str, int]:
        return {"typed_from_records": self.from_records, "net_changes": self.rows, "rendered_values": self.rendered}


def merge_changes(
    spark: SparkSession,
    target: TargetTable,
    dml: DataFrame,
    key: Sequence[str],
    columns: Sequence[TargetColumn],
    props: Mapping[str, str],
    *,
    offset_ordered: bool = False,
    layouts: Sequence[VersionLayout] = (),
    net: DataFrame | None = None,
) -> tuple[dict[str, int], int | None]:
    """MERGE ``dml`` into ``target`` committing ``props``; (rows inserted/updated/deleted,
    unrepresentable values, the source's net changes (without a key: the row images changed) and
    those typed from their records, the new snapshot id). ``net``: the net changes of ``dml`` by
    ``key`` computed already (``net_change_frame.net_changes_and_duplicates``), else computed here.
    ``layouts``: the layouts of the segment's versions; rows of those versions are typed from their
    records (``record_projection.carried_projection``), the others from their maps, and with a key,
    rows of those whose key is ``key`` are keyed by the key texts they carry."""
    empty = target_tables.no_rows(spark, target) if key else None
    if key:
        if net is None:
            keyed = [layout.version for layout in layouts if layout.key == tuple(key)]
            if len(keyed) < len(layouts) and not exact_texts(layouts, key):
                # Rows of the other versions that carry no map are keyed by their records' texts,
                # which for these key types may not be the key texts: every row is keyed alike.
                keyed = []
            net = net_changes(dml, key, offset_ordered=offset_ordered, key_versions=keyed, layouts=layouts)
        changes = net
        typed = changes.select(*carried_projection(columns, layouts), F.col("op").alias(OP_COLUMN))
        if empty is not None:
            return _into_empty(spark, typed, target, columns, props, empty)
        statement: Callable[..., str] = merge_statement
    else:
        typed_versions = [layout.version for layout in layouts]
        deltas = multiset_deltas(dml, dedupe_copies=not offset_ordered, typed_versions=typed_versions)
        typed = multiset_source(deltas, spark.table(target.sql_name), columns, layouts)
        statement = multiset_statement
    typed = typed.persist()
    multiset: tuple[int, int] | None = None
    typing = Typing()
    try:
        if key:
            bad, bounds, typing = bad_values_and_bounds(typed, key, columns)
            statement = partial(merge_statement, bounds=bounds)
        else:
            bad, multiset, typing = multiset_counts(typed)
        view = f"ticdc_changes_{abs(hash(target.display)) % 10**8}"
        typed.createOrReplaceTempView(view)
        failpoints.hit("apply.before_merge")
        with table_positions.committing(spark, dict(props)):
            failpoints.hit("apply.during_merge")
            spark.sql(statement(target.sql_name, view, columns, key))
    finally:
        typed.unpersist()
    failpoints.hit("apply.after_merge")
    snapshot_id, summary = target_tables.latest_snapshot(spark, target)
    counts = {
        "rows_inserted": int(summary.get("spark.merge-into.num-target-rows-inserted", 0)),
        "rows_updated": int(summary.get("spark.merge-into.num-target-rows-matched-updated", 0)),
        "rows_deleted": int(summary.get("spark.merge-into.num-target-rows-matched-deleted", 0)),
        "unrepresentable_values": bad,
        **typing.counts(),
    }
    _warn_rendered(target, typing)
    if multiset is not None:  # copies deleted and inserted again are not changes
        counts["rows_inserted"], counts["rows_deleted"] = multiset
    return counts, snapshot_id


def _into_empty(
    spark: SparkSession,
    typed: DataFrame,
    target: TargetTable,
    columns: Sequence[TargetColumn],
    props: Mapping[str, str],
    empty: NoRows,
) -> tuple[dict[str, int], int | None]:
    """:func:`merge_changes` into a keyed table that holds no row (:func:`insert_into_empty`; no key
    bounds, which only prune a MERGE's join). Where the table's writes do not shuffle, the write is
    the one Spark job and counts the unrepresentable values itself; where they do, the typed source
    is persisted and counted by a job before the write."""
    observed: Observation | None = None
    persisted: DataFrame | None = None
    if empty.write_shuffles:
        persisted = typed = typed.persist()
        bad, _, typing = bad_values_and_bounds(typed, (), columns)
    else:
        observed = Observation(f"ticdc_bad_values_{abs(hash(target.display)) % 10**8}")
        typed = typed.observe(
            observed,
            F.coalesce(F.sum(BAD_VALUES_COLUMN), F.lit(0)).alias("bad"),
            F.coalesce(F.sum(FROM_RECORD_COLUMN), F.lit(0)).alias("from_records"),
            F.count(F.lit(1)).alias("rows"),
            F.coalesce(F.sum(RENDERED_COLUMN), F.lit(0)).alias("rendered"),
        )
    try:
        failpoints.hit("apply.before_merge")
        with table_positions.committing(spark, dict(props)):
            failpoints.hit("apply.during_merge")
            insert_into_empty(typed, target, columns, empty)
    finally:
        if persisted is not None:
            persisted.unpersist()
    if observed is not None:
        found = observed.get
        bad = int(found["bad"])
        typing = Typing(int(found["from_records"]), int(found["rows"]), int(found["rendered"]))
    failpoints.hit("apply.after_merge")
    snapshot_id, summary = target_tables.latest_snapshot(spark, target)
    counts = {
        "rows_inserted": int(summary.get("added-records", 0)),
        "rows_updated": 0,
        "rows_deleted": 0,
        "unrepresentable_values": bad,
        **typing.counts(),
    }
    _warn_rendered(target, typing)
    return counts, snapshot_id


def _warn_rendered(target: TargetTable, typing: Typing) -> None:
    if typing.rendered:
        log.warning(
            "apply: %s: %d value(s) written as Spark's text of their typed value, which may differ from the text "
            "TiCDC sent: the table's column types are not those its schema history gives (was it altered outside "
            "the pipeline?); see docs/typed-row-images.md",
            target.display,
            typing.rendered,
        )


def insert_into_empty(typed: DataFrame, target: TargetTable, columns: Sequence[TargetColumn], empty: NoRows) -> None:
    """The MERGE of keyed net changes ``typed`` into a table that holds no row: its non-delete rows,
    written by an overwrite of the (empty) table that Iceberg validates as serializable from the
    snapshot found empty, so any commit since (rows someone else added) fails it as it fails a MERGE.

    An observation on ``typed`` (``_into_empty``'s count) sees every row, deletes included, in the
    write's own tasks when the table's writes do not shuffle (``NoRows.write_shuffles``): those are
    the tasks of the job's result stage, whose accumulator updates Spark applies once per partition,
    retried and speculative attempts included. Where the write shuffles, the rows are counted before
    (an observation in a map stage counts a re-run task again)."""
    rows = typed.where(F.col(OP_COLUMN) != "D").select(*[F.col(quote(c.name)) for c in columns])
    writer = rows.writeTo(target.sql_name).option("isolation-level", "serializable")
    if empty.snapshot_id is not None:
        writer = writer.option("validate-from-snapshot-id", str(empty.snapshot_id))
    writer.overwrite(F.lit(True))


def bad_values_and_bounds(
    typed: DataFrame, key: Sequence[str], columns: Sequence[TargetColumn]
) -> tuple[int, dict[str, tuple[str, str]], Typing]:
    """Unrepresentable values, per key column of a range-able type the source's (min, max) as SQL
    literals, and how its rows were typed (``record_projection.carried_projection``): one job,
    which also materializes the persisted source the MERGE then reads."""
    types = {c.name: c.iceberg_type for c in columns}
    ranged = [k for k in key if k in types]
    aggs = [F.sum(BAD_VALUES_COLUMN), F.sum(FROM_RECORD_COLUMN), F.count(F.lit(1)), F.sum(RENDERED_COLUMN)]
    aggs += [f(F.col(quote(k))) for k in ranged for f in (F.min, F.max)]
    row = typed.agg(*aggs).first()
    assert row is not None
    bounds: dict[str, tuple[str, str]] = {}
    for i, k in enumerate(ranged):
        low, high = bound_literal(row[4 + 2 * i], types[k]), bound_literal(row[5 + 2 * i], types[k])
        if low is not None and high is not None:
            bounds[k] = (low, high)
    return int(row[0] or 0), bounds, Typing(int(row[1] or 0), int(row[2]), int(row[3] or 0))


def multiset_statement(target: str, source_view: str, columns: Sequence[TargetColumn], key: Sequence[str]) -> str:
    return multiset_merge_statement(target, source_view, columns)


def multiset_counts(source: DataFrame) -> tuple[int, tuple[int, int], Typing]:
    """(unrepresentable values, (copies added, copies removed), how the changed row images were
    typed) of a multiset MERGE source."""
    after = F.greatest(F.col(CURRENT) + F.col(DELTA), F.lit(0))
    touched = F.col(OP_COLUMN) == "D"  # one 'D' row per changed row image
    row = source.agg(
        F.sum(F.when(F.col(OP_COLUMN) == "I", F.col(BAD_VALUES_COLUMN)).otherwise(0)),
        F.sum(F.greatest(after - F.col(CURRENT), F.lit(0))),
        F.sum(F.greatest(F.col(CURRENT) - after, F.lit(0))),
        F.sum(F.when(touched, F.col(FROM_RECORD_COLUMN)).otherwise(0)),
        F.sum(F.when(touched, 1).otherwise(0)),
        F.sum(F.when(touched, F.col(RENDERED_COLUMN)).otherwise(0)),
    ).first()
    assert row is not None
    typing = Typing(int(row[3] or 0), int(row[4] or 0), int(row[5] or 0))
    return int(row[0] or 0), (int(row[1] or 0), int(row[2] or 0)), typing
