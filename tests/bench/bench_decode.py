"""Decode benchmark: per protocol, events per second and peak memory of the Spark decode stage.

`make bench-decode` runs it (`BENCH_EVENTS`, default 1,000,000). It prints figures; it asserts
nothing. For protocols with a JVM decoder (``jvm_decode``) the stage runs twice in one sitting on
the same landed batches, Python decoders only (``run_decode(jvm=False)``, the baseline) and with
the JVM path, and prints the ratio; each run says how many messages took each path.

Per protocol: N DML messages (INSERT, UPDATE, DELETE in turn) of one 10-column table,
encoded by the simulator's encoder, are landed with the real LandingStore (no Kafka) over
3 partitions x 2 batches, then decoded by the real decode stage (`run_decode`) on local Spark
with a JDBC (SQLite) Iceberg catalog in a temporary folder. Each protocol runs in fresh
processes: one lands and times the single-process Python loop, one runs Spark, so the memory
figures of one protocol never include another's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import Any

import bench_support as support  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake.landing.store import LandingStore

#: Protocols with a JVM decoder (``ticdc_lake.spark.jvm_decode.registry``): run both ways.
JVM_PROTOCOLS = ("simple-json",)
PROTOCOLS = ("simple-json", "simple-avro", "debezium", "canal-json", "open", "avro")
MIB = 2**20
#: Rows encoded by the simulator per protocol; the other messages repeat them.
DISTINCT = 30_000


def prepare(
    workdir: Path,
    protocol: str,
    events: int,
    partitions: int,
    batches: int,
    python_events: int,
    compression: str,
    tidb_extension: bool,
) -> None:
    """Child process 1: encode and land the messages, time the single-process Python loop."""
    found = support.encoder_for_protocol(protocol, **({} if tidb_extension else {"enable_tidb_extension": False}))
    if found is None:
        _emit({"skipped": "no encoder"})
        return
    encoder, registry = found
    messages, seconds = support.timed(lambda: support.build_messages(encoder, events, partitions, batches, DISTINCT))
    messages = support.compressed(messages, protocol, compression)
    config = support.write_config(workdir, protocol, compression, tidb_extension=tidb_extension)
    pipeline = config.pipeline(support.PIPELINE)
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    for schema_id, text in registry.items():  # what the land task fetches from the schema registry
        store.write_writer_schema(schema_id, text)
    landed, land_seconds = support.timed(lambda: support.land(store, messages))
    result = {
        "messages": messages.count,
        "distinct": messages.distinct,
        "encode_us": messages.encode_seconds / max(1, messages.distinct) * 1e6,
        "generate_s": seconds,
        "land_s": land_seconds,
        "landed_mib": landed / MIB,
        **python_loop(pipeline, store, python_events),
    }
    if _has_vector_decoder(pipeline):
        result["vector"] = vector_loops(pipeline, store, python_events)
    _emit(result)


def python_loop(pipeline: Any, store: Any, limit: int) -> dict[str, float]:
    """Read, decode and convert to Arrow in this one process, as a worker does, without Spark."""
    from ticdc_lake.protocols.registry import decoder_for
    from ticdc_lake.protocols.resources import DecodeResources
    from ticdc_lake.protocols.schema_scan import prepared_lookup
    from ticdc_lake.spark.decode_arrow import events_to_arrow
    from ticdc_lake.spark.decode_worker import BATCH_ROWS, fewer_collections

    manifest = store.manifests()[0]
    files = [r.file for r in manifest.ranges if r.file]
    raw, read_s = support.timed(lambda: list(islice((m for f in files for m in store.read_messages(f)), limit)))
    decoder = decoder_for(pipeline.protocol, pipeline.codec, DecodeResources(store.writer_schemas()))
    lookup = prepared_lookup(decoder, raw)  # what the driver does
    with fewer_collections():  # as in the Spark workers
        decoded, decode_s = support.timed(lambda: [e for m in raw for e in decoder.read(m, lookup)])
        chunks = [decoded[i : i + BATCH_ROWS] for i in range(0, len(decoded), BATCH_ROWS)]
        _, arrow_s = support.timed(lambda: [events_to_arrow("bench", "1", "bench", c) for c in chunks])
    count = len(decoded)
    return {
        "py_messages": len(raw),
        "py_read_per_s": len(raw) / read_s,
        "py_decode_per_s": count / decode_s,
        "py_arrow_per_s": count / arrow_s,
        "py_all_per_s": count / (read_s * count / max(1, len(raw)) + decode_s + arrow_s),
    }


def _has_vector_decoder(pipeline: Any) -> bool:
    from ticdc_lake.spark.arrow_decode.worker_events import vector_decoder

    return vector_decoder(pipeline, "bench") is not None


def vector_loops(pipeline: Any, store: Any, limit: int) -> dict[str, dict[str, float]]:
    """The Python decoder alone against the vector path (``arrow_decode``) in this one process, on the
    same messages: the landed ones (the first ``limit``) and, for Debezium, as many of a variant of the
    table without its DECIMAL column (whose doubles TiCDC may write positionally where pyarrow writes
    an exponent), encoded here. Each loop decodes as a worker does: the Python decoder
    :data:`~ticdc_lake.spark.decode_worker.BATCH_ROWS` messages at a time, the vector path
    :data:`~ticdc_lake.spark.decode_worker.VECTOR_ROWS` at a time (then the Python decoder on the
    messages it did not take), and converts the events to Arrow.
    Two rounds, A B A B; CPU (``process_time``) and wall seconds of each."""
    from ticdc_lake.config import Compression, Protocol
    from ticdc_lake.protocols.base import MemorySchemaLookup
    from ticdc_lake.protocols.registry import decoder_for
    from ticdc_lake.protocols.resources import DecodeResources
    from ticdc_lake.protocols.schema_scan import prepared_lookup

    manifest = store.manifests()[0]
    files = [r.file for r in manifest.ranges if r.file]
    landed = list(islice((m for f in files for m in store.read_messages(f)), limit))
    resources = DecodeResources(store.writer_schemas())
    # The driver's lookup: announced schemas, DDL folded (by offset where rows have no commit TSO).
    lookup = prepared_lookup(decoder_for(pipeline.protocol, pipeline.codec, resources), landed)
    figures = {"landed": _ab_rounds(pipeline, resources, landed, lookup)}
    if pipeline.protocol is Protocol.DEBEZIUM and pipeline.codec.compression is Compression.NONE:
        variant, variant_schema = _without_decimal(len(landed))
        figures["no_decimal"] = _ab_rounds(pipeline, resources, variant, MemorySchemaLookup([variant_schema]))
    return figures


def _without_decimal(count: int) -> tuple[list[Any], Any]:
    """``count`` Debezium DML messages (INSERT, UPDATE, DELETE in turn) of the benchmark table without
    its DECIMAL column ``amount``, each with its own ``customer``, and that table's schema."""
    from dataclasses import replace

    from ticdc_lake.events import RawMessage
    from ticdc_sim.debezium_encoder import DebeziumEncoder
    from ticdc_sim.model import DmlOp, RowChange

    schema = replace(support.SCHEMA, columns=tuple(c for c in support.SCHEMA.columns if c.name != "amount"))
    encoder = DebeziumEncoder("UTC")

    def row(i: int) -> dict[str, Any]:
        return {k: v for k, v in support.row(i).items() if k != "amount"}

    templates = []
    for i in range(min(count, 3_000)):
        op = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)[i % 3]
        before = row(i) if op is not DmlOp.INSERT else None
        after = {**row(i + 1), "id": i} if op is DmlOp.UPDATE else row(i) if op is DmlOp.INSERT else None
        change = RowChange(op, schema.database, schema.table, before, after)
        templates.append(encoder.encode_row(change, schema, support.FIRST_TS + i, 1))
    messages = []
    for i in range(count):
        template = templates[i % len(templates)]
        value = template.value.replace(support.MARK, b"%010d" % i)
        messages.append(RawMessage(support.TOPIC, 0, i, 1_700_000_000_000, template.key, value))
    return messages, schema


