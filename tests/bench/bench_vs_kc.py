"""ticdc-lake side by side with the Apache Iceberg Kafka Connect sink on one Debezium stream.

`make bench-vs-kc` runs it (BENCH_CHANGES=1000000 by default; docs/benchmarks-vs-kafka-connect.md).
It produces one TiCDC Debezium stream (bench_vs_kc_stream) to the local broker, then runs both
systems alternately, A B A B (``--rounds`` pairs), each from a fresh state:

* A, ticdc-lake as a user runs it: a pipeline file on that topic and one ``airflow dags test`` of
  its DAG (land, then the Spark transform on ``local[2]``), a fresh catalog, landing and Airflow
  home per round;
* B, Kafka Connect standalone with the Iceberg sink (bench_vs_kc_connect), a fresh consumer group,
  control topic and catalog per round, stopped once every change is committed; twice per round:
  with Connect's defaults (``kc-sink``) and with the worker's ``offset.flush.interval.ms`` at
  ``--sink-flush-ms`` (``kc-sink-flush``; 10 s by default, 0 skips it), which ends the sink's
  wait at the end of a backlog sooner, for about the same CPU (docs/benchmarks-vs-kafka-connect.md).

Each side's process tree is measured (bench_vs_kc_measure): wall and CPU seconds, peak RSS,
changes/s, and CPU seconds by kind of process and, for ticdc-lake, by stage of the run
(bench_vs_kc_cpu; also written to each round's ``cpu-breakdown.json``). ``--only ticdc-lake`` runs
side A alone, for diagnosis. ``--spark-service`` sends side A's Spark work to a Spark run service
(docs/spark-service.md) that the bench starts once, before the first round and outside the
measurement: each round then counts the service's CPU during that round beside the Airflow
process's, and the service's resident memory in the peak. ``--connect-service`` does the same for
side B (bench_vs_kc_connect_service): one Connect worker per sink configuration, started before
the first round, each round adding its connector through the REST API. Then every round's final
tables are checked against the stream's final rows, ticdc-lake's merged tables directly, the sink's
changelog reduced to current rows by key; the last rounds of the two are also compared with each
other. It prints the figures and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bench_vs_kc_changelog as changelog  # type: ignore[import-not-found,unused-ignore]  # beside this file
import bench_vs_kc_connect as connect  # type: ignore[import-not-found,unused-ignore]
import bench_vs_kc_connect_service as connect_service  # type: ignore[import-not-found,unused-ignore]
import bench_vs_kc_cpu as cpu_kinds  # type: ignore[import-not-found,unused-ignore]
import bench_vs_kc_current as current_job  # type: ignore[import-not-found,unused-ignore]
import bench_vs_kc_measure as measure  # type: ignore[import-not-found,unused-ignore]
import bench_vs_kc_stream as streams  # type: ignore[import-not-found,unused-ignore]
import yaml
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined,unused-ignore]

from ticdc_lake.catalog import load_catalog
from ticdc_lake.cli.airflow_runner import AirflowRunner
from ticdc_lake.config import load_config
from ticdc_sim.producer import create_topic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the Spark run service helper
from spark_service_support import SparkServiceProcess, end_on_sigterm  # type: ignore[import-not-found,unused-ignore]

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = "bench_kc"
MIB = 2**20
SIDES = ("ticdc-lake", "kc-sink")
#: The sink with the worker's ``offset.flush.interval.ms`` at ``--sink-flush-ms``, beside each sink round.
SINK_FLUSH = "kc-sink-flush"
#: ticdc-lake with the ``--variant-conf`` settings, run right after each ticdc-lake round.
VARIANT = "ticdc-lake*"
#: The sink round plus the user's job that makes current rows of its changelog (bench_vs_kc_current).
SINK_CURRENT = "kc-sink+job"
FOLDERS = {
    "ticdc-lake": "lake",
    "kc-sink": "sink",
    VARIANT: "lake-variant",
    SINK_FLUSH: "sink-flush",
    SINK_CURRENT: "sink",
}
#: The Airflow connection of the bench's Spark run service (``--spark-service``).
SERVICE_CONN_ID = "ticdc_spark_service"
Rows = dict[Hashable, tuple[Any, ...]]


@dataclass
class Figures:
    side: str
    round: int
    wall_s: float
    cpu_s: float
    peak_rss: int
    changes: int
    check: str = ""
    breakdown: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.changes / self.wall_s


def lake_round(
    folder: Path,
    stream: Any,
    bootstrap: str,
    template: Path,
    spark_conf: dict[str, str] | None = None,
    service: SparkServiceProcess | None = None,
    others: frozenset[int] = frozenset(),
) -> tuple[Figures, dict[str, Rows]]:
    """Side A: one ``airflow dags test`` of the pipeline's DAG; returns its figures and final tables.
    ``spark_conf``: the pipeline's ``spark_conf`` (``--variant-conf``); ``service``: the Spark run
    service the pipeline sends its Spark work to (``--spark-service``), already running; ``others``:
    processes neither measured nor stopped (the Connect workers of ``--connect-service``)."""
    (folder / "catalog").mkdir(parents=True)
    config_path = folder / "pipelines.yaml"
    document = lake_document(folder, stream.topic, spark_conf, service is not None)
    config_path.write_text(yaml.safe_dump(document, sort_keys=False))
    extra_env = {f"AIRFLOW_CONN_{SERVICE_CONN_ID.upper()}": service.connection()} if service is not None else {}
    runner = AirflowRunner(folder / "airflow", config_path, bootstrap, extra_env=extra_env)
    AirflowRunner.template_db = template
    runner.migrate()  # a copy of one migrated database: installation, not the run
    command = [
        str(Path(sys.executable).parent / "airflow"),
        "dags",
        "test",
        f"ticdc_{PIPELINE}",
        datetime(2026, 11, 20, 10, tzinfo=UTC).isoformat(),
    ]
    meter = measure.TreeMeter(spared=others).start()
    with open(folder / "dags-test.log", "wb") as out:
        process = subprocess.Popen(command, env=runner.env(), stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        code = process.wait()
    wall = meter.wall()
    measure.finish(process, spared=_service_pids(service) | others)
    cpu = meter.cpu()
    meter.stop()
    with open(folder / "dags-test.log", encoding="utf-8", errors="replace") as log:
        starts = cpu_kinds.stage_starts(log, meter.started_epoch)
    breakdown = _breakdown(folder, meter, starts, wall, cpu)
    if code != 0:
        raise SystemExit(f"round {folder.name}: `airflow dags test` failed ({code}); see {folder / 'dags-test.log'}")
    catalog = load_catalog("lake", load_config(config_path).catalogs["lake"])
    tables = {}
    for database, table in sorted(stream.truth):
        data = catalog.load_table((database, table)).scan(selected_fields=("id", "k", "c", "pad")).to_arrow()
        columns = [data.column(n).to_pylist() for n in ("id", "k", "c", "pad")]
        tables[f"{database}.{table}"] = {i: (k, c, p) for i, k, c, p in zip(*columns, strict=True)}
    return Figures("ticdc-lake", 0, wall, cpu, meter.peak_rss, stream.changes, breakdown=breakdown), tables


def lake_document(
    folder: Path, topic: str, spark_conf: dict[str, str] | None = None, on_service: bool = False
) -> dict[str, Any]:
    """Side A's pipeline file: one Debezium pipeline on ``topic``, its catalog and landing under
    ``folder``; ``on_service``: its Spark work goes to the bench's Spark run service."""
    return {
        "catalogs": {
            "lake": {
                "type": "jdbc",
                "uri": f"jdbc:sqlite:{folder}/catalog/lake.db",
                "warehouse": f"file://{folder}/warehouse",
            }
        },
        "pipelines": [
            {
                "id": PIPELINE,
                "protocol": "debezium",
                "kafka": {"topics": [topic]},
                "landing_uri": f"file://{folder}/landing",
                "catalog": "lake",
                **({"spark_conf": dict(spark_conf)} if spark_conf else {}),
                **({"spark_service": SERVICE_CONN_ID} if on_service else {}),
            }
        ],
    }


