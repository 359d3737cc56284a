"""The JVM's floor for Debezium decode beside the vector decoder, on the same messages, CPU per message.

Run: ``.venv/bin/python tests/bench/bench_jvm_json_floor.py [--events N] [--passes P]``. It prints
figures; it asserts nothing. It measures what a decoder in the JVM could save (docs/design.md,
"What a JVM decoder could save"), before anyone builds one.

1. ``N`` Debezium DML messages of the decode benchmark's 10-column table (``bench_support``: the
   simulator's encoder, the schema included, 4.3 KB a message) are landed with the real
   ``LandingStore`` in a temporary folder.
2. **Python, as a decode worker does it** (one process, ``time.process_time``): the landed blocks read
   as ``MessageBatch`` chunks of ``VECTOR_ROWS``, one at a time as a worker streams them, and apart from
   that, the vector decoder and the typed record carrier (``ImageRecords.add``) on every chunk; two
   rounds, the second reported.
3. **The JVM floor** (``tests/bench/jvm/DebeziumJsonFloor.java``, compiled here with ``javac`` against
   Spark's own ``jackson-core``, one thread, the CPU time of that thread): the same keys and values read
   with Jackson's streaming parser, the schema fingerprinted and parsed once per distinct text, the
   payload's operation, source and every column of both images as text. Two ways to find the schema's
   bytes, alternately in each pass: skipped token by token (``tokenized``) or taken as the text after
   the payload without tokenizing it (``untokenized``). It does none of the decoder's checks and builds
   no output: a lower bound for a JVM decoder, not one. ``--passes`` passes over the messages in one
   JVM; per way, the median of the passes after the first half is reported (warm JIT).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import bench_support as support  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake.config import PipelineConfig
from ticdc_lake.landing.message_batch import MessageBatch, batches
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.schema_scan import prepared_lookup
from ticdc_lake.spark.arrow_decode.image_records import ImageRecords
from ticdc_lake.spark.arrow_decode.worker_events import vector_decoder
from ticdc_lake.spark.decode_worker import VECTOR_ROWS

JAVA_SOURCE = Path(__file__).parent / "jvm" / "DebeziumJsonFloor.java"
DISTINCT = 30_000


def _jackson_core() -> Path:
    import pyspark

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("jackson-core-*.jar"))
    if not jars:
        sys.exit("jackson-core not found among pyspark's jars")
    return jars[-1]


@dataclass(frozen=True)
class FloorPass:
    """One line of the Java program: a pass over every message in one way of finding the schema."""

    way: str
    number: int
    messages: int
    cpu_s: float
    schemas: int
    checksum: int


def land(workdir: Path, events: int) -> tuple[LandingStore, PipelineConfig]:
    found = support.encoder_for_protocol("debezium")
    assert found is not None
    encoder, _ = found
    messages = support.build_messages(encoder, events, 1, 1, DISTINCT)
    pipeline = support.write_config(workdir, "debezium").pipeline(support.PIPELINE)
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    support.land(store, messages)
    return store, pipeline


def python_side(store: LandingStore, pipeline: PipelineConfig) -> tuple[Iterable[MessageBatch], dict[str, float]]:
    files = [r.file for m in store.manifests() for r in m.ranges if r.file]
    resources = DecodeResources(store.writer_schemas())
    decoder = decoder_for(pipeline.protocol, pipeline.codec, resources)
    lookup = prepared_lookup(decoder, list(itertools.islice(store.read_messages(files[0]), 10)))
    figures: dict[str, float] = {}
    chunks = landed_chunks(store)  # held for the decode rounds; read again below, as a worker streams them
    for _ in range(2):
        started = time.process_time()
        for _chunk in landed_chunks(store, keep=False):
            pass
        figures["read_s"] = time.process_time() - started
        vector = vector_decoder(pipeline, "bench", resources)
        assert vector is not None
        records = ImageRecords(lookup)
        taken = 0
        started = time.process_time()
        for chunk in chunks:
            result = vector.decode("b", chunk, lookup)
            taken += sum(result.taken)
            if result.events is not None:
                records.add(result.events)
        figures["decode_s"] = time.process_time() - started
        figures["taken"] = taken
    return chunks, figures


def landed_chunks(store: LandingStore, keep: bool = True) -> Iterable[MessageBatch]:
    """Every landed message, as the decode workers read them: ``MessageBatch`` chunks of ``VECTOR_ROWS``;
    ``keep``: all of them in a list, else one at a time (holding them all costs memory the workers never hold)."""
    files = [r.file for m in store.manifests() for r in m.ranges if r.file]
    chunks = (c for f in files for c in batches(store.read_blocks(f), 0, 1 << 62, VECTOR_ROWS))
    return list(chunks) if keep else chunks


def export(chunks: Iterable[MessageBatch], path: Path) -> int:
    """Each message's key and value, length-prefixed (the Java program's input)."""
    count = 0
    with path.open("wb") as out:
        for chunk in chunks:
            for message in chunk:
                key = message.key
                out.write(struct.pack(">i", -1 if key is None else len(key)))
                if key is not None:
                    out.write(key)
                out.write(struct.pack(">i", len(message.value or b"")))
                out.write(message.value or b"")
                count += 1
    return count


def jvm_side(workdir: Path, inputs: Path, passes: int) -> list[FloorPass]:
    classes = workdir / "classes"
    classes.mkdir()
    jar = _jackson_core()
    if shutil.which("javac") is None:
        raise SystemExit(
            "error: javac not found: this bench compiles tests/bench/jvm/DebeziumJsonFloor.java; install a JDK, "
            "not only a Java runtime (apt-get install openjdk-17-jdk-headless)"
        )
    subprocess.run(["javac", "-d", str(classes), "-cp", str(jar), str(JAVA_SOURCE)], check=True)
    out = subprocess.run(
        ["java", "-Xmx2g", "-cp", f"{classes}{os.pathsep}{jar}", "DebeziumJsonFloor", str(inputs), str(passes)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = []
    for line in out.splitlines():
        words = line.replace(",", "").replace(":", "").split()
        # WAY pass N: M messages, C cpu ns, W wall ns, S schemas, checksum X
        cpu_s = int(words[5]) / 1e9
        found.append(FloorPass(words[0], int(words[2]), int(words[3]), cpu_s, int(words[11]), int(words[14])))
        print(f"  jvm {line}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--passes", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jvm-json-floor-") as tmp:
        workdir = Path(tmp)
        started = time.perf_counter()
        store, pipeline = land(workdir, args.events)
        print(f"landed {args.events:,} Debezium DML messages in {time.perf_counter() - started:.1f} s")
        chunks, py = python_side(store, pipeline)
        count = export(chunks, workdir / "messages.bin")
        size = (workdir / "messages.bin").stat().st_size
        print(f"{count:,} messages, {size / count:,.0f} bytes a message (key and value)")
        jvm = jvm_side(workdir, workdir / "messages.bin", args.passes)
    read_us = py["read_s"] / count * 1e6
    decode_us = py["decode_s"] / count * 1e6
    print(f"Python, one process: read {read_us:.1f} CPU us a message; vector decode and record carrier {decode_us:.1f}")
    print(f"  ({int(py['taken']):,} of {count:,} messages taken by the vector decoder)")
    ways: dict[str, list[float]] = {}
    for row in jvm:
        ways.setdefault(row.way, []).append(row.cpu_s)
    for way, passes in ways.items():
        warm = passes[len(passes) // 2 :]
        floor_us = statistics.median(warm) / count * 1e6
        print(
            f"JVM floor, schema {way}, one thread, warm (median of passes {len(passes) - len(warm) + 1}.."
            f"{len(passes)}): {floor_us:.2f} CPU us a message; / Python vector decode and carrier: "
            f"{floor_us / decode_us:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