def _ab_rounds(pipeline: Any, resources: Any, messages: list[Any], lookup: Any) -> dict[str, float]:
    """CPU and wall seconds of the Python-only loop (A) and the vector loop (B), A B A B, summed over
    both rounds; events and the messages the vector path took, of one round."""
    import copy

    from ticdc_lake.protocols.registry import decoder_for
    from ticdc_lake.spark.arrow_decode.worker_events import vector_decoder
    from ticdc_lake.spark.decode_arrow import events_to_arrow, sorts_images
    from ticdc_lake.spark.decode_worker import BATCH_ROWS, VECTOR_ROWS, fewer_collections

    sort = sorts_images(pipeline.protocol.value)

    chunks = [messages[i : i + BATCH_ROWS] for i in range(0, len(messages), BATCH_ROWS)]
    vector_chunks = [messages[i : i + VECTOR_ROWS] for i in range(0, len(messages), VECTOR_ROWS)]

    def python_only() -> tuple[int, int]:
        decoder, known = decoder_for(pipeline.protocol, pipeline.codec, resources), copy.deepcopy(lookup)
        events = 0
        for chunk in chunks:
            decoded = [e for m in chunk for e in decoder.read(m, known)]
            events_to_arrow("bench", "1", "bench", decoded, sort_images=sort)
            events += len(decoded)
        return events, 0

    def vector() -> tuple[int, int]:
        decoder, known = decoder_for(pipeline.protocol, pipeline.codec, resources), copy.deepcopy(lookup)
        vectors = vector_decoder(pipeline, "bench", resources)
        assert vectors is not None
        events = taken = 0
        for chunk in vector_chunks:
            result = vectors.decode("1", chunk, known)
            rest = [m for m, took in zip(chunk, result.taken, strict=True) if not took]
            decoded = [e for m in rest for e in decoder.read(m, known)]
            if decoded:
                events_to_arrow("bench", "1", "bench", decoded, sort_images=sort)
            count = result.events.num_rows if result.events is not None else 0
            events += len(decoded) + count
            taken += count
        return events, taken

    figures = dict.fromkeys(("python_cpu_s", "python_wall_s", "vector_cpu_s", "vector_wall_s"), 0.0)
    counts: dict[str, int] = {}
    with fewer_collections():  # as in the Spark workers
        for _ in range(2):
            for name, loop in (("python", python_only), ("vector", vector)):
                cpu, wall = time.process_time(), time.perf_counter()
                events, taken = loop()
                figures[f"{name}_cpu_s"] += time.process_time() - cpu
                figures[f"{name}_wall_s"] += time.perf_counter() - wall
                counts[f"{name}_events"] = events
                counts["taken"] = max(counts.get("taken", 0), taken)
    return {**figures, **counts, "messages": len(messages), "load": os.getloadavg()[0]}