def _service_pids(service: SparkServiceProcess | None) -> frozenset[int]:
    """The Spark run service of ``--spark-service`` (none without it): never measured by a sink
    round, never stopped by a round's clean-up."""
    return frozenset({service.process.pid}) if service is not None else frozenset()


def _breakdown(folder: Path, meter: Any, starts: list[tuple[str, float]], wall: float, cpu: float) -> list[str]:
    """The CPU table of a round (stages x kinds), also written with every process to cpu-breakdown.json."""
    stages = cpu_kinds.attribute(meter.kinds.samples, starts, meter.started_epoch + wall)
    processes = sorted(meter.kinds.processes.values(), key=lambda p: -p.cpu_s)
    document = {
        "wall_s": wall,
        "cpu_s": cpu,
        "auto_reaped_s": meter.kinds.auto_reaped_s,
        "stages": [{"stage": s.name, "wall_s": s.wall_s, "cpu_s": s.cpu} for s in stages],
        "processes": [{"pid": p.pid, "kind": p.kind, "cpu_s": p.cpu_s, "command": p.command} for p in processes],
        "samples": [[at - meter.started_epoch, totals] for at, totals in meter.kinds.samples],
    }
    (folder / "cpu-breakdown.json").write_text(json.dumps(document, indent=1))
    reaped = (
        f"  (the total includes {meter.kinds.auto_reaped_s:.1f} s of processes the kernel reaped, at their last sample)"
    )
    return [*cpu_kinds.table(stages, cpu, wall), reaped]


