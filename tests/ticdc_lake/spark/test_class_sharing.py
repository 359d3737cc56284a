"""Class-data sharing of a driver JVM (plain Python): options, archive, who writes it, publishing, pruning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ticdc_lake.spark.class_sharing import ARCHIVES_KEPT, JVM_CACHE_ENV, ClassSharing, class_sharing
from ticdc_lake.spark.settings import with_java_options


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
    assert first.pending.name.startswith(f"{first.archive.name}.{os.getpid()}-")
    assert first.pending.suffix == ".tmp"
    assert first.pending.read_bytes() == b""  # claimed at once: others start without an archive meanwhile
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


def test_a_driver_that_wrote_nothing_or_was_killed_publishes_nothing(tmp_path: Path) -> None:
    env = _install(tmp_path)
    sharing = class_sharing({}, env)
    assert sharing is not None
    assert sharing.pending is not None
    assert sharing.publish() is False  # the JVM never dumped: the empty claim
    assert not sharing.pending.exists()
    sharing.pending.unlink(missing_ok=True)
    assert sharing.publish() is False  # no file at all
    killed = class_sharing({}, env)
    assert killed is not None
    assert killed.pending is not None
    killed.pending.write_bytes(b"half an archive")  # a JVM killed while it dumped
    assert killed.publish(exited_by_itself=False) is False
    assert not killed.pending.exists()
    assert not killed.archive.exists()


def test_while_a_live_process_writes_the_archive_others_start_without_and_a_dead_writers_file_goes(
    tmp_path: Path,
) -> None:
    env = _install(tmp_path)
    writer = class_sharing({}, env)
    assert writer is not None
    assert writer.pending is not None
    assert class_sharing({}, env) is None  # this process is alive and writing
    # A writer that died (its pid is gone) leaves its file: the next driver removes it and writes.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = writer.pending.with_name(f"{writer.archive.name}.{int(dead.stdout)}-0badc0de.tmp")
    writer.pending.rename(gone)
    gone.write_bytes(b"half an archive")
    after = class_sharing({}, env)
    assert after is not None
    assert after.pending is not None
    assert not gone.exists()
    assert sorted(p.name for p in (tmp_path / "jvm").iterdir()) == [after.pending.name]


def test_a_long_lived_jvm_maps_an_archive_but_never_writes_one(tmp_path: Path) -> None:
    env = _install(tmp_path)
    assert class_sharing({}, env, write=False) is None
    assert not (tmp_path / "jvm").exists() or list((tmp_path / "jvm").iterdir()) == []
    first = class_sharing({}, env)
    assert first is not None
    assert first.pending is not None
    first.pending.write_bytes(b"archive")
    assert first.publish()
    assert class_sharing({}, env, write=False) == ClassSharing(first.archive, None)


def test_only_the_most_recently_used_archives_are_kept(tmp_path: Path) -> None:
    env = _install(tmp_path)
    folder = tmp_path / "jvm"
    folder.mkdir()
    old = [folder / f"spark-driver-{n:016x}.jsa" for n in range(ARCHIVES_KEPT + 1)]
    for age, path in enumerate(old):  # the first is the most recently used
        path.write_bytes(b"an older install's archive")
        os.utime(path, (1_700_000_000 - age * 3600, 1_700_000_000 - age * 3600))
    sharing = class_sharing({}, env)
    assert sharing is not None
    assert sharing.pending is not None
    sharing.pending.write_bytes(b"archive")
    assert sharing.publish()
    kept = sorted(p.name for p in folder.iterdir())
    assert kept == sorted([sharing.archive.name, *[p.name for p in old[: ARCHIVES_KEPT - 1]]])
    # Using an archive marks it used (its time is what pruning orders by).
    os.utime(sharing.archive, (1_600_000_000, 1_600_000_000))
    assert class_sharing({}, env) == ClassSharing(sharing.archive, None)
    assert sharing.archive.stat().st_mtime > 1_700_000_000


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