def decode(
    workdir: Path,
    protocol: str,
    jvm: bool,
    properties: str = "",
    vector: bool = True,
    compression: str = "none",
    tidb_extension: bool = True,
) -> None:
    """Child process 2: the decode stage on local Spark, with this process tree sampled (every
    landed batch decoded, so a second run on the same lake does the same work)."""
    from ticdc_lake.spark.decode_job import run_decode
    from ticdc_lake.spark.session import pipeline_session
    from ticdc_lake.spark.system_tables import SystemTables

    config = support.write_config(workdir, protocol, compression, tidb_extension=tidb_extension)
    pipeline = config.pipeline(support.PIPELINE)
    sampler = support.TreeSampler().start()
    spark, start_s = support.timed(lambda: pipeline_session(config, pipeline, "bench"))
    tables = SystemTables.of(config, pipeline)
    tables.ensure(spark)  # an existing lake: the first run creates its tables once
    if properties:  # measurement only: Parquet write properties of change_events to compare
        spark.sql(f"ALTER TABLE {tables.change_events} SET TBLPROPERTIES ({properties})")
    sampler.sample()
    idle = sampler.cpu()
    sampler.reset()
    phases = _cpu_by_phase(sampler, idle)
    load_before = os.getloadavg()[0]
    summary, seconds = support.timed(
        lambda: run_decode(spark, config, pipeline, "bench", redecode=True, jvm=jvm, vector=vector)
    )
    load_after = os.getloadavg()[0]
    sampler.sample()
    cpu = {kind: value - idle.get(kind, 0.0) for kind, value in sampler.cpu().items()}
    peak_total, peak_by_kind, processes = sampler.peak_total, dict(sampler.peak_by_kind), sampler.most_processes
    spark.stop()
    sampler.stop()
    _emit(
        {
            "events": summary.events,
            "jvm_events": summary.jvm_events,
            "python_messages": summary.python_messages,
            "vector": vector,
            "vector_events": getattr(summary, "vector_events", None),
            "quarantined": summary.quarantined,
            "pending": summary.pending,
            "seconds": seconds,
            "session_s": start_s,
            "load": [load_before, load_after],
            "timings": summary.timings,
            "cpu": cpu,
            "peak_mib": peak_total / MIB,
            "peak_by_kind_mib": {k: v / MIB for k, v in peak_by_kind.items()},
            "processes": dict(processes),
            "phase_cpu": phases,
        }
    )


