"""The driver JVM's collector and JIT thresholds for a local master (``settings.local_driver_conf``;
plain Python, and ``java`` itself for what the JVM accepts), and the generated code the application
keeps (``settings.CODEGEN_CACHE_ENTRIES``, in the test session)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from typing import Any

import pytest

from ticdc_lake.spark.settings import (
    LOCAL_DRIVER_JAVA_OPTIONS,
    LOCAL_DRIVER_JIT_OPTIONS,
    is_local_master,
    local_driver_conf,
)

OPTIONS = "spark.driver.extraJavaOptions"
JIT = "-XX:Tier4InvocationThreshold=50000 -XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=120000"


@pytest.mark.parametrize(
    ("master", "local"),
    [
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("local[4,3]", True),
        ("local-cluster[2,1,1024]", False),
        ("spark://h:7077", False),
        ("yarn", False),
        ("k8s://https://h:6443", False),
    ],
)
def test_a_local_master_is_local_and_nothing_else(master: str, local: bool) -> None:
    assert is_local_master(master) is local


def test_a_local_master_gets_the_serial_collector_and_the_jit_thresholds_before_the_pipelines_own_options() -> None:
    assert LOCAL_DRIVER_JAVA_OPTIONS == ("-XX:+UseSerialGC",)
    assert " ".join(LOCAL_DRIVER_JIT_OPTIONS) == JIT
    assert local_driver_conf({}, "local[2]", env={}) == {OPTIONS: f"-XX:+UseSerialGC {JIT}"}
    assert local_driver_conf({OPTIONS: " -Xss4m -Dx=a "}, "local[*]", env={}) == {
        OPTIONS: f"-XX:+UseSerialGC {JIT} -Xss4m -Dx=a"
    }
    # An option that only looks like a collector's name chooses none; a compiler count is no threshold.
    assert local_driver_conf({OPTIONS: "-XX:+UseGCOverheadLimit -XX:CICompilerCount=2"}, "local", env={}) == {
        OPTIONS: f"-XX:+UseSerialGC {JIT} -XX:+UseGCOverheadLimit -XX:CICompilerCount=2"
    }


def test_other_masters_get_nothing() -> None:
    assert local_driver_conf({}, "spark://h:7077", env={}) == {}
    assert local_driver_conf({}, "yarn", env={}) == {}


@pytest.mark.parametrize(
    ("conf", "env"),
    [
        ({OPTIONS: "-Xss4m -XX:+UseG1GC"}, {}),
        ({OPTIONS: "-XX:+UseParallelGC"}, {}),
        ({OPTIONS: "-XX:-UseSerialGC"}, {}),
        ({OPTIONS: "-XX:+UseZGC -XX:+ZGenerational"}, {}),
        ({"spark.driver.defaultJavaOptions": "-XX:+UseShenandoahGC"}, {}),
        ({}, {"JAVA_TOOL_OPTIONS": "-XX:+UseParallelGC"}),
        ({}, {"JDK_JAVA_OPTIONS": "-XX:+UseG1GC"}),
    ],
)
def test_a_collector_chosen_elsewhere_holds_alone(conf: dict[str, str], env: dict[str, str]) -> None:
    theirs = conf.get(OPTIONS, "").strip()
    assert local_driver_conf(conf, "local[2]", env=env) == {OPTIONS: " ".join(o for o in (JIT, theirs) if o)}


@pytest.mark.parametrize(
    ("conf", "env"),
    [
        ({OPTIONS: "-XX:TieredStopAtLevel=1"}, {}),
        ({OPTIONS: "-XX:-TieredCompilation"}, {}),
        ({OPTIONS: "-XX:Tier4InvocationThreshold=15000"}, {}),
        ({"spark.driver.defaultJavaOptions": "-XX:CompileThresholdScaling=0.5"}, {}),
        ({}, {"SPARK_SUBMIT_OPTS": "-Xss4m -XX:Tier3InvocationThreshold=400"}),
        ({}, {"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"}),
    ],
)
def test_a_jit_choice_made_elsewhere_holds_alone(conf: dict[str, str], env: dict[str, str]) -> None:
    theirs = conf.get(OPTIONS, "").strip()
    assert local_driver_conf(conf, "local[2]", env=env) == {
        OPTIONS: " ".join(o for o in ("-XX:+UseSerialGC", theirs) if o)
    }


def test_both_chosen_elsewhere_leave_nothing_to_add() -> None:
    assert (
        local_driver_conf({}, "local[2]", env={"SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}) == {}
    )


def test_the_environment_of_this_process_is_read_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-XX:+UseParallelGC -XX:TieredStopAtLevel=1")
    assert local_driver_conf({}, "local[2]") == {}
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Xss4m")
    monkeypatch.delenv("JAVA_TOOL_OPTIONS", raising=False)
    monkeypatch.delenv("JDK_JAVA_OPTIONS", raising=False)
    assert local_driver_conf({}, "local[2]") == {OPTIONS: f"-XX:+UseSerialGC {JIT}"}


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH")
def test_the_jvm_starts_with_ours_beside_other_options_and_refuses_two_collectors() -> None:
    """Why a collector chosen elsewhere replaces ours instead of joining it; the JVM takes our JIT thresholds."""
    ours = shlex.split(local_driver_conf({OPTIONS: "-Xss4m"}, "local", env={})[OPTIONS])
    assert [o for o in ours if o.startswith("-XX:Tier4")] == list(LOCAL_DRIVER_JIT_OPTIONS)
    flags = subprocess.run(["java", *ours, "-XX:+PrintFlagsFinal", "-version"], capture_output=True, text=True)
    assert re.search(r"Tier4InvocationThreshold\s+= 50000 ", flags.stdout), flags.stdout[-500:]
    assert subprocess.run(["java", *ours, "-version"], capture_output=True, check=False).returncode == 0
    both = subprocess.run(["java", *ours, "-XX:+UseG1GC", "-version"], capture_output=True, text=True, check=False)
    assert both.returncode == 1
    assert "Multiple garbage collectors selected" in both.stdout + both.stderr


def test_the_application_keeps_the_generated_code_of_more_queries_than_sparks_default_hundred(spark: Any) -> None:
    """A run of the service compiles about 110 classes, the same each run: with Spark's default cache of
    100 a warm service compiled 60 to 99 of them again every run, and the JIT compiled them again too.
    Each query here compiles two classes (its stage and the result's projection)."""
    from pyspark.sql import functions as F

    metrics = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics
    compiled = metrics.METRIC_COMPILATION_TIME()

    def query(i: int) -> None:  # the long literal is written into the generated code: other code per i
        spark.range(3).select((F.col("id") * F.lit(i) + F.lit(7)).alias("x")).collect()

    query(1_000_001)
    before = compiled.getCount()
    query(1_000_001)
    assert compiled.getCount() == before  # the same query: its code is found, not compiled again
    others = 80  # 160 classes: more than Spark's default keeps
    for i in range(2, 2 + others):
        query(1_000_000 + i)
    after = compiled.getCount()
    assert after >= before + 2 * others  # each of them was compiled
    query(1_000_001)
    assert compiled.getCount() == after


def test_pyspark_functions_do_not_also_send_their_python_call_site_to_the_jvm(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With PySpark's call-site capture (its default) each function call below also asks the JVM for
    the active session and a setting, and sets and clears the call site there: about ten more py4j
    round trips a call. The application's settings turn it off; a pipeline can turn it on."""
    from py4j.clientserver import ClientServerConnection
    from pyspark.sql import functions as F

    from ticdc_lake.config import CatalogConfig
    from ticdc_lake.spark.settings import spark_conf

    catalog = CatalogConfig(uri="jdbc:sqlite:/tmp/x.db", warehouse="file:///tmp/w")
    assert spark_conf("lake", catalog)["spark.python.sql.dataFrameDebugging.enabled"] == "false"
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    sent: list[str] = []
    send = ClientServerConnection.send_command

    def counted(self: Any, command: str) -> Any:
        sent.append(command)
        return send(self, command)

    monkeypatch.setattr(ClientServerConnection, "send_command", counted)
    F.when(F.col("a").isNotNull(), F.lit(1)).otherwise(F.lit(0)).alias("b")
    monkeypatch.undo()
    # Seven calls (col, isNotNull, lit, when, lit, otherwise, alias) of at most three round trips
    # each (the functions class, the member, the call); with the capture on, 61 were counted.
    assert len(sent) <= 21, sent
