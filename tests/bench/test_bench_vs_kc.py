"""The parts of `make bench-vs-kc` that could be wrong silently: the sink's changelog reduced to
current rows, row-set differences, process-tree CPU accounting and the stream's final rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import bench_vs_kc_changelog as changelog  # type: ignore[import-not-found,unused-ignore]  # beside this file
import bench_vs_kc_measure as measure  # type: ignore[import-not-found,unused-ignore]
import bench_vs_kc_stream as streams  # type: ignore[import-not-found,unused-ignore]
import pytest

from ticdc_sim.model import DmlOp

Row = changelog.ChangelogRow


def test_latest_change_by_offset_wins_whatever_the_scan_order() -> None:
    rows = [
        Row(1, "U", 7, ("b",)),
        Row(2, "I", 3, ("x",)),
        Row(1, "I", 2, ("a",)),
        Row(3, "I", 4, ("gone",)),
        Row(1, "U", 9, ("c",)),
        Row(3, "D", 5, ("gone",)),
    ]
    assert changelog.current_rows("db.t", rows) == {1: ("c",), 2: ("x",)}


def test_delete_then_insert_again_keeps_the_new_row_and_insert_after_delete_order_matters() -> None:
    rows = [Row(1, "I", 1, ("a",)), Row(1, "D", 2, ("a",)), Row(1, "I", 3, ("b",)), Row(2, "I", 4, ("z",))]
    assert changelog.current_rows("db.t", rows) == {1: ("b",), 2: ("z",)}
    late_delete = [Row(1, "I", 1, ("a",)), Row(1, "I", 3, ("b",)), Row(1, "D", 4, ("b",))]
    assert changelog.current_rows("db.t", late_delete) == {}


def test_a_redelivered_change_counts_once() -> None:
    rows = [Row(1, "I", 1, ("a",)), Row(1, "U", 2, ("b",)), Row(1, "I", 1, ("a",))]
    assert changelog.current_rows("db.t", rows) == {1: ("b",)}


def test_two_changes_at_one_offset_are_refused_naming_table_and_offset() -> None:
    rows = [Row(1, "I", 5, ("a",)), Row(2, "I", 5, ("b",))]
    with pytest.raises(changelog.ChangelogError) as caught:
        changelog.current_rows("bench_kc.sbtest1", rows)
    assert str(caught.value) == (
        "bench_kc.sbtest1: two different changes at Kafka offset 5 (ChangelogRow(key=1, op='I', offset=5, "
        "values=('a',)) and ChangelogRow(key=2, op='I', offset=5, values=('b',))); the table's changes come "
        "from more than one partition, so offsets do not order them"
    )


def test_an_unknown_operation_is_refused() -> None:
    with pytest.raises(changelog.ChangelogError, match=r"^db.t: offset 3 has _cdc.op 'R', not I, U or D$"):
        changelog.current_rows("db.t", [Row(1, "R", 3, ("a",))])


def test_differences_name_each_side_in_key_order_and_stop_at_the_limit() -> None:
    left = {2: ("a",), 10: ("x",), 3: ("same",)}
    right = {2: ("b",), 9: ("y",), 3: ("same",)}
    assert changelog.differences("lake", left, "sink", right) == [
        "key 2: lake ('a',) != sink ('b',)",
        "key 9: only in sink ('y',)",
        "key 10: only in lake ('x',)",
    ]
    many = {k: ("v",) for k in range(8)}
    assert changelog.differences("lake", many, "sink", {}, limit=2) == [
        "key 0: only in lake ('v',)",
        "key 1: only in lake ('v',)",
        "...",
    ]
    assert changelog.differences("lake", right, "sink", dict(right)) == []


def _times(user: float, system: float, children_user: float, children_system: float) -> SimpleNamespace:
    return SimpleNamespace(user=user, system=system, children_user=children_user, children_system=children_system)


def test_tree_cpu_adds_waited_descendants_and_each_running_process_with_its_waited_children() -> None:
    running = [_times(1.5, 0.25, 2.0, 0.5), _times(0.125, 0.125, 0.0, 0.0)]
    assert measure.tree_cpu(3.0, running) == 7.5
    assert measure.tree_cpu(0.0, []) == 0.0


_BURN = "import time\nwhile time.process_time() < 0.4: pass\n"
#: Runs in a process of its own: a subreaper stays one for life, and the test process must not
#: collect the orphans of other tests.
_METER = """
import json, subprocess, sys
import psutil
import bench_vs_kc_measure as measure
assert measure.become_subreaper()
meter = measure.TreeMeter(interval=0.05).start()
process = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
assert process.wait(timeout=60) == 0
orphans = psutil.Process().children()  # re-parented here: this process is the subreaper
psutil.wait_procs(orphans, timeout=60)  # let them finish their burn (finish() would stop them)
code = measure.finish(process)
cpu = meter.cpu()
meter.stop()
print(json.dumps({"code": code, "orphans": len(orphans), "cpu": cpu, "rss": meter.peak_rss,
                  "most": meter.most_processes}))
"""


def test_the_meter_counts_a_grandchild_and_an_orphan_it_reaps() -> None:
    """A child starts a grandchild it waits for and an orphan that outlives it, each burning 0.4 s of
    CPU: the tree's CPU time has all three processes, although the orphan's parent never waits."""
    child = textwrap.dedent(
        f"""
        import subprocess, sys
        burn = {_BURN!r}
        subprocess.run([sys.executable, "-c", burn], check=True)
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)\\n" + burn])
        exec(burn)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _METER, child], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["code"] == 0
    assert figures["orphans"] == 1
    assert 1.15 <= figures["cpu"] < 1.2 + 1.0, figures  # three burns (kernel ticks), three interpreter starts
    assert figures["rss"] > 0
    assert figures["most"] >= 2


def test_the_stream_has_the_shares_and_its_final_rows_follow_its_changes() -> None:
    changes = list(streams.row_changes(10_000, 10, seed=3))
    ops = [c.op for _, c in changes]
    assert ops.count(DmlOp.INSERT) + ops.count(DmlOp.UPDATE) + ops.count(DmlOp.DELETE) == 10_000
    assert 0.48 < ops.count(DmlOp.INSERT) / 10_000 < 0.53
    assert 0.28 < ops.count(DmlOp.UPDATE) / 10_000 < 0.32
    assert 0.18 < ops.count(DmlOp.DELETE) / 10_000 < 0.22
    assert changes == list(streams.row_changes(10_000, 10, seed=3))
    state: dict[tuple[str, int], object] = {}
    for _, change in changes:
        image = change.after if change.after is not None else change.before
        assert image is not None
        key = (change.table, image["id"])
        if change.op is DmlOp.INSERT:
            assert key not in state
            assert change.before is None
        else:
            assert state[key] == change.before  # updates and deletes hit a live row, with its image
        if change.op is DmlOp.DELETE:
            del state[key]
        else:
            state[key] = change.after
    assert {change.table for _, change in changes} == {f"sbtest{n}" for n in range(1, 11)}