def sink_round(
    folder: Path,
    stream: Any,
    bootstrap: str,
    tasks: int,
    stall_s: float,
    service: SparkServiceProcess | None = None,
    worker_settings: dict[str, str] | None = None,
    worker: connect_service.ConnectService | None = None,
    others: frozenset[int] = frozenset(),
) -> tuple[Figures, dict[str, Rows]]:
    """Side B: Kafka Connect standalone with the sink until every change is committed;
    ``worker_settings`` over Connect's defaults (side ``kc-sink-flush``). ``worker``: the running
    Connect worker to add the round's connector to (``--connect-service``; it is measured from the
    round's start), else a Connect started for the round; ``others``: processes neither measured nor
    stopped (the other Connect workers)."""
    folder.mkdir(parents=True)
    name = f"bench-vs-kc-{folder.parent.name}-{folder.name}"
    settings = tuple(sorted((worker_settings or {}).items()))
    port, log = (worker.rest_port, worker.log) if worker is not None else (_free_port(), None)
    job = connect.ConnectRound(folder, name, stream.topic, bootstrap, port, tasks, settings, log)
    tables = sorted(stream.truth)
    create_topic(bootstrap, f"{name}-control", 1)  # the broker creates no topic by itself
    job.prepare_catalog()  # the files a Connect of its own reads are written when it starts
    spared = _service_pids(service) | others  # the idle Spark run service is not the sink's
    meter = measure.TreeMeter(spared=spared).start()
    started = time.time()
    if worker is not None:
        worker.add(job)
        process = worker.process
    else:
        process = job.start(ROOT / ".jars" / "connect")
    try:
        committed_at = job.wait_committed(process, tables, stream.changes, stall_s)
        meter.sample_kinds()
        cpu = meter.cpu()
    finally:
        if worker is not None:
            worker.remove(name)
        else:
            process.terminate()
            measure.finish(process, spared=spared)
        meter.stop()
    wall = committed_at - started
    starts = [("Connect until committed", meter.started_epoch)]
    breakdown = _breakdown(folder, meter, starts, meter.kinds.samples[-1][0] - meter.started_epoch, cpu)
    final = {f"{d}.{t}": job.current_rows((d, t)) for d, t in tables}
    return Figures("kc-sink", 0, wall, cpu, meter.peak_rss, stream.changes, breakdown=breakdown), final


def round_sides(n: int, only: str | None, variant: bool, sink_flush: bool = False) -> list[str]:
    """The sides of round ``n`` in order. With a variant it runs beside ticdc-lake, after it in odd
    rounds and before it in even ones: in two sittings the side that ran first in a pair took more
    CPU in code identical on both sides, so neither side may always go first. ``sink_flush``: the
    sink with a short flush interval runs beside the default sink in the same way."""
    sides = [only] if only else list(SIDES)
    if variant and "ticdc-lake" in sides:
        sides.insert(sides.index("ticdc-lake") + n % 2, VARIANT)
    if sink_flush and only is None:
        sides.insert(sides.index("kc-sink") + n % 2, SINK_FLUSH)
    return sides


