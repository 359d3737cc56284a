"""Apply benchmark: changes per second, MERGE cost against target size, per-table run cost, peak memory.

`make bench-apply` runs it (`BENCH_SCALE=small` for a run of a few minutes). It prints figures and
a table against the aims of issue 5; it asserts nothing. Everything runs on this machine: local
Spark (all cores), a JDBC (SQLite) Iceberg catalog and the landing folder in a temporary
directory, Simple JSON messages landed with the real LandingStore (no Kafka), then the real
stages (`run_decode`, `run_schema_history`, `run_apply`). Each scenario runs in fresh processes:
one builds and lands the messages, one runs Spark (memory figures are of that process tree).

1. e2e: N changes over T tables whose targets already hold R rows each (seeded by one Spark
   `range` write per table whose snapshot carries the applied position, see
   `bench_apply_support.seed_target`); decode + schema history + apply.
2. merge: one table, the same batch of C changes (a third each inserts, updates, deletes; updates
   and deletes over the newest `--hot` keys, inserts above) into targets of each size in
   `--merge-rows`: MERGE seconds, data files the MERGE read, bytes written (snapshot summary).
3. many: T tables, a first run creates them (100 changes each), the measured run applies 100 more
   changes each, then a run after everything is applied (no changes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_apply_support as work  # type: ignore[import-not-found,unused-ignore]  # beside this file
import bench_support as support  # type: ignore[import-not-found,unused-ignore]
import psutil  # type: ignore[import-untyped,unused-ignore]

from ticdc_lake.landing.store import LandingStore

MIB = 2**20
SCALES: dict[str, dict[str, Any]] = {
    "full": {
        "e2e_tables": 10,
        "e2e_changes": 1_000_000,
        "e2e_rows": 1_000_000,
        "merge_changes": 100_000,
        "merge_rows": "1000000,10000000",
        "many_tables": 200,
        "many_changes": 100,
        "rows_per_file": 1_000_000,
    },
    "small": {
        "e2e_tables": 10,
        "e2e_changes": 100_000,
        "e2e_rows": 100_000,
        "merge_changes": 10_000,
        "merge_rows": "100000,1000000",
        "many_tables": 20,
        "many_changes": 100,
        "rows_per_file": 100_000,
    },
}
SCENARIOS = ("e2e", "merge", "many")


def prepare(workdir: Path, args: argparse.Namespace) -> None:
    """Child 1: build and land the first round of messages."""
    config = support.write_config(workdir, work.PROTOCOL)
    store = LandingStore(config.pipeline(support.PIPELINE).landing_uri, support.PIPELINE)
    spec = _round(args, 1)
    started = time.perf_counter()
    values = work.build_round(work.Templates(), spec, args.partitions, args.batches)
    built = time.perf_counter() - started
    size, offsets = work.land_round(store, spec, values)
    _emit(
        {
            "messages": sum(len(b) for p in values for b in p),
            "build_s": built,
            "land_s": time.perf_counter() - started - built,
            "landed_mib": size / MIB,
            "offsets": list(offsets),
        }
    )


def _round(args: argparse.Namespace, number: int, offsets: tuple[int, ...] = ()) -> Any:
    """Round 1 hits the seeded rows; round 2 (scenario many) the rows of round 1."""
    first_ts = support.FIRST_TS + (number - 1) * 10 * args.tables * args.changes
    existing = args.rows + (number - 1) * -(-args.changes // 3)
    return work.Round(
        tables=args.tables,
        changes=args.changes,
        existing=existing,
        hot=args.hot,
        first_ts=first_ts,
        sequence=1 + (number - 1) * args.batches,
        offsets=offsets,
        bootstrap=number == 1,
    )


def run(workdir: Path, args: argparse.Namespace) -> None:
    """Child 2: seed the targets, then the stages on local Spark, sampled and timed per phase."""
    log_path = workdir / "spark.log"
    log_file = open(log_path, "ab")  # noqa: SIM115  # the JVM inherits fd 2 for its whole life
    os.dup2(log_file.fileno(), 2)
    from ticdc_lake.spark.session import pipeline_session
    from ticdc_lake.spark.system_tables import SystemTables

    config = support.write_config(workdir, work.PROTOCOL)
    pipeline = config.pipeline(support.PIPELINE)
    sampler = support.TreeSampler().start()
    spark, session_s = support.timed(lambda: pipeline_session(config, pipeline, "bench"))
    work.enable_iceberg_reports(spark)
    SystemTables.of(config, pipeline).ensure(spark)
    seed_s = sum(work.seed_target(spark, pipeline, t, args.rows, args.rows_per_file) for t in range(args.tables))
    sampler.sample()
    idle = sampler.cpu()
    sampler.reset()
    result: dict[str, Any] = {"session_s": session_s, "seed_s": seed_s}
    result["runs"] = [_stages(spark, config, pipeline, log_path, "run-1", args.tables)]
    if args.scenario == "e2e":  # the text -> typed step of apply against the rest, on the run's own events
        clock = work.PhaseClock()
        clock.processes = [psutil.Process()] + [
            p for p in psutil.Process().children(recursive=True) if p.name() == "java"
        ]
        events = SystemTables.of(config, pipeline).change_events
        result["typed_step"] = work.typed_step_cost(spark, events, pipeline, args.tables, clock.now)
    if args.scenario == "many":
        store = LandingStore(pipeline.landing_uri, pipeline.id)
        spec = _round(args, 2, tuple(args.offsets))
        work.land_round(store, spec, work.build_round(work.Templates(), spec, args.partitions, args.batches))
        result["runs"].append(_stages(spark, config, pipeline, log_path, "run-2", args.tables))
        result["runs"].append(_stages(spark, config, pipeline, log_path, "run-3", args.tables))
    sampler.sample()
    result["cpu"] = {kind: value - idle.get(kind, 0.0) for kind, value in sampler.cpu().items()}
    result["peak_mib"] = sampler.peak_total / MIB
    result["peak_by_kind_mib"] = {k: v / MIB for k, v in sampler.peak_by_kind.items()}
    result["processes"] = dict(sampler.most_processes)
    spark.stop()
    sampler.stop()
    _emit(result)


def _stages(spark: Any, config: Any, pipeline: Any, log_path: Path, run_id: str, tables: int) -> dict[str, Any]:
    from ticdc_lake.spark import target_tables
    from ticdc_lake.spark.apply_job import run_apply
    from ticdc_lake.spark.decode_job import run_decode
    from ticdc_lake.spark.schema_history_job import run_schema_history
    from ticdc_lake.spark.target_tables import TargetTable

    clock = work.PhaseClock()
    clock.processes = [psutil.Process()] + [p for p in psutil.Process().children(recursive=True) if p.name() == "java"]
    jobs = [work.spark_jobs(spark)]
    t0 = clock.now()
    decoded = run_decode(spark, config, pipeline, run_id)
    t1 = clock.now()
    jobs.append(work.spark_jobs(spark))
    run_schema_history(spark, config, pipeline, run_id)
    t2 = clock.now()
    jobs.append(work.spark_jobs(spark))
    log_start = log_path.stat().st_size
    load = os.getloadavg()[0]
    with clock.installed():
        summary = run_apply(spark, config, pipeline, run_id)
    t3 = clock.now()
    jobs.append(work.spark_jobs(spark))
    started, apply_s, apply_cpu = t2[0], t3[0] - t2[0], t3[1] - t2[1]
    decode_s, history_s = t1[0] - t0[0], t2[0] - t1[0]
    with open(log_path, "rb") as f:
        f.seek(log_start)
        reports = work.iceberg_reports(f.read().decode(errors="replace"))
    targets = {f".{work.table_name(t)}" for t in range(tables)}
    mine = [r for r in reports if any(r["table"].endswith(t) for t in targets)]
    snapshots = []
    for t in range(tables):
        target = TargetTable.for_upstream(pipeline, work.DATABASE, work.table_name(t))
        _, summary_props = target_tables.latest_snapshot(spark, target)
        snapshots.append({"table": target.name, **{k: v for k, v in summary_props.items() if k.startswith("added")}})
    commits = [r for r in mine if r["kind"] == "CommitReport"]
    scans = [r for r in mine if r["kind"] == "ScanReport"]
    return {
        "run_id": run_id,
        "events": decoded.events,
        "decode_s": decode_s,
        "decode_timings": decoded.timings,
        "history_s": history_s,
        "apply_s": apply_s,
        "applied": len(summary.applied),
        "held": summary.held,
        "failed": summary.failed,
        "phases": clock.phases(started, apply_s),
        "cpu_phases": clock.phases(started, apply_cpu, clock.cpu),
        "decode_cpu": t1[1] - t0[1],
        "history_cpu": t2[1] - t1[1],
        "apply_cpu": apply_cpu,
        "load": [load, os.getloadavg()[0]],
        "calls": clock.calls,
        "commit_s": sum(r["seconds"] for r in commits),
        "commits": len(commits),
        "scans": len(scans),
        "scan_planning_s": sum(r["seconds"] for r in scans),
        "scanned_data_files": sum(r.get("resultDataFiles", 0) for r in scans),
        "skipped_data_files": sum(r.get("skippedDataFiles", 0) for r in scans),
        "scanned_bytes": sum(r.get("totalFileSizeInBytes", 0) for r in scans),
        "snapshots": snapshots,
        "jobs": {stage: jobs[i + 1] - jobs[i] for i, stage in enumerate(("decode", "history", "apply"))},
    }


def _emit(result: dict[str, Any]) -> None:
    print("BENCH-RESULT " + json.dumps(result, default=str), flush=True)


def _child(args: list[str]) -> dict[str, Any]:
    command = [sys.executable, __file__, *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("BENCH-RESULT "):
            result: dict[str, Any] = json.loads(line.removeprefix("BENCH-RESULT "))
            return result
    tail = (done.stdout + done.stderr)[-3000:]
    return {"failed": f"exit {done.returncode}: {tail}"}


def scenario(name: str, args: argparse.Namespace, tables: int, changes: int, rows: int) -> dict[str, Any]:
    """Both children of one scenario in a fresh folder; the Spark log is kept on failure."""
    with tempfile.TemporaryDirectory(prefix=f"ticdc-lake-bench-apply-{name}-") as tmp:
        sizes = ["--tables", str(tables), "--changes", str(changes), "--rows", str(rows), "--hot", str(args.hot)]
        sizes += ["--partitions", str(args.partitions), "--batches", str(args.batches)]
        sizes += ["--rows-per-file", str(args.rows_per_file), "--workdir", tmp, "--scenario", name]
        prepared = _child(["--child", "prepare", *sizes])
        if "failed" in prepared:
            return {"prepared": prepared, "failed": prepared["failed"]}
        offsets = [str(o) for o in prepared["offsets"]]
        result = _child(["--child", "run", *sizes, "--offsets", *offsets])
        if args.keep_logs and (Path(tmp) / "spark.log").exists():
            Path(args.keep_logs).mkdir(parents=True, exist_ok=True)
            shutil.copy(Path(tmp) / "spark.log", Path(args.keep_logs) / f"{name}-{tables}x{rows}.log")
        if "failed" in result:
            log = Path(tmp) / "spark.log"
            tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
            result["failed"] += "\n--- spark.log tail ---\n" + tail
        return {"prepared": prepared, **result}


def _print_phases(run: dict[str, Any], per: int) -> None:
    for label, key in (("wall clock", "phases"), ("CPU of driver + JVM", "cpu_phases")):
        items = [(k, v) for k, v in run[key].items() if abs(v) >= 0.005]
        text = ", ".join(f"{k} {v:.2f}" for k, v in items)
        print(f"    apply {label} by phase (s): {text}")
        if per > 1:
            print(f"      per table (s): {', '.join(f'{k} {v / per:.3f}' for k, v in items)}")
    print(f"    machine load average (1 min) before / after apply: {run['load'][0]:.1f} / {run['load'][1]:.1f}")
    if "jobs" in run:
        jobs = run["jobs"]
        print(f"    Spark jobs: decode {jobs['decode']}, schema history {jobs['history']}, apply {jobs['apply']}")
    # Iceberg logs a ScanReport only for scans it plans itself; Spark's scans of the targets report
    # to Spark's SQL metrics instead, so no report is "not measured", not "nothing read".
    scans = (
        f"{run['scans']} target scan(s) read {run['scanned_data_files']} data file(s) "
        f"({run['scanned_bytes'] / MIB:.1f} MiB), skipped {run['skipped_data_files']} by statistics"
        if run["scans"]
        else "target scans: no Iceberg scan report in the Spark log (not measured)"
    )
    print(f"    Iceberg: {run['commits']} target commit(s) {run['commit_s']:.2f} s (inside MERGE); {scans}")


def _typed_step(step: dict[str, Any] | None, apply_cpu: float, changes: int) -> None:
    """Issue 14 item 3: what the text -> typed step costs per change against the rest of apply."""
    if not step or not step["changes"]:
        return
    per = 1e6 / step["changes"]
    cast = step["typed_cpu"] - step["text_cpu"]
    print(
        f"  text -> typed step, measured apart on the run's {step['changes']:,} READY row events (CPU µs per change, "
        f"driver + JVM): net change {step['net_cpu'] * per:.1f}; MERGE source typed + bad values "
        f"{step['typed_cpu'] * per:.1f} against the same as text {step['text_cpu'] * per:.1f}: try_cast + count "
        f"{cast * per:.1f} µs = {cast / apply_cpu:.0%} of the apply stage's {apply_cpu * 1e6 / changes:.1f}"
    )
    print(f"    wall s: net change {step['net_s']:.2f}, typed {step['typed_s']:.2f}, text {step['text_s']:.2f}")


def _memory(result: dict[str, Any]) -> None:
    kinds = ", ".join(
        f"{k} {v:,.0f} MiB in {result['processes'].get(k, 0)}" for k, v in sorted(result["peak_by_kind_mib"].items())
    )
    cpu = ", ".join(f"{k} {v:.1f}" for k, v in sorted(result["cpu"].items()))
    print(f"  peak PSS of driver + JVM + Python workers: {result['peak_mib']:,.0f} MiB ({kinds}); CPU s: {cpu}")


def _failed(name: str, result: dict[str, Any]) -> bool:
    if "failed" in result:
        print(f"  {name} FAILED: {result['failed']}")
        return True
    for run in result["runs"]:
        if run["failed"] or run["held"]:
            print(f"  {run['run_id']}: held {run['held']}, failed {run['failed']}")
    return False


def _bytes_written(run: dict[str, Any]) -> tuple[float, int, int]:
    snaps = run["snapshots"]
    size = sum(int(s.get("added-files-size", 0)) for s in snaps)
    data = sum(int(s.get("added-data-files", 0)) for s in snaps)
    deletes = sum(int(s.get("added-delete-files", 0)) for s in snaps)
    return size / MIB, data, deletes


#: (figure, from the wall clock, from CPU seconds, aim, met by the wall clock)
Aims = list[tuple[str, str, str, str, str]]


def report_e2e(result: dict[str, Any], tables: int, changes: int, rows: int, aims: Aims) -> None:
    print(f"\n== 1. end to end: {changes:,} changes over {tables} tables into targets of {rows:,} rows each")
    if _failed("e2e", result):
        aims.append(("end-to-end changes/s", "failed", "", ">= 50,000", "no"))
        return
    p, run = result["prepared"], result["runs"][0]
    print(
        f"  landed {p['messages']:,} messages, {p['landed_mib']:.1f} MiB "
        f"(build {p['build_s']:.1f} s, land {p['land_s']:.1f} s)"
    )
    print(
        f"  seeded {tables} targets x {rows:,} rows in {result['seed_s']:.1f} s; "
        f"JVM start {result['session_s']:.1f} s (not counted)"
    )
    total = run["decode_s"] + run["history_s"] + run["apply_s"]
    # The Python workers decode the messages (mapInArrow): their CPU is part of the end-to-end cost.
    workers = float(result["cpu"].get("workers", 0.0))
    cpu = run["decode_cpu"] + run["history_cpu"] + run["apply_cpu"] + workers
    print(
        f"  decode {run['decode_s']:.1f} s (CPU {run['decode_cpu']:.1f} s), "
        f"schema history {run['history_s']:.1f} s (CPU {run['history_cpu']:.1f} s), "
        f"apply {run['apply_s']:.1f} s (CPU {run['apply_cpu']:.1f} s); {run['applied']} table(s) applied"
    )
    mib, data, deletes = _bytes_written(run)
    print(
        f"  total {total:.1f} s = {changes / total:,.0f} changes/s (CPU {cpu - workers:.1f} s of driver + JVM + "
        f"{workers:.1f} s of Python workers); "
        f"MERGEs wrote {data} data + {deletes} delete file(s), {mib:.1f} MiB"
    )
    _print_phases(run, tables)
    per_change = 1e6 / changes
    apply_phases = ", ".join(
        f"{k} {v * per_change:.1f}" for k, v in run["cpu_phases"].items() if abs(v) * per_change >= 0.05
    )
    print(
        f"  CPU µs per change: decode {run['decode_cpu'] * per_change:.1f} (driver + JVM) + "
        f"{workers * per_change:.1f} (Python workers), schema history {run['history_cpu'] * per_change:.1f}, "
        f"apply {run['apply_cpu'] * per_change:.1f}; total {cpu * per_change:.1f} (aim <= 40)"
    )
    print(f"    apply CPU µs per change by phase: {apply_phases}")
    _typed_step(result.get("typed_step"), run["apply_cpu"], changes)
    _memory(result)
    rate = changes / total
    cpu_rate = f"{changes / cpu:,.0f}-{2 * changes / cpu:,.0f}"
    aims.append(
        ("end-to-end changes/s (decode+history+apply)", f"{rate:,.0f}", cpu_rate, ">= 50,000", _yes(rate >= 50_000))
    )
    apply_rate = f"{changes / run['apply_cpu']:,.0f}-{2 * changes / run['apply_cpu']:,.0f}"
    aims.append(("apply stage alone, changes/s", f"{changes / run['apply_s']:,.0f}", apply_rate, "", ""))


def report_merge(results: list[tuple[int, dict[str, Any]]], changes: int, hot: int, aims: Aims) -> None:
    print(
        f"\n== 2. MERGE of the same {changes:,}-change batch (1/3 inserts, updates and deletes over the newest "
        f"{hot:,} keys) by target size"
    )
    times = []
    for rows, result in results:
        if _failed(f"merge {rows:,}", result):
            continue
        run = result["runs"][0]
        merge_s, merge_cpu = run["phases"]["MERGE (incl. commit)"], run["cpu_phases"]["MERGE (incl. commit)"]
        mib, data, deletes = _bytes_written(run)
        times.append((rows, merge_s, merge_cpu))
        scans = (
            f"read {run['scanned_data_files']} data file(s) {run['scanned_bytes'] / MIB:.1f} MiB, skipped "
            f"{run['skipped_data_files']}; "
            if run["scans"]
            else ""
        )
        print(
            f"  target {rows:>12,} rows: MERGE {merge_s:.2f} s "
            f"(CPU {merge_cpu:.2f} s; commit {run['commit_s']:.2f} s), "
            f"apply {run['apply_s']:.1f} s; {scans}wrote {data} data + {deletes} delete file(s) = {mib:.1f} MiB"
        )
        _print_phases(run, 1)
        _memory(result)
    if len(times) >= 2:
        (small, t0, c0), (large, t1, c1) = times[0], times[-1]
        growth = t1 / t0 if t0 else float("inf")
        aims.append(
            (
                f"MERGE time {large // small}x target ({small:,} -> {large:,})",
                f"{growth:.2f}x",
                f"{c1 / c0 if c0 else float('inf'):.2f}x",
                "<= 1.5x",
                _yes(growth <= 1.5),
            )
        )


def report_many(result: dict[str, Any], tables: int, changes: int, aims: Aims) -> None:
    print(f"\n== 3. per-run cost with {tables} tables")
    if _failed("many", result):
        aims.append(("overhead per table with changes", "failed", "", "< 2 s", "no"))
        return
    labels = ("first run (creates the tables)", f"{changes} changes per table", "no changes (all applied)")
    for label, run in zip(labels, result["runs"], strict=False):
        print(
            f"  {label}: apply {run['apply_s']:.1f} s = {run['apply_s'] / tables:.3f} s per table "
            f"(CPU {run['apply_cpu'] / tables:.3f} s); decode {run['decode_s']:.1f} s, "
            f"schema history {run['history_s']:.1f} s"
        )
        _print_phases(run, tables)
    _memory(result)
    runs = result["runs"]
    if len(runs) >= 3:
        with_changes, without = runs[1]["apply_s"] / tables, runs[2]["apply_s"] / tables
        cpu_with, cpu_without = runs[1]["apply_cpu"] / tables, runs[2]["apply_cpu"] / tables
        aims.append(
            ("apply s per table with changes", f"{with_changes:.2f}", f"{cpu_with:.2f}", "< 2", _yes(with_changes < 2))
        )
        aims.append(
            (
                "apply s per table without changes",
                f"{without:.3f}",
                f"{cpu_without:.3f}",
                "~0 (< 0.05)",
                _yes(without < 0.05),
            )
        )


def _yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", choices=sorted(SCALES), default=os.environ.get("BENCH_SCALE") or "full")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated: e2e, merge, many")
    for name, kind in (("e2e-tables", int), ("e2e-changes", int), ("e2e-rows", int), ("merge-changes", int)):
        parser.add_argument(f"--{name}", type=kind, help="default: from --scale")
    parser.add_argument("--merge-rows", help="comma-separated target sizes (default: from --scale)")
    parser.add_argument("--many-tables", type=int)
    parser.add_argument("--many-changes", type=int)
    parser.add_argument(
        "--hot", type=int, help="updates and deletes hit the newest HOT keys (default: half the smallest target)"
    )
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--keep-logs", help="copy each scenario's Spark log into this folder")
    parser.add_argument("--rows-per-file", type=int, help="seed rows per data file (default: from --scale)")
    # children
    parser.add_argument("--child", choices=["prepare", "run"], help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--scenario", help=argparse.SUPPRESS)
    parser.add_argument("--tables", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--changes", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--offsets", type=int, nargs="*", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.changes //= 1
        (prepare if args.child == "prepare" else run)(Path(args.workdir), args)
        return 0
    scale = SCALES[args.scale]
    for key, value in scale.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    wanted = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    print(
        f"apply benchmark ({args.scale}): local Spark on {os.cpu_count()} cores, JDBC (SQLite) catalog, "
        f"{work.PROTOCOL}, {args.partitions} partitions x {args.batches} batches"
    )
    aims: Aims = []
    hot = args.hot
    if "e2e" in wanted:
        per_table = args.e2e_changes // args.e2e_tables
        args.hot = hot or max(1, args.e2e_rows // 2)
        result = scenario("e2e", args, args.e2e_tables, per_table, args.e2e_rows)
        report_e2e(result, args.e2e_tables, per_table * args.e2e_tables, args.e2e_rows, aims)
    if "merge" in wanted:
        sizes = [int(s) for s in str(args.merge_rows).split(",") if s.strip()]
        args.hot = hot or max(1, min(sizes) // 2)  # the same keys whatever the target size
        results = [(rows, scenario("merge", args, 1, args.merge_changes, rows)) for rows in sizes]
        report_merge(results, args.merge_changes, args.hot, aims)
    if "many" in wanted:
        args.hot = hot or 1_000_000  # every existing key
        result = scenario("many", args, args.many_tables, args.many_changes, 0)
        report_many(result, args.many_tables, args.many_changes, aims)
    print(
        "\nfigures against the aims (wall clock on this machine, and the same from CPU seconds of driver + JVM "
        "(+ Python workers end to end) for an otherwise idle machine: rates between CPU/1 and CPU/2 cores)"
    )
    print(f"{'figure':<46} {'wall clock':>12} {'from CPU s':>16}  {'aim':<12} met")
    for name, value, cpu, aim, met in aims:
        print(f"{name:<46} {value:>12} {cpu:>16}  {aim:<12} {met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
