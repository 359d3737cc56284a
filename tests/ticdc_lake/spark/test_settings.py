"""The driver JVM's collector for a local master (``settings.local_driver_conf``; plain Python, and
``java`` itself for what the JVM accepts)."""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest

from ticdc_lake.spark.settings import LOCAL_DRIVER_JAVA_OPTIONS, is_local_master, local_driver_conf

OPTIONS = "spark.driver.extraJavaOptions"


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


def test_a_local_master_gets_the_serial_collector_before_the_pipelines_own_options() -> None:
    assert LOCAL_DRIVER_JAVA_OPTIONS == ("-XX:+UseSerialGC",)
    assert local_driver_conf({}, "local[2]", env={}) == {OPTIONS: "-XX:+UseSerialGC"}
    assert local_driver_conf({OPTIONS: " -Xss4m -Dx=a "}, "local[*]", env={}) == {
        OPTIONS: "-XX:+UseSerialGC -Xss4m -Dx=a"
    }
    # An option that only looks like a collector's name chooses none.
    assert local_driver_conf({OPTIONS: "-XX:+UseGCOverheadLimit"}, "local", env={}) == {
        OPTIONS: "-XX:+UseSerialGC -XX:+UseGCOverheadLimit"
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
        ({}, {"SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}),
        ({}, {"JAVA_TOOL_OPTIONS": "-XX:+UseParallelGC"}),
        ({}, {"JDK_JAVA_OPTIONS": "-XX:+UseG1GC"}),
    ],
)
def test_a_collector_chosen_elsewhere_holds_alone(conf: dict[str, str], env: dict[str, str]) -> None:
    assert local_driver_conf(conf, "local[2]", env=env) == {}


def test_the_environment_of_this_process_is_read_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-XX:+UseParallelGC")
    assert local_driver_conf({}, "local[2]") == {}
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Xss4m")
    monkeypatch.delenv("JAVA_TOOL_OPTIONS", raising=False)
    monkeypatch.delenv("JDK_JAVA_OPTIONS", raising=False)
    assert local_driver_conf({}, "local[2]") == {OPTIONS: "-XX:+UseSerialGC"}


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH")
def test_the_jvm_starts_with_ours_beside_other_options_and_refuses_two_collectors() -> None:
    """Why a collector chosen elsewhere replaces ours instead of joining it."""
    ours = shlex.split(local_driver_conf({OPTIONS: "-Xss4m"}, "local", env={})[OPTIONS])
    assert subprocess.run(["java", *ours, "-version"], capture_output=True, check=False).returncode == 0
    both = subprocess.run(["java", *ours, "-XX:+UseG1GC", "-version"], capture_output=True, text=True, check=False)
    assert both.returncode == 1
    assert "Multiple garbage collectors selected" in both.stdout + both.stderr
