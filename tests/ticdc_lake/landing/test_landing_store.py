"""LandingStore on the local filesystem: write-then-publish, no rewrites, exclusive publish."""

from __future__ import annotations

import hashlib
import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ticdc_lake.errors import ConcurrentRunError, LandingError, ManifestError, OffsetGapError
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.manifest import LandedRange, Manifest
from ticdc_lake.landing.raw_batch import ConsumedRecord, write_raw_batch
from ticdc_lake.landing.store import LandingStore

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
MESSAGES = [
    RawMessage("orders", 0, 5, 1772359200000, b"k", b"v", (("h", None),)),
    RawMessage("orders", 0, 6, 1772359200007, None, None, ()),
]
FILE = "data/topic=orders/partition=0/00000000000000000005-00000000000000000008.avro"


def _store(tmp_path: Path) -> LandingStore:
    return LandingStore(f"file://{tmp_path}/landing", "orders_cdc")


def _write(store: LandingStore, messages: list[RawMessage] = MESSAGES, start: int = 5, end: int = 8) -> LandedRange:
    return store.write_batch((ConsumedRecord(m) for m in messages), topic="orders", partition=0, start=start, end=end)


def _manifest(sequence: int, *ranges: LandedRange, run_id: str | None = None) -> Manifest:
    return Manifest(
        pipeline="orders_cdc",
        sequence=sequence,
        batch_id=f"{sequence:012d}",
        run_id=run_id or f"run{sequence}",
        interval_start=None,
        interval_end=None,
        created_at=T0,
        ranges=ranges,
    )


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_write_batch_writes_the_exact_file(tmp_path: Path) -> None:
    landed = _write(_store(tmp_path))
    expected = io.BytesIO()
    write_raw_batch(
        expected,
        [ConsumedRecord(m) for m in MESSAGES],
        pipeline="orders_cdc",
        topic="orders",
        partition=0,
        start=5,
        end=8,
    )
    on_disk = (tmp_path / "landing/orders_cdc" / FILE).read_bytes()
    assert on_disk == expected.getvalue()
    assert landed == LandedRange(
        topic="orders",
        partition=0,
        start=5,
        end=8,
        count=2,
        file=FILE,
        sha256=hashlib.sha256(on_disk).hexdigest(),
        size_bytes=len(on_disk),
        first_timestamp_ms=1772359200000,
        last_timestamp_ms=1772359200007,
    )
    assert _files(tmp_path / "landing") == [f"orders_cdc/{FILE}"]  # no temporary files left


def test_range_without_records_writes_no_file(tmp_path: Path) -> None:
    landed = _write(_store(tmp_path), messages=[], start=3, end=4)
    assert (landed.count, landed.file, landed.sha256, landed.size_bytes) == (0, None, None, None)
    assert not (tmp_path / "landing").exists()


