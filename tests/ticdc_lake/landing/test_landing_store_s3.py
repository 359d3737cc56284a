"""LandingStore, the pipeline lock and claim-check reads on a real S3 API server (include/scripts/s3.sh)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pyarrow.fs as pafs
import pytest

from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import ConcurrentRunError, DecodeError, LandingError
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.manifest import LandedRange, Manifest
from ticdc_lake.landing.raw_batch import ConsumedRecord, write_raw_batch
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.object_store import S3Settings, open_uri
from ticdc_lake.protocols.claim_check import ClaimCheckReader
from ticdc_lake.stage_lock import PipelineLock

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
MESSAGES = [
    RawMessage("orders", 0, 5, 1772359200000, b"k", b"v", (("h", None),)),
    RawMessage("orders", 0, 6, 1772359200007, None, b"w" * 3000, ()),
]
FILE = "data/topic=orders/partition=0/00000000000000000005-00000000000000000008.avro"


@pytest.fixture
def bucket(s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new empty bucket on the local S3 server, with this process's AWS_* pointing at it; removed afterwards."""
    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)
    name = f"landing-{uuid.uuid4().hex[:12]}"
    options = S3Settings.from_environment().pyarrow_options()
    # Its own key pair: a test may change the environment's to check failures.
    keys = {"access_key": s3_env["AWS_ACCESS_KEY_ID"], "secret_key": s3_env["AWS_SECRET_ACCESS_KEY"]}
    s3 = pafs.S3FileSystem(allow_bucket_creation=True, allow_bucket_deletion=True, **keys, **options)
    s3.create_dir(name)
    yield name
    with contextlib.suppress(OSError):  # best effort: S3Proxy's filesystem store can race on its folders
        s3.delete_dir(name)


def _objects(bucket: str) -> dict[str, int]:
    """Every object of ``bucket`` listed through the S3 API: key -> size."""
    s3 = S3Settings.from_environment().pyarrow_filesystem()
    infos = s3.get_file_info(pafs.FileSelector(bucket, recursive=True))
    return {i.path.removeprefix(f"{bucket}/"): i.size for i in infos if i.type == pafs.FileType.File}


def _manifest(sequence: int, *ranges: LandedRange, run_id: str) -> Manifest:
    return Manifest(
        pipeline="orders_cdc",
        sequence=sequence,
        batch_id=f"{sequence:012d}",
        run_id=run_id,
        interval_start=None,
        interval_end=None,
        created_at=T0,
        ranges=ranges,
    )


def test_batches_and_manifests_land_on_s3_and_read_back(bucket: str) -> None:
    store = LandingStore(f"s3://{bucket}/landing", "orders_cdc")
    landed = store.write_batch((ConsumedRecord(m) for m in MESSAGES), topic="orders", partition=0, start=5, end=8)
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
    payload = expected.getvalue()
    assert (landed.file, landed.count, landed.size_bytes) == (FILE, 2, len(payload))
    assert landed.sha256 == hashlib.sha256(payload).hexdigest()
    assert store.checksum(FILE) == (len(payload), landed.sha256)
    # Exactly the batch, no temporary object left behind (listed through the S3 API).
    assert _objects(bucket) == {f"landing/orders_cdc/{FILE}": len(payload)}

    # Landing the same range again leaves the object alone.
    again = store.write_batch((ConsumedRecord(m) for m in MESSAGES), topic="orders", partition=0, start=5, end=8)
    assert again == landed

    store.publish(_manifest(1, landed, run_id="run1"))
    reopened = LandingStore(f"s3://{bucket}/landing/", "orders_cdc")
    assert [(m.sequence, m.run_id, m.ranges) for m in reopened.manifests()] == [(1, "run1", (landed,))]
    assert list(reopened.read_messages(FILE)) == MESSAGES
    assert set(_objects(bucket)) == {
        f"landing/orders_cdc/{FILE}",
        "landing/orders_cdc/manifests/000000000001.json",
    }

    # A second publish of the same sequence is refused and names the run that holds it.
    with pytest.raises(ConcurrentRunError) as info:
        store.publish(_manifest(1, landed, run_id="run2"))
    assert f"s3://{bucket}/landing/orders_cdc/manifests/000000000001.json was published by run 'run1'" in str(
        info.value
    )
    assert [m.run_id for m in reopened.manifests()] == ["run1"]


