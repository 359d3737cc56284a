"""The ``ticdc-lake`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from ticdc_lake import tso
from ticdc_lake.cli.decode import add_parser as add_decode_parser
from ticdc_lake.cli.reads import add_parsers as add_read_parsers
from ticdc_lake.cli.reads import tso_or_time
from ticdc_lake.cli.rebuild import add_parser as add_rebuild_parser
from ticdc_lake.config import load_config
from ticdc_lake.errors import TicdcLakeError


def _status(args: argparse.Namespace) -> int:
    from ticdc_lake.cli.reads import print_status, status_document
    from ticdc_lake.status import pipeline_status
    from ticdc_lake.status_kafka import read_end_offsets

    config = load_config(args.config)
    pipelines = [config.pipeline(args.pipeline)] if args.pipeline else config.pipelines
    documents = []
    for pipeline in pipelines:
        ends, kafka = read_end_offsets(pipeline, args.bootstrap_servers)
        status = pipeline_status(config, pipeline, ends, kafka)
        if args.json:
            documents.append(status_document(pipeline, status))
        else:
            print_status(pipeline, status)
    if args.json:
        print(json.dumps({"pipelines": documents}, indent=2))
    return 0


def _validate(args: argparse.Namespace) -> int:
    config = load_config(args.file or args.config)
    print(
        f"{config.source_path}: OK, {len(config.pipelines)} pipeline(s): " + ", ".join(p.id for p in config.pipelines)
    )
    return 0


def _sql(args: argparse.Namespace) -> int:
    from ticdc_lake.spark.sql_shell import run_sql

    run_sql(load_config(args.config), args.statements, args.limit)
    return 0


def _tso(args: argparse.Namespace) -> int:
    value: int = args.value
    print(f"{value} = {tso.to_datetime(value).isoformat()} (logical {value & ((1 << tso.LOGICAL_BITS) - 1)})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ticdc-lake", description="TiCDC Kafka topics to Apache Iceberg tables")
    parser.add_argument(
        "--config", default=None, help="pipeline YAML (default: $TICDC_LAKE_CONFIG or include/pipelines.yaml)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    status = sub.add_parser(
        "status",
        help="per table: applied TSO, its wall time, lag, pending and quarantined events; per partition: "
        "Kafka end, landed and decoded offsets",
    )
    status.add_argument("--pipeline", default=None)
    status.add_argument("--json", action="store_true", help="print one JSON document (for machines)")
    status.add_argument(
        "--bootstrap-servers",
        default=None,
        help="Kafka brokers for the end offsets (default: from $AIRFLOW_CONN_<KAFKA CONNECTION ID>)",
    )
    status.set_defaults(func=_status)
    validate = sub.add_parser("validate-config", help="load and validate the pipeline file")
    validate.add_argument(
        "file", nargs="?", default=None, help="the pipeline YAML to check (default: the one --config names)"
    )
    validate.set_defaults(func=_validate)
    sql = sub.add_parser("sql", help="run Spark SQL against the configured catalogs (e.g. lake.shop.orders)")
    sql.add_argument("statements", nargs="+", help="SQL statements, each one argument")
    sql.add_argument("--limit", type=int, default=20, help="rows to show per result")
    sql.set_defaults(func=_sql)
    show_tso = sub.add_parser("tso", help="print the wall-clock time of a TiDB TSO, or the TSO of a time")
    show_tso.add_argument("value", metavar="TSO_OR_TIME", type=tso_or_time(0), help=tso.TSO_OR_TIME_FORMS)
    show_tso.set_defaults(func=_tso)
    add_decode_parser(sub)
    add_read_parsers(sub)
    add_rebuild_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        return int(args.func(args))
    except TicdcLakeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