def test_identical_file_is_not_rewritten(tmp_path: Path) -> None:
    store = _store(tmp_path)
    first = _write(store)
    path = tmp_path / "landing/orders_cdc" / FILE
    before = path.stat()
    second = _write(store)
    after = path.stat()
    assert second == first
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_different_leftover_is_replaced(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = tmp_path / "landing/orders_cdc" / FILE
    path.parent.mkdir(parents=True)
    path.write_bytes(b"partial write of a crashed run")
    landed = _write(store)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == landed.sha256
    assert store.checksum(FILE) == (landed.size_bytes, landed.sha256)


def test_publish_then_read_back(tmp_path: Path) -> None:
    store = _store(tmp_path)
    manifest = _manifest(1, _write(store))
    assert store.manifests() == []
    store.publish(manifest)
    assert store.manifests() == [manifest]
    assert (tmp_path / "landing/orders_cdc/manifests/000000000001.json").read_text() == manifest.to_json()
    assert list(store.read_messages(FILE)) == MESSAGES
    assert _files(tmp_path / "landing/orders_cdc/manifests") == ["000000000001.json"]


def test_plain_absolute_path_is_the_same_store(tmp_path: Path) -> None:
    _store(tmp_path).publish(_manifest(1, _write(_store(tmp_path))))
    plain = LandingStore(f"{tmp_path}/landing/", "orders_cdc")
    assert [m.batch_id for m in plain.manifests()] == ["000000000001"]
    assert plain.where("x") == f"{tmp_path}/landing/orders_cdc/x"


def test_publishing_a_taken_sequence_is_a_concurrent_run(tmp_path: Path) -> None:
    store = _store(tmp_path)
    landed = _write(store)
    store.publish(_manifest(1, landed, run_id="scheduled__a"))
    with pytest.raises(ConcurrentRunError) as caught:
        store.publish(_manifest(1, landed, run_id="manual__b"))
    assert str(caught.value) == (
        f"file://{tmp_path}/landing/orders_cdc/manifests/000000000001.json was published by run "
        "'scheduled__a' while run 'manual__b' was landing pipeline 'orders_cdc': two runs of the pipeline "
        "ran at the same time. Nothing was published by this run; run it again and it continues after the "
        "published manifest (limit the DAG to one active run)"
    )
    assert [m.run_id for m in store.manifests()] == ["scheduled__a"]
    assert _files(tmp_path / "landing/orders_cdc/manifests") == ["000000000001.json"]


def test_missing_manifest_sequence_is_an_error(tmp_path: Path) -> None:
    store = _store(tmp_path)
    first = _write(store)
    second = _write(store, [RawMessage("orders", 0, 8, 0, None, None)], start=8, end=9)
    store.publish(_manifest(1, first))
    store.publish(_manifest(2, second))
    (tmp_path / "landing/orders_cdc/manifests/000000000001.json").unlink()
    with pytest.raises(ManifestError) as caught:
        store.manifests()
    assert str(caught.value) == (
        f"file://{tmp_path}/landing/orders_cdc/manifests/000000000001.json is missing but "
        f"file://{tmp_path}/landing/orders_cdc/manifests/000000000002.json exists: published manifests were "
        "removed by hand; restore the missing manifest from a backup"
    )


def test_manifests_may_leave_holes_but_never_overlap(tmp_path: Path) -> None:
    # A backfill lands its interval before an older one: holes are allowed (apply waits for them).
    store = _store(tmp_path)
    store.publish(_manifest(1, _write(store)))
    store.publish(_manifest(2, _write(store, [RawMessage("orders", 0, 9, 0, None, None)], start=9, end=10)))
    assert [m.sequence for m in store.manifests()] == [1, 2]
    store.publish(_manifest(3, _write(store, [RawMessage("orders", 0, 7, 0, None, None)], start=7, end=9)))
    with pytest.raises(OffsetGapError, match=r"offsets \[7, 8\) are landed twice"):
        store.manifests()


def test_manifest_of_another_pipeline_is_rejected(tmp_path: Path) -> None:
    store = _store(tmp_path)
    manifest = _manifest(1, _write(store)).model_copy(update={"pipeline": "other"})
    folder = tmp_path / "landing/orders_cdc/manifests"
    folder.mkdir(parents=True)
    (folder / "000000000001.json").write_text(manifest.to_json())
    with pytest.raises(
        ManifestError, match="holds sequence 1 of pipeline 'other', expected sequence 1 of 'orders_cdc'"
    ):
        store.manifests()


def test_read_messages_rejects_paths_outside_the_layout(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="is not a raw batch path"):
        _store(tmp_path).read_messages("data/../../../etc/passwd")


def test_missing_raw_batch_is_a_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="raw batch file not found although a manifest lists it"):
        list(_store(tmp_path).read_messages(FILE))


def test_relative_landing_uri_is_rejected() -> None:
    with pytest.raises(LandingError, match="'run/landing' is neither an absolute path nor a URI"):
        LandingStore("run/landing", "orders_cdc")


def test_pipeline_id_must_be_a_safe_folder_name(tmp_path: Path) -> None:
    with pytest.raises(LandingError, match=r"pipeline id '\.\./x' cannot name a landing folder"):
        LandingStore(f"file://{tmp_path}", "../x")
