"""Imports point one way: dags → plugins → library ← spark_jobs (ARCHITECTURE.md, "Packages"),
and inside the library without loops, between packages and between modules.

Parsed with ast, so every import counts, including the lazy ones inside functions and those only
for type checking (except where a rule is about module level only).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "include" / "ticdc_lake"
SPARK_SUBPACKAGE = LIBRARY / "spark"
#: The simulated TiCDC (encoders, workloads, the reference model) and the demo: not the product.
SIMULATOR = ROOT / "include" / "ticdc_sim"
AIRFLOW_SIDE = {"airflow", "ticdc_lake_airflow"}
#: Clients that the DAG processor must never load while parsing (plugins are parsed too).
HEAVY = {"confluent_kafka", "pyspark", "py4j", "fastavro", "pyarrow", "pyiceberg", "duckdb"}


def _files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
    assert files, f"no Python files under {folder}"
    return files


def _imports(path: Path, *, module_level_only: bool = False) -> Iterator[tuple[int, str]]:
    """(line, top-level package) of every absolute import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    nodes = tree.body if module_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


def _violations(files: list[Path], forbidden: set[str], *, module_level_only: bool = False) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line} imports {package}"
        for path in files
        for line, package in _imports(path, module_level_only=module_level_only)
        if package in forbidden
    ]


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same top-level package it imports (``from p import m`` names m)."""
    root = package.parent
    files = {_module_name(path, root): path for path in _files(package)}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                parts = here.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1]) if node.level else ""
                module = ".".join(p for p in (base, node.module or "") if p)
                for alias in node.names:  # a submodule by name, else a name of the module
                    found.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in files else module)
        graph[name] = {m for m in found if m in files and m != name}
    return graph


def _package_of(module: str) -> str:
    """The library's first-level unit a module belongs to: a subpackage, or a top-level module."""
    return ".".join(module.split(".")[:2])


