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
from typing import Any

import bench_vs_kc_changelog as changelog  # type: ignore[import-not-found,unused-ignore]  # beside this file
import bench_vs_kc_cpu as cpu_kinds  # type: ignore[import-not-found,unused-ignore]
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


_SPARED = """
import json, os, signal, subprocess, sys, time
import bench_vs_kc_measure as measure
spared = subprocess.Popen([sys.executable, "-c", sys.argv[1]], start_new_session=True)  # running, with a child
time.sleep(0.5)
meter = measure.TreeMeter(interval=0.05, spared=frozenset({spared.pid})).start()
measured = subprocess.Popen([sys.executable, "-c", sys.argv[2]])
assert measured.wait(timeout=60) == 0
counted = meter.cpu()
seen = sorted({p.pid for p in measure._descendants(meter.spared)})
meter.stop()
os.killpg(spared.pid, signal.SIGKILL)  # the busy child too
spared.wait()
print(json.dumps({"cpu": counted, "seen": seen, "spared": spared.pid}))
"""


def test_a_spared_process_and_its_children_are_neither_counted_nor_sampled() -> None:
    """The Spark run service of ``--spark-service`` stays out of the sink's rounds: a process given
    as spared burns CPU through its child while the meter runs, and only the measured process's
    0.4 s are counted."""
    busy = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'while True: pass'])"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _SPARED, busy, _BURN], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["seen"] == []  # the measured process was waited for; the spared tree is left out
    assert 0.38 <= figures["cpu"] < 0.4 + 0.5, figures  # the burn and one interpreter start, not the busy loop


_BEFORE = """
import json, subprocess, sys, time
import bench_vs_kc_measure as measure
before = subprocess.Popen([sys.executable, "-c", sys.argv[1]])  # burns, then idles through the meter
# psutil's figure lags the burn's own clock by a tick: wait for most of it
time.sleep(0.3)
while before.poll() is None and measure.tree_cpu(0.0, [measure.psutil.Process(before.pid).cpu_times()]) < 0.45:
    time.sleep(0.05)
meter = measure.TreeMeter(interval=0.05).start()
measured = subprocess.Popen([sys.executable, "-c", sys.argv[2]])
assert measured.wait(timeout=60) == 0
counted = meter.cpu()
baseline = sum(meter.kinds.samples[0][1].values())
meter.stop()
before.kill()
before.wait()
print(json.dumps({"cpu": counted, "baseline": baseline}))
"""


def test_a_process_running_before_the_start_counts_only_what_it_does_after() -> None:
    """The Spark run service of ``--spark-service`` has run before a round: its CPU seconds at the
    start are the baseline of the total and of the first sample by kind (so of the first stage)."""
    burn_then_idle = _BURN.replace("0.4", "0.5") + "time.sleep(30)\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _BEFORE, burn_then_idle, _BURN],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["baseline"] >= 0.45, figures
    assert 0.38 <= figures["cpu"] < 0.4 + 0.5, figures  # the measured burn and its interpreter, not the 0.5 before


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


_JAVA = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"


