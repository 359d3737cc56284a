"""A killed land run's temporary files are removed by the next land run, only when old enough."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from ticdc_lake.landing.leftovers import Leftovers, remove_leftovers

HEX = "0123456789abcdef" * 2
DATA = "data/topic=orders/partition=0"


def _file(root: Path, relative: str, size: int, age_s: float) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_old_temporary_files_are_removed_young_ones_and_real_files_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "landing" / "orders_cdc"
    batch = f"{DATA}/00000000000000000000-00000000000000000005.avro"
    old_batch = _file(root, f"{DATA}/.00000000000000000005-00000000000000000009.avro.{HEX}.tmp", 300, 600)
    old_manifest = _file(root, f"manifests/.000000000002.json.{HEX}.tmp", 40, 600)
    old_schema = _file(root, f"schemas/registry/.7.json.{HEX}.tmp", 20, 600)
    kept = [
        _file(root, f"{DATA}/.00000000000000000009-00000000000000000012.avro.{HEX}.tmp", 10, 5),  # being written
        _file(root, batch, 100, 600),
        _file(root, "manifests/000000000001.json", 50, 600),
        _file(root, f"locks/.land.{HEX}.tmp", 10, 600),  # the pipeline lock's own
        _file(root, f"{DATA}/.notes.tmp", 10, 600),  # not a name land writes
        _file(tmp_path / "landing" / "other_cdc", f"{DATA}/.x.avro.{HEX}.tmp", 10, 600),  # another pipeline
    ]
    with caplog.at_level(logging.INFO):
        result = remove_leftovers(f"file://{tmp_path}/landing", "orders_cdc", older_than_s=120)
    assert result == Leftovers(removed=3, removed_bytes=360, young=1, failed=0)
    assert not any(p.exists() for p in (old_batch, old_manifest, old_schema))
    assert all(p.exists() for p in kept)
    assert "pipeline 'orders_cdc': removed 3 leftover temporary landing file(s), 360 bytes" in caplog.text
    assert f"removed file://{tmp_path}/landing/orders_cdc/manifests/.000000000002.json.{HEX}.tmp (40 bytes)" in (
        caplog.text
    )
    # Nothing left: a second call finds only the young file.
    assert remove_leftovers(f"file://{tmp_path}/landing", "orders_cdc") == Leftovers(young=1)


def test_a_pipeline_never_landed_has_nothing_to_remove(tmp_path: Path) -> None:
    assert remove_leftovers(str(tmp_path / "none"), "orders_cdc") == Leftovers()