def sink_current_round(
    folder: Path,
    stream: Any,
    sink: Figures,
    service: SparkServiceProcess | None = None,
    others: frozenset[int] = frozenset(),
) -> tuple[Figures, dict[str, Rows]]:
    """After a sink round in ``folder``: the user's current-state job on its catalog (not running
    while the sink ran); its figures added to the sink's, and the current tables it made. The
    Spark run service of ``--spark-service`` is neither measured nor stopped with the job."""
    catalog = connect.sink_catalog(folder)
    tables = sorted(stream.truth)
    wall, cpu, peak = current_job.run(folder, catalog, tables, spared=_service_pids(service) | others)
    final = {f"{d}.{t}": current_job.current_rows(catalog, d, t) for d, t in tables}
    line = f"  then the current-state job: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {peak / MIB:.0f} MiB"
    figure = Figures(
        SINK_CURRENT, sink.round, sink.wall_s + wall, sink.cpu_s + cpu, max(sink.peak_rss, peak), stream.changes
    )
    figure.breakdown = [line]
    return figure, final


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check(name: str, tables: dict[str, Rows], truth: dict[str, Rows]) -> list[str]:
    problems = []
    for table in sorted(truth):
        for line in changelog.differences(name, tables.get(table, {}), "the stream", truth[table]):
            problems.append(f"{table}: {line}")
    return problems


def report(figures: list[Figures], stream: Any, loads: list[tuple[float, float, float]], flush_ms: int = 0) -> None:
    ops = ", ".join(f"{op} {n}" for op, n in stream.ops.items())
    print(f"\nstream: {stream.changes} changes over {stream.tables} tables ({ops})")
    size = f"{stream.messages} messages, {stream.bytes / MIB:.0f} MiB, {stream.partitions} partitions"
    print(f"  {size}, produced in {stream.seconds:.0f} s")
    print(f"final rows: {stream.live_rows()}")
    if any(f.side == SINK_FLUSH for f in figures):
        print(f"{SINK_FLUSH}: the sink with Kafka Connect's offset.flush.interval.ms={flush_ms} (kc-sink: 60000)")
    print()
    print(f"{'round':>5}  {'side':<13} {'wall s':>8} {'CPU s':>8} {'peak RSS MiB':>13} {'changes/s':>10}  check")
    for f in figures:
        print(
            f"{f.round:>5}  {f.side:<13} {f.wall_s:>8.1f} {f.cpu_s:>8.1f} {f.peak_rss / MIB:>13.0f} "
            f"{f.rate:>10.0f}  {f.check}"
        )
    by_side = {side: [f for f in figures if f.side == side] for side in FOLDERS}
    pairs = (
        ("ticdc-lake", "kc-sink"),
        ("ticdc-lake", SINK_FLUSH),
        ("ticdc-lake", SINK_CURRENT),
        (VARIANT, "ticdc-lake"),
    )
    for top, bottom in pairs:
        if by_side[top] and by_side[bottom]:
            _ratios(top, by_side[top], bottom, by_side[bottom])
    for f in figures:
        if f.side == SINK_CURRENT:
            print(f"\nround {f.round} {f.side}: the sink's round, then:\n{f.breakdown[0]}")
        elif f.breakdown:
            print(f"\nround {f.round} {f.side}: CPU seconds by stage and kind of process (sampled every 0.5 s)")
            for line in f.breakdown:
                print(line)
    print(
        "\nload average (1, 5, 15 min) before each round and at the end: "
        + "; ".join(f"{a:.2f} {b:.2f} {c:.2f}" for a, b, c in loads)
    )