@pytest.mark.parametrize(
    ("cmdline", "parent", "kind"),
    [
        ([".venv/bin/python", ".venv/bin/airflow", "dags", "test", "ticdc_bench_kc"], None, cpu_kinds.AIRFLOW),
        (["bash", "/x/pyspark/bin/spark-submit", "--master", "local[2]"], cpu_kinds.AIRFLOW, cpu_kinds.LAUNCHER),
        (
            [_JAVA, "-cp", "/x/jars/*", "org.apache.spark.launcher.Main", "org.apache.spark.deploy.SparkSubmit"],
            cpu_kinds.LAUNCHER,
            cpu_kinds.LAUNCHER,
        ),
        (
            [_JAVA, "-cp", "/x/jars/*", "-Xmx2g", "org.apache.spark.deploy.SparkSubmit", "--master", "local[2]"],
            cpu_kinds.AIRFLOW,
            cpu_kinds.DRIVER_JVM,
        ),
        (
            [".venv/bin/python", "/work/main/spark_jobs/transform.py", "--pipeline", "p"],
            cpu_kinds.DRIVER_JVM,
            cpu_kinds.PY_DRIVER,
        ),
        ([".venv/bin/python", "-m", "pyspark.daemon", "pyspark.worker"], cpu_kinds.DRIVER_JVM, cpu_kinds.PY_WORKERS),
        (
            [".venv/bin/python", "-m", "ticdc_lake.spark.python_daemon", "pyspark.worker"],
            cpu_kinds.DRIVER_JVM,
            cpu_kinds.PY_WORKERS,
        ),
        ([".venv/bin/python", "-c", "print(1)"], cpu_kinds.PY_WORKERS, cpu_kinds.PY_WORKERS),
        (
            [_JAVA, "-Xmx2g", "-cp", "/x/*", "org.apache.kafka.connect.cli.ConnectStandalone", "w.properties"],
            None,
            cpu_kinds.CONNECT,
        ),
        (["/x/.venv/bin/python", "spark_jobs/service.py", "--config", "p.yaml"], None, cpu_kinds.PY_DRIVER),
        (["/bin/sh", "-c", "true"], None, cpu_kinds.OTHER),
        (["/bin/sh", "-c", "true"], cpu_kinds.AIRFLOW, cpu_kinds.AIRFLOW),
        ([], None, cpu_kinds.OTHER),
    ],
)
def test_processes_are_sorted_into_kinds_by_command_line_then_parent(
    cmdline: list[str], parent: str | None, kind: str
) -> None:
    assert cpu_kinds.classify(cmdline, parent) == kind


def test_the_sampler_keeps_each_process_at_its_last_figure_and_classifies_children_by_their_parent() -> None:
    sampler = cpu_kinds.KindSampler()
    sampler.start(100.0)
    airflow = (10, 1.0, 1, ["python", "/v/bin/airflow", "dags", "test"])
    jvm = (11, 2.0, 10, ["java", "org.apache.spark.deploy.SparkSubmit"])
    driver = (12, 3.0, 11, ["python3", "transform.py"])
    proc = cpu_kinds.ProcSample
    sampler.observe(100.5, [proc(*airflow, 1.0), proc(*jvm, 2.0), proc(*driver, 0.5)])
    sampler.observe(101.0, [proc(*airflow, 1.5), proc(*jvm, 4.0)])  # the driver exited: kept at 0.5 s
    sampler.observe(101.5, [proc(*airflow, 1.5), proc(12, 9.0, 10, ["python3", "transform.py"], 0.25)])  # pid reused
    assert sampler.samples == [
        (100.0, {}),
        (100.5, {cpu_kinds.AIRFLOW: 1.0, cpu_kinds.DRIVER_JVM: 2.0, cpu_kinds.PY_DRIVER: 0.5}),
        (101.0, {cpu_kinds.AIRFLOW: 1.5, cpu_kinds.DRIVER_JVM: 4.0, cpu_kinds.PY_DRIVER: 0.5}),
        (101.5, {cpu_kinds.AIRFLOW: 1.75, cpu_kinds.DRIVER_JVM: 4.0, cpu_kinds.PY_DRIVER: 0.5}),
    ]
    assert sampler.by_kind() == {cpu_kinds.AIRFLOW: 1.75, cpu_kinds.DRIVER_JVM: 4.0, cpu_kinds.PY_DRIVER: 0.5}
    assert sampler.auto_reaped_s == 0.0  # their parents wait for them: RUSAGE_CHILDREN has them


def test_a_process_that_execs_is_classified_again() -> None:
    sampler = cpu_kinds.KindSampler()
    sampler.start(0.0)
    script = ["bash", "/x/bin/spark-submit", "--master", "local[2]"]
    jvm = ["java", "-cp", "/x/jars/*", "org.apache.spark.deploy.SparkSubmit", "--master", "local[2]"]
    sampler.observe(0.5, [cpu_kinds.ProcSample(20, 1.0, 1, script, 0.0625)])
    sampler.observe(1.0, [cpu_kinds.ProcSample(20, 1.0, 1, jvm, 3.0)])
    assert sampler.by_kind() == {cpu_kinds.DRIVER_JVM: 3.0}


