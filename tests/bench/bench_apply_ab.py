"""Two trees of the code, A B A B, on one Debezium stream: the ticdc-lake side of ``bench_vs_kc.py``.

Run: ``.venv/bin/python tests/bench/bench_apply_ab.py --base DIR [--new DIR] [--changes N]``.
``--base`` holds the code to compare against (its ``include/``, put first on ``PYTHONPATH`` for
side A); side B is ``--new`` the same way, by default this tree (a copy lets the tree change
meanwhile). The stream is produced once (``bench_vs_kc_stream``); each round runs
``bench_vs_kc.lake_round`` (one ``airflow dags test``) of A, then of B, and checks both against
the stream's final rows (``--conf``: pipeline ``spark_conf`` settings of every round, such as an
event log for ``bench_apply_stages.py``). Prints wall and CPU seconds per round and side, the CPU seconds by stage
and kind of process of each round, and the ratios B / A of the means. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench_vs_kc modules beside this file

import bench_vs_kc as kc  # type: ignore[import-not-found,unused-ignore]
import bench_vs_kc_measure as measure  # type: ignore[import-not-found,unused-ignore]
import bench_vs_kc_stream as streams  # type: ignore[import-not-found,unused-ignore]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", type=Path, required=True, help="a tree whose include/ is side A")
    parser.add_argument("--new", type=Path, help="a tree whose include/ is side B (default: this tree)")
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="A B pairs")
    parser.add_argument("--bootstrap", default=os.environ.get("TICDC_LAKE_KAFKA", "127.0.0.1:19092"))
    parser.add_argument("--state", type=Path, default=kc.ROOT / "run" / "bench-apply-ab")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a pipeline spark_conf of every round"
    )
    args = parser.parse_args()
    conf = dict(item.split("=", 1) for item in args.conf)
    measure.become_subreaper()
    state, stream, truth = streams.stamped_stream(
        args.state, args.bootstrap, changes=args.changes, tables=args.tables, partitions=args.partitions
    )
    template = args.state / "airflow-template.db"
    plain = os.environ.get("PYTHONPATH", "")
    sides = {
        side: os.pathsep.join(filter(None, [str(tree.resolve() / "include") if tree else "", plain]))
        for side, tree in (("A", args.base), ("B", args.new))
    }
    figures: dict[str, list[kc.Figures]] = {"A": [], "B": []}
    try:
        for n in range(1, args.rounds + 1):
            for side, path in sides.items():
                os.environ["PYTHONPATH"] = path
                folder = state / f"{side}-{n}"
                print(f"round {n}: {side} (load {os.getloadavg()[0]:.1f}) ...", flush=True)
                figure, tables = kc.lake_round(folder, stream, args.bootstrap, template, conf or None)
                found = kc.check(side, tables, truth)
                print(f"  wall {figure.wall_s:.1f} s, CPU {figure.cpu_s:.1f} s, {len(found)} tables differ", flush=True)
                for line in figure.breakdown:
                    print(f"  {line}")
                figures[side].append(figure)
                for heavy in ("landing", "warehouse", "catalog", "airflow"):
                    shutil.rmtree(folder / heavy, ignore_errors=True)
    finally:
        os.environ["PYTHONPATH"] = plain
        kc._delete_topics(args.bootstrap, stream.topic, state)
    for what in ("wall_s", "cpu_s"):
        a = [getattr(f, what) for f in figures["A"]]
        b = [getattr(f, what) for f in figures["B"]]
        print(f"{what}: A {a}  B {b}  B/A of means {statistics.mean(b) / statistics.mean(a):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
