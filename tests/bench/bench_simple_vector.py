"""Simple JSON decode in one process: the Python decoder alone against the vector path.

``.venv/bin/python tests/bench/bench_simple_vector.py [--messages N]`` (default 20,000). The
messages are the decode benchmark's (``bench_support.build_messages``: the 10-column ``orders``
table, INSERT, UPDATE and DELETE in turn, a BOOTSTRAP first and a WATERMARK last, encoded by the
simulator's Simple JSON encoder). Both loops decode ``BATCH_ROWS`` messages at a time as a decode
worker does and convert the events to Arrow: A is the Python decoder alone, B the vector decoder
(``arrow_decode.simple_json_batch``) then the Python decoder on the messages it did not take. Two
rounds, A B A B, in this one process on the same messages; it prints CPU (``process_time``) and
wall µs per event of each, their ratio, the share of messages the vector path took and the load
average. It asserts nothing but that both loops give as many events.
"""

from __future__ import annotations

import argparse
import copy
import os
import time
from typing import Any

import bench_support as support  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.spark.arrow_decode.simple_json_batch import SimpleJsonVectorDecoder
from ticdc_lake.spark.decode_arrow import events_to_arrow
from ticdc_lake.spark.decode_worker import BATCH_ROWS, fewer_collections
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder


def messages(count: int) -> list[RawMessage]:
    built = support.build_messages(SimpleJsonEncoder("UTC"), count, 1, 1, count)
    return [
        RawMessage(support.TOPIC, 0, n, 1_700_000_000_000, m.key, m.value) for n, m in enumerate(built.batches[0][0])
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=20_000)
    args = parser.parse_args()
    raw = messages(args.messages)
    options = CodecOptions()
    lookup = MemorySchemaLookup([support.SCHEMA])
    chunks = [raw[i : i + BATCH_ROWS] for i in range(0, len(raw), BATCH_ROWS)]

    def python_only() -> tuple[int, int]:
        decoder, known = decoder_for(Protocol.SIMPLE_JSON, options), copy.deepcopy(lookup)
        events = 0
        for chunk in chunks:
            decoded = [e for m in chunk for e in decoder.read(m, known)]
            events_to_arrow("bench", "1", "bench", decoded, sort_images=True)
            events += len(decoded)
        return events, 0

    def vector() -> tuple[int, int]:
        decoder, known = decoder_for(Protocol.SIMPLE_JSON, options), copy.deepcopy(lookup)
        vectors = SimpleJsonVectorDecoder(options, "bench", "bench")
        events = taken = 0
        for chunk in chunks:
            result = vectors.decode("1", chunk, known)
            rest = [m for m, took in zip(chunk, result.taken, strict=True) if not took]
            decoded = [e for m in rest for e in decoder.read(m, known)]
            if decoded:
                events_to_arrow("bench", "1", "bench", decoded, sort_images=True)
            count = result.events.num_rows if result.events is not None else 0
            events += len(decoded) + count
            taken += count
        return events, taken

    figures: dict[str, Any] = {}
    with fewer_collections():  # as in the Spark workers
        for round_number in (1, 2):
            for name, loop in (("A python", python_only), ("B vector", vector)):
                cpu, wall = time.process_time(), time.perf_counter()
                events, taken = loop()
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                figures.setdefault(name, []).append((cpu, wall))
                figures[f"{name} events"] = events
                figures["taken"] = max(figures.get("taken", 0), taken)
                print(
                    f"round {round_number} {name}: {events} events, CPU {cpu / events * 1e6:.2f} us/event, "
                    f"wall {wall / events * 1e6:.2f} us/event"
                )
    assert figures["A python events"] == figures["B vector events"], figures
    events = figures["A python events"]
    a_cpu, a_wall = (sum(f[i] for f in figures["A python"]) for i in (0, 1))
    b_cpu, b_wall = (sum(f[i] for f in figures["B vector"]) for i in (0, 1))
    print(
        f"{len(raw)} messages, {events} events; vector path took {figures['taken']} "
        f"({figures['taken'] / len(raw):.1%} of the messages)"
    )
    print(
        f"both rounds: A python CPU {a_cpu / 2 / events * 1e6:.2f} us/event (wall {a_wall / 2 / events * 1e6:.2f}); "
        f"B vector+python CPU {b_cpu / 2 / events * 1e6:.2f} us/event (wall {b_wall / 2 / events * 1e6:.2f}); "
        f"B/A CPU {b_cpu / a_cpu:.3f}, wall {b_wall / a_wall:.3f}; load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