def test_workers_the_kernel_reaps_for_a_parent_ignoring_sigchld_are_counted_at_their_last_figure() -> None:
    """pyspark.daemon ignores SIGCHLD: a worker that exits while the daemon lives, or with it (Spark's
    stop has the daemon kill its workers and exit within one sample), reaches nobody's
    RUSAGE_CHILDREN. One whose parent waits, or that outlives its parent (then reaped by the
    bench, the subreaper, which notes its pid), is counted there and not here."""
    proc = cpu_kinds.ProcSample
    daemon = (30, 1.0, 11, ["python", "-m", "pyspark.daemon", "pyspark.worker"])
    sampler = cpu_kinds.KindSampler()
    sampler.start(0.0)
    sampler.observe(
        0.5, [proc(*daemon, 0.5, True), proc(31, 2.0, 30, daemon[3], 1.5), proc(32, 2.5, 30, daemon[3], 2.0)]
    )
    sampler.observe(1.0, [proc(*daemon, 0.5, True), proc(32, 2.5, 30, daemon[3], 2.25)])  # 31 exited, daemon alive
    assert sampler.auto_reaped_s == 1.5
    sampler.observe(1.5, [])  # the daemon and 32 ended together: the kernel reaped 32
    assert sampler.auto_reaped_s == 3.75
    sampler.reaped_pids = {32}  # unless 32 outlived the daemon and the subreaper waited for it
    assert sampler.auto_reaped_s == 1.5
    waiting = cpu_kinds.KindSampler()
    waiting.observe(0.5, [proc(*daemon, 0.5, False), proc(31, 2.0, 30, daemon[3], 1.5)])
    waiting.observe(1.0, [proc(*daemon, 0.5, False)])
    assert waiting.auto_reaped_s == 0.0
    assert sampler.by_kind() == {cpu_kinds.PY_WORKERS: 4.25}


def test_stages_get_the_cumulative_cpu_between_their_boundaries_interpolated_between_samples() -> None:
    samples = [(0.0, {}), (1.0, {"a": 2.0}), (2.0, {"a": 2.0, "b": 1.0}), (4.0, {"a": 3.0, "b": 5.0})]
    assert cpu_kinds.cumulative_at(samples, "a", -1.0) == 0.0
    assert cpu_kinds.cumulative_at(samples, "a", 0.5) == 1.0
    assert cpu_kinds.cumulative_at(samples, "b", 3.0) == 3.0
    assert cpu_kinds.cumulative_at(samples, "b", 9.0) == 5.0
    stages = cpu_kinds.attribute(samples, [("start", 0.0), ("work", 1.5), ("end", 3.0)], 5.0)
    assert [(s.name, s.start, s.end, s.cpu) for s in stages] == [
        ("start", 0.0, 1.5, {"a": 2.0, "b": 0.5}),
        ("work", 1.5, 3.0, {"a": 0.5, "b": 2.5}),
        ("end", 3.0, 5.0, {"a": 0.5, "b": 2.0}),
    ]
    assert sum(sum(s.cpu.values()) for s in stages) == 8.0  # the last sample's total, nothing lost


_LOG_LINES = [
    "2026-11-25T23:44:09.5Z [info     ] Created dag run.",
    "2026-11-25T23:44:09.521501Z [info     ] [DAG TEST] starting task_id=land map_index=-1 [airflow]",
    "2026-11-25T23:44:13.280095Z [info     ] landing pipeline 'bench_kc' run 'manual__1' from Kafka 127.0.0.1:19092",
    "2026-11-25T23:44:14.802322Z [info     ] [DAG TEST] end task task_id=land map_index=-1 [airflow]",
    "2026-11-25T23:44:14.806139Z [info     ] [DAG TEST] starting task_id=transform map_index=-1 [airflow]",
    "   a continuation line: transform: step 2/3 schema_history",
    "2026-11-25T23:44:19.736424Z [info     ] INFO [ticdc_lake.spark.transform_job] transform: step 1/3 decode (x)",
    "2026-11-25T23:44:34.108058Z [info     ] INFO [ticdc_lake.spark.transform_job] transform: step 3/3 apply (x)",
    "2026-11-25T23:44:56.453643Z [info     ] INFO [ticdc_lake.spark.transform_job] transform: done in 36.7 s",
    "2026-11-25T23:44:57.0Z [info     ] transform: step 1/3 decode (a second transform is not a stage)",
    "2026-11-25T23:44:57.25Z [info     ] DagRun Finished: dag_id=ticdc_bench_kc, state=success",
]