def test_writer_schemas_and_the_pipeline_lock_live_on_s3(bucket: str) -> None:
    store = LandingStore(f"s3://{bucket}/landing", "orders_cdc")
    assert store.write_writer_schema(7, '{"type": "string"}') is True
    assert store.write_writer_schema(7, '{"type":"string"}') is False
    assert store.writer_schemas() == {7: '{"type": "string"}'}

    with PipelineLock(f"s3://{bucket}/landing", "orders_cdc", "land", "run1", wait_s=0) as lease:
        assert lease.run_id == "run1"
        assert "landing/orders_cdc/locks/land" in _objects(bucket)
        with pytest.raises(ConcurrentRunError):
            PipelineLock(f"s3://{bucket}/landing", "orders_cdc", "land", "run2", wait_s=0).acquire()
    assert "landing/orders_cdc/locks/land" not in _objects(bucket)


def test_s3_uris_open_the_configured_server(bucket: str) -> None:
    filesystem, path = open_uri(f"s3://{bucket}/landing/")
    assert (type(filesystem), path) == (pafs.S3FileSystem, f"{bucket}/landing")
    assert open_uri(f"s3://{bucket}")[1] == bucket


def test_claim_check_objects_are_read_from_s3(bucket: str) -> None:
    s3 = S3Settings.from_environment().pyarrow_filesystem()
    original = b'{"version":1}'
    with s3.open_output_stream(f"{bucket}/claims/abc.json") as out:
        out.write(json.dumps({"key": None, "value": base64.b64encode(original).decode()}).encode())
    reader = ClaimCheckReader("simple-json", CodecOptions(claim_check_storage_uri=f"s3://{bucket}/claims"))
    stored = reader.fetch("s3://ticdc-side/cf/abc.json", "message at offset 3", "claimCheckLocation")
    assert (stored.address, stored.key, stored.value) == (f"s3://{bucket}/claims/abc.json", None, original)
    with pytest.raises(DecodeError) as info:
        reader.fetch("s3://ticdc-side/cf/gone.json", "message at offset 4", "claimCheckLocation")
    assert f"claim-check object s3://{bucket}/claims/gone.json does not exist" in str(info.value)


def test_a_missing_bucket_or_a_wrong_key_names_the_landing_uri(
    s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(LandingError) as info:
        LandingStore("s3://no-such-bucket-ticdc/landing", "orders_cdc")
    endpoint = s3_env["AWS_ENDPOINT_URL_S3"]
    assert str(info.value) == (
        "landing_uri 's3://no-such-bucket-ticdc/landing' cannot be opened: bucket 'no-such-bucket-ticdc' of "
        f"'s3://no-such-bucket-ticdc/landing' does not exist at {endpoint} (region us-east-1, path-style): create it "
        "(ticdc-lake never creates buckets) or fix the URI or the endpoint (AWS_ENDPOINT_URL_S3)"
    )
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(LandingError) as info:
        LandingStore("s3://no-such-bucket-ticdc/landing", "orders_cdc")
    message = str(info.value)
    assert message.startswith("landing_uri 's3://no-such-bucket-ticdc/landing' cannot be opened: ")
    assert message.endswith(
        f"(S3 at {endpoint} (region us-east-1, path-style)); check the credentials (AWS_ACCESS_KEY_ID, "
        "AWS_SECRET_ACCESS_KEY), the endpoint and the bucket's permissions"
    )
    assert "ACCESS_DENIED" in message
    assert "wrong" not in message


def test_leftover_temporary_objects_of_a_killed_land_run_are_removed_on_s3(bucket: str) -> None:
    from ticdc_lake.landing.leftovers import Leftovers, remove_leftovers

    s3 = S3Settings.from_environment().pyarrow_filesystem()
    hex_ = uuid.uuid4().hex
    leftover = f"landing/orders_cdc/data/topic=orders/partition=0/.{FILE.rsplit('/', 1)[1]}.{hex_}.tmp"
    for key in (leftover, f"landing/orders_cdc/{FILE}"):
        with s3.open_output_stream(f"{bucket}/{key}") as out:
            out.write(b"x" * 70)
    uri = f"s3://{bucket}/landing"
    assert remove_leftovers(uri, "orders_cdc") == Leftovers(young=1)  # just written: perhaps in use
    later = int((datetime.now(UTC).timestamp() + 3600) * 1e9)
    assert remove_leftovers(uri, "orders_cdc", now_ns=later) == Leftovers(removed=1, removed_bytes=70)
    assert _objects(bucket) == {f"landing/orders_cdc/{FILE}": 70}
