"""``ticdc-lake rebuild``: rebuild tables from the landed raw batches, with Spark in this process.

The same work as the pipeline DAG's ``rebuild`` parameter (``docs/rebuild.md``), for when Airflow
is not at hand or a person wants to watch it: it takes the pipeline's stage locks, so a scheduled
run waits meanwhile.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from ticdc_lake.config import load_config
from ticdc_lake.run_ledger import LedgerStatus


def add_parser(sub: Any) -> None:
    """Register ``rebuild`` on the ``ticdc-lake`` subcommand parsers."""
    parser = sub.add_parser(
        "rebuild",
        help="rebuild tables from the landed raw batches (no Kafka), up to the pipeline's watermark",
        description="Decode every landed batch again, correct the schema history, drop the chosen Iceberg tables "
        "and everything recorded about their positions, then apply the pipeline up to its watermark: the chosen "
        "tables from the beginning, the others from where they are. Spark runs in this process.",
    )
    parser.add_argument("--pipeline", required=True, help="pipeline id")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--table",
        action="append",
        default=[],
        metavar="NAME",
        help="a table: database.table (upstream) or namespace.table (Iceberg); repeat for more",
    )
    which.add_argument("--all", action="store_true", help="every table of the pipeline")
    parser.add_argument("--run-id", default=None, help="run id in the ledger (default: rebuild__<UTC time>)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ticdc_lake.spark.rebuild_job import rebuild_in_process

    config = load_config(args.config)
    pipeline = config.pipeline(args.pipeline)
    run_id = args.run_id or f"rebuild__{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}"
    summary = rebuild_in_process(config, pipeline, run_id, ["*"] if args.all else args.table)
    watermark = summary.apply.watermark if summary.apply else None
    print(f"pipeline {pipeline.id}: rebuild {run_id}, watermark {watermark}: {summary.scope.describe()}")
    print(
        f"  re-decoded {summary.decode.batches} batch(es), {summary.decode.events} event(s); "
        f"{summary.resolved} quarantined message(s) now decode; "
        f"{summary.versions_corrected} schema version(s) added or corrected"
    )
    for t in summary.tables:
        rows = "-" if t.rows is None else t.rows
        name = f"{t.database}.{t.table}"
        print(f"  {name:<40} {t.status:<8} rows {rows}  applied_ts {t.applied_ts}  {t.message}")
    return 0 if all(t.status == LedgerStatus.REBUILT for t in summary.tables) else 1
