"""The decode stage's two paths on one landing, A B A B in one warm session: the workers' own
decoders (``run_decode(jvm=False)``) against the JVM decoder with the rest in the workers
(``jvm=True``; docs/jvm-decoder.md).

``.venv/bin/python tests/bench/bench_decode_paths.py --pipelines run/bench-vs-kc/<time>/lake-N/pipelines.yaml``
decodes a landing kept by ``bench_vs_kc.py --keep`` again and again (``redecode``: every batch,
replacing its rows), the paths in turn and in reverse order each round. It prints the wall
seconds, the CPU seconds of this process's tree (the driver, its JVM, the Python workers; a worker
that has exited counts with its last sampled figure) and what each path decoded, then the ratios of
the medians over the rounds after the first. It asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time

import psutil  # type: ignore[import-untyped,unused-ignore]

from ticdc_lake.config import load_config
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.session import pipeline_session


class TreeCpu:
    """CPU seconds of this process and its descendants, sampled every 0.2 s so that processes that
    exit between two reads still count with their last figure."""

    def __init__(self) -> None:
        self.me = psutil.Process()
        self.seen: dict[int, float] = {}
        self.stopped = threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while not self.stopped.wait(0.2):
            self.sample()

    def sample(self) -> float:
        for process in [self.me, *self.me.children(recursive=True)]:
            try:
                times = process.cpu_times()
            except psutil.Error:
                continue
            self.seen[process.pid] = times.user + times.system
        return sum(self.seen.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipelines", required=True, help="a kept landing's pipelines.yaml")
    parser.add_argument("--pipeline", default="bench_kc")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    config = load_config(args.pipelines)
    pipeline = config.pipeline(args.pipeline)
    spark = pipeline_session(config, pipeline, "decode")
    meter = TreeCpu()
    figures: dict[str, list[tuple[float, float]]] = {"python": [], "jvm": []}
    print(f"decode stage, {pipeline.protocol.value}, {args.rounds} rounds (the first is the JVM's cold one)")
    for rnd in range(args.rounds):
        for path in ("jvm", "python") if rnd % 2 == 0 else ("python", "jvm"):
            cpu, wall = meter.sample(), time.perf_counter()
            summary = run_decode(spark, config, pipeline, f"paths-{rnd}-{path}", redecode=True, jvm=path == "jvm")
            wall, cpu = time.perf_counter() - wall, meter.sample() - cpu
            if rnd:
                figures[path].append((wall, cpu))
            print(
                f"  round {rnd} {path:6s} {wall:6.1f} s wall {cpu:6.1f} CPU s  events {summary.events:,}  "
                f"by the JVM {summary.jvm_events:,}  read by the workers {summary.python_messages:,}",
                flush=True,
            )
    meter.stopped.set()
    if args.rounds > 1:
        walls = [statistics.median(w for w, _ in figures[p]) for p in ("jvm", "python")]
        cpus = [statistics.median(c for _, c in figures[p]) for p in ("jvm", "python")]
        print(f"jvm / python, medians of the warm rounds: wall {walls[0] / walls[1]:.2f}, CPU {cpus[0] / cpus[1]:.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
