"""Class-data sharing for the driver JVMs that start Spark (docs/apply-performance.md, "JVM class-data sharing").

Plain Python (no pyspark import): the Airflow side uses it for ``spark-submit``, the local sessions
(``local_session``) for the JVM that PySpark starts itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Folder of the driver JVM's class-data archives (default: ``$XDG_CACHE_HOME/ticdc-lake/jvm``, else
#: ``~/.cache/ticdc-lake/jvm``); ``off`` turns class-data sharing off.
JVM_CACHE_ENV = "TICDC_LAKE_JVM_CACHE"
#: Archives kept in the folder: the most recently used ones. Each install of PySpark (a fresh virtual
#: environment, an upgrade) gets an archive of its own, of about 190 MB.
ARCHIVES_KEPT = 3
#: JVM options by which a pipeline's own ``spark.driver.extraJavaOptions`` takes class-data sharing in hand.
_CDS_FLAGS = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")
#: ``<archive name>.<pid of the process that publishes it>-<random>.tmp``: an archive being written.
_PENDING = re.compile(r"^(?P<archive>.+\.jsa)\.(?P<pid>\d+)-[0-9a-f]+\.tmp$")


@dataclass(frozen=True, slots=True)
class ClassSharing:
    """Class-data sharing for one driver JVM.

    A JVM that starts Spark loads some 20,000 classes; from an archive of them it starts with 30 to 45 %
    less CPU (docs/apply-performance.md). The first driver with a given Java and Spark writes the archive when it exits
    (``-XX:ArchiveClassesAtExit``) to a file of its own, which :meth:`publish` renames into place once
    that JVM exited by itself, so no JVM ever maps a half-written archive (it would crash on it); later
    drivers map the archive (``-XX:SharedArchiveFile``). While one process writes an archive, the
    others start without one. A JVM that cannot use an archive (another Java, changed jars) runs
    without it.
    """

    archive: Path
    #: The file this driver writes at exit (the first run), else None (it reads ``archive``).
    pending: Path | None

    @property
    def options(self) -> list[str]:
        if (
            self.pending is not None
        ):  # the dump warns about each class it skips (hundreds of lines): not in the task log
            return [f"-XX:ArchiveClassesAtExit={self.pending}", "-Xlog:cds*=off"]
        return [f"-XX:SharedArchiveFile={self.archive}"]

    def publish(self, exited_by_itself: bool = True) -> bool:
        """After the driver JVM ended: the archive it wrote becomes the one later drivers use (True),
        or is removed: when the JVM wrote nothing, or was killed (its dump may have stopped half way)."""
        if self.pending is None:
            return False
        try:
            if exited_by_itself and self.pending.stat().st_size > 0:
                os.replace(self.pending, self.archive)
                _prune(self.archive.parent)
                return True
        except FileNotFoundError:
            return False
        self.pending.unlink(missing_ok=True)
        return False


def class_sharing(
    conf: Mapping[str, str], env: Mapping[str, str] | None = None, *, write: bool = True
) -> ClassSharing | None:
    """Class-data sharing for a driver JVM with Spark settings ``conf``, or None.

    None when ``TICDC_LAKE_JVM_CACHE`` is ``off``, when the pipeline's ``spark.driver.extraJavaOptions``
    names a class-data option itself, when no ``java`` or Spark installation is found, and, with no
    archive yet, while another live process writes it or when this driver must not (``write=False``:
    a long-lived JVM, which would write it only when it ends). The archive's name is a digest of the Java binary and of
    Spark's jars (names, sizes, times), so another Java or Spark gets an archive of its own.
    """
    env = os.environ if env is None else env
    folder_setting = env.get(JVM_CACHE_ENV, "")
    theirs = conf.get("spark.driver.extraJavaOptions", "")
    if folder_setting.strip().lower() == "off" or any(flag in theirs for flag in _CDS_FLAGS):
        return None
    java, jars = _java_binary(env), _spark_jars_dir(env)
    if java is None or jars is None:
        return None
    digest = hashlib.sha256()
    for path in (java, *sorted(jars.glob("*.jar"))):
        stat = path.stat()
        digest.update(f"{path.name if path != java else path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    cache = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ticdc-lake" / "jvm"
    folder = Path(folder_setting) if folder_setting.strip() else cache
    archive = folder / f"spark-driver-{digest.hexdigest()[:16]}.jsa"
    if archive.is_file():
        with contextlib.suppress(OSError):  # a read-only cache: the archive is still used
            os.utime(archive)  # used: pruning keeps the most recently used archives
        return ClassSharing(archive, None)
    if not write:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if _written_by_a_live_process(folder, archive.name):
            return None
        pending = folder / f"{archive.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
        pending.touch()  # claims the writing: other drivers start without an archive meanwhile
    except OSError:  # no cache folder: the driver starts as without sharing
        return None
    return ClassSharing(archive, pending)


def _written_by_a_live_process(folder: Path, archive_name: str) -> bool:
    """Whether a live process writes ``archive_name`` now; the files of dead writers are removed."""
    live = False
    for path in folder.glob(f"{archive_name}.*.tmp"):
        match = _PENDING.match(path.name)
        if match is not None and _alive(int(match["pid"])):
            live = True
        else:
            path.unlink(missing_ok=True)
    return live


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _prune(folder: Path) -> None:
    """Remove all but the :data:`ARCHIVES_KEPT` most recently used archives (a JVM that maps one keeps it)."""
    used: list[tuple[float, Path]] = []
    for path in folder.glob("spark-driver-*.jsa"):
        with contextlib.suppress(FileNotFoundError):  # another process pruned it meanwhile
            used.append((path.stat().st_mtime, path))
    for _, stale in sorted(used, reverse=True)[ARCHIVES_KEPT:]:
        stale.unlink(missing_ok=True)


def _java_binary(env: Mapping[str, str]) -> Path | None:
    """The ``java`` that ``spark-submit`` starts: ``$JAVA_HOME/bin/java``, else the first on ``PATH``."""
    home = env.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java", path=env.get("PATH"))
    return Path(found).resolve() if found and Path(found).is_file() else None


def _spark_jars_dir(env: Mapping[str, str]) -> Path | None:
    """Spark's own jars (the driver's class path): ``$SPARK_HOME/jars``, else those installed with PySpark."""
    if env.get("SPARK_HOME"):
        folder = Path(env["SPARK_HOME"]) / "jars"
        return folder if folder.is_dir() else None
    spec = importlib.util.find_spec("pyspark")  # finds the package without importing it
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "jars"
    return folder if folder.is_dir() else None
