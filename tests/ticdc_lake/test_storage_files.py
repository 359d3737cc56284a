"""The shared file operations of the landing storage: exclusive create, reads and deletes."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from ticdc_lake.errors import LandingError
from ticdc_lake.storage_files import (
    create_exclusive,
    delete_if_exists,
    open_filesystem,
    read_file,
    read_if_exists,
    write_file,
)


def test_exclusive_create_writes_once_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    fs, base = open_filesystem(f"file://{tmp_path}")
    assert isinstance(fs, pafs.LocalFileSystem)
    path = f"{base}/lease"
    assert create_exclusive(fs, path, b"first", f"{base}/.lease.1.tmp", durable=True) is True
    assert create_exclusive(fs, path, b"second", f"{base}/.lease.2.tmp") is False
    assert read_file(fs, path) == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lease"]


def test_exclusive_create_without_atomic_link_checks_then_writes(tmp_path: Path) -> None:
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())  # not a LocalFileSystem: no hard link
    assert create_exclusive(fs, "turn", b"1", ".turn.tmp") is True
    assert create_exclusive(fs, "turn", b"2", ".turn.tmp") is False
    assert (tmp_path / "turn").read_bytes() == b"1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["turn"]


def test_reads_and_deletes_of_missing_files(tmp_path: Path) -> None:
    fs, base = open_filesystem(str(tmp_path))
    assert read_if_exists(fs, f"{base}/missing") is None
    delete_if_exists(fs, f"{base}/missing")
    with pytest.raises(FileNotFoundError):
        read_file(fs, f"{base}/missing")
    write_file(fs, f"{base}/there", b"x", durable=True)
    assert read_if_exists(fs, f"{base}/there") == b"x"
    delete_if_exists(fs, f"{base}/there")
    assert list(tmp_path.iterdir()) == []


def test_a_relative_landing_uri_says_what_to_write_instead() -> None:
    expected = (
        "landing_uri 'run/landing' is neither an absolute path nor a URI; use file:///abs/path, /abs/path or "
        "s3://bucket/prefix in the pipeline configuration"
    )
    with pytest.raises(LandingError, match=f"^{re.escape(expected)}$"):
        open_filesystem("run/landing")
