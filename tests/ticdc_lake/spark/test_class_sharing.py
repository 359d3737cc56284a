"""Class-data sharing of a spark-submit's driver JVM (plain Python): which options, which archive, publishing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ticdc_lake.spark.settings import JVM_CACHE_ENV, ClassSharing, class_sharing, with_java_options


def _install(tmp_path: Path) -> dict[str, str]:
    """A fake Java and Spark installation: ``java`` under JAVA_HOME, two jars under SPARK_HOME."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n", encoding="utf-8")
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"core")
    (jars / "spark-sql.jar").write_bytes(b"sql")
    return {
        "JAVA_HOME": str(tmp_path / "jdk"),
        "SPARK_HOME": str(tmp_path / "spark"),
        JVM_CACHE_ENV: str(tmp_path / "jvm"),
    }


def test_the_first_driver_writes_the_archive_to_its_own_file_and_later_drivers_map_it(tmp_path: Path) -> None:
    env = _install(tmp_path)
    first = class_sharing({}, env)
    assert first is not None
    assert first.pending is not None
    assert first.archive.parent == tmp_path / "jvm"
    assert first.archive.name.startswith("spark-driver-")
    assert first.archive.suffix == ".jsa"
    assert first.pending.name.startswith(first.archive.name + ".")
    assert first.pending.suffix == ".tmp"
    assert first.options == [f"-XX:ArchiveClassesAtExit={first.pending}", "-Xlog:cds*=off"]
    assert not first.archive.exists()

    first.pending.write_bytes(b"archive")  # what the JVM writes when it exits
    assert first.publish() is True
    assert first.archive.read_bytes() == b"archive"
    assert not first.pending.exists()

    later = class_sharing({}, env)
    assert later == ClassSharing(first.archive, None)
    assert later.options == [f"-XX:SharedArchiveFile={first.archive}"]
    assert later.publish() is False


def test_a_driver_that_wrote_nothing_publishes_nothing(tmp_path: Path) -> None:
    sharing = class_sharing({}, _install(tmp_path))
    assert sharing is not None
    assert sharing.pending is not None
    assert sharing.publish() is False  # killed before exit: no file
    sharing.pending.write_bytes(b"")  # a dump that failed half way
    assert sharing.publish() is False
    assert not sharing.pending.exists()
    assert not sharing.archive.exists()


def test_another_spark_or_java_gets_an_archive_of_its_own(tmp_path: Path) -> None:
    env = _install(tmp_path)
    before = class_sharing({}, env)
    (tmp_path / "spark" / "jars" / "iceberg.jar").write_bytes(b"more")
    after = class_sharing({}, env)
    assert before is not None
    assert after is not None
    assert before.archive != after.archive
    (tmp_path / "jdk" / "bin" / "java").write_text("#!/bin/sh\n# another build\n", encoding="utf-8")
    assert class_sharing({}, env).archive != after.archive  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("conf", "cache"),
    [
        ({}, "off"),
        ({}, " OFF "),
        ({"spark.driver.extraJavaOptions": "-Xss4m -Xshare:off"}, None),
        ({"spark.driver.extraJavaOptions": "-XX:SharedArchiveFile=/opt/mine.jsa"}, None),
        ({"spark.driver.extraJavaOptions": "-XX:ArchiveClassesAtExit=/tmp/x.jsa"}, None),
    ],
)
def test_off_when_turned_off_or_when_the_pipeline_sets_class_sharing_itself(
    tmp_path: Path, conf: dict[str, str], cache: str | None
) -> None:
    env = _install(tmp_path)
    if cache is not None:
        env[JVM_CACHE_ENV] = cache
    assert class_sharing(conf, env) is None


def test_off_without_java_or_spark(tmp_path: Path) -> None:
    env = _install(tmp_path)
    assert class_sharing({}, {**env, "JAVA_HOME": str(tmp_path / "nowhere")}) is None
    assert class_sharing({}, {**env, "SPARK_HOME": str(tmp_path / "nowhere")}) is None


def test_the_default_folder_is_the_users_cache(tmp_path: Path) -> None:
    env = _install(tmp_path)
    del env[JVM_CACHE_ENV]
    sharing = class_sharing({}, {**env, "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert sharing is not None
    assert sharing.archive.parent == tmp_path / "cache" / "ticdc-lake" / "jvm"


def test_our_java_options_come_before_the_pipelines_own() -> None:
    conf = {"spark.driver.extraJavaOptions": " -Xss4m "}
    assert with_java_options(conf, ["-XX:SharedArchiveFile=/my cache/a.jsa"]) == {
        "spark.driver.extraJavaOptions": '"-XX:SharedArchiveFile=/my cache/a.jsa" -Xss4m'
    }
    assert with_java_options({}, ["-XX:SharedArchiveFile=/c/a.jsa"]) == {
        "spark.driver.extraJavaOptions": "-XX:SharedArchiveFile=/c/a.jsa"
    }
