"""The exclusive create of an S3 object (``If-None-Match: *``), on the local S3 server."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pyarrow.fs as pafs
import pytest

from ticdc_lake.conditional_put import _address, put_if_absent
from ticdc_lake.object_store import S3Settings


@pytest.fixture
def bucket(s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new empty bucket on the local S3 server, with this process's AWS_* pointing at it; removed afterwards."""
    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)
    name = f"cond-{uuid.uuid4().hex[:12]}"
    options = S3Settings.from_environment().pyarrow_options()
    # Its own key pair: a test may change the environment's to check failures.
    keys = {"access_key": s3_env["AWS_ACCESS_KEY_ID"], "secret_key": s3_env["AWS_SECRET_ACCESS_KEY"]}
    s3 = pafs.S3FileSystem(allow_bucket_creation=True, allow_bucket_deletion=True, **keys, **options)
    s3.create_dir(name)
    yield name
    with contextlib.suppress(OSError):  # best effort: S3Proxy's filesystem store can race on its folders
        s3.delete_dir(name)


def _read(path: str) -> bytes:
    with S3Settings.from_environment().pyarrow_filesystem().open_input_stream(path) as stream:
        data: bytes = stream.read()
    return data


def test_only_the_first_put_creates_the_object(bucket: str) -> None:
    path = f"{bucket}/landing/p/manifests/000000000001.json"
    assert put_if_absent(path, b'{"run": 1}') is True
    assert put_if_absent(path, b'{"run": 2}') is False
    assert _read(path) == b'{"run": 1}'
    assert put_if_absent(f"{bucket}/landing/p/manifests/000000000002.json", b"{}") is True


def test_failures_name_the_object_and_status_but_never_the_key(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = S3Settings.from_environment().describe()
    with pytest.raises(OSError, match="NoSuchBucket") as info:
        put_if_absent("no-such-bucket-cond/x.json", b"{}")
    assert (
        str(info.value)
        == f"conditional PUT of s3://no-such-bucket-cond/x.json at {endpoint} failed: HTTP 404 NoSuchBucket"
    )
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-123")
    with pytest.raises(OSError, match="SignatureDoesNotMatch") as info:
        put_if_absent(f"{bucket}/x.json", b"{}")
    assert str(info.value) == (
        f"conditional PUT of s3://{bucket}/x.json at {endpoint} failed: HTTP 403 SignatureDoesNotMatch"
    )


def test_without_a_key_pair_the_caller_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    assert put_if_absent("any-bucket/x.json", b"{}") is None


def test_addressing_styles() -> None:
    aws = S3Settings(endpoint=None, region="eu-west-3", path_style=False)
    assert _address(aws, "lake", "landing/a b.json") == (
        "https",
        "lake.s3.eu-west-3.amazonaws.com",
        "/landing/a%20b.json",
    )
    minio = S3Settings(endpoint="http://minio:9000", region="us-east-1", path_style=True)
    assert _address(minio, "lake", "landing/x.json") == ("http", "minio:9000", "/lake/landing/x.json")
