"""Removing the temporary files a killed land run left behind.

Land writes every file under a hidden temporary name (``.<name>.<32 hex>.tmp``, ``landing.store``)
and moves or links it into place; a process killed in between leaves the temporary file, which
nothing reads and nothing else removes. The land stage calls :func:`remove_leftovers` while it
holds the pipeline's land lease, so no other land run of this pipeline writes at the same time;
it still removes only files older than the lease's stale age (``stage_lock.STALE_AFTER_S``),
so a writer that somehow runs without the lease (another host, a clock skew of less than that)
does not lose a file it is writing. Only the folders land writes are searched (``data/``,
``manifests/``, ``schemas/registry/``); lock files are the pipeline lock's own business.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

import pyarrow.fs as pafs

from ticdc_lake.landing.layout import DATA_DIR, MANIFEST_DIR, WRITER_SCHEMA_DIR
from ticdc_lake.stage_lock import STALE_AFTER_S
from ticdc_lake.storage_files import open_filesystem

#: The temporary names ``landing.store`` writes: a hidden name, a uuid4 hex, ``.tmp``.
TEMPORARY_NAME = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")
FOLDERS = (DATA_DIR, MANIFEST_DIR, WRITER_SCHEMA_DIR)

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Leftovers:
    removed: int = 0
    removed_bytes: int = 0
    #: Temporary files younger than the age limit: perhaps being written, left alone.
    young: int = 0
    #: Files that could not be deleted (logged with the reason).
    failed: int = 0


def remove_leftovers(
    landing_uri: str,
    pipeline_id: str,
    *,
    older_than_s: float = STALE_AFTER_S,
    now_ns: int | None = None,
    logger: logging.Logger | None = None,
) -> Leftovers:
    """Delete the pipeline's temporary landing files older than ``older_than_s``; call it holding
    the land lease. Logs what was removed (count, bytes) and what could not be."""
    log = logger or _LOG
    fs, base = open_filesystem(landing_uri)
    root = f"{base}/{pipeline_id}"
    limit = (now_ns if now_ns is not None else time.time_ns()) - int(older_than_s * 1e9)
    removed = removed_bytes = young = failed = 0
    for folder in FOLDERS:
        selector = pafs.FileSelector(f"{root}/{folder}", recursive=True, allow_not_found=True)
        for info in fs.get_file_info(selector):
            if info.type != pafs.FileType.File or not TEMPORARY_NAME.match(info.base_name):
                continue
            if info.mtime_ns is not None and info.mtime_ns > limit:
                young += 1
                continue
            where = f"{landing_uri.rstrip('/')}/{pipeline_id}/{info.path.removeprefix(root + '/')}"
            try:
                fs.delete_file(info.path)
            except FileNotFoundError:
                continue  # gone meanwhile
            except OSError as exc:
                failed += 1
                log.warning("could not remove the leftover temporary file %s: %s; remove it by hand", where, exc)
                continue
            removed += 1
            removed_bytes += int(info.size or 0)
            log.info("removed %s (%d bytes): a temporary file of a land run that did not finish", where, info.size)
    if removed or failed:
        log.info(
            "pipeline %r: removed %d leftover temporary landing file(s), %d bytes%s",
            pipeline_id,
            removed,
            removed_bytes,
            f"; {failed} could not be removed" if failed else "",
        )
    if young:
        log.info(
            "pipeline %r: %d temporary landing file(s) younger than %.0f s left alone (perhaps being written)",
            pipeline_id,
            young,
            older_than_s,
        )
    return Leftovers(removed, removed_bytes, young, failed)
