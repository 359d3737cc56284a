"""Small file operations on the landing storage (a ``pyarrow.fs`` filesystem), shared by the landing
store (``landing.store``), the stage lock (``stage_lock``) and the run turn (``landing.run_turn``).

Exclusive create is the one that matters: on a local filesystem a hard link of a complete
temporary file (fails if the name exists); on S3 a conditional PUT (``If-None-Match: *``,
:mod:`ticdc_lake.conditional_put`), or, without credentials to sign it, a check-then-write.
"""

from __future__ import annotations

import contextlib
import errno
import os

import pyarrow.fs as pafs

from ticdc_lake.conditional_put import put_if_absent
from ticdc_lake.errors import LandingError
from ticdc_lake.object_store import open_uri


def open_filesystem(landing_uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and base path of ``file:///abs/path``, ``/abs/path`` or ``s3://bucket/prefix``."""
    if "://" not in landing_uri and not landing_uri.startswith("/"):
        raise LandingError(
            f"landing_uri {landing_uri!r} is neither an absolute path nor a URI; use file:///abs/path, "
            "/abs/path or s3://bucket/prefix in the pipeline configuration"
        )
    try:
        filesystem, path = open_uri(landing_uri)
    except (ValueError, OSError) as exc:
        raise LandingError(f"landing_uri {landing_uri!r} cannot be opened: {exc}") from exc
    return filesystem, path


def is_local(fs: pafs.FileSystem) -> bool:
    return isinstance(fs, pafs.LocalFileSystem)


def read_file(fs: pafs.FileSystem, path: str) -> bytes:
    """The whole file; FileNotFoundError when there is none."""
    with fs.open_input_stream(path, compression=None) as stream:
        data: bytes = stream.read()
    return data


def read_if_exists(fs: pafs.FileSystem, path: str) -> bytes | None:
    """The whole file, or None when there is none."""
    try:
        return read_file(fs, path)
    except FileNotFoundError:
        return None


def delete_if_exists(fs: pafs.FileSystem, path: str) -> None:
    """Delete the file; nothing when it is gone already."""
    with contextlib.suppress(FileNotFoundError):
        fs.delete_file(path)


def fsync_local(path: str) -> None:
    """Make a local file or folder durable before it becomes visible (``pyarrow.fs`` cannot); a
    filesystem that cannot fsync folders is left as it is."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(descriptor)


def write_file(fs: pafs.FileSystem, path: str, data: bytes, *, durable: bool = False) -> None:
    """Write (or overwrite) ``path``; ``durable`` fsyncs it on a local filesystem."""
    with fs.open_output_stream(path, compression=None) as out:
        out.write(data)
    if durable and is_local(fs):
        fsync_local(path)


def create_exclusive(fs: pafs.FileSystem, path: str, data: bytes, temporary: str, *, durable: bool = False) -> bool:
    """Create ``path`` holding ``data`` unless it exists (then False, nothing written).

    On a local filesystem ``temporary`` (a hidden name next to ``path``) is written, linked to
    ``path`` and removed; elsewhere it is not used.
    """
    if not is_local(fs):
        if isinstance(fs, pafs.S3FileSystem):
            created = put_if_absent(path, data)  # If-None-Match: exclusive
            if created is not None:
                return created
        if fs.get_file_info(path).type != pafs.FileType.NotFound:
            return False
        write_file(fs, path, data)
        return True
    try:
        write_file(fs, temporary, data, durable=durable)
        try:
            os.link(temporary, path)  # atomic and exclusive
        except FileExistsError:
            return False
        return True
    finally:
        delete_if_exists(fs, temporary)