def _cpu_by_phase(sampler: Any, idle: dict[str, float]) -> dict[str, dict[str, float]]:
    """CPU seconds by process kind of each phase of ``run_decode`` (filled while it runs).

    Measurement only: the stage's phase timer (``decode_job._PhaseTimer.lap``, which closes each
    phase the summary's ``timings`` name) also samples this process tree, so each phase gets the
    CPU its processes used since the previous lap.
    """
    from ticdc_lake.spark import decode_job

    phases: dict[str, dict[str, float]] = {}
    previous = dict(idle)
    lap = decode_job._PhaseTimer.lap

    def sampled_lap(timer: Any, phase: str) -> None:
        lap(timer, phase)
        sampler.sample()
        now: dict[str, float] = {}
        for kind, seconds in dict(sampler.cpu_by_pid).values():  # a copy: the sampler's thread adds processes
            now[kind] = now.get(kind, 0.0) + seconds
        phases[phase] = {kind: now.get(kind, 0.0) - previous.get(kind, 0.0) for kind in now}
        previous.clear()
        previous.update(now)

    decode_job._PhaseTimer.lap = sampled_lap  # type: ignore[method-assign,assignment]
    return phases


def _emit(result: dict[str, Any]) -> None:
    print("BENCH-RESULT " + json.dumps(result), flush=True)


