"""Land benchmark: messages/s of the land stage, one consumer with deflate (the old way) against the new settings.

`make bench-land` runs it (`BENCH_MESSAGES`, default 1,000,000). It prints figures; it asserts
nothing. Per scenario (Debezium values with their schema, about 4 KB, and Simple JSON, about
600 bytes, both encoded by the simulator with a unique row per message), it produces N messages
to a topic of its own on the local broker (several partitions), then lands that topic with the
real ``land()`` once per variant, each into a fresh landing folder and in a fresh process:
messages/s, MB/s of Kafka payload, wall and CPU seconds of the land process (its consumers are
threads), peak RSS, file bytes, and the ratio to the baseline measured
in the same sitting. Then the codec table: the same messages written and read by fastavro with
each codec (CPU microseconds per message and bytes), in this process.

``--baseline DIR`` also lands each variant with the code of another checkout (``DIR/include``
first on the child's ``PYTHONPATH``, say a worktree of an older commit), alternating with this
one ``--repeat`` times, for an A/B in one sitting; ``--now-only`` runs the product's variant only.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import bench_support as support  # type: ignore[import-not-found,unused-ignore]  # beside this file
import fastavro
import psutil  # type: ignore[import-untyped,unused-ignore]
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from ticdc_lake.config import PipelineConfig
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.consumers import LandTuning
from ticdc_lake.landing.lander import land
from ticdc_lake.landing.raw_batch import BLOCK_BYTES, CODEC, ConsumedRecord, raw_batch_schema, write_raw_batch

MB = 1e6
SCENARIOS = {"debezium": "Debezium with schemas (~4 KB)", "simple-json": "Simple JSON (~600 B)"}
#: Rows encoded by the simulator; the other messages repeat them with a unique ``customer``.
DISTINCT = 2_000
#: fastavro's default block size, which the land stage used before.
OLD_BLOCK_BYTES = 16_000
#: (name, kafka.consumers (0: one per CPU), codec, Avro block bytes); the first is the
#: baseline: the land stage before parallel consumers (one consumer, deflate in 16,000-byte blocks).
VARIANTS: list[tuple[str, int, str, int]] = [
    ("1 consumer, deflate, 16 KB blocks (old)", 1, "deflate", OLD_BLOCK_BYTES),
    ("1 consumer, snappy", 1, "snappy", BLOCK_BYTES),
    (f"1 consumer, {CODEC}", 1, CODEC, BLOCK_BYTES),
    (f"N consumers (threads), {CODEC}", 0, CODEC, BLOCK_BYTES),
]
#: (codec, level, Avro block bytes) of the codec table; spark-avro reads all of them.
CODECS: list[tuple[str, int | None, int]] = [
    ("deflate", 6, OLD_BLOCK_BYTES),
    ("snappy", None, OLD_BLOCK_BYTES),
    ("zstandard", 1, OLD_BLOCK_BYTES),
    ("null", None, BLOCK_BYTES),
    ("deflate", 6, BLOCK_BYTES),
    ("deflate", 1, BLOCK_BYTES),
    ("snappy", None, BLOCK_BYTES),
    ("zstandard", 1, BLOCK_BYTES),
    ("zstandard", 3, BLOCK_BYTES),
    ("zstandard", -1, BLOCK_BYTES),  # zstd's fast levels: less CPU, bigger files
    ("zstandard", -5, BLOCK_BYTES),
    ("bzip2", None, BLOCK_BYTES),
    ("xz", None, BLOCK_BYTES),
]


def templates(scenario: str) -> list[support.EncodedMessage]:
    found = support.encoder_for_protocol(scenario)
    assert found is not None, f"the simulator has no encoder for {scenario}"
    messages = support.build_messages(found[0], DISTINCT, 1, 1, DISTINCT)
    return [m for m in messages.batches[0][0][1:] if m.value is not None]  # without the schema message


def payload(rows: list[support.EncodedMessage], i: int) -> tuple[bytes | None, bytes]:
    row = rows[i % len(rows)]
    assert row.value is not None
    return row.key, row.value.replace(support.MARK, b"%010d" % i)


def produce(bootstrap: str, topic: str, partitions: int, count: int, rows: list[support.EncodedMessage]) -> float:
    """``count`` messages round-robin over the partitions; returns the payload bytes (keys + values)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(30)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "queue.buffering.max.messages": 1_000_000,
            "acks": 1,
        }
    )
    total = 0
    for i in range(count):
        key, value = payload(rows, i)
        total += len(value) + len(key or b"")
        while True:
            try:
                producer.produce(topic, value, key, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(300) == 0, "messages left unsent"
    return float(total)


def land_child(args: argparse.Namespace) -> None:
    """One variant in this fresh process: land the topic, print the figures as JSON."""
    workdir = Path(args.workdir)
    consumers = args.consumers or min(args.partitions, os.cpu_count() or 1)
    pipeline = PipelineConfig.model_validate(
        {
            "id": "bench_land",
            "protocol": args.scenario,
            "kafka": {"topics": [args.topic], "consumers": consumers},
            "landing_uri": f"file://{workdir}/landing",
            "catalog": "lake",
        }
    )
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            root = psutil.Process()
            total = 0
            for process in [root, *root.children(recursive=True)]:
                try:
                    total += process.memory_info().rss
                except psutil.NoSuchProcess:
                    continue
            peak[0] = max(peak[0], total)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu_before = _cpu()
    started = time.perf_counter()
    result = land(
        pipeline,
        {"bootstrap.servers": args.bootstrap},
        f"bench-{uuid.uuid4().hex[:8]}",
        None,
        tuning=LandTuning(codec=args.codec, block_bytes=args.block_bytes),
    )
    wall = time.perf_counter() - started
    cpu = _cpu() - cpu_before
    stop.set()
    sampler.join()
    assert result.manifest is not None
    print(
        json.dumps(
            {
                "messages": result.messages,
                "consumers": consumers,
                "wall_s": wall,
                "cpu_s": cpu,
                "peak_rss": peak[0],
                "file_bytes": sum(r.size_bytes or 0 for r in result.manifest.ranges),
            }
        )
    )


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def land_variant(
    args: argparse.Namespace,
    topic: str,
    scenario: str,
    consumers: int,
    codec: str,
    block_bytes: int,
    code: Path | None = None,
) -> Any:
    """One variant landed in a fresh process, with this checkout's code or ``code``'s (a checkout)."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code / "include"), env.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory(prefix="bench-land-") as workdir:
        command = [
            sys.executable,
            __file__,
            "--land-child",
            "--workdir",
            workdir,
            "--topic",
            topic,
            "--scenario",
            scenario,
            "--consumers",
            str(consumers),
            "--codec",
            codec,
            "--block-bytes",
            str(block_bytes),
            "--partitions",
            str(args.partitions),
            "--bootstrap",
            args.bootstrap,
        ]
        done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
        return json.loads(done.stdout.strip().splitlines()[-1])


def codec_table(rows: list[support.EncodedMessage], sample: int) -> None:
    records = []
    raw = 0
    for i in range(sample):
        key, value = payload(rows, i)
        raw += len(value) + len(key or b"")
        records.append(
            {
                "topic": "bench",
                "partition": 0,
                "offset": i,
                "timestamp": 1_772_359_200_000 + i,
                "timestamp_type": 1,
                "key": key,
                "value": value,
                "headers": [],
            }
        )
    print(f"  codec table, {sample} messages, {raw / MB:.1f} MB of payload (fastavro, one core):")
    print(f"  {'codec, block':<22}{'write µs/msg':>14}{'read µs/msg':>13}{'bytes/payload':>15}{'write MB/s':>12}")
    for codec, level, block in CODECS:
        shown = "1 MiB" if block == BLOCK_BYTES else f"{block:,} B"
        name = f"{codec if level is None else f'{codec}-{level}' if level >= 0 else f'{codec} {level}'}, {shown}"
        sink = io.BytesIO()
        try:
            before = time.process_time()
            fastavro.writer(
                sink, raw_batch_schema(), records, codec=codec, codec_compression_level=level, sync_interval=block
            )
            write_s = time.process_time() - before
        except ValueError as exc:  # a codec whose library is not installed
            print(f"  {name:<22}not measured: {exc}")
            continue
        before = time.process_time()
        read = sum(1 for _ in fastavro.reader(io.BytesIO(sink.getvalue())))
        read_s = time.process_time() - before
        assert read == sample
        size = len(sink.getvalue())
        print(
            f"  {name:<22}{write_s / sample * 1e6:>14.1f}{read_s / sample * 1e6:>13.1f}"
            f"{size / raw:>15.3f}{raw / MB / write_s:>12.0f}"
        )
    product_writer(records, raw)


def product_writer(records: list[dict[str, Any]], raw: float) -> None:
    """The land stage's own writer (write_raw_batch: records encoded in Python, blocks by fastavro)
    on the same records, with the product's codec; the best of 5, as the rows above are one try."""
    consumed = [
        ConsumedRecord(RawMessage(r["topic"], r["partition"], r["offset"], r["timestamp"], r["key"], r["value"]))
        for r in records
    ]
    best = float("inf")
    for _ in range(5):
        sink = io.BytesIO()
        before = time.process_time()
        write_raw_batch(sink, consumed, pipeline="p", topic="bench", partition=0, start=0, end=len(consumed))
        best = min(best, time.process_time() - before)
    name = f"write_raw_batch, {CODEC}"
    print(
        f"  {name:<22}{best / len(consumed) * 1e6:>14.1f}{'':>13}"
        f"{len(sink.getvalue()) / raw:>15.3f}{raw / MB / best:>12.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--codec-sample", type=int, default=20_000)
    parser.add_argument("--codecs-only", action="store_true", help="print the codec tables only (no broker)")
    parser.add_argument("--now-only", action="store_true", help="land with the product's variant only")
    parser.add_argument("--baseline", type=Path, help="a checkout whose code lands each variant too (A/B)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of each variant (alternating with --baseline)")
    parser.add_argument("--bootstrap", default=os.environ.get("TICDC_LAKE_KAFKA_BOOTSTRAP") or _recorded_bootstrap())
    parser.add_argument("--land-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--scenario", help=argparse.SUPPRESS)
    parser.add_argument("--consumers", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--codec", default=CODEC, help=argparse.SUPPRESS)
    parser.add_argument("--block-bytes", type=int, default=BLOCK_BYTES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.land_child:
        land_child(args)
        return
    print(f"land benchmark: {args.messages} messages, {args.partitions} partitions, {os.cpu_count()} CPUs")
    for scenario in args.scenarios.split(","):
        rows = templates(scenario)
        if args.codecs_only:
            print(f"\n{SCENARIOS.get(scenario, scenario)}:")
            codec_table(rows, args.codec_sample)
            continue
        topic = f"bench-land-{scenario}-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": args.bootstrap})
        try:
            before = time.perf_counter()
            payload_bytes = produce(args.bootstrap, topic, args.partitions, args.messages, rows)
            print(
                f"\n{SCENARIOS.get(scenario, scenario)}: topic {topic}, {payload_bytes / MB:.0f} MB of payload "
                f"({payload_bytes / args.messages:.0f} B/message), produced in {time.perf_counter() - before:.1f} s"
            )
            print(
                f"  {'variant':<40}{'consumers':>10}{'msg/s':>10}{'MB/s':>8}{'wall s':>8}{'CPU s':>8}"
                f"{'peak RSS MB':>13}{'files MB':>10}{'speed-up':>10}{'load avg':>10}{'CPU µs/msg':>11}"
            )
            baseline: float | None = None
            codes: list[tuple[str, Path | None]] = [("", None)]
            if args.baseline is not None:
                codes = [(" [baseline]", args.baseline), ("", None)]
            for name, consumers, codec, block_bytes in VARIANTS[-1:] if args.now_only else VARIANTS:
                for _ in range(args.repeat):
                    for label, code in codes:
                        load = os.getloadavg()[0]  # other work on the machine skews wall seconds: shown beside them
                        figures = land_variant(args, topic, scenario, consumers, codec, block_bytes, code)
                        assert figures["messages"] == args.messages, figures
                        rate = figures["messages"] / figures["wall_s"]
                        baseline = baseline or rate
                        print(
                            f"  {(name + label)[:40]:<40}{figures['consumers']:>10}{rate:>10.0f}"
                            f"{payload_bytes / MB / figures['wall_s']:>8.0f}{figures['wall_s']:>8.1f}"
                            f"{figures['cpu_s']:>8.1f}{figures['peak_rss'] / MB:>13.0f}"
                            f"{figures['file_bytes'] / MB:>10.0f}{rate / baseline:>9.2f}x{load:>10.1f}"
                            f"{figures['cpu_s'] / figures['messages'] * 1e6:>10.1f}",
                            flush=True,
                        )
        finally:
            admin.delete_topics([topic])[topic].result(60)
        if args.codec_sample:
            codec_table(rows, args.codec_sample)


def _recorded_bootstrap() -> str:
    recorded = Path(__file__).resolve().parents[2] / "run" / "kafka" / "bootstrap"
    return recorded.read_text().strip() if recorded.exists() else "127.0.0.1:19092"


if __name__ == "__main__":
    main()
