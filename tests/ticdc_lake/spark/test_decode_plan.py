"""How the decode stage cuts landed files into Spark tasks (pure Python, no JVM)."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from ticdc_lake.spark.decode_plan import TASKS_PER_SLOT, FileRange, Slice, busiest_slot, plan_tasks


def _files(*counts: int, batch: str = "000000000001") -> list[FileRange]:
    return [FileRange(batch, f"data/p{i}.avro", 1000 * i, 1000 * i + c, c) for i, c in enumerate(counts)]


def _covered_exactly_once(files: list[FileRange], tasks: list[list[Slice]]) -> None:
    by_file: dict[str, list[tuple[int, int]]] = {}
    for task in tasks:
        for piece in task:
            by_file.setdefault(piece.source.file, []).append((piece.first, piece.stop))
    assert sorted(by_file) == sorted(f.file for f in files)
    for source in files:
        bounds = sorted(by_file[source.file])
        assert bounds[0][0] == source.start
        assert bounds[-1][1] == source.end
        assert all(a[1] == b[0] for a, b in pairwise(bounds)), bounds


def test_three_equal_files_on_two_cores_are_cut_so_both_cores_stay_busy() -> None:
    files = _files(333_334, 333_333, 333_333)
    tasks = plan_tasks(files, 2)
    _covered_exactly_once(files, tasks)
    assert len(tasks) == 4
    whole = busiest_slot([6 * f.count for f in files], 2)
    assert busiest_slot([sum(s.cost for s in t) for t in tasks], 2) < 0.85 * whole


def test_one_big_file_is_cut_in_two_on_two_cores_and_no_further() -> None:
    files = _files(1_000_000)
    tasks = plan_tasks(files, 2)
    _covered_exactly_once(files, tasks)
    assert len(tasks) == 2  # a third cut costs more re-reading than it saves


def test_files_that_balance_already_are_not_cut() -> None:
    files = _files(*[100_000] * 6)
    tasks = plan_tasks(files, 2)
    assert len(tasks) == 6
    assert all(len(t) == 1 and t[0].first == t[0].source.start and t[0].stop == t[0].source.end for t in tasks)


def test_small_files_are_never_cut_and_many_are_grouped_into_few_tasks() -> None:
    files = _files(*[1_000] * 200)
    tasks = plan_tasks(files, 2)
    _covered_exactly_once(files, tasks)
    assert len(tasks) == 2 * TASKS_PER_SLOT
    assert max(len(t) for t in tasks) - min(len(t) for t in tasks) <= 1


def test_without_split_every_file_is_read_whole_and_costly_tasks_come_first() -> None:
    files = _files(10, 500_000, 20, 300)
    tasks = plan_tasks(files, 2, split=False)
    _covered_exactly_once(files, tasks)
    assert all(p.skipped == 0 for t in tasks for p in t)
    costs = [sum(p.cost for p in t) for t in tasks]
    assert costs == sorted(costs, reverse=True)


@pytest.mark.parametrize("seed", range(20))
def test_random_landings_are_covered_exactly_once(seed: int) -> None:
    rng = random.Random(seed)
    files = [
        FileRange(f"{b:012d}", f"data/b{b}-p{p}.avro", 0, rng.randint(1, 900_000), rng.randint(1, 400_000))
        for b in range(rng.randint(1, 4))
        for p in range(rng.randint(1, 5))
    ]
    tasks = plan_tasks(files, rng.randint(1, 8))
    _covered_exactly_once(files, tasks)
    assert plan_tasks([], 2) == []
