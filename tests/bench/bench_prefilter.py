"""Schema-pass benchmark: CPU seconds of the decode stage's first pass (``scanned_facts``) per protocol.

``python tests/bench/bench_prefilter.py [N]`` (default 100,000 messages per protocol, from
``bench_support.build_messages``: one schema message per partition, then rows and watermarks). It
prints, per JSON protocol, the CPU seconds of the pass over the compact messages TiCDC writes and
over the same messages re-serialized with ``json.dumps(ensure_ascii=True)`` (every non-ASCII
character escaped, as a relay in Python writes them), and how many messages the pre-filter let
through. It asserts nothing.
"""

from __future__ import annotations

import json
import sys
import time

import bench_support as support  # type: ignore[import-not-found,unused-ignore]  # beside this file

from ticdc_lake.config import CodecOptions
from ticdc_lake.events import RawMessage
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


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
