"""Schema-pass benchmark: CPU seconds of the decode stage's first pass (``scanned_facts``) per protocol.

``python tests/bench/bench_prefilter.py [N]`` (default 100,000 messages per protocol, from
``bench_support.build_messages``: one schema message per partition, then rows and watermarks). It
prints, per JSON protocol, the CPU seconds of the pass over the compact messages TiCDC writes and
over the same messages re-serialized with ``json.dumps(ensure_ascii=True)`` (every non-ASCII
character escaped, as a relay in Python writes them), and how many messages the pre-filter let
through. Then, per protocol with a block test (``Decoder.schema_block_test``), the same compact
values joined into blocks of 1 MiB as landing writes them: the block test's CPU seconds per GB,
rounds A B A B, with its plain searches first (``json_markers``: ``memmem`` on a whole block) and
with the regular expression alone (as before). It asserts nothing.

``python tests/bench/bench_prefilter.py --landed DIR`` instead runs the pass a decode task runs
(``scanned_facts`` over each landed file, blocks the test rejects never read) over the landing of a
round ``bench_vs_kc.py --keep`` left (``DIR`` holds its ``pipelines.yaml``), the same A B A B.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import bench_support as support  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake import byte_search
from ticdc_lake.config import CodecOptions
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.raw_batch import BLOCK_BYTES
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.schema_scan import scanned_facts

PROTOCOLS = ("simple-json", "canal-json", "debezium", "open")


def _relayed(value: bytes | None) -> bytes | None:
    if value is None or not value.startswith(b"{"):
        return value
    return json.dumps(json.loads(value), ensure_ascii=True).encode()


def main(events: int) -> None:
    for protocol in PROTOCOLS:
        found = support.encoder_for_protocol(protocol)
        assert found is not None
        built = support.build_messages(found[0], events, 3, 1, 30_000)
        decoder = decoder_for(protocol, CodecOptions())
        for form in ("compact", "ascii"):
            partitions = [
                [
                    RawMessage("bench", p, o, 0, m.key, m.value if form == "compact" else _relayed(m.value))
                    for o, m in enumerate(batch)
                ]
                for p, per_batch in enumerate(built.batches)
                for batch in per_batch
            ]
            count = sum(len(b) for b in partitions)
            passed = sum(decoder.may_carry_schema(m) for b in partitions for m in b)
            started = time.process_time()
            facts = sum(len(list(scanned_facts(decoder, b))) for b in partitions)
            cpu = time.process_time() - started
            print(f"{protocol:12} {form:8} messages={count} through={passed} facts={facts} cpu_s={cpu:.3f}")
            if form == "compact":
                _blocks(protocol, decoder, [m.value or b"" for b in partitions for m in b])


def _blocks(protocol: str, decoder: Any, values: list[bytes]) -> None:
    """The block test over ``values`` joined into 1 MiB blocks, A B A B: plain searches first, then
    the regular expression alone (``byte_search.LARGE`` out of reach turns the searches off)."""
    test = decoder.schema_block_test()
    if test is None:
        return
    blocks: list[bytes] = []
    held: list[bytes] = []
    size = 0
    for value in values:
        held.append(value)
        size += len(value)
        if size >= BLOCK_BYTES:
            blocks.append(b"".join(held))
            held, size = [], 0
    blocks.append(b"".join(held))
    total = sum(len(b) for b in blocks) * 20  # each round searches every block 20 times
    figures: dict[str, list[float]] = {"searches first": [], "expression alone": []}
    kept = {}
    large = byte_search.LARGE
    for _ in range(2):
        for variant in figures:
            byte_search.LARGE = large if variant == "searches first" else sys.maxsize
            started = time.process_time()
            for _ in range(20):
                kept[variant] = sum(bool(test(block)) for block in blocks)
            figures[variant].append(time.process_time() - started)
    byte_search.LARGE = large
    print(
        f"{protocol:12} blocks={len(blocks)} of {BLOCK_BYTES} B, kept {kept}, CPU s per GB (A B A B): "
        + "; ".join(f"{name} {', '.join(f'{s / total * 1e9:.2f}' for s in runs)}" for name, runs in figures.items())
    )


def landed(folder: Path) -> None:
    """The schema pass over every file of the landing in ``folder`` (module docstring)."""
    from ticdc_lake.config import load_config
    from ticdc_lake.landing.store import LandingStore
    from ticdc_lake.protocols.resources import DecodeResources

    config = load_config(folder / "pipelines.yaml")
    pipeline = config.pipelines[0]
    store = LandingStore(pipeline.landing_uri, pipeline.id)
    decoder = decoder_for(pipeline.protocol, pipeline.codec, DecodeResources(store.writer_schemas()))
    files = [r.file for manifest in store.manifests() for r in manifest.ranges if r.file]
    large = byte_search.LARGE
    for round_ in (1, 2):
        for variant in ("searches first", "expression alone"):
            byte_search.LARGE = large if variant == "searches first" else sys.maxsize
            started = time.process_time()
            facts = sum(
                len(list(scanned_facts(decoder, store.read_messages(f, decoder.schema_block_test())))) for f in files
            )
            cpu = time.process_time() - started
            print(f"round {round_}, {variant}: {len(files)} file(s), {facts} fact(s), CPU {cpu:.2f} s")
    byte_search.LARGE = large


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--landed":
        landed(Path(sys.argv[2]))
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
