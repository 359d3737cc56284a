"""What a warm Spark run service's JVM spends per run, by how much generated code the application keeps.

Runs ``--rounds`` transforms of one kept landing (a lake folder kept by ``tests/bench/bench_vs_kc.py
--keep``: ``pipelines.yaml`` and ``landing/``) in one local application, as the run service does
(each run in a session of ``ServiceSessions``, on a thread of its own, on a fresh catalog and
warehouse), once per value of ``spark.sql.codegen.cache.maxEntries``, each value in a fresh process,
the values alternating over ``--pairs``. Per round it prints the wall seconds, the JVM's CPU seconds
(its JIT compiler threads apart) and the classes Spark compiled; the last lines compare the warm
rounds (2 on) by value. The Python workers' CPU is not counted: the setting does not touch them.

    .venv/bin/python tests/bench/bench_service_codegen.py run/bench-vs-kc/<time>/lake-1 --rounds 4 --pairs 2

docs/spark-service.md ("Generated code kept across runs") has figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from bench_apply_threads import kind_of, process_cpu, threads  # type: ignore[import-not-found,unused-ignore]  # beside this file

_CACHE_KEY = "spark.sql.codegen.cache.maxEntries"


def _lake(source: Path, folder: Path, entries: str) -> Path:
    """A copy of ``source``'s landing with a catalog and warehouse of its own, its pipelines keeping
    ``entries`` generated classes; its pipeline file."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copytree(source / "landing", folder / "landing", ignore=shutil.ignore_patterns("locks"))
    doc = yaml.safe_load((source / "pipelines.yaml").read_text())
    for catalog in doc["catalogs"].values():
        catalog["uri"] = f"jdbc:sqlite:{folder}/catalog/lake.db"
        catalog["warehouse"] = f"file://{folder}/warehouse"
    for pipeline in doc["pipelines"]:
        pipeline["landing_uri"] = f"file://{folder}/landing"
        pipeline.pop("spark_service", None)
        pipeline.setdefault("spark_conf", {})[_CACHE_KEY] = entries
    (folder / "pipelines.yaml").write_text(yaml.safe_dump(doc))
    return folder / "pipelines.yaml"


class _JvmCpu:
    """The JVM's CPU seconds (the process's, dead threads included) and its JIT compiler threads'
    (sampled every half second by thread, since the JVM starts and stops compiler threads as the
    queue grows and shrinks: a compiler thread's last half second before it ends may be missed)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._seen: dict[int, float] = {}  # compiler thread id -> its CPU seconds last seen
        self._lock = threading.Lock()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            self.jit()
            time.sleep(0.5)

    def process(self) -> float:
        return float(process_cpu(self.pid))

    def jit(self) -> float:
        """CPU seconds of every compiler thread seen so far."""
        with self._lock:
            for tid, (name, cpu) in threads(self.pid).items():
                if kind_of(name) == "JIT":
                    self._seen[tid] = cpu
            return sum(self._seen.values())


def child(source: Path, work: Path, rounds: int, entries: str) -> None:
    """One application, ``rounds`` transforms; one JSON line per round on stdout."""
    from pyspark.sql import SparkSession

    from ticdc_lake.config import load_config
    from ticdc_lake.spark.local_session import local_driver
    from ticdc_lake.spark.service_sessions import ServiceSessions, application_settings
    from ticdc_lake.spark.transform_job import run_transform

    settings = application_settings(load_config(_lake(source, work / "base", entries)))
    settings = local_driver(settings, "local[2]", write_archive=False)[0]
    builder = SparkSession.builder.appName("bench-service-codegen")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm: Any = spark.sparkContext._jvm
    compiled = jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    meter = _JvmCpu(int(jvm.java.lang.ProcessHandle.current().pid()))
    sessions = ServiceSessions(spark)
    for number in range(1, rounds + 1):
        config = load_config(_lake(source, work / f"round-{number}", entries))
        pipeline = config.pipelines[0]
        session = sessions.session_for(config, pipeline)
        cpu, jit, classes, start = meter.process(), meter.jit(), compiled.getCount(), time.monotonic()
        # The service runs each request on a thread of its own, with no session active on it.
        runner = threading.Thread(target=run_transform, args=(session, config, pipeline, f"codegen-{number}"))
        runner.start()
        runner.join()
        figures = {
            "round": number,
            "wall": time.monotonic() - start,
            "jvm": meter.process() - cpu,
            "jit": meter.jit() - jit,
            "classes": compiled.getCount() - classes,
            "load": os.getloadavg()[0],
        }
        print("ROUND " + json.dumps(figures), flush=True)
        shutil.rmtree(work / f"round-{number}", ignore_errors=True)
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lake", type=Path, help="a lake folder kept by tests/bench/bench_vs_kc.py --keep")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--values", default="100,1000", help="values of " + _CACHE_KEY + ", alternated")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.lake.resolve(), Path(tempfile.mkdtemp(prefix="bench-codegen-")), args.rounds, args.child)
        return
    values = args.values.split(",")
    warm: dict[str, list[dict[str, float]]] = {v: [] for v in values}
    for pair in range(1, args.pairs + 1):
        for value in values:
            print(f"== {_CACHE_KEY}={value}, process {pair}", flush=True)
            command = [sys.executable, __file__, str(args.lake), "--rounds", str(args.rounds), "--child", value]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            lines = [line[len("ROUND ") :] for line in done.stdout.splitlines() if line.startswith("ROUND ")]
            if done.returncode != 0 or len(lines) != args.rounds:
                sys.exit(f"the process with {value} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
            for line in lines:
                r = json.loads(line)
                print(
                    f"  round {r['round']}: wall {r['wall']:.1f} s, JVM CPU {r['jvm']:.1f} s (JIT threads "
                    f"{r['jit']:.1f}), classes compiled {r['classes']}, load {r['load']:.1f}",
                    flush=True,
                )
                if r["round"] > 1:
                    warm[value].append(r)
    base = statistics.mean(r["jvm"] for r in warm[values[0]])
    for value in values:
        jvm = statistics.mean(r["jvm"] for r in warm[value])
        jit = statistics.mean(r["jit"] for r in warm[value])
        classes = statistics.mean(r["classes"] for r in warm[value])
        print(
            f"{_CACHE_KEY}={value}: warm rounds' JVM CPU mean {jvm:.1f} s ({jvm / base:.2f}x of {values[0]}), "
            f"JIT threads {jit:.1f} s, classes compiled per run {classes:.0f}"
        )


if __name__ == "__main__":
    main()
