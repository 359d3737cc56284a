"""``ticdc-lake snapshots`` (every table as of one cut) and ``ticdc-lake ledger`` (what runs did)."""

from __future__ import annotations

import argparse
from typing import Any

from ticdc_lake import tso
from ticdc_lake.config import load_config


def add_parsers(sub: Any) -> None:
    snapshots = sub.add_parser(
        "snapshots",
        help="every table of a pipeline as of one apply run's watermark: snapshot ids and the SQL to read them",
    )
    snapshots.add_argument("--pipeline", default=None, help="pipeline id (default: every pipeline)")
    snapshots.add_argument(
        "--as-of", default=None, help="a TSO or an ISO time (UTC if no zone): the newest cut at or before it"
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


def _snapshots(args: argparse.Namespace) -> int:
    from ticdc_lake.consistent_reads import tables_as_of

    config = load_config(args.config)
    at = tso.parse(args.as_of) if args.as_of is not None else None
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
    ("ins", 7),
    ("upd", 7),
    ("del", 7),
    ("bad", 4),
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
                _n(r["rows_inserted"]),
                _n(r["rows_updated"]),
                _n(r["rows_deleted"]),
                _n(r["unrepresentable_values"]),
                _n(r["duration_ms"]),
            )
            cells = " ".join(f"{v!s:<{w}}" for v, (_, w) in zip(values, _LEDGER_COLUMNS, strict=True))
            print(f"  {cells} {(r['message'] or '')[:160]}")
    return 0


def _n(value: Any) -> str:
    return "-" if value is None else str(value)