def _ratios(top: str, a_figures: list[Figures], bottom: str, b_figures: list[Figures]) -> None:
    print(f"\nratio {top} / {bottom} (medians over the rounds):")
    for label, attr, unit in (
        ("wall s", "wall_s", 1),
        ("CPU s", "cpu_s", 1),
        ("RSS MiB", "peak_rss", MIB),
        ("changes/s", "rate", 1),
    ):
        a = statistics.median(getattr(f, attr) for f in a_figures) / unit
        b = statistics.median(getattr(f, attr) for f in b_figures) / unit
        print(f"  {label:<10} {a:>12.1f} / {b:>12.1f} = {a / b:.2f}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_vs_kc.py", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="A B pairs")
    parser.add_argument("--tasks", type=int, default=2, help="the sink's tasks.max")
    parser.add_argument("--bootstrap", default=os.environ.get("TICDC_LAKE_KAFKA", "127.0.0.1:19092"))
    parser.add_argument("--state", type=Path, default=ROOT / "run" / "bench-vs-kc")
    parser.add_argument("--stall-s", type=float, default=300.0, help="fail the sink after this long without a commit")
    parser.add_argument("--keep", action="store_true", help="keep each round's catalog, warehouse and landing")
    parser.add_argument(
        "--only",
        choices=(*SIDES, SINK_FLUSH),
        help="run one side only (for diagnosis; the default alternates the sides, A B A B)",
    )
    parser.add_argument(
        "--sink-flush-ms",
        type=int,
        default=10_000,
        help=f"Kafka Connect's offset.flush.interval.ms for side {SINK_FLUSH!r}, run beside each kc-sink round "
        "(Connect's default, 60000, for kc-sink); 0: no such side",
    )
    parser.add_argument(
        "--variant-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="also run ticdc-lake with this pipeline spark_conf setting (repeatable) as side "
        f"{VARIANT!r}, right after each ticdc-lake round: an A/B of Spark settings in one sitting",
    )
    parser.add_argument(
        "--no-current-job",
        action="store_true",
        help=f"skip side {SINK_CURRENT!r}: the job a sink user runs after each sink round to get current rows",
    )
    parser.add_argument(
        "--connect-service",
        action="store_true",
        help="add each sink round's connector to a Kafka Connect worker started once before the first round "
        "(not measured; one per sink configuration); each round counts the worker's CPU during that round",
    )
    parser.add_argument(
        "--spark-service",
        action="store_true",
        help="send ticdc-lake's Spark work to a Spark run service started once before the first round "
        "(not measured); each round counts the service's CPU during that round",
    )
    args = parser.parse_args(argv)
    end_on_sigterm()  # a `kill` of the bench still stops the services it started
    variant = dict(item.split("=", 1) for item in args.variant_conf)
    if variant and args.spark_service:
        parser.error("--variant-conf and --spark-service cannot be combined: JVM settings hold for the whole service")
    if not measure.become_subreaper():
        print("warning: not a child subreaper; CPU of orphaned processes is not counted", file=sys.stderr)
    if args.only == SINK_FLUSH and not args.sink_flush_ms:
        parser.error(f"--only {SINK_FLUSH} needs a --sink-flush-ms above 0")
    flush_settings = {"offset.flush.interval.ms": str(args.sink_flush_ms)}
    if args.only != "ticdc-lake":  # before the stream is produced (minutes at 1M), not at the first sink round
        connect.require_sink(ROOT / ".jars" / "connect")
    state, stream, truth = streams.stamped_stream(
        args.state, args.bootstrap, changes=args.changes, tables=args.tables, partitions=args.partitions
    )
    template = args.state / "airflow-template.db"
    service = _start_service(state, stream.topic) if args.spark_service and args.only in (None, "ticdc-lake") else None
    workers: dict[str, connect_service.ConnectService] = {}
    figures: list[Figures] = []
    loads = []
    last: dict[str, dict[str, Rows]] = {}
    problems: list[str] = []
    try:
        if args.connect_service:
            _start_workers(workers, state, args.bootstrap, args.only, args.sink_flush_ms, flush_settings)
        every_worker = frozenset(w.process.pid for w in workers.values())
        for n in range(1, args.rounds + 1):
            for side in round_sides(n, args.only, bool(variant), args.sink_flush_ms > 0):
                loads.append(os.getloadavg())
                folder = state / f"{FOLDERS[side]}-{n}"
                print(f"round {n}: {side} ...", flush=True)
                worker = workers.get(side)
                others = every_worker - {worker.process.pid} if worker is not None else every_worker
                if side == "ticdc-lake":
                    figure, tables = lake_round(
                        folder, stream, args.bootstrap, template, service=service, others=every_worker
                    )
                elif side == VARIANT:
                    figure, tables = lake_round(folder, stream, args.bootstrap, template, variant, others=every_worker)
                    figure.side = VARIANT
                else:
                    settings = flush_settings if side == SINK_FLUSH else None
                    figure, tables = sink_round(
                        folder, stream, args.bootstrap, args.tasks, args.stall_s, service, settings, worker, others
                    )
                    figure.side = side
                figure.round = n
                found = check(side, tables, truth)
                figure.check = "equal to the stream's final rows" if not found else f"{len(found)} tables differ"
                problems += [f"round {n} {side}: {p}" for p in found]
                last[side] = tables
                print(f"  wall {figure.wall_s:.1f} s, CPU {figure.cpu_s:.1f} s, {figure.check}", flush=True)
                figures.append(figure)
                if side == "kc-sink" and not args.no_current_job:
                    print(f"round {n}: {SINK_CURRENT}: the current-state job ...", flush=True)
                    figure, tables = sink_current_round(folder, stream, figure, service, every_worker)
                    found = check(SINK_CURRENT, tables, truth)
                    figure.check = "equal to the stream's final rows" if not found else f"{len(found)} tables differ"
                    problems += [f"round {n} {SINK_CURRENT}: {p}" for p in found]
                    print(f"{figure.breakdown[0]}; {figure.check}", flush=True)
                    figures.append(figure)
                if not args.keep:
                    for heavy in ("landing", "warehouse", "catalog", "airflow"):
                        shutil.rmtree(folder / heavy, ignore_errors=True)
        loads.append(os.getloadavg())
    finally:
        for running in workers.values():
            running.stop()
        if service is not None:
            service.stop()
        _delete_topics(args.bootstrap, stream.topic, state)
    report(figures, stream, loads, args.sink_flush_ms)
    if "ticdc-lake" in last and "kc-sink" in last:
        lake, sink = last["ticdc-lake"], last["kc-sink"]
        both = [
            f"{t}: {line}"
            for t in sorted(truth)
            for line in changelog.differences("ticdc-lake", lake.get(t, {}), "sink", sink.get(t, {}))
        ]
        print("\nticdc-lake vs sink (current rows by key, last rounds): " + ("equal" if not both else "DIFFERENT"))
        problems += both
    for line in problems[:20]:
        print(f"  {line}")
    return 1 if problems else 0