def _child(args: list[str]) -> dict[str, Any]:
    command = [sys.executable, __file__, *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("BENCH-RESULT "):
            result: dict[str, Any] = json.loads(line.removeprefix("BENCH-RESULT "))
            return result
    tail = (done.stdout + done.stderr)[-3000:]
    return {"failed": f"exit {done.returncode}: {tail}"}


def report(protocol: str, prepared: dict[str, Any], run: dict[str, Any], path: str) -> None:
    print(f"\n== {protocol}, {path}")
    if "skipped" in prepared or "failed" in prepared:
        print(f"  skipped: {prepared.get('skipped') or prepared.get('failed')}")
        return
    print(
        f"  input: {prepared['messages']:,} messages ({prepared['distinct']:,} distinct rows encoded by the simulator "
        f"at {prepared['encode_us']:.0f} us each, the rest repeat them), generated in {prepared['generate_s']:.1f} s, "
        f"landed {prepared['landed_mib']:.1f} MiB in {prepared['land_s']:.1f} s"
    )
    print(
        f"  Python only, 1 process, {prepared['py_messages']:,} messages: read {prepared['py_read_per_s']:,.0f} msg/s, "
        f"decode {prepared['py_decode_per_s']:,.0f} events/s, to Arrow {prepared['py_arrow_per_s']:,.0f} events/s, "
        f"all three {prepared['py_all_per_s']:,.0f} events/s"
    )
    for name, what in (("landed", "the landed messages"), ("no_decimal", "the table without its DECIMAL column")):
        if name in prepared.get("vector", {}):
            _vector_report(what, prepared["vector"][name])
    if "failed" in run:
        print(f"  Spark decode stage FAILED: {run['failed']}")
        return
    rate = run["events"] / run["seconds"]
    print(
        f"  Spark decode stage, local[*] on {os.cpu_count()} cores: {run['events']:,} events in {run['seconds']:.1f} s "
        f"= {rate:,.0f} events/s; {run['quarantined']} quarantined, {run['pending']} pending"
    )
    print(f"    (run_decode on existing system tables; the JVM start, {run['session_s']:.1f} s, is not included)")
    print(
        f"  paths: {run['jvm_events']:,} event(s) decoded in the JVM, {run['python_messages']:,} message(s) through "
        "the Python decoder"
    )
    if "vector" in run:
        taken = "" if run.get("vector_events") is None else f", {run['vector_events']:,} event(s) decoded by it"
        print(f"  vector path (arrow_decode): {'on' if run['vector'] else 'off (--no-vector)'}{taken}")
    kinds = ", ".join(
        f"{k} {v:,.0f} MiB in {run['processes'].get(k, 0)} process(es)"
        for k, v in sorted(run["peak_by_kind_mib"].items())
    )
    print(
        f"  peak memory, PSS (shared pages split) of driver Python + JVM + Python workers: {run['peak_mib']:,.0f} MiB"
    )
    print(f"    by kind, each at its own peak: {kinds}")
    timings = run["timings"]
    phases = ", ".join(f"{k} {v:.1f}" for k, v in timings.items() if not k.startswith("worker_"))
    print(f"  wall clock by phase (s): {phases}")
    worker = ", ".join(f"{k.removeprefix('worker_')} {v:.1f}" for k, v in timings.items() if k.startswith("worker_"))
    print(f"  decode tasks, seconds summed over tasks (wall clock by step, and CPU): {worker}")
    for phase, by_kind in run.get("phase_cpu", {}).items():
        if sum(by_kind.values()) >= 0.05:
            kinds = ", ".join(f"{k} {v:.1f}" for k, v in sorted(by_kind.items()) if v >= 0.05)
            print(f"    CPU s in phase {phase}: {kinds}")
    cpu = ", ".join(f"{k} {v:.1f}" for k, v in sorted(run["cpu"].items()))
    print(f"  CPU s by process during run_decode: {cpu} (of {run['seconds'] * (os.cpu_count() or 1):.1f} available)")
    per_event = ", ".join(f"{k} {v / max(1, run['events']) * 1e6:.1f}" for k, v in sorted(run["cpu"].items()))
    total = sum(run["cpu"].values())
    print(f"  CPU us per event by process: {per_event}; all {total / max(1, run['events']) * 1e6:.1f}")
    before, after = run["load"]
    print(f"  machine load average (1 min) before / after run_decode: {before:.1f} / {after:.1f}")


def _vector_report(what: str, figures: dict[str, Any]) -> None:
    """One sitting, one process, the same messages: CPU µs per event of each loop, wall beside it."""
    events = max(1, figures["python_events"])
    python_cpu, vector_cpu = figures["python_cpu_s"], figures["vector_cpu_s"]
    python_wall, vector_wall = figures["python_wall_s"], figures["vector_wall_s"]
    print(
        f"  vector path vs Python only, 1 process, {figures['messages']:,} messages of {what} (2 rounds A B A B, "
        f"load {figures['load']:.1f}): took {figures['taken']:,} of {figures['vector_events']:,} events "
        f"({figures['taken'] / max(1, figures['vector_events']):.0%})"
    )
    print(
        f"    CPU us per event: Python only {python_cpu / 2 / events * 1e6:.1f}, vector + Python on the rest "
        f"{vector_cpu / 2 / events * 1e6:.1f} ({vector_cpu / max(1e-9, python_cpu):.2f}x); wall s "
        f"{python_wall:.2f} / {vector_wall:.2f} ({vector_wall / max(1e-9, python_wall):.2f}x)"
    )
    if figures["python_events"] != figures["vector_events"]:
        print(f"    EVENTS DIFFER: {figures['python_events']:,} Python only, {figures['vector_events']:,} vector")


def _summary_line(protocol: str, prepared: dict[str, Any], run: dict[str, Any], path: str) -> str:
    if "events" not in run:
        reason = prepared.get("skipped") or ("failed" if "failed" in prepared or "failed" in run else "skipped")
        return f"{protocol:<12} {path:<7} {reason}"
    return (
        f"{protocol:<12} {path:<7} {run['events']:>9,} {run['seconds']:>9.1f} {sum(run['cpu'].values()):>7.1f} "
        f"{run['events'] / run['seconds']:>9,.0f} {prepared['py_decode_per_s']:>28,.0f} {run['peak_mib']:>9,.0f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000, help="DML messages per protocol")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS), help="comma-separated protocol ids")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--python-events", type=int, default=200_000, help="messages of the Python-only loop")
    parser.add_argument("--child", choices=["prepare", "decode"], help=argparse.SUPPRESS)
    parser.add_argument("--jvm", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-vector",
        action="store_true",
        help="run the decode stage without the vector path (run_decode(vector=False)): the Python decoder alone",
    )
    parser.add_argument(
        "--compression",
        choices=["none", "snappy", "lz4"],
        default="none",
        help="the changefeed's large-message-handle-compression: messages are landed compressed as TiCDC "
        "sends them and the pipeline's codec.compression is set to match",
    )
    parser.add_argument(
        "--no-tidb-extension",
        action="store_true",
        help="encode without the TiDB extension (canal-json, avro, debezium) and configure the pipeline so: "
        "Canal-JSON and Avro rows then have no commit TSO and bind by offset",
    )
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument(
        "--table-properties",
        default="",
        help="measurement only: set on change_events before the stage runs, "
        "e.g. \"'write.parquet.compression-codec'='snappy'\"",
    )
    args = parser.parse_args()
    if args.child == "prepare":
        prepare(
            Path(args.workdir),
            args.protocols,
            args.events,
            args.partitions,
            args.batches,
            args.python_events,
            args.compression,
            not args.no_tidb_extension,
        )
        return 0
    if args.child == "decode":
        decode(
            Path(args.workdir),
            args.protocols,
            args.jvm,
            args.table_properties,
            vector=not args.no_vector,
            compression=args.compression,
            tidb_extension=not args.no_tidb_extension,
        )
        return 0
    print(
        f"decode benchmark: {args.events:,} DML messages per protocol, {args.partitions} partitions x "
        f"{args.batches} batches, {os.cpu_count()} cores; vector path {'off' if args.no_vector else 'on'}; "
        f"compression {args.compression}{'; without the TiDB extension' if args.no_tidb_extension else ''}"
    )
    sizes = ["--events", str(args.events), "--partitions", str(args.partitions), "--batches", str(args.batches)]
    table = []
    for protocol in [p.strip() for p in args.protocols.split(",") if p.strip()]:
        with tempfile.TemporaryDirectory(prefix=f"ticdc-lake-bench-{protocol}-") as tmp:
            common = ["--protocols", protocol, "--workdir", tmp, "--compression", args.compression]
            common += ["--no-tidb-extension"] if args.no_tidb_extension else []
            prepared = _child(["--child", "prepare", *common, *sizes, "--python-events", str(args.python_events)])
            paths = ["python", "jvm"] if protocol in JVM_PROTOCOLS else ["python"]
            runs = {}
            for path in paths:
                flag = (["--jvm"] if path == "jvm" else []) + (["--no-vector"] if args.no_vector else [])
                extra = ["--table-properties", args.table_properties] if args.table_properties else []
                runs[path] = _child(["--child", "decode", *common, *flag, *extra]) if "messages" in prepared else {}
                report(protocol, prepared, runs[path], path)
                table.append(_summary_line(protocol, prepared, runs[path], path))
            if all("events" in r and "seconds" in r for r in runs.values()) and len(runs) == 2:
                base, fast = runs["python"], runs["jvm"]
                ratio = (fast["events"] / fast["seconds"]) / (base["events"] / base["seconds"])
                cpu = sum(fast["cpu"].values()) / max(1e-9, sum(base["cpu"].values()))
                table.append(f"{protocol:<12} JVM path / Python only: {ratio:.2f}x the events/s, {cpu:.2f}x the CPU s")
    print("\nprotocol     path       events   seconds   CPU s  events/s  Python-only decode events/s  peak MiB")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
