"""Imports point one way: dags → plugins → library ← spark_jobs (ARCHITECTURE.md, "Packages").

Parsed with ast, so every import counts, including the lazy ones inside functions (except
where a rule is about module level only).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
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