def _start_service(state: Path, topic: str) -> SparkServiceProcess:
    """The Spark run service of ``--spark-service``, started from a pipeline file like the rounds'
    (their catalogs and landings differ, which the service takes per run)."""
    home = state / "spark-service"
    home.mkdir(parents=True)
    config = home / "pipelines.yaml"
    config.write_text(yaml.safe_dump(lake_document(home, topic, None, True), sort_keys=False))
    started = time.monotonic()
    service = SparkServiceProcess(config, home)
    print(f"Spark run service started in {time.monotonic() - started:.1f} s (not measured)", flush=True)
    return service


def _start_workers(
    workers: dict[str, connect_service.ConnectService],
    state: Path,
    bootstrap: str,
    only: str | None,
    flush_ms: int,
    flush_settings: dict[str, str],
) -> None:
    """Into ``workers``: the Connect workers of ``--connect-service``, one per sink side that runs
    (not measured), each added once started (so the caller stops it whatever fails next)."""
    sides: dict[str, tuple[tuple[str, str], ...]] = {}
    if only in (None, "kc-sink"):
        sides["kc-sink"] = ()
    if only in (None, SINK_FLUSH) and flush_ms > 0:
        sides[SINK_FLUSH] = tuple(flush_settings.items())
    for side, overrides in sides.items():
        started = time.monotonic()
        folder = state / f"connect-{FOLDERS[side]}"
        workers[side] = connect_service.ConnectService.start(
            folder, ROOT / ".jars" / "connect", bootstrap, _free_port(), overrides
        )
        print(f"Kafka Connect worker for {side} started in {time.monotonic() - started:.1f} s (not measured)")


def _delete_topics(bootstrap: str, topic: str, state: Path) -> None:
    """The stream and every round's control topic (the state folder names the rounds)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [topic] + [f"bench-vs-kc-{state.name}-{p.name}-control" for p in sorted(state.glob("sink-*")) if p.is_dir()]
    existing = set(admin.list_topics(timeout=30).topics)
    doomed = [n for n in names if n in existing]
    if doomed:
        for future in admin.delete_topics(doomed).values():
            future.result(timeout=60)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
