"""Applying one table's DML, segment by segment, each with one MERGE.

A segment is the table's DML with ``position < commit_ts <= upper``: the run cuts the window at
each DDL of the table (``ticdc_lake.spark.ddl_sequence``). The MERGE writes the Iceberg table's
current columns (a column kept after DROP COLUMN gets NULL, a column kept as string gets the
canonical text) and commits ``upper`` as the applied position in the same snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from decimal import Decimal

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from ticdc_lake import table_markers
from ticdc_lake.apply.merge_sql import (
    TargetColumn,
)
from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark import table_positions, target_tables
from ticdc_lake.spark.ambiguous_frame import (
    ambiguous_counts,
    counts_need_rows,
    reading_of,
    timestamp_columns,
    warn,
)
from ticdc_lake.spark.local_frames import local_frame
from ticdc_lake.spark.multiset_frame import copy_duplicates
from ticdc_lake.spark.net_change_frame import IMAGE_COLUMNS, identity_hash, net_changes_and_duplicates
from ticdc_lake.spark.record_images import TableLayouts, VersionLayout, foreign_layouts, with_carrier
from ticdc_lake.spark.segment_merge import merge_changes
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.table_window import SchemaVersions, TableWindow
from ticdc_lake.spark.target_tables import TargetTable

log = logging.getLogger(__name__)

SNAPSHOT_PROPERTY = table_positions.SNAPSHOT_PROPERTY


def read_position(spark: SparkSession, system: SystemTables, window: TableWindow, names: dict[str, int]) -> None:
    """The table's applied position (Iceberg metadata, no Spark job); ``names``: the run's name positions.
    A table another pipeline applies to is held (``target_tables.foreign_note``)."""
    target = window.target_table()
    window.target = target.display
    applied, owner = table_positions.position_and_owner(spark, system, target, names)
    window.applied_ts = window.position = window.upper = applied
    if (note := target_tables.foreign_note(target, owner, window.pipeline.id)) is not None:
        window.hold(note)


#: Columns of ``change_events`` that applying rows does not read (kept out of the run's cache).
#: The typed record carrier (``arrow_decode.image_records``) is read: the records and their untyped
#: texts type the MERGE source (``record_projection.carried_projection``), the key texts key the
#: net changes (``net_change_frame``).
_UNUSED = ("column_types", "ddl_type", "ddl_query", "table_schema", "pre_table_schema", "schema_error")


def prepare_windows(
    spark: SparkSession,
    windows: Sequence[TableWindow],
    events: DataFrame,
    run_id: str,
    group: Callable[[Sequence[TableWindow], DataFrame], None] | None = None,
    *,
    identity: bool | None = None,
    layouts: TableLayouts | None = None,
) -> DataFrame | None:
    """Count, for all tables in one Spark job, what each will and will not apply.

    Per table (positions read already): replays (this run's row events at or below the position),
    row events without a commit TSO, the first PENDING commit TSO, and the READY row events above
    the position with their schema versions, so a segment covering them needs no job of its own
    and a table without any needs none at all. When several tables have rows to apply, those rows
    are cached once (sorted by table, so each table's scan skips the other tables' batches);
    the caller unpersists the returned frame. ``group``, when several tables have rows: called with
    the windows and their READY rows before the cache, it may give tables their grouped net changes
    (:func:`group_net_changes`, ``TableWindow.net``); only the other tables' rows are cached.
    The keyed rule's duplicates (``TableWindow.duplicates``): with ``identity`` (default: fewer than
    two windows; the caller knows better, from the tables with events), from the same job (a hash of
    each READY row's images); else the counts read no image and each table's duplicates come from
    the read of its images that computes its net changes (grouped), or from one job over the other
    tables' READY rows (which fills their cache).
    ``layouts``: per table, the layouts of its versions; READY rows decoded without the typed record
    carrier (before it existed) get it here (``record_images.with_carrier``), so every copy of one
    message carries the same representation when the duplicate rules compare them. Only the tables
    that have such rows get the expression (the counts job counts them; one table: always). A
    table whose rows carry records written with another layout than ``layouts`` gives their
    version is held whole (``record_images.foreign_layouts``).
    """
    live = [w for w in windows if not w.failed]
    if not live:
        return None
    positions = local_frame(
        spark,
        [(w.database, w.table, Decimal(w.applied_ts)) for w in live],
        "`database` STRING, `table` STRING, applied DECIMAL(20,0)",
    )
    joined = events.join(F.broadcast(positions), ["database", "table"])
    ready = (F.col("kind") == "DML") & (F.col("commit_ts") > F.col("applied")) & (F.col("status") == "READY")
    # One table cannot be grouped: its duplicates come from this job, as a hash of every READY row's
    # images. With several, this job reads no image (only whether the records are there): the grouped
    # tables' duplicates come from the read that computes their net changes (group_net_changes), the
    # others' from _keyed_duplicates.
    identity = len(live) < 2 if identity is None else identity
    given, layouts = layouts, layouts or {}
    if identity and (mine := {n: layouts[n] for w in live if (n := (w.database, w.table)) in layouts}):
        joined = with_carrier(joined, mine)  # its duplicates are found in the counts job: carrier first
    stats = _stats(joined, ready, run_id, identity)
    rows = joined.where(ready).drop("applied", *_UNUSED)
    if not identity:
        bare = {n: layouts[n] for n, r in stats.items() if r["uncarried"] and n in layouts}
        if bare:
            log.info("apply: %d table(s) with rows decoded without records: %s", len(bare), sorted(bare))
            rows = with_carrier(rows, bare)
    rows = rows.drop("record_layout")  # only the counts job reads it (_check_layouts)
    busy = [w for w in live if (r := stats.get((w.database, w.table))) is not None and r["ready"]]
    for w in live:
        r = stats.get((w.database, w.table))
        if r is not None:
            w.replays, w.unordered, w.ready = int(r["replays"]), int(r["unordered"]), int(r["ready"])
            first = r["pending"]
            w.pending_ts = int(first["ts"]) if first is not None else None
            w.pending_reason = first["schema_error"] if first is not None else None
            w.ready_versions = tuple(sorted(int(v) for v in r["versions"]))
            w.last_ready = int(r["last_ready"] or 0)
            w.first_ready = int(r["first_ready"] or 0)
            for ts_, extra in r["duplicates"]:
                w.duplicates[int(ts_)] = w.duplicates.get(int(ts_), 0) + int(extra)
            _check_layouts(w, r["layouts"], given)
        else:
            w.ready = 0
        if w.unordered:
            log.warning("apply: %s.%s: %s", w.database, w.table, w.unordered_note())
    if group is not None and len(busy) > 1:
        group(live, rows)
    # The tables whose net changes were grouped read their rows no more: the rest share a cache.
    rest = [w for w in busy if w.net is None]
    cached = (
        rows.sortWithinPartitions("database", "table").persist(StorageLevel.MEMORY_AND_DISK) if len(rest) > 1 else None
    )
    if not identity:
        _keyed_duplicates(spark, rest, cached if cached is not None else rows)
    for w in live:
        w.events = (cached if cached is not None else rows).where(
            (F.col("database") == w.database) & (F.col("table") == w.table)
        )
    _copy_duplicates(spark, [w for w in live if w.duplicates], cached if cached is not None else rows)
    return cached


def _check_layouts(window: TableWindow, found: Sequence[Row], layouts: TableLayouts | None) -> None:
    """Hold the whole window when its rows carry records of a layout this release does not read
    them with (``layouts`` None: the caller gives none, nothing is checked)."""
    if layouts is None or not found:
        return
    name = (window.database, window.table)
    pairs = [(int(version), int(fingerprint)) for version, fingerprint in found]
    note = foreign_layouts(window.pipeline.id, f"{window.database}.{window.table}", pairs, layouts.get(name, ()))
    if note is not None and (window.hold_at is None or window.hold_at > window.position):
        window.hold_at, window.hold_reason = window.position, note


def _stats(joined: DataFrame, ready: Column, run_id: str, identity: bool) -> dict[tuple[str, str], Row]:
    """Per table: replays, unordered and READY rows, the first PENDING row, the READY rows' schema
    versions and lowest and highest commit TSO, the READY rows without a record (``uncarried``), the
    (version, layout fingerprint) pairs of the records (``layouts``); with
    ``identity`` also the keyed rule's duplicates
    (column ``duplicates``: (commit TSO, count) structs), else an empty list."""
    ts, dml = F.col("commit_ts"), F.col("kind") == "DML"
    fresh = ts > F.col("applied")
    bare = ready & F.col("before_record").isNull() & F.col("after_record").isNull()
    # The layouts the READY rows' records were written with (record_images.foreign_layouts).
    written = F.collect_set(
        F.when(ready & F.col("record_layout").isNotNull(), F.struct(F.col("schema_version"), F.col("record_layout")))
    )
    replay = dml & (F.col("run_id") == run_id) & (ts <= F.col("applied")) & (ts > 0)
    per_row = [
        F.count(F.when(replay, 1)).alias("replays"),
        F.count(F.when(dml & (ts == 0), 1)).alias("unordered"),
        F.min(F.when(fresh & (F.col("status") == "PENDING"), F.struct(ts.alias("ts"), "schema_error"))).alias(
            "pending"
        ),
    ]
    if not identity:
        found = joined.groupBy("database", "table").agg(
            *per_row,
            F.count(F.when(ready, 1)).alias("ready"),
            F.count(F.when(bare, 1)).alias("uncarried"),
            written.alias("layouts"),
            F.collect_set(F.when(ready, F.col("schema_version"))).alias("versions"),
            F.max(F.when(ready, ts)).alias("last_ready"),
            F.min(F.when(ready, ts)).alias("first_ready"),
            F.array().cast("array<struct<ts:decimal(20,0),n:bigint>>").alias("duplicates"),
        )
        return {(r["database"], r["table"]): r for r in found.collect()}
    # Level 1 groups READY rows by identity (net_change_frame.identity_hash), so level 2 also finds the
    # duplicates (ticdc_lake.apply.duplicates); the other rows collapse into one group per table.
    same = F.when(ready, identity_hash()).alias("same")
    n, at = F.col("ready"), F.col("ts")
    found = (
        joined.groupBy("database", "table", same)
        .agg(
            *per_row,
            F.count(F.when(ready, 1)).alias("ready"),
            F.count(F.when(bare, 1)).alias("uncarried"),
            written.alias("layouts"),
            F.max(F.when(ready, F.col("schema_version"))).alias("version"),
            F.max(F.when(ready, ts)).alias("ts"),
            F.min(F.when(ready, ts)).alias("first"),
        )
        .groupBy("database", "table")
        .agg(
            F.sum("replays").alias("replays"),
            F.sum("unordered").alias("unordered"),
            F.min("pending").alias("pending"),
            F.sum(n).alias("ready"),
            F.sum("uncarried").alias("uncarried"),
            F.array_distinct(F.flatten(F.collect_list("layouts"))).alias("layouts"),
            F.collect_set(F.when(n > 0, F.col("version"))).alias("versions"),
            F.max(at).alias("last_ready"),
            F.min("first").alias("first_ready"),
            F.collect_list(F.when(n > 1, F.struct(at, n - 1))).alias("duplicates"),
        )
    )
    return {(r["database"], r["table"]): r for r in found.collect()}


def _keyed_duplicates(spark: SparkSession, windows: Sequence[TableWindow], rows: DataFrame) -> None:
    """The keyed rule's duplicates of ``windows`` (tables whose net changes were not grouped) from
    their READY ``rows``: one job, none when there is no such table."""
    if not windows:
        return
    names = local_frame(spark, [(w.database, w.table) for w in windows], "`database` STRING, `table` STRING")
    found = (
        rows.join(F.broadcast(names), ["database", "table"], "left_semi")
        .groupBy("database", "table", "commit_ts", identity_hash().alias("same"))
        .count()
        .where(F.col("count") > 1)
        .groupBy("database", "table", "commit_ts")
        .agg(F.sum(F.col("count") - 1).alias("extra"))
    )
    by_name = {(w.database, w.table): w for w in windows}
    for r in found.collect():
        by_name[(r["database"], r["table"])].duplicates[int(r["commit_ts"])] = int(r["extra"])


def _copy_duplicates(spark: SparkSession, windows: Sequence[TableWindow], rows: DataFrame) -> None:
    """The multiset rule's duplicates at the commit TSOs where the keyed rule found some: a job only
    when a window repeats an event (at-least-once redelivery), over those transactions only."""
    if not windows:
        return
    found = [(w.database, w.table, Decimal(ts)) for w in windows for ts in w.duplicates]
    where = local_frame(spark, found, "`database` STRING, `table` STRING, commit_ts DECIMAL(20,0)")
    by_name = {(w.database, w.table): w for w in windows}
    for r in copy_duplicates(rows.join(F.broadcast(where), ["database", "table", "commit_ts"], "left_semi")).collect():
        by_name[(r["database"], r["table"])].copy_duplicates[int(r["commit_ts"])] = int(r["duplicates"])


def group_net_changes(
    spark: SparkSession,
    windows: Sequence[TableWindow],
    rows: DataFrame,
    histories: Mapping[tuple[str, str], SchemaVersions],
    cut: Mapping[tuple[str, str], Collection[int]],
) -> DataFrame | None:
    """The net changes of every table whose READY rows all go into one MERGE, in one Spark job.

    A table qualifies when its rows above the position form one segment: no DDL of the run cuts
    it (``cut``: per table, and per database as (database, ""), the commit TSOs of the run's DDLs;
    one between its first and last READY row cuts, one before them such as the table's CREATE or
    after them does not), no hold or PENDING row comes
    before its last READY row, its rows' schema versions exist with the same columns and its newest
    one has a key (keyless tables follow the multiset rule, per table) that every one of them
    carries as its key texts (``SchemaVersions.layouts``: its rows are keyed by those, so a row
    that carries no map is keyed too; the others are keyed per segment), and its MERGE needs no scan
    of its rows for ambiguous TIMESTAMP values (``ambiguous_frame.counts_need_rows``). Their net changes are
    computed grouped by table and key (``net_change_frame.net_changes_and_duplicates``, which also
    finds their duplicates, ``TableWindow.duplicates``) from ``rows`` (the READY rows of
    :func:`prepare_windows`) and persisted once, by the job that collects the duplicates; each
    table's MERGE then reads its part (``TableWindow.net``) instead of a job of its own. Used only
    when at least two tables qualify; the caller unpersists the returned frame.
    """
    keys: dict[tuple[str, str], tuple[str, ...]] = {}
    texts_of: list[tuple[str, str]] = []  # the tables whose rows are keyed by the key texts they carry
    for w in windows:
        name = (w.database, w.table)
        if w.failed or w.held or not w.ready:
            continue
        if any(w.first_ready <= ts <= w.last_ready for n in (name, (w.database, "")) for ts in cut.get(n, ())):
            continue
        if (w.hold_at is not None and w.hold_at < w.last_ready) or (
            w.pending_ts is not None and w.pending_ts <= w.last_ready
        ):
            continue
        history = histories.get(name, SchemaVersions())
        used = list(w.ready_versions)
        if not used or any(v not in history.by_version for v in used):
            continue
        schema = history.by_version[used[-1]]
        key = tuple(schema.handle_key())
        # A table whose MERGE counts ambiguous TIMESTAMP values reads its rows anyway: it keeps them cached.
        if counts_need_rows(schema, w.pipeline.codec.server_time_zone, reading_of(w.pipeline.protocol)):
            continue
        # Only tables whose rows are keyed by their key texts: a row of another may carry no map.
        texts = all(v in history.layouts and history.layouts[v].key == key for v in used)
        if key and texts and _check_versions(used, history, schema) is None:
            keys[name] = key
            texts_of.append(name)
    if len(keys) < 2:
        return None
    names = local_frame(spark, list(keys), "`database` STRING, `table` STRING")
    mine = rows.join(F.broadcast(names), ["database", "table"], "left_semi")
    net = net_changes_and_duplicates(mine, keys, texts_of).persist(StorageLevel.MEMORY_AND_DISK)
    by_name = {name: w for w in windows if (name := (w.database, w.table)) in keys}
    for name, w in by_name.items():
        w.net_key = keys[name]
        w.net = net.where((F.col("database") == w.database) & (F.col("table") == w.table) & F.col("winner")).select(
            *IMAGE_COLUMNS, "op", "commit_ts"
        )
    # This job fills the cache; its duplicates are the keyed rule's, counted in the same read.
    found = net.where(F.col("duplicate")).groupBy("database", "table", "commit_ts").count().collect()
    for r in found:
        by_name[(r["database"], r["table"])].duplicates[int(r["commit_ts"])] = int(r["count"])
    return net


def apply_segment(spark: SparkSession, window: TableWindow, upper: int, history: SchemaVersions) -> None:
    """Apply the table's ready DML with ``position < commit_ts <= upper`` (less when held)."""
    if window.held or window.failed or window.events is None:
        return
    if window.hold_at is not None and window.hold_at <= upper:
        upper = window.hold_at
        window.hold(window.hold_reason)
    if window.pending_ts is not None and window.pending_ts <= upper:
        upper = window.pending_ts - 1
        window.hold(
            window.pending_reason
            or f"DML at commit ts {window.pending_ts} waits for its table schema version (no BOOTSTRAP or DDL seen yet)"
        )
    if upper <= window.position:
        return
    segment = window.events.where((F.col("commit_ts") > window.position) & (F.col("commit_ts") <= upper))
    dml = segment.where((F.col("kind") == "DML") & (F.col("status") == "READY"))
    whole = False  # whether the segment holds all the window's READY rows (then its net changes may be grouped)
    if window.ready is not None and (window.position >= window.last_ready or upper < window.first_ready):
        used, events_in = [], 0  # every READY row of the window is at or below the position, or above upper
    elif window.ready is not None and window.position < window.first_ready and upper >= window.last_ready:
        # The segment holds all of them (a DDL before the first, such as the table's CREATE, cut none off).
        used, events_in = list(window.ready_versions), window.ready
        whole = True
    else:
        # One job: the segment's schema versions and its row count.
        found = dml.groupBy("schema_version").count().collect()
        used = sorted(int(r[0]) for r in found if r[0] is not None)
        events_in = sum(int(r[1]) for r in found)
    schema = _schema_for(window, used, history, upper)
    if events_in == 0:
        window.position = window.upper = upper
        return
    if schema is None:
        window.hold(
            f"{events_in} row event(s) up to commit ts {upper} have no table schema: no CREATE TABLE, BOOTSTRAP "
            "or readable DDL of this table was seen"
        )
        return
    mismatch = _check_versions(used, history, schema)
    if mismatch is not None:
        window.hold(mismatch)
        return
    target = window.target_table()
    if not target_tables.exists(spark, target):
        target_tables.create(spark, target, schema, window.pipeline.id)
        log.info("apply: created %s (key %s)", target.display, list(schema.handle_key()) or "whole row")
    current = table_positions.iceberg_columns(spark, target) or []
    names = {c.name.lower() for c in current}
    missing = [c.name for c in schema.columns if c.name.lower() not in names]
    if missing:
        window.hold(
            f"column(s) {missing} of upstream schema version {schema.version} are not in {target.display}: a DDL "
            f"that adds them was not applied; rows from commit ts {window.position + 1} wait"
        )
        return
    columns = [TargetColumn(c.name, c.type) for c in current]
    window.keyless = not schema.handle_key()
    net = window.net if whole and window.net_key == tuple(schema.handle_key()) else None
    layouts = [history.layouts[v] for v in used if v in history.layouts]
    _merge(spark, window, target, dml, schema, columns, upper, events_in, layouts, net)


def _merge(
    spark: SparkSession,
    window: TableWindow,
    target: TargetTable,
    dml: DataFrame,
    schema: TableSchema,
    columns: list[TargetColumn],
    upper: int,
    events_in: int,
    layouts: Sequence[VersionLayout],
    net: DataFrame | None = None,
) -> None:
    props = {
        table_markers.APPLIED_TS: str(upper),
        table_markers.PIPELINE: window.pipeline.id,
        table_markers.RUN_ID: window.run_id,
        table_markers.WATERMARK: str(window.watermark),
    }
    zone = window.pipeline.codec.server_time_zone
    reading = reading_of(window.pipeline.protocol)
    ambiguous = ambiguous_counts(dml, timestamp_columns(schema), zone, reading, layouts)
    added, snapshot_id = merge_changes(
        spark, target, dml, schema.handle_key(), columns, props, layouts=layouts, net=net
    )
    added["events_in"] = events_in
    added["ambiguous_time_values"] = sum(ambiguous.values())
    warn(target.display, ambiguous, zone)
    bad = added["unrepresentable_values"]
    for name, value in added.items():
        window.counts[name] += value
    window.snapshot_id = snapshot_id
    if bad:
        log.warning("apply: %s: %d value(s) Iceberg cannot hold were written as NULL", target.display, bad)
    log.info(
        "apply: %s: segment (%d, %d], %d event(s), +%d ~%d -%d, %d of %d net change(s) typed from records, snapshot %s",
        target.display,
        window.position,
        upper,
        events_in,
        added["rows_inserted"],
        added["rows_updated"],
        added["rows_deleted"],
        added["typed_from_records"],
        added["net_changes"],
        snapshot_id,
    )
    window.position = window.upper = upper


def _schema_for(window: TableWindow, used: list[int], history: SchemaVersions, upper: int) -> TableSchema | None:
    if used:
        missing = [v for v in used if v not in history.by_version]
        if missing:
            raise SchemaError(
                f"{window.database}.{window.table}: schema version(s) {missing} are used by decoded events but "
                "missing from the schema history table; re-run the schema_history task of this run"
            )
        return history.by_version[used[-1]]
    return history.at(upper) or window.ddl_schema


def _check_versions(used: list[int], history: SchemaVersions, schema: TableSchema) -> str | None:
    for version in used:
        other = history.by_version[version]
        if [(c.name, c.mysql_type, c.length, c.scale, c.unsigned) for c in other.columns] != [
            (c.name, c.mysql_type, c.length, c.scale, c.unsigned) for c in schema.columns
        ]:
            return f"schema versions {version} and {schema.version} differ inside one apply segment"
    return None