def test_stage_boundaries_come_from_the_dags_test_log_and_a_missing_stage_folds_into_the_one_before() -> None:
    started = 1_795_650_247.0  # 2026-11-25T23:44:07Z
    found = cpu_kinds.stage_starts(_LOG_LINES, started)
    assert [(name, round(at - started, 6)) for name, at in found] == [
        ("Airflow start", 0.0),
        ("land task start", 2.521501),
        ("land", 6.280095),
        ("spark start", 7.802322),
        ("decode", 12.736424),
        ("apply", 27.108058),
        ("run end", 49.453643),
        ("process exit", 50.25),
    ]


def test_the_table_has_a_row_per_stage_a_column_per_kind_and_the_unsampled_rest() -> None:
    stages = [
        cpu_kinds.Stage("land", 0.0, 2.0, {cpu_kinds.AIRFLOW: 1.25, cpu_kinds.PY_WORKERS: 0.0}),
        cpu_kinds.Stage("decode", 2.0, 5.0, {cpu_kinds.AIRFLOW: 0.25, cpu_kinds.PY_WORKERS: 3.5}),
    ]
    assert cpu_kinds.table(stages, total_cpu=5.5, total_wall=5.0) == [
        "  stage             wall s  Airflow task process        Python workers    CPU s",
        "  land                 2.0                   1.2                   0.0      1.2",
        "  decode               3.0                   0.2                   3.5      3.8",
        "  all (sampled)        5.0                   1.5                   3.5      5.0",
        "  not sampled                                                               0.5",
    ]


def test_peak_rss_is_summed_per_kind_at_each_sample_and_printed_per_stage_under_the_cpu_rows() -> None:
    """Each sample adds up the resident bytes of a kind's running processes; a stage shows the highest
    such sum per kind and the highest sum of all kinds at one sample (not the sum of the kinds' peaks,
    which came at different moments)."""
    mib = 2**20
    proc = cpu_kinds.ProcSample
    airflow = (10, 1.0, 1, ["python", "/v/bin/airflow", "dags", "test"])
    jvm = (11, 2.0, 10, ["java", "org.apache.spark.deploy.SparkSubmit"])
    daemon = (12, 3.0, 11, ["python", "-m", "pyspark.daemon"])
    sampler = cpu_kinds.KindSampler()
    sampler.start(0.0)
    sampler.observe(1.0, [proc(*airflow, 1.0, rss=300 * mib)])
    sampler.observe(2.0, [proc(*airflow, 1.0, rss=200 * mib), proc(*jvm, 1.0, rss=1000 * mib)])
    sampler.observe(
        3.0,
        [
            proc(*airflow, 1.0, rss=200 * mib),
            proc(*jvm, 2.0, rss=900 * mib),
            proc(*daemon, 0.5, rss=100 * mib),
            proc(13, 3.5, 12, daemon[3], 1.0, rss=150 * mib),
        ],
    )
    assert sampler.samples.rss[-1] == {
        cpu_kinds.AIRFLOW: 200 * mib,
        cpu_kinds.DRIVER_JVM: 900 * mib,
        cpu_kinds.PY_WORKERS: 250 * mib,
    }
    assert sampler.peak_rss_by_kind() == {
        cpu_kinds.AIRFLOW: 300 * mib,
        cpu_kinds.DRIVER_JVM: 1000 * mib,
        cpu_kinds.PY_WORKERS: 250 * mib,
    }
    stages = cpu_kinds.attribute(sampler.samples, [("land", 0.0), ("decode", 1.5)], 3.0)
    assert [(s.name, s.rss, s.rss_all) for s in stages] == [
        ("land", {cpu_kinds.AIRFLOW: 300 * mib}, 300 * mib),
        (
            "decode",
            {cpu_kinds.AIRFLOW: 200 * mib, cpu_kinds.DRIVER_JVM: 1000 * mib, cpu_kinds.PY_WORKERS: 250 * mib},
            1350 * mib,
        ),
    ]
    assert cpu_kinds.table(stages, total_cpu=4.5, total_wall=3.0)[-4:] == [
        "  peak RSS MiB              Airflow task process      Spark driver JVM        Python workers      all",
        "  land                                       300                     0                     0      300",
        "  decode                                     200                  1000                   250     1350",
        "  whole run                                  300                  1000                   250     1350",
    ]


