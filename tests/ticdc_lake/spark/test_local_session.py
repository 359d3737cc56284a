"""A driver JVM started by a Python process: the first writes the class-data archive, the next maps it (real JVMs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ticdc_lake.spark.class_sharing import JVM_CACHE_ENV
from ticdc_lake.spark.local_session import local_driver
from ticdc_lake.spark.settings import LOCAL_DRIVER_JIT_OPTIONS, spark_jars

pytestmark = pytest.mark.spark

_SCRIPT = """
from pyspark.sql import SparkSession
from ticdc_lake.spark.local_session import local_driver, publish_at_exit
settings, sharing = local_driver({"spark.ui.enabled": "false"}, "local[1]")
builder = SparkSession.builder.master("local[1]")
for key, value in settings.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
publish_at_exit(sharing)
print("sum", spark.range(10).selectExpr("sum(id)").first()[0])
print("writes" if sharing is not None and sharing.pending is not None else "maps" if sharing else "without")
"""


def _run(tmp_path: Path, name: str) -> str:
    env = {**os.environ, JVM_CACHE_ENV: str(tmp_path / "jvm")}
    # Which classes each JVM loaded and from where (the launcher JVM and the driver, a file each).
    env["JAVA_TOOL_OPTIONS"] = f"-Xlog:class+load=info:file={tmp_path}/{name}-%p.log"
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _from_the_archive(tmp_path: Path, name: str) -> int:
    """Classes the run's JVMs loaded from a dynamic class-data archive (its "top" layer)."""
    logs = tmp_path.glob(f"{name}-*.log")
    return sum(p.read_text(errors="replace").count("source: shared objects file (top)") for p in logs)


def test_the_first_local_driver_writes_the_archive_at_exit_and_the_next_maps_it(tmp_path: Path) -> None:
    first = _run(tmp_path, "first")
    assert first.splitlines()[-2:] == ["sum 45", "writes"]
    archives = sorted(p.name for p in (tmp_path / "jvm").iterdir())
    assert len(archives) == 1, archives  # published, no file left pending
    assert archives[0].startswith("spark-driver-")
    assert archives[0].endswith(".jsa")
    assert _from_the_archive(tmp_path, "first") == 0

    second = _run(tmp_path, "second")
    assert second.splitlines()[-2:] == ["sum 45", "maps"]
    assert _from_the_archive(tmp_path, "second") > 5000  # Spark's classes, not a handful
    assert sorted(p.name for p in (tmp_path / "jvm").iterdir()) == archives


def test_a_local_drivers_settings_name_its_master_the_jars_and_this_interpreter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(JVM_CACHE_ENV, "off")
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    for name in ("SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"):  # no collector nor JIT chosen there
        monkeypatch.delenv(name, raising=False)
    conf, sharing = local_driver({"spark.ui.enabled": "false"}, "local[3]")
    assert sharing is None
    assert conf["spark.master"] == "local[3]"
    assert conf["spark.jars"] == ",".join(spark_jars())
    assert conf["spark.ui.enabled"] == "false"
    assert "-XX:+UseSerialGC" in conf["spark.driver.extraJavaOptions"]  # the local collector
    assert " ".join(LOCAL_DRIVER_JIT_OPTIONS) in conf["spark.driver.extraJavaOptions"]  # and JIT thresholds
    assert os.environ["PYSPARK_PYTHON"] == sys.executable  # the workers import ticdc_lake
    # what the caller gives wins over the defaults
    given = local_driver({"spark.jars": "/opt/extra.jar", "spark.master": "local[1]"}, "local[3]")[0]
    assert (given["spark.jars"], given["spark.master"]) == ("/opt/extra.jar", "local[1]")
