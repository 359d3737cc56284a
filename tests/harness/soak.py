"""``make soak``: many random scenarios in one Spark session, one line per seed and protocol.

    python -m tests.harness.soak --seeds 20 --seed 1 --protocols simple-json,debezium

Each scenario has its own pipeline id, topics and namespaces, so seeds do not interfere. Exit
status 1 when any scenario failed; its differences and a replay command are printed.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.harness.runner import Services, run_scenario
from tests.harness.scenario import PROTOCOLS, SIZES, scenario_for

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _service(env_var: str, recorded: str) -> str | None:
    """The address in ``env_var``, else the one include/scripts/<service>.sh recorded."""
    address = os.environ.get(env_var)
    if address:
        return address
    path = Path(os.environ.get("TICDC_LAKE_HOME") or PROJECT_ROOT / "run") / recorded
    return path.read_text().strip() if path.exists() else None


@contextmanager
def spark_session(lake_home: Path) -> Iterator[Any]:
    """A local Spark session with catalog ``lake`` on ``lake_home``, as tests/conftest.py makes it."""
    from pyspark.sql import SparkSession

    from ticdc_lake.config import CatalogConfig
    from ticdc_lake.spark.settings import spark_conf, spark_jars

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    catalog = CatalogConfig(uri=f"jdbc:sqlite:{lake_home}/catalog/lake.db", warehouse=f"file://{lake_home}/warehouse")
    builder = SparkSession.builder.master("local[2]").appName("ticdc-lake-soak")
    builder = builder.config("spark.jars", ",".join(spark_jars())).config("spark.ui.showConsoleProgress", "false")
    for key, value in spark_conf("lake", catalog).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.harness.soak", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="how many seeds per protocol")
    parser.add_argument("--seed", type=int, default=1, help="the first seed")
    parser.add_argument("--protocols", default="all", help=f"comma-separated, or all: {','.join(PROTOCOLS)}")
    parser.add_argument("--size", choices=SIZES, default="normal", help="scenario size (small: as in CI)")
    parser.add_argument("--no-bursts", action="store_true", help="no transactions with several changes on one key")
    parser.add_argument("--work-dir", type=Path, help="lake and pipeline folders (default: a new temp dir)")
    args = parser.parse_args(argv)
    if args.protocols in ("", "all"):
        args.protocols = ",".join(PROTOCOLS)
    unknown = sorted(set(args.protocols.split(",")) - set(PROTOCOLS))
    if unknown:
        parser.error(f"unknown protocols {unknown}; known: {','.join(PROTOCOLS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.ERROR)
    protocols = args.protocols.split(",")
    kafka = _service("TICDC_LAKE_KAFKA_BOOTSTRAP", "kafka/bootstrap")
    if kafka is None:
        print("no Kafka broker: run include/scripts/kafka.sh start (make soak does)", file=sys.stderr)
        return 2
    registry = _service("TICDC_LAKE_REGISTRY_URL", "registry/url")
    if "avro" in protocols and registry is None:
        print("the avro protocol needs the schema registry: run include/scripts/registry.sh start", file=sys.stderr)
        return 2
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="ticdc-lake-soak-"))
    (work_dir / "lake" / "catalog").mkdir(parents=True, exist_ok=True)
    print(f"soak: seeds {args.seed}..{args.seed + args.seeds - 1}, protocols {','.join(protocols)}, in {work_dir}")
    started, failed, total, events = time.monotonic(), [], 0, 0
    with spark_session(work_dir / "lake") as spark:
        services = Services(spark, work_dir / "lake", kafka, registry, work_dir / "pipelines")
        for seed in range(args.seed, args.seed + args.seeds):
            for protocol in protocols:
                scenario = scenario_for(seed, protocol, args.size, bursts=not args.no_bursts)
                try:
                    result = run_scenario(services, scenario)
                    failures = result.failures
                except Exception as exc:  # a crash of the product is a finding too: report and go on
                    result, failures = None, [f"seed {seed} protocol {protocol}: {type(exc).__name__}: {exc}"]
                    failures.append(f"replay: {scenario.replay_command()}")
                total += 1
                status = "OK" if not failures else "FAIL"
                if result is not None:
                    events += result.events
                    print(
                        f"seed {seed:>6} {protocol:<11} runs {result.runs} events {result.events:>5} "
                        f"tables {result.tables:>2} ddls {len(result.ddls):>2} rows checked {result.rows_checked:>5} "
                        f"{result.seconds:6.1f}s {status}"
                        f" (land/decode/history/apply {'/'.join(f'{t:.0f}' for t in result.stage_seconds)}s,"
                        f" checks {result.check_seconds:.0f}s)",
                        flush=True,
                    )
                else:
                    print(f"seed {seed:>6} {protocol:<11} crashed FAIL", flush=True)
                if failures:
                    failed.append(f"{seed} {protocol}")
                    print("  " + "\n  ".join(failures), flush=True)
    seconds = time.monotonic() - started
    print(f"soak: {total - len(failed)}/{total} scenarios OK, {events} events, {seconds:.0f}s")
    if failed:
        print(f"soak: FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