_REAPED = """
import json, subprocess, sys
import bench_vs_kc_measure as measure
assert measure.become_subreaper()
meter = measure.TreeMeter(interval=0.05, kind_interval=0.05).start()
process = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
assert measure.finish(process) == 0
cpu = meter.cpu()
meter.stop()
print(json.dumps({"cpu": cpu, "reaped": meter.kinds.auto_reaped_s}))
"""


def test_the_meter_counts_a_worker_the_kernel_reaped_for_a_parent_that_ignores_sigchld() -> None:
    """As pyspark.daemon does: the parent ignores SIGCHLD, its child burns 0.6 s of CPU and exits
    while the parent lives on. RUSAGE_CHILDREN never gets the child's time (the old total was
    the two interpreters' start alone); the meter adds it at its last sample."""
    daemon = textwrap.dedent(
        """
        import os, signal, time
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        child = os.fork()
        if child == 0:
            start = time.process_time()
            while time.process_time() - start < 0.6: pass
            os._exit(0)
        try:  # SIGCHLD ignored: blocks until the child has exited and the kernel reaped it
            os.waitpid(child, 0)
        except ChildProcessError:
            pass
        time.sleep(0.5)  # outlive the child, as the daemon does (on a loaded machine it could not)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _REAPED, daemon], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert 0.45 <= figures["reaped"] <= 0.65, figures
    # Without it the total is the interpreter's start alone: RUSAGE_CHILDREN never saw the 0.6 s.
    assert 0.0 < figures["cpu"] - figures["reaped"] < 0.3, figures


@pytest.mark.spark
def test_the_sink_users_current_state_job_leaves_what_the_changelog_reduction_leaves(
    spark: Any, tmp_path: Path
) -> None:
    import bench_vs_kc_current as current_job  # type: ignore[import-not-found,unused-ignore]

    from ticdc_lake.config import CatalogConfig
    from ticdc_lake.spark.settings import catalog_conf

    (tmp_path / "catalog").mkdir()
    catalog = CatalogConfig(uri=f"jdbc:sqlite:{tmp_path}/catalog/sink.db", warehouse=f"file://{tmp_path}/warehouse")
    for key, value in catalog_conf(current_job.CATALOG, catalog).items():
        spark.conf.set(key, value)
    # A changelog as the sink appends it: offsets out of order in the files, a key deleted, one
    # deleted and inserted again, one updated twice, one inserted only.
    changes = [
        (1, "I", 0, (10, "a", "p")),
        (2, "I", 1, (20, "b", "p")),
        (1, "U", 2, (11, "a2", "p")),
        (3, "I", 3, (30, "c", "p")),
        (2, "D", 4, (20, "b", "p")),
        (3, "D", 5, (30, "c", "p")),
        (3, "I", 6, (31, "c2", "q")),
        (1, "U", 7, (12, "a3", None)),
        (4, "I", 8, (40, "d", "p")),
    ]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {current_job.CATALOG}.db")
    spark.sql(
        f"CREATE TABLE {current_job.CATALOG}.db.t (id BIGINT, k INT, c STRING, pad STRING, "
        "_cdc STRUCT<op: STRING, offset: BIGINT>) USING iceberg"
    )
    rows = [(i, k, c, p, (op, offset)) for i, op, offset, (k, c, p) in reversed(changes)]
    spark.createDataFrame(
        rows, "id BIGINT, k INT, c STRING, pad STRING, _cdc STRUCT<op: STRING, offset: BIGINT>"
    ).writeTo(f"{current_job.CATALOG}.db.t").append()
    for _ in range(2):  # the job's recurring form: a second run over the same changelog changes nothing
        for sql in current_job.statements("db", "t"):
            spark.sql(sql)

    found = {r["id"]: (r["k"], r["c"], r["pad"]) for r in spark.table(current_job.current_name("db", "t")).collect()}
    expected = changelog.current_rows(
        "db.t", (changelog.ChangelogRow(i, op, offset, values) for i, op, offset, values in changes)
    )
    assert found == expected == {1: (12, "a3", None), 3: (31, "c2", "q"), 4: (40, "d", "p")}


def test_a_variant_runs_after_ticdc_lake_in_odd_rounds_and_before_it_in_even_ones() -> None:
    """``--variant-conf``: neither ticdc-lake side always goes first (the first of a pair took more
    CPU in code identical on both sides); the sink keeps its place, and without a variant or with
    ``--only kc-sink`` the rounds are as they were."""
    import bench_vs_kc  # type: ignore[import-not-found,unused-ignore]  # beside this file

    lake, variant, sink = "ticdc-lake", bench_vs_kc.VARIANT, "kc-sink"
    assert [bench_vs_kc.round_sides(n, None, True) for n in (1, 2, 3)] == [
        [lake, variant, sink],
        [variant, lake, sink],
        [lake, variant, sink],
    ]
    assert [bench_vs_kc.round_sides(n, lake, True) for n in (1, 2)] == [[lake, variant], [variant, lake]]
    assert bench_vs_kc.round_sides(2, sink, True) == [sink]
    assert bench_vs_kc.round_sides(2, None, False) == [lake, sink]


def test_the_sink_with_a_short_flush_interval_runs_beside_the_default_sink_alternating() -> None:
    """``--sink-flush-ms``: side kc-sink-flush after kc-sink in odd rounds, before it in even ones;
    not with ``--only`` another side, alone with ``--only kc-sink-flush``."""
    import bench_vs_kc  # type: ignore[import-not-found,unused-ignore]  # beside this file

    lake, variant, sink, flush = "ticdc-lake", bench_vs_kc.VARIANT, "kc-sink", bench_vs_kc.SINK_FLUSH
    assert [bench_vs_kc.round_sides(n, None, False, True) for n in (1, 2)] == [
        [lake, sink, flush],
        [lake, flush, sink],
    ]
    assert bench_vs_kc.round_sides(2, None, True, True) == [variant, lake, flush, sink]
    assert bench_vs_kc.round_sides(1, sink, False, True) == [sink]
    assert bench_vs_kc.round_sides(1, flush, False, True) == [flush]


def test_the_flush_side_writes_its_worker_setting_and_the_default_side_none(tmp_path: Path) -> None:
    import bench_vs_kc_connect as connect  # type: ignore[import-not-found,unused-ignore]

    files = {}
    for name, settings in (("plain", ()), ("flush", (("offset.flush.interval.ms", "10000"),))):
        folder = tmp_path / name
        worker, _ = connect.ConnectRound(folder, name, "t", "127.0.0.1:1", 8083, 2, settings).write_files()
        files[name] = worker.read_text().splitlines()
    same = {name: [line for line in lines if not line.startswith("offset.storage")] for name, lines in files.items()}
    assert same["flush"] == [*same["plain"], "offset.flush.interval.ms=10000"]


def test_the_connector_a_running_worker_gets_is_the_one_a_fresh_connect_reads_from_its_file(tmp_path: Path) -> None:
    """``--connect-service`` posts ``connector_settings`` to the worker's REST API; a round with its
    own Connect passes the same settings as connector.properties."""
    import bench_vs_kc_connect as connect  # type: ignore[import-not-found,unused-ignore]

    job = connect.ConnectRound(tmp_path, "bench-vs-kc-x-sink-1", "topic", "127.0.0.1:1", 8083, 2)
    _, connector = job.write_files()
    written = dict(line.split("=", 1) for line in connector.read_text().splitlines())
    assert written == job.connector_settings()
    assert written["name"] == "bench-vs-kc-x-sink-1"
    assert written["iceberg.control.topic"] == "bench-vs-kc-x-sink-1-control"
    assert written["iceberg.catalog.uri"] == f"jdbc:sqlite:{tmp_path}/catalog/sink.db"
