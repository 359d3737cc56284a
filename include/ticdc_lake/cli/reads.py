"""``ticdc-lake snapshots`` (every table as of one cut), ``ticdc-lake ledger`` (what runs did),
``ticdc-lake events`` (a table's decoded row changes) and the output of ``ticdc-lake status``
(human table and JSON)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ticdc_lake import tso
from ticdc_lake.config import PipelineConfig, load_config
from ticdc_lake.errors import ConfigError
from ticdc_lake.status import PipelineStatus


def tso_or_time(logical: int) -> Callable[[str], int]:
    """An argparse ``type``: a TSO or an ISO 8601 time (:func:`ticdc_lake.tso.parse_tso_or_time`)."""

    def convert(text: str) -> int:
        try:
            return tso.parse_tso_or_time(text, logical)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def add_parsers(sub: Any) -> None:
    snapshots = sub.add_parser(
        "snapshots",
        help="every table of a pipeline as of one apply run's watermark: snapshot ids and the SQL to read them",
    )
    snapshots.add_argument("--pipeline", default=None, help="pipeline id (default: every pipeline)")
    snapshots.add_argument(
        "--as-of",
        default=None,
        # A time stands for its whole millisecond: every TSO of it is at or before it.
        type=tso_or_time(tso.MAX_LOGICAL),
        metavar="TSO_OR_TIME",
        help=f"the newest cut at or before this moment: {tso.TSO_OR_TIME_FORMS}",
    )
    snapshots.add_argument(
        "--sql", action="store_true", help="print only Spark SQL: one CREATE TEMPORARY VIEW per table"
    )
    snapshots.set_defaults(func=_snapshots)
    ledger = sub.add_parser("ledger", help="the run ledger: per run and table, window, events, rows, duration")
    ledger.add_argument("--pipeline", default=None, help="pipeline id (default: every pipeline)")
    ledger.add_argument("--run", default=None, help="one run id (default: the newest runs)")
    ledger.add_argument("--runs", type=int, default=3, help="how many of the newest runs to show (default 3)")
    ledger.set_defaults(func=_ledger)
    events = sub.add_parser(
        "events",
        help="a table's decoded row changes in change_events, in commit order, each image as text (made from "
        "its typed record where the row keeps no map): one JSON document per line",
    )
    events.add_argument("table", metavar="DATABASE.TABLE", help="the upstream table, e.g. shop.orders")
    events.add_argument("--pipeline", default=None, help="pipeline id (default: the only one configured)")
    events.add_argument(
        "--since",
        default=None,
        type=tso_or_time(0),
        metavar="TSO_OR_TIME",
        help=f"row changes committed at or after this moment: {tso.TSO_OR_TIME_FORMS}",
    )
    events.add_argument("--limit", type=int, default=20, help="row changes to print (default 20)")
    events.set_defaults(func=_events)


def _snapshots(args: argparse.Namespace) -> int:
    from ticdc_lake.consistent_reads import tables_as_of

    config = load_config(args.config)
    at: int | None = args.as_of
    pipelines = [config.pipeline(args.pipeline)] if args.pipeline else config.pipelines
    for pipeline in pipelines:
        cut, tables = tables_as_of(config, pipeline, at)
        if args.sql:
            for t in tables:
                if t.state in ("ok", "empty"):
                    print(f"CREATE OR REPLACE TEMPORARY VIEW `{t.namespace}__{t.table}` AS {t.spark_sql()};")
            continue
        if cut is None:
            wanted = f" at or before {at}" if at is not None else ""
            print(f"pipeline {pipeline.id}: no apply run has reached a watermark{wanted} yet")
            continue
        print(
            f"pipeline {pipeline.id}: as of watermark {cut.watermark} ({tso.to_datetime(cut.watermark).isoformat()}), "
            f"reached by run {cut.run_id}"
        )
        print(f"  {'table':<44} {'state':<8} {'snapshot':>20} {'applied_ts':>20}  upstream / note")
        for t in tables:
            note = t.upstream + (f"  ({t.reason})" if t.reason else "")
            snapshot = str(t.snapshot_id) if t.snapshot_id is not None else "-"
            applied = str(t.applied_ts) if t.applied_ts is not None else "-"
            name = f"{t.catalog}.{t.namespace}.{t.table}"
            print(f"  {name:<44} {t.state:<8} {snapshot:>20} {applied:>20}  {note}")
        readable = [t for t in tables if t.state == "ok"]
        if readable:
            print("  Spark SQL (or: ticdc-lake snapshots --sql):")
            for t in readable:
                print(f"    {t.spark_sql()};")
            first = readable[0]
            print(
                "  pyiceberg: catalog.load_table("
                f"({first.namespace!r}, {first.table!r})).scan(snapshot_id={first.snapshot_id}).to_arrow()"
            )
    return 0


_LEDGER_COLUMNS = (
    ("run_id", 36),
    ("stage", 8),
    ("table", 32),
    ("status", 8),
    ("window", 41),
    ("events_in", 9),
    ("replays", 7),
    ("dups", 5),
    ("ins", 7),
    ("upd", 7),
    ("del", 7),
    ("bad", 4),
    ("dst", 4),
    ("ms", 7),
)


def _ledger(args: argparse.Namespace) -> int:
    from ticdc_lake.run_ledger import ledger_rows

    config = load_config(args.config)
    pipelines = [config.pipeline(args.pipeline)] if args.pipeline else config.pipelines
    for pipeline in pipelines:
        rows = ledger_rows(config, pipeline, run_id=args.run, newest_runs=args.runs)
        print(f"pipeline {pipeline.id}: {len(rows)} ledger row(s)")
        print("  " + " ".join(f"{name:<{width}}" for name, width in _LEDGER_COLUMNS) + " message")
        for r in rows:
            window = f"({r['window_start'] or '-'}, {r['window_end'] or '-'}]" if r["table"] else ""
            name = (
                f"{r['database']}.{r['table']}"
                if r["table"]
                else (f"database {r['database']}" if r["database"] else "-")
            )
            values = (
                r["run_id"],
                r["stage"],
                name,
                r["status"],
                window,
                _n(r["events_in"]),
                _n(r["replays_skipped"]),
                _n(r.get("duplicates_skipped")),  # ledgers from before the column: absent
                _n(r["rows_inserted"]),
                _n(r["rows_updated"]),
                _n(r["rows_deleted"]),
                _n(r["unrepresentable_values"]),
                _n(r.get("ambiguous_time_values")),  # TIMESTAMPs in a repeated DST hour; absent in old ledgers
                _n(r["duration_ms"]),
            )
            cells = " ".join(f"{v!s:<{w}}" for v, (_, w) in zip(values, _LEDGER_COLUMNS, strict=True))
            print(f"  {cells} {(r['message'] or '')[:160]}")
    return 0


def _n(value: Any) -> str:
    return "-" if value is None else str(value)


def status_document(pipeline: PipelineConfig, status: PipelineStatus) -> dict[str, Any]:
    """``ticdc-lake status --json``: TSOs and snapshot ids as integers (exact in Python's json)."""
    cut = status.cut
    return {
        "pipeline": pipeline.id,
        "checked_at": status.checked_at.isoformat(),
        "watermark": cut.watermark if cut is not None else None,
        "watermark_at": tso.to_datetime(cut.watermark).isoformat() if cut is not None else None,
        "watermark_run_id": cut.run_id if cut is not None else None,
        "lag_seconds": _round(status.lag_seconds()),
        "kafka": status.kafka,
        "quarantined_without_table": status.quarantined_without_table,
        "tables": [
            {
                "catalog": pipeline.catalog,
                "namespace": t.namespace,
                "table": t.table,
                "upstream": f"{t.database}.{t.upstream_table}" if t.database else None,
                "applied_ts": t.applied_ts,
                "applied_at": t.applied_at.isoformat() if t.applied_at else None,
                "lag_seconds": _round(t.lag_seconds(status.checked_at)),
                "snapshot_id": t.snapshot_id,
                "rows": t.rows,
                "pending": t.pending,
                "waiting_for_schema": t.waiting_for_schema,
                "quarantined": t.quarantined,
                "hold": {"status": t.hold.status, "position": t.hold.position, "reason": t.hold.reason}
                if t.hold is not None
                else None,
            }
            for t in status.tables
        ],
        "partitions": [
            {
                "topic": p.topic,
                "partition": p.partition,
                "kafka_end": p.kafka_end,
                "landed_end": p.landed_end,
                "decoded_end": p.decoded_end,
                "landing_behind": p.landing_behind,
                "decoding_behind": p.landed_not_decoded,
                "waits_for": p.waits_for,
            }
            for p in status.partitions
        ],
    }


def print_status(pipeline: PipelineConfig, status: PipelineStatus) -> None:
    """The human table of ``ticdc-lake status`` (one line per table holds ``applied_ts``)."""
    print(f"pipeline {pipeline.id} ({pipeline.protocol.value}, topics {pipeline.kafka.describe()})")
    if status.cut is not None:
        mark = status.cut.watermark
        print(
            f"  newest apply run {status.cut.run_id}: watermark {mark} ({tso.to_datetime(mark).isoformat()}), "
            f"{status.lag_seconds() or 0:.0f} s behind now"
        )
    if not status.tables:
        print("  no table applied yet")
    for t in status.tables:
        when = t.applied_at.isoformat() if t.applied_at else "-"
        lag = t.lag_seconds(status.checked_at)
        name = f"{pipeline.catalog}.{t.namespace}.{t.table}"
        line = (
            f"  {name:<40} applied_ts {t.applied_ts} ({when})  lag {_seconds(lag)} s  snapshot {t.snapshot_id}  "
            f"rows {t.rows}  pending {t.pending} ({t.waiting_for_schema} waiting for schema)  "
            f"quarantined {t.quarantined}"
        )
        if t.hold is not None:
            line += f"  {t.hold.status}: {t.hold.reason}"
        print(line)
    if status.quarantined_without_table:
        print(
            f"  {status.quarantined_without_table} quarantined message(s) name no table: under on_decode_error=halt "
            "they hold every table of their topic (see the quarantine system table)"
        )
    print(f"  partitions ({status.kafka}):")
    print(f"    {'topic[partition]':<40} {'kafka_end':>10} {'landed':>10} {'decoded':>10}  behind")
    for p in status.partitions:
        behind = f"landing {_n(p.landing_behind)}, decoding {p.landed_not_decoded}"
        print(
            f"    {f'{p.topic}[{p.partition}]':<40} {_n(p.kafka_end):>10} {_n(p.landed_end):>10} "
            f"{_n(p.decoded_end):>10}  {behind}"
        )
        if p.waits_for is not None:
            print(f"      {p.waits_for}")


def _round(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None


def _seconds(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "-"


def _events(args: argparse.Namespace) -> int:
    from ticdc_lake.spark.event_images import list_events

    config = load_config(args.config)
    if args.pipeline is None and len(config.pipelines) != 1:
        known = ", ".join(p.id for p in config.pipelines) or "none"
        raise ConfigError(f"{config.source_path}: name the pipeline with --pipeline (configured: {known})")
    pipeline = config.pipeline(args.pipeline) if args.pipeline else config.pipelines[0]
    database, dot, table = str(args.table).partition(".")
    if not dot or not database or not table:
        raise ConfigError(f"{args.table!r} is not DATABASE.TABLE: name the upstream table as shop.orders")
    for line in list_events(config, pipeline, database, table, args.since, args.limit):
        print(line)
    return 0