def _package_graph(modules: Mapping[str, set[str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, imported in modules.items():
        source = _package_of(module)
        graph.setdefault(source, set()).update(_package_of(m) for m in imported if _package_of(m) != source)
    return graph


def _reach(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _cycles(graph: Mapping[str, set[str]]) -> list[str]:
    """One loop per group of nodes that import each other, named ``a -> b -> a``: the shortest
    from the group's first node (by name), then the group's other members."""
    reach = {node: _reach(graph, node) for node in graph}
    loops: list[str] = []
    covered: set[str] = set()
    for start in sorted(graph):
        if start in covered or start not in reach[start]:
            continue
        group = {n for n in reach[start] if start in reach[n]}
        covered |= group
        parent: dict[str, str] = {}
        queue, last = [start], None
        while last is None:
            node = queue.pop(0)
            for nxt in sorted(graph[node] & group):
                if nxt == start:
                    last = node
                    break
                if nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)
        path = [start]
        while last != start:
            path.insert(1, last)
            last = parent[last]
        others = sorted(group - set(path))
        loops.append(" -> ".join([*path, start]) + (f" (with {', '.join(others)})" if others else ""))
    return loops


def test_library_never_imports_airflow() -> None:
    assert _violations(_files(LIBRARY), AIRFLOW_SIDE) == []


def test_only_the_spark_subpackage_imports_pyspark() -> None:
    outside = [p for p in _files(LIBRARY) if SPARK_SUBPACKAGE not in p.parents]
    assert _violations(outside, {"pyspark", "py4j"}) == []


def test_spark_jobs_never_import_airflow() -> None:
    files = sorted((ROOT / "spark_jobs").glob("*.py"))
    if not files:
        pytest.skip("spark_jobs/ has no entrypoints yet")
    assert _violations(files, AIRFLOW_SIDE) == []


def test_dags_import_only_airflow_and_the_project() -> None:
    allowed = {"airflow", "ticdc_lake", "ticdc_lake_airflow", "__future__"} | set(sys.stdlib_module_names)
    found = [
        f"{path.relative_to(ROOT)}:{line} imports {package}"
        for path in _files(ROOT / "dags")
        for line, package in _imports(path)
        if package not in allowed
    ]
    assert found == []


def test_plugins_never_import_dags_or_spark_jobs() -> None:
    job_modules = {p.stem for p in (ROOT / "spark_jobs").glob("*.py")}
    assert _violations(_files(ROOT / "plugins"), {"dags", "spark_jobs", *job_modules}) == []


def test_plugins_stay_import_light() -> None:
    """Heavy clients only inside functions: Airflow imports plugins/ in every process."""
    assert _violations(_files(ROOT / "plugins"), HEAVY, module_level_only=True) == []


def _product_files() -> list[Path]:
    return [
        *_files(LIBRARY),
        *_files(ROOT / "plugins"),
        *_files(ROOT / "dags"),
        *sorted((ROOT / "spark_jobs").glob("*.py")),
    ]


def test_the_product_never_imports_the_simulator() -> None:
    """The simulator serves tests, benchmarks and the demo; the library, plugins, DAGs and Spark
    entrypoints never import it. No exception for the demo: its command (``ticdc-lake-demo``,
    ``make demo``) lives in the simulator's package, ``ticdc_sim.demo``."""
    assert _violations(_product_files(), {"ticdc_sim"}) == []


def test_the_simulators_encoders_never_import_the_decoders() -> None:
    """The encoders write what TiCDC writes, independently of how the product reads it."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}"
        for path in _files(SIMULATOR)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if isinstance(node, ast.ImportFrom)
        and node.module is not None
        and node.module.startswith(("ticdc_lake.protocols", "ticdc_lake.spark"))
    ]
    assert found == []


def test_the_simulator_rule_sees_a_product_import(tmp_path: Path) -> None:
    bad = tmp_path / "demo.py"
    bad.write_text("def run():\n    from ticdc_sim.simulator import TicdcSimulator\n", encoding="utf-8")
    assert list(_imports(bad)) == [(2, "ticdc_sim")]  # lazy imports count: what the product rule reads


def test_the_rules_see_violations(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\ndef f():\n    from airflow.sdk import DAG\nimport pyspark.sql\n", encoding="utf-8")
    assert sorted(_imports(bad)) == [(1, "os"), (3, "airflow"), (4, "pyspark")]
    assert list(_imports(bad, module_level_only=True)) == [(1, "os"), (4, "pyspark")]


def test_no_import_loop_between_library_packages() -> None:
    """Subpackages and top-level modules of the library (``schema`` below ``events`` below
    ``protocols``, ARCHITECTURE.md "Layers of the library") import each other one way only."""
    assert _cycles(_package_graph(_module_graph(LIBRARY))) == []


def test_no_import_loop_between_library_modules() -> None:
    assert _cycles(_module_graph(LIBRARY)) == []


def test_the_loop_check_names_loops(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": {"b"}, "e": {"a"}, "f": {"f"}}
    assert _cycles(graph) == ["a -> b -> c -> a (with d)", "f -> f"]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    package = tmp_path / "lib"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "low" / "__init__.py").write_text("", encoding="utf-8")
    (package / "low" / "types.py").write_text("def f():\n    from lib import top\n", encoding="utf-8")
    (package / "top.py").write_text("from lib.low.types import f\nfrom . import other\n", encoding="utf-8")
    (package / "other.py").write_text("from lib.low import types\n", encoding="utf-8")
    modules = _module_graph(package)
    assert modules == {
        "lib": set(),
        "lib.low": set(),
        "lib.low.types": {"lib.top"},
        "lib.other": {"lib.low.types"},
        "lib.top": {"lib.low.types", "lib.other"},
    }
    assert _cycles(modules) == ["lib.low.types -> lib.top -> lib.low.types (with lib.other)"]
    assert _cycles(_package_graph(modules)) == ["lib.low -> lib.top -> lib.low (with lib.other)"]
